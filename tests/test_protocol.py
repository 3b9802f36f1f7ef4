"""The versioned wire messages: round trips, and every kind of hostile input rejected with one
error type (issue 16 items 1, 4, 5)."""

from __future__ import annotations

import json

import pytest

from bottleneckd.model.facts import Facts
from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.protocol import VERSION, Event, ProtocolError, StepReport, UnknownVersion, decode, encode

ID = RankIdentity.from_env({"RANK": "1", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "j"}, pid=7, host="h")


def good() -> dict:
    return json.loads(encode(StepReport(ID, 4, 0.8, {"forward": 0.2, "data_wait": 0.5}, Facts(device="cpu", epoch=1))))


def test_step_report_round_trip_keeps_every_field() -> None:
    r = StepReport(ID, 4, 0.8, {"forward": 0.2, "data_wait": 0.5}, Facts(device="cpu", mitigations=("channels_last",)))
    back = decode(encode(r))
    assert back == r and isinstance(back, StepReport)
    assert back.identity.key == "j/0/1" and back.facts.get("mitigations") == ("channels_last",)
    sp = back.step_phases()
    assert sp.wall_seconds == 0.8 and sp.phases["data_wait"] == 0.5 and sp.facts.get("device") == "cpu"


def test_event_round_trip_and_key_names() -> None:
    e = Event("mitigation_reverted", "mixed_precision", 1.7e9, True, "slower")
    doc = e.to_json()
    assert doc["kind"] == "mitigation_reverted" and "event" not in doc and doc["version"] == VERSION
    assert decode(encode(e)) == e


def _with(**kw) -> bytes:
    d = good()
    d.update(kw)
    return json.dumps(d, separators=(",", ":")).encode()


HOSTILE = {
    "deep_nesting": b"[" * 60000,
    "deep_objects": b'{"a":' * 5000,
    "infinity": _with(steps=float("inf")),
    "nan_wall": _with(wall_seconds=float("nan")),
    "huge_int": _with().replace(b'"steps":4', b'"steps":' + b"9" * 400),
    "float_overflow": _with().replace(b'"wall_seconds":0.8', b'"wall_seconds":1e400'),
    "negative_wall": _with(wall_seconds=-3.0),
    "negative_phase": _with(phases={"forward": -1.0}),
    "negative_steps": _with(steps=-972),
    "steps_as_string": _with(steps="4"),
    "steps_as_bool": _with(steps=True),
    "phases_as_list": _with(phases=[1, 2]),
    "unknown_phase": _with(phases={"x" * 100: 1.0}),
    "identity_not_object": _with(identity="rank0"),
    "identity_int_as_str": _with(identity={"rank": "0"}),
    "extra_field": _with(extra=1),
    "unknown_type": _with(type="sample"),
    "garbage": b"\xff\xfe\x00garbage",
    "not_object": b"[1,2,3]",
    "too_big": b'{"pad":"' + b"x" * 70000 + b'"}',
    "event_bad_kind": json.dumps({"type": "event", "version": VERSION, "kind": "A B", "name": "", "t": 1.0}).encode(),
    "event_negative_t": json.dumps({"type": "event", "version": VERSION, "kind": "a", "name": "", "t": -5}).encode(),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_message_is_one_protocol_error(case: str) -> None:
    with pytest.raises(ProtocolError):
        decode(HOSTILE[case])


@pytest.mark.parametrize("version", [None, 1, 3, "2", 2.0])
def test_unknown_version_is_its_own_error(version) -> None:
    d = good()
    d["version"] = version
    with pytest.raises(UnknownVersion):
        decode(json.dumps(d).encode())
    old = json.dumps({"v": 1, "steps": 1, "wall": 0.1, "phases": {}, "facts": {}}).encode()  # the pre-protocol dict
    with pytest.raises(UnknownVersion):
        decode(old)


def test_wrong_fact_is_dropped_not_the_message() -> None:
    d = good()
    d["facts"] = {"low_intensity_op_share": "x", "device": "cpu", "nope": 1}
    r = decode(json.dumps(d).encode())
    assert isinstance(r, StepReport) and dict(r.facts) == {"device": "cpu"} and r.facts.rejected == 2


def test_an_example_count_past_the_bound_is_unknown_not_the_message_refused() -> None:
    """Seen on an H200: a job whose batch is one 1-D tensor of 2**29 elements (each counted as an
    example) had every report after its first refused (17 steps: 9e9 examples), so its run read as
    not training and the verdict came from its first step. The steps and phases must arrive."""
    big = 17 * 2**29
    r = StepReport(ID, 17, 0.5, {"forward": 0.1, "backward": 0.3}, Facts(device="cuda"), examples=big)
    assert "examples" not in json.loads(encode(r))  # the sender leaves out what the receiver would not trust
    back = decode(_with(examples=big))  # and a sender that still sends it is not refused
    assert isinstance(back, StepReport) and back.steps == 4 and back.examples is None
    assert decode(_with(examples=1000)).examples == 1000
    for bad in (-1, "12", 1.5, True):
        with pytest.raises(ProtocolError):
            decode(_with(examples=bad))
