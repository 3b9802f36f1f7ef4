"""Traces recorded on a real NVIDIA H200 (real NVML and GPM, the injected hook's CUDA-event phases)
by ``scripts/gpu_check.py``, each labelled by an intervention timed in the same run
(tests/data/h200_real/<name>/expected.json: the intervention, its ratio and the rule it met).
Replayed through ``bottleneckd analyze``: the verdict must stay the label, and the top
recommendation one that a performance engineer would do first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bottleneckd.diagnosis.classify import classify
from bottleneckd.outputs.trace import read_trace
from bottleneckd.runtime.run import Run
from tests.conftest import run_cli
from tests.test_verdict_consistency import check

DATA = Path(__file__).resolve().parent / "data" / "h200_real"
TRACES = sorted(p.parent.name for p in DATA.glob("*/expected.json"))


def test_each_label_was_proved_by_its_intervention():
    assert len(TRACES) >= 5
    for name in TRACES:
        exp = json.loads((DATA / name / "expected.json").read_text())
        how, bound = exp["rule"].rsplit(" ", 1)
        r = exp["ratio"]
        assert (r >= float(bound)) if how in ("faster", "slower") else (r <= float(bound)), (name, exp)
        header, _ = read_trace(str(DATA / name / "trace.jsonl"))
        assert [g.name for g in header.machine.gpus] == ["NVIDIA H200"]


@pytest.mark.parametrize("name", TRACES)
def test_analyze_gives_the_label_and_the_first_thing_to_do(name, cli_env):
    exp = json.loads((DATA / name / "expected.json").read_text())
    r = run_cli(["analyze", "--format", "json", str(DATA / name / "trace.jsonl")], cli_env)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    v = doc["verdict"]
    assert (v["resource"], v["stage"]) == (exp["resource"], exp["stage"]), (exp["intervention"], v["evidence"])
    recs = [x["id"] for x in doc["recommendations"]]
    assert recs and recs[0] in exp["top_recommendations"], recs


@pytest.mark.parametrize("name", TRACES)
def test_no_window_contradicts_its_evidence(name):
    header, samples = read_trace(str(DATA / name / "trace.jsonl"))
    run = Run(header.peaks, header.machine)
    for s in samples:
        snap = run(s)
        check(classify(snap.stats, header.peaks), snap.stats, header.peaks)
