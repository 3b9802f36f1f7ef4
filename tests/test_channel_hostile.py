"""A standing hostile-sender suite for the hook -> sidecar channel (issue 16 items 1-6).

Real Unix datagram sockets, real datagrams from another socket, as any local process could send
them. After every case the receiver must still receive a good report, and the diagnosis
(a real Pipeline over the drained phases) must still update with that report's facts.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from pathlib import Path

import pytest

from bottleneckd.channel.link import MAX_RANKS, PhaseReceiver, PhaseSender
from bottleneckd.channel.socket_path import ChannelError
from bottleneckd.diagnosis.pipeline import Pipeline
from bottleneckd.model.facts import FACTS, MAX_STR, Facts
from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.protocol import VERSION, Event, StepReport, encode
from bottleneckd.model.sample import Sample
from bottleneckd.peaks.resolve import PeakTable

ID = RankIdentity.from_env({}, pid=1, host="h")


def report(epoch: int = 0, identity: RankIdentity = ID, **facts) -> StepReport:
    return StepReport(identity, 2, 0.4, {"data_wait": 0.3, "forward": 0.1}, Facts(device="cpu", epoch=epoch, **facts))


def raw_step(**kw) -> bytes:
    d = json.loads(encode(report()))
    d.update(kw)
    return json.dumps(d, separators=(",", ":")).encode()


def blast(path: str, data: bytes) -> None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    try:
        s.sendto(data, path)
    finally:
        s.close()


def wait_for(rx: PhaseReceiver, n: int, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        c = rx.counters()
        if c["received"] + c["rejected"] + c["unknown_version"] >= n:
            return
        time.sleep(0.01)
    raise AssertionError(f"receiver saw fewer than {n} datagrams: {rx.counters()}")


def seen(rx: PhaseReceiver) -> int:
    c = rx.counters()
    return c["received"] + c["rejected"] + c["unknown_version"]


def still_works(rx: PhaseReceiver, pipeline: Pipeline, epoch: int) -> None:
    """A good report after the hostile ones is received and reaches the diagnosis."""
    assert rx.alive, "the channel thread died"
    before = seen(rx)
    PhaseSender(rx.path).send(report(epoch))
    wait_for(rx, before + 1)
    job, ranks = rx.drain_ranks()
    assert job is not None and ranks and ranks[0].identity.key == ID.key
    snap = pipeline(Sample(time.time(), 1.0, (), job, ranks=ranks))
    assert snap.facts.get("epoch") == epoch and snap.facts.get("device") == "cpu"
    assert all(isinstance(v, (bool, int, float, str, tuple)) for v in snap.facts.values())


@pytest.fixture
def rx(tmp_path: Path):
    r = PhaseReceiver(str(tmp_path / "chan" / "bottleneckd.sock")).start()
    yield r
    r.close()


@pytest.fixture
def pipeline() -> Pipeline:
    return Pipeline(PeakTable(()), window=3)


def _deep(d: dict) -> bytes:
    return json.dumps(d).encode()


HOSTILE: dict[str, bytes] = {
    "nested_lists_60000": b"[" * 60000,
    "nested_objects": b'{"a":' * 20000,
    "infinity_steps": b'{"type":"step","version":%d,"steps":Infinity}' % VERSION,
    "nan_wall": raw_step(wall_seconds=float("nan")),
    "digits_400": raw_step().replace(b'"steps":2', b'"steps":' + b"7" * 400),
    "float_1e400": raw_step().replace(b'"wall_seconds":0.4', b'"wall_seconds":1e400'),
    "negative_wall": raw_step(wall_seconds=-972.0),
    "negative_steps": raw_step(steps=-972),
    "negative_phase": raw_step(phases={"forward": -1.0}),
    "steps_string": raw_step(steps="2"),
    "phases_list": raw_step(phases=[["forward", 1.0]]),
    "phase_value_string": raw_step(phases={"forward": "1"}),
    "identity_string": raw_step(identity="rank0"),
    "identity_huge_rank": raw_step(identity={"rank": 10**12}),
    "unknown_phase": raw_step(phases={"p" * 1000: 1.0}),
    "extra_field": raw_step(x=1),
    "facts_list": raw_step(facts=[1, 2]),
    "unknown_version_1": json.dumps({"v": 1, "pid": 1, "steps": 3, "wall": 0.1, "phases": {}, "facts": {}}).encode(),
    "unknown_version_99": raw_step(version=99),
    "version_as_string": raw_step(version=str(VERSION)),
    "event_without_kind": json.dumps({"type": "event", "version": VERSION, "name": "x", "t": 1.0}).encode(),
    "event_negative_t": json.dumps(
        {"type": "event", "version": VERSION, "kind": "mitigation_applied", "name": "x", "t": -1}
    ).encode(),
    "garbage_bytes": os.urandom(512),
    "pickle": b"\x80\x04K\x01.",
    "empty": b"",
    "utf16": json.dumps({"type": "step"}).encode("utf-16"),
    "oversized_100k": b'{"type":"step","pad":"' + b"x" * 100_000 + b'"}',
    # issue 25 item 4: a lone surrogate is valid JSON but not text; it made every /metrics answer 500
    "lone_surrogate_event_name": b'{"type":"event","version":2,"kind":"mitigation_applied","name":"\\ud800","t":1}',
    "lone_surrogate_job": raw_step().replace(b'"job":"local"', b'"job":"\\udfff"'),
    "lone_surrogate_fact_key": raw_step().replace(b'"facts":{', b'"facts":{"\\ud800x":1,'),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_datagram_is_counted_and_the_channel_lives(case: str, rx: PhaseReceiver, pipeline: Pipeline) -> None:
    before = rx.counters()
    n = seen(rx)
    blast(rx.path, HOSTILE[case])
    wait_for(rx, n + 1)
    after = rx.counters()
    assert after["received"] == before["received"], f"{case} was accepted"
    assert after["rejected"] + after["unknown_version"] == before["rejected"] + before["unknown_version"] + 1
    if case.startswith(("unknown_version", "version_as")):
        assert after["unknown_version"] == before["unknown_version"] + 1
    assert rx.drain() is None  # a rejected message changes nothing
    still_works(rx, pipeline, epoch=7)


def test_a_wrongly_typed_fact_is_dropped_and_the_diagnosis_goes_on(rx: PhaseReceiver, pipeline: Pipeline) -> None:
    d = json.loads(encode(report(3)))
    d["facts"]["low_intensity_op_share"] = "x"
    d["facts"]["loader_workers"] = [1]
    blast(rx.path, json.dumps(d).encode())
    wait_for(rx, 1)
    assert rx.counters()["facts_rejected"] == 2 and rx.counters()["received"] == 1
    job, ranks = rx.drain_ranks()
    snap = pipeline(Sample(time.time(), 1.0, (), job, ranks=ranks))
    assert "low_intensity_op_share" not in snap.facts and snap.facts.get("epoch") == 3
    still_works(rx, pipeline, epoch=4)


@pytest.mark.slow
def test_hundreds_of_messages_with_large_facts_stay_bounded(rx: PhaseReceiver, pipeline: Pipeline) -> None:
    big = {f"junk{i}": "x" * 200 for i in range(200)}
    big.update({n: "y" * MAX_STR for n, s in FACTS.items() if s.type == "str" and not s.choices})
    for k in range(500):
        d = json.loads(encode(report(k)))
        d["facts"].update(big)
        d["facts"]["epoch"] = k
        blast(rx.path, json.dumps(d).encode())
        if k % 50 == 49:
            wait_for(rx, k + 1)
    wait_for(rx, 500)
    assert rx.counters()["received"] == 500
    job, ranks = rx.drain_ranks()
    assert job is not None and job.steps == 1000 and len(ranks) == 1  # one rank: accumulated, facts replaced
    sample = Sample(time.time(), 1.0, (), job, ranks=ranks)
    line = json.dumps(sample.to_json())
    assert len(line) < 8000, f"a trace line of {len(line)} bytes"
    snap = pipeline(sample)
    assert snap.facts.get("epoch") == 499 and not any(k.startswith("junk") for k in snap.facts)
    still_works(rx, pipeline, epoch=500)


def test_facts_set_then_unset_round_trip(rx: PhaseReceiver, pipeline: Pipeline) -> None:
    send = PhaseSender(rx.path)
    send.send(report(1, autocast_dtype="bfloat16", mitigations=("mixed_precision",)))
    wait_for(rx, 1)
    snap = pipeline(Sample(time.time(), 1.0, (), rx.drain()))
    assert snap.facts.get("autocast_dtype") == "bfloat16"
    send.send(report(2))  # reverted: the hook's whole state no longer has it
    wait_for(rx, 2)
    snap = pipeline(Sample(time.time(), 1.0, (), rx.drain()))
    assert "autocast_dtype" not in snap.facts and "mitigations" not in snap.facts
    snap = pipeline(Sample(time.time(), 1.0, (), None))  # an interval with no report keeps the last state
    assert snap.facts.get("epoch") == 2


def test_a_surrogate_pair_is_text_and_accepted(rx: PhaseReceiver) -> None:
    """Only a lone surrogate is refused: an escaped pair is one character (here U+1F600)."""
    blast(rx.path, b'{"type":"event","version":2,"kind":"mitigation_applied","name":"\\ud83d\\ude00","t":1}')
    wait_for(rx, 1)
    assert rx.counters()["received"] == 1 and rx.events_since(0)[0][0].name == "\U0001f600"


def test_ranks_are_kept_apart_and_bounded(rx: PhaseReceiver, pipeline: Pipeline) -> None:
    r1 = RankIdentity.from_env({"RANK": "1", "WORLD_SIZE": "2"}, pid=2, host="h")
    send = PhaseSender(rx.path)
    send.send(report(1, identity=ID, loader_workers=2))
    wait_for(rx, 1)
    send.send(report(1, identity=r1))
    wait_for(rx, 2)
    job, ranks = rx.drain_ranks()
    assert [r.identity.rank for r in ranks] == [0, 1] and job.steps == 4
    assert job.facts.get("loader_workers") == 2 and "loader_workers" not in ranks[1].phases.facts
    for k in range(MAX_RANKS + 100):  # a flood of invented ranks: the oldest are forgotten
        rx.accept(report(0, identity=RankIdentity("j", "", 0, k, 0, 1, 1, "h", 0)))
    assert len(rx._ranks) <= MAX_RANKS
    rx.drain()
    still_works(rx, pipeline, epoch=9)


def test_events_use_the_protocol_and_are_never_lost_by_position(rx: PhaseReceiver) -> None:
    send = PhaseSender(rx.path)
    for k in range(300):  # one at a time: the sender is lossy when the socket's queue is full
        assert send.send(Event("mitigation_applied", f"m{k}", 1.0 + k))
        wait_for(rx, k + 1)
    wait_for(rx, 300)
    got, n = rx.events_since(0)
    assert n == 300 and len(got) == 256 and got[-1].name == "m299"  # the buffer keeps the newest
    send.send(Event("mitigation_reverted", "m0", 400.0))
    wait_for(rx, 301)
    more, n2 = rx.events_since(n)
    assert n2 == 301 and [(e.kind, e.name) for e in more] == [("mitigation_reverted", "m0")]


# --- the socket and its directory (issue 16 item 6) ----------------------------------------
def test_directory_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown a directory to another user")
    d = tmp_path / "other"
    d.mkdir(mode=0o700)
    os.chown(d, 54321, 54321)
    with pytest.raises(ChannelError, match=r"owned by uid 54321.*--socket"):
        PhaseReceiver(str(d / "bottleneckd.sock"))
    assert not (d / "bottleneckd.sock").exists()
    # and the hook does not send its reports there
    sender = PhaseSender(str(d / "bottleneckd.sock"))
    assert sender.send(report()) is False and "owned by uid 54321" in sender.untrusted


def test_world_writable_directory_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "open"
    d.mkdir()
    os.chmod(d, 0o777)
    with pytest.raises(ChannelError, match=r"writable by others \(mode 0777\)"):
        PhaseReceiver(str(d / "bottleneckd.sock"))
    os.chmod(d, 0o770)
    with pytest.raises(ChannelError, match="writable by its group"):
        PhaseReceiver(str(d / "bottleneckd.sock"))


def test_new_directory_is_created_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "fresh" / "s.sock"
    r = PhaseReceiver(str(path)).start()
    try:
        assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700 and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    finally:
        r.close()
    assert not path.exists()


def test_socket_path_on_a_regular_file_is_refused_and_kept(tmp_path: Path) -> None:
    f = tmp_path / "precious.txt"
    f.write_text("keep me")
    with pytest.raises(ChannelError, match="not a socket"):
        PhaseReceiver(str(f))
    assert f.read_text() == "keep me"
    link = tmp_path / "link.sock"
    link.symlink_to(f)
    with pytest.raises(ChannelError, match="not a socket"):
        PhaseReceiver(str(link))
    assert f.read_text() == "keep me"


def test_a_second_receiver_on_a_live_socket_is_refused(rx: PhaseReceiver, pipeline: Pipeline) -> None:
    with pytest.raises(ChannelError, match="another bottleneckd sidecar is listening"):
        PhaseReceiver(rx.path)
    still_works(rx, pipeline, epoch=11)  # the first still hears the hook


def test_a_stale_socket_of_ours_is_replaced(tmp_path: Path) -> None:
    path = str(tmp_path / "stale.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.close()  # the file stays, nobody listens
    r = PhaseReceiver(path).start()
    try:
        PhaseSender(path).send(report(5))
        wait_for(r, 1)
        assert r.drain() is not None
    finally:
        r.close()


def test_close_unlinks_only_its_own_socket(tmp_path: Path, pipeline: Pipeline) -> None:
    path = str(tmp_path / "own.sock")
    first = PhaseReceiver(path).start()
    os.unlink(path)  # someone removed it and a successor bound the same path
    second = PhaseReceiver(path).start()
    try:
        first.close()
        assert os.path.exists(path), "the first sidecar unlinked its successor's socket"
        still_works(second, pipeline, epoch=12)
    finally:
        second.close()
    assert not os.path.exists(path)


def test_the_sender_never_blocks_or_raises(tmp_path: Path) -> None:
    path = str(tmp_path / "slow.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(path)  # bound but never read: its queue fills
    try:
        s = PhaseSender(path)
        t0 = time.perf_counter()
        for k in range(5000):
            s.send(report(k))
        took = time.perf_counter() - t0
        assert s.dropped > 0 and s.sent > 0 and took < 5.0
        assert PhaseSender(str(tmp_path / "absent.sock")).send(report()) is False
    finally:
        listener.close()


def test_the_sender_finds_a_socket_directory_made_anew(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook holds the directory it checked; when that directory is removed and made again (a
    sidecar restarted after a clean-up), the new one is checked and held within RECHECK_SECONDS."""
    import shutil

    from bottleneckd.channel import link

    monkeypatch.setattr(link, "RECHECK_SECONDS", 0.2)
    path = str(tmp_path / "d" / "bottleneckd.sock")
    first = PhaseReceiver(path).start()
    sender = PhaseSender(path)
    assert sender.send(report(1))
    wait_for(first, 1)
    first.close()
    assert sender.send(report(2)) is False  # the socket is gone; the directory is still there
    shutil.rmtree(tmp_path / "d")
    second = PhaseReceiver(path).start()
    try:
        end = time.monotonic() + 10
        while not sender.send(report(3)):
            assert time.monotonic() < end, "the sender never found the new directory"
            time.sleep(0.05)
        wait_for(second, 1)
        assert second.drain().facts.get("epoch") == 3
    finally:
        sender.close()
        second.close()


# --- the same through the command line: one line, exit code 2, nothing lost ----------------
@pytest.mark.slow
def test_cli_refuses_a_regular_file_as_socket(tmp_path: Path, cli_env: dict) -> None:
    from tests.conftest import run_cli

    f = tmp_path / "notes.txt"
    f.write_text("keep me")
    r = run_cli(["record", "-o", str(tmp_path / "t.jsonl"), "--socket", str(f), "--duration", "1"], cli_env)
    assert r.returncode == 2 and "not a socket" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and f.read_text() == "keep me"


@pytest.mark.slow
def test_cli_refuses_a_second_sidecar_on_a_live_socket(
    tmp_path: Path, cli_env: dict, rx: PhaseReceiver, pipeline: Pipeline
) -> None:
    from tests.conftest import run_cli

    r = run_cli(["record", "-o", str(tmp_path / "t.jsonl"), "--socket", rx.path, "--duration", "1"], cli_env)
    assert r.returncode == 2 and "another bottleneckd sidecar is listening" in r.stderr and "Traceback" not in r.stderr
    still_works(rx, pipeline, epoch=13)  # the first sidecar was not deafened


# --- rank floods and /metrics (issue 25 items 4 and 6) -------------------------------------
def test_silent_ranks_are_forgotten_and_the_cap_is_counted(rx: PhaseReceiver, pipeline: Pipeline) -> None:
    """Between two drains at most MAX_RANKS ranks are kept (the least recently heard dropped and
    counted); a rank with nothing since the last drain is forgotten at the next one."""
    flood = [RankIdentity("x" * 100 + str(k), "", 0, k, 0, 1, 1, "n" * 128, 0) for k in range(MAX_RANKS + 100)]
    for ident in flood:
        rx.accept(report(0, identity=ident))
    assert len(rx._ranks) == MAX_RANKS and rx.counters()["ranks_dropped"] == 100
    job, ranks = rx.drain_ranks()
    assert len(ranks) == MAX_RANKS and job.steps == 2 * MAX_RANKS
    assert {r.identity.rank for r in ranks} == set(range(100, MAX_RANKS + 100))  # the newest kept
    rx.accept(report(1))  # only this rank reports in the next interval
    job, ranks = rx.drain_ranks()
    assert [r.identity.key for r in ranks] == [ID.key] and len(rx._ranks) == 1  # the flood's ranks are gone
    assert rx.drain_ranks() == (None, ()) and len(rx._ranks) == 0
    still_works(rx, pipeline, epoch=14)


def _serve(tmp_path: Path, cli_env: dict) -> tuple[object, str, str]:
    import subprocess
    import sys

    from tests.prometheus_server import free_port, wait_http

    sock = str(tmp_path / "s" / "bottleneckd.sock")
    url = f"http://127.0.0.1:{free_port()}/metrics"
    p = subprocess.Popen(
        [sys.executable, "-m", "bottleneckd.cli", "serve", "--quiet", "--interval", "0.5", "--socket", sock]
        + ["--bind", url.split("/")[2]],
        env=cli_env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_http(url, timeout=60)
    except BaseException:
        p.kill()
        raise
    return p, sock, url


def _scrape(url: str) -> tuple[int, str]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""


def _value(body: str, name: str) -> float | None:
    line = next((x for x in body.splitlines() if x.startswith(name + " ") or x.startswith(name + "{")), None)
    return None if line is None else float(line.rsplit(" ", 1)[1])


@pytest.mark.slow
def test_serve_answers_every_scrape_after_lone_surrogates(tmp_path: Path, cli_env: dict) -> None:
    """One event whose name is a lone surrogate made every /metrics answer 500 until 256 more
    events pushed it out; as a rank's job name, as long as that rank reported."""
    p, sock, url = _serve(tmp_path, cli_env)
    try:
        blast(sock, HOSTILE["lone_surrogate_event_name"])
        for _ in range(6):
            blast(sock, HOSTILE["lone_surrogate_job"])
            blast(sock, encode(Event("mitigation_applied", "channels_last", time.time())))
            blast(sock, encode(report(1)))
            time.sleep(0.25)

        def rejected(body: str) -> list[str]:
            key = 'bottleneckd_channel_messages_total{outcome="rejected"'
            return [x for x in body.splitlines() if x.startswith(key)]

        deadline = time.monotonic() + 30  # every scrape answers while the sidecar counts all 7 messages
        while True:
            status, body = _scrape(url)
            assert status == 200, "a scrape failed after a lone surrogate"
            counted = rejected(body) and float(rejected(body)[0].rsplit(" ", 1)[1]) >= 7.0
            if ('mitigation="channels_last"' in body and counted) or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        assert 'mitigation="channels_last"' in body  # the good event after the bad one is exported
        assert rejected(body) and float(rejected(body)[0].rsplit(" ", 1)[1]) == 7.0, rejected(body)
    finally:
        p.terminate()
        p.wait(timeout=30)


@pytest.mark.slow
def test_serve_bounds_a_flood_of_rank_identities(tmp_path: Path, cli_env: dict) -> None:
    """Reports under 3000 distinct 128-character identities: /metrics never holds more than
    MAX_RANKS ranks and counts the ranks it dropped."""
    p, sock, url = _serve(tmp_path, cli_env)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        for k in range(3000):
            ident = RankIdentity(f"{k:0128d}", "", 0, k, 0, 3000, 3000, "n" * 128, 0)
            s.sendto(encode(report(0, identity=ident)), sock)  # blocking: waits for room in the queue
        s.close()
        most = 0
        for _ in range(20):
            status, body = _scrape(url)
            assert status == 200
            most = max(most, body.count("bottleneckd_rank_step_seconds{"))
            dropped = _value(body, "bottleneckd_channel_ranks_dropped_total")
            if dropped:
                break
            time.sleep(0.25)
        assert 0 < most <= MAX_RANKS and dropped and dropped >= 1, (most, dropped)
    finally:
        p.terminate()
        p.wait(timeout=30)
