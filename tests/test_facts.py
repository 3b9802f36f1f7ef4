"""Typed facts: declared types, set and unset, bad values dropped and counted, bounded size."""

from __future__ import annotations

import json

from bottleneckd.model.facts import FACTS, MAX_STR, FactBoard, Facts


def test_typed_values_kept_and_wrong_ones_dropped() -> None:
    f = Facts({"device": "cpu", "loader_workers": 4, "has_conv": True, "achieved_flops": 3,
               "low_intensity_op_share": "x", "loader_workers_saturate_cores": 1, "epoch": -1, "made_up": 1,
               "arithmetic_intensity": float("inf"), "autocast_dtype": "float64"})
    assert dict(f) == {"device": "cpu", "loader_workers": 4, "has_conv": True, "achieved_flops": 3.0}
    assert f.rejected == 6 and any("low_intensity_op_share" in d for d in f.dropped)
    assert f.get("missing") is None and f.get("missing", 5) == 5 and "device" in f


def test_set_and_unset_make_new_facts() -> None:
    f = Facts(autocast_dtype="bfloat16")
    g = f.unset("autocast_dtype")
    assert "autocast_dtype" in f and "autocast_dtype" not in g
    assert g.set(channels_last=True).get("channels_last") is True


def test_facts_are_immutable() -> None:
    f = Facts(device="cpu")
    try:
        f._d = {}  # type: ignore[misc]
    except AttributeError:
        pass
    else:
        raise AssertionError("Facts accepted an assignment")
    assert dict(f) == {"device": "cpu"}


def test_board_validates_on_write_and_unsets() -> None:
    b = FactBoard({"device": "cpu"})
    b["autocast_dtype"] = "bfloat16"
    b["has_conv"] = "yes"  # wrong type: dropped, counted, not raised
    assert b.rejected == 1 and "has_conv" not in b
    assert b.freeze().get("autocast_dtype") == "bfloat16"
    b.pop("autocast_dtype")
    assert "autocast_dtype" not in b.freeze()
    b["prefetch_factor"] = None  # None unsets
    assert "prefetch_factor" not in b


def test_size_is_bounded_whatever_arrives() -> None:
    raw = {f"k{i}": "x" * 10_000 for i in range(1000)}
    raw.update({name: "y" * 10_000 for name in FACTS})
    f = Facts(raw)
    assert len(json.dumps(f.to_json())) < 100 and f.rejected == 1000 + len(FACTS)
    biggest = {n: ("x" * MAX_STR if s.type == "str" and not s.choices else None) for n, s in FACTS.items()}
    assert len(json.dumps(Facts({k: v for k, v in biggest.items() if v}).to_json())) < 64 * len(FACTS) + 2000
