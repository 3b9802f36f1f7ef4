"""The constructed held-out GPU traces through ``bottleneckd analyze``, each against the label a GPU
performance engineer gives it (tests/data/gpu_heldout/<name>/expected.json, written with the traces
by tests/data/construct_gpu.py from tests/data/gpu_scenarios.py).

Per trace: the verdict's resource and stage, the straggler where there is one, the top
recommendation among those the engineer would do first, every recommendation addressing the
verdict (or a secondary), and no window's verdict contradicting its own evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bottleneckd.diagnosis.classify import classify
from bottleneckd.runtime.run import Run
from bottleneckd.outputs.trace import read_trace
from tests.conftest import run_cli
from tests.test_verdict_consistency import check

DATA = Path(__file__).resolve().parent / "data" / "gpu_heldout"
TRACES = sorted(p.parent.name for p in DATA.glob("*/expected.json"))


def test_the_set_covers_the_situations_of_the_brief():
    """At least the 18 labelled situations (a-r), on H100, H200, A100 and L4 nodes and a MIG slice."""
    assert len(TRACES) >= 18
    labels = {json.loads((DATA / t / "expected.json").read_text())["resource"] for t in TRACES}
    assert {
        "gpu_compute",
        "gpu_memory_bandwidth",
        "gpu_memory",
        "cpu_compute",
        "cpu_gpu_interconnect",
        "inter_gpu_interconnect",
        "inter_node_interconnect",
        "storage_bandwidth",
        "undetermined",
    } <= labels
    gpus = {g.name for t in TRACES for g in read_trace(str(DATA / t / "trace.jsonl"))[0].machine.gpus}
    assert {"NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA L4"} <= gpus
    assert any("MIG" in g for g in gpus)


@pytest.mark.parametrize("name", TRACES)
def test_analyze_gives_the_engineers_label(name, cli_env):
    exp = json.loads((DATA / name / "expected.json").read_text())
    r = run_cli(["analyze", "--format", "json", str(DATA / name / "trace.jsonl")], cli_env)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    v = doc["verdict"]
    assert (v["resource"], v["stage"]) == (exp["resource"], exp["stage"]), (exp["why"], v)
    assert v["evidence"], "a verdict comes with its evidence"
    straggler = (v.get("straggler") or {}).get("rank")
    assert straggler == exp.get("straggler_rank"), v.get("straggler")
    recs = doc["recommendations"]
    assert recs, "each of these situations has something to do first"
    assert recs[0]["id"] in exp["top_recommendations"], ([x["id"] for x in recs], exp["top_recommendations"])
    if v["resource"] != "undetermined":
        allowed = {v["resource"]} | {s["resource"] for s in v["secondary"]}
        assert all(x["addresses"] in allowed for x in recs), [(x["id"], x["addresses"]) for x in recs]


@pytest.mark.parametrize("name", TRACES)
def test_no_window_of_the_trace_contradicts_its_evidence(name):
    header, samples = read_trace(str(DATA / name / "trace.jsonl"))
    p = Run(header.peaks, header.machine)
    n = 0
    for s in samples:
        snap = p(s)
        check(classify(snap.stats, header.peaks), snap.stats, header.peaks)
        n += 1
    assert n >= 10
