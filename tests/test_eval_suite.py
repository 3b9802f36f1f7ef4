"""The labelled suite's bookkeeping (scripts/eval.py): every workload declares a label in the
shared vocabulary and an intervention with a threshold, and verdicts are scored against it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from bottleneckd.model.resources import RESOURCES, STAGES, UNDETERMINED

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("suite_eval", ROOT / "scripts" / "eval.py")
ev = importlib.util.module_from_spec(spec)
sys.modules["suite_eval"] = ev
spec.loader.exec_module(ev)

WORKLOADS = ev.discover()


def test_the_suite_has_24_cpu_workloads_or_more() -> None:
    assert len([w for w in WORKLOADS if w.needs == "cpu"]) >= 24


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.name)
def test_each_label_is_in_the_vocabulary_with_an_intervention(w) -> None:  # noqa: ANN001
    assert w.labels and all(r in RESOURCES or r == UNDETERMINED for r in w.labels)
    assert w.stage is None or w.stage in STAGES
    if w.needs == "cpu":
        assert w.intervention and w.min_speedup and w.min_speedup > 1.2
        src = (ev.W / f"{w.name}.py").read_text()
        assert "options(__doc__)" in src  # common.options: the --seconds and --intervene the proof passes


def _w(labels: tuple[str, ...], stage: str | None) -> ev.Workload:
    return ev.Workload("x", labels, stage, "i", 2.0, "cpu")


def _doc(resource: str, stage: str) -> dict:
    return {"verdict": {"resource": resource, "stage": stage, "evidence": ["e"]}}


def test_judge_right_wrong_undetermined_and_error() -> None:
    w = _w(("storage_bandwidth",), "data")
    assert ev.judge(w, _doc("storage_bandwidth", "data"))["outcome"] == "right"
    assert ev.judge(w, _doc("storage_bandwidth", "compute"))["outcome"] == "wrong"  # right resource, wrong stage
    assert ev.judge(w, _doc("cpu_compute", "data"))["outcome"] == "wrong"
    assert ev.judge(w, _doc("undetermined", "other"))["outcome"] == "undetermined"
    assert ev.judge(w, {"error": "boom"})["outcome"] == "error"
    idle = _w(("undetermined",), None)
    assert ev.judge(idle, _doc("undetermined", "other"))["outcome"] == "right"
    assert ev.judge(idle, _doc("cpu_compute", "compute"))["outcome"] == "wrong"
    either = _w(("cpu_compute", "storage_bandwidth"), "other")
    assert ev.judge(either, _doc("storage_bandwidth", "other"))["outcome"] == "right"
    assert ev.judge(either, _doc("cpu_compute", "data"))["outcome"] == "wrong"


def test_throughput_reads_the_last_line() -> None:
    assert (
        ev.throughput("throughput: 1.5 steps/s (3 steps)\nnoise\nthroughput: 2.250 steps/s (9 steps in 4.0 s)\n")
        == 2.25
    )
    assert ev.throughput("Traceback ...") is None


def test_confusion_matrix_counts_scored_rows_only() -> None:
    rows = [
        {"label": "a/data", "scored": True, "run": {"resource": "a", "stage": "data"}},
        {"label": "a/data", "scored": True, "run": {"resource": "b", "stage": "data"}},
        {"label": "c/*", "scored": False, "run": {"resource": "b", "stage": "data"}},
    ]
    text = ev.confusion(rows, "run")
    assert "c/*" not in text
    line = next(ln for ln in text.splitlines() if ln.startswith("a/data"))
    assert line.split()[1:] == ["1", "1"]
