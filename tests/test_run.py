"""The one Run (runtime/run.py): one fact state per tick for the rules and the advice, each
verdict advised once, the report built in one place from one snapshot, and the end report's
evidence over the whole time its verdict held (issue 24 items 1-2, issue 21 item 8)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.hardware.detect.types import CpuInfo
from bottleneckd.model.facts import Facts
from bottleneckd.model.sample import Sample, StepPhases
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.runtime.run import Run
from tests.conftest import ROOT, run_cli
from tests.windows import HOST, NO_PEAKS, job
from tests.windows import sample as window_sample

FAST_BF16 = Machine("h", CpuInfo("x", 4, 4, 1, None, ("avx2", "avx512_bf16")), None, (), (), (), (), ())
#: a loader-bound CPU job (tests/test_rules.py's case): cpu_compute in the data stage
LOADER_BOUND = {**HOST, **job(4.2, 0.1, workers=4.0, n_workers=4, worker_max=1.0)}
COMPUTE_BOUND = {**HOST, **job(7.8, 1.0)}


def sample(t: float, facts: dict | None) -> Sample:
    ph = None if facts is None else StepPhases(2, 1.0, {"forward": 0.5, "data_wait": 0.5}, Facts(facts))
    return Sample(t, 1.0, (), ph)


def test_facts_are_replaced_not_merged_and_the_machine_facts_stay() -> None:
    m = Machine("h", CpuInfo("x", 4, 4, 1, None, ("avx2",)), None, (), (), (), (), ())
    run = Run(PeakTable(()), m)
    s1 = run(sample(1.0, {"device": "cpu", "autocast_dtype": "bfloat16"}))
    s2 = run(sample(2.0, {"device": "cpu"}))
    s3 = run(sample(3.0, None))  # no report in this interval: the last state holds
    assert s1.facts.get("autocast_dtype") == "bfloat16" and "autocast_dtype" not in s2.facts
    assert s3.facts == s2.facts and s2.facts.get("cpu_fast_bf16") is False and s2.facts.get("gpu_count") == 0


def test_a_reverted_mitigation_is_gone_from_the_rules_and_the_advice_on_the_same_tick() -> None:
    """The rules read the window's facts, the advice the run's: one state per tick for both (the
    window used to merge facts over its samples, so the rules saw a reverted mitigation for a
    window longer than the advice did)."""
    run = Run(NO_PEAKS, FAST_BF16)
    on = {"device": "cpu", "autocast_dtype": "bfloat16", "mitigations": ("mixed_precision",)}
    for t in range(5):
        snap = run(window_sample(COMPUTE_BOUND, {"forward": 0.5, "backward": 0.45, "optimizer": 0.05}, on, t=t))
    assert snap.verdict.resource == "cpu_compute" and snap.verdict.stage == "compute"
    assert snap.stats.phases.facts.get("autocast_dtype") == "bfloat16"
    assert "mixed_precision" in [m.id for m, _ in snap.advice.in_effect]
    snap = run(
        window_sample(COMPUTE_BOUND, {"forward": 0.5, "backward": 0.45, "optimizer": 0.05}, {"device": "cpu"}, t=5)
    )
    rules_see, advice_sees = snap.stats.phases.facts, snap.facts
    assert "autocast_dtype" not in rules_see and "mitigations" not in rules_see
    # the advice reads the same state, with what the window measured besides (diagnosis/measured.py)
    assert "autocast_dtype" not in advice_sees and dict(rules_see).items() <= dict(advice_sees).items()
    assert set(advice_sees) - set(rules_see) <= {"job_idle_cores", "job_threads_waiting_share", "idle_wait_stage"}
    assert "mixed_precision" in [r.mitigation.id for r in snap.recommendations]


def test_each_verdict_is_advised_once_and_the_end_report_on_its_whole_time() -> None:
    """The live advice is made once per verdict; the end report's once more, from the facts and
    inputs of the whole time its verdict held (Pipeline.summary), not the live advisor's memo."""
    from bottleneckd.advice.stage import advise

    run = Run(NO_PEAKS, FAST_BF16)
    for t in range(20):
        run(
            window_sample(
                LOADER_BOUND, {"data_wait": 0.7, "forward": 0.15, "backward": 0.15}, {"loader_workers": 4}, t=t
            )
        )
    advised = run.advisor.advised
    assert advised <= 2, advised  # the first verdict (a window of one sample), then the steady one
    doc = run.report()
    assert run.advisor.advised == advised
    snap = run.latest()
    s = run.pipeline.summary(snap.dominant)
    assert doc["recommendations"] and doc["recommendations"] == [
        r.to_json() for r in advise(snap.dominant, run.advisor.kb, s.facts, s.inputs).recommendations
    ]
    live = [r.to_json()["id"] for r in snap.dominant_advice.recommendations]
    assert [r["id"] for r in doc["recommendations"]] == live


def test_the_end_report_summarises_every_window_of_its_verdict_the_last_only_as_a_note() -> None:
    """30 s of 10 steps a second waiting 70% for data, then 5 s of 2 slow steps a second waiting
    91% (a tear-down): the report's evidence covers all 310 steps, the last window is a note."""
    run = Run(NO_PEAKS, FAST_BF16)
    t = 0.0
    for _ in range(30):
        run(window_sample(LOADER_BOUND, {"data_wait": 0.7, "forward": 0.3}, {"loader_workers": 4}, t=t))
        t += 1
    for _ in range(5):
        s = window_sample(LOADER_BOUND, {"data_wait": 0.91, "forward": 0.09}, {"loader_workers": 4}, t, 2, 0.261)
        run(s)
        t += 1
    doc = run.report()
    v = doc["verdict"]
    assert (v["resource"], v["stage"]) == ("cpu_compute", "data")
    wall = 30 * 10 * 0.1 + 5 * 2 * 0.261
    share = (30 * 0.7 * 1.0 + 5 * 0.91 * 2 * 0.261) / wall  # 72%: all 35 s of it
    want = f"waiting for the next batch {share:.0%} of step time"
    assert any(want in e and "over 310 steps" in e for e in v["evidence"]), v["evidence"]
    assert v["held"]["steps"] == 310 and v["held"]["samples"] == 35
    assert any("over 4 steps" in e and "91%" in e for e in v["last_window"]["evidence"])
    assert abs(v["headroom"] - 1 / (1 - share)) < 1e-3
    from bottleneckd.outputs.report import render_text

    text = render_text(doc)
    assert "over: the 35 s this verdict held while training (310 steps), of a 35 s run" in text
    assert "last window: waiting for the next batch 91%" in text
    current = run.report(current=True)  # the epoch block: the last window, and it says so
    assert "over 4 steps" in current["verdict"]["evidence"][0]
    assert "over: the last 5 s (the diagnosis window: 5 samples)" in render_text(current)


def test_the_report_reads_one_snapshot_while_the_loop_runs() -> None:
    run = Run(PeakTable(()))
    run(sample(0.0, {"device": "cpu"}))
    stop = threading.Event()

    def loop() -> None:
        t = 1.0
        while not stop.is_set():
            run(sample(t, {"device": "cpu", "epoch": int(t)}))
            t += 1.0

    th = threading.Thread(target=loop)
    th.start()
    try:
        for _ in range(200):
            doc = run.report()
            assert doc["samples"] >= 1 and sum(doc["held_seconds"].values()) == doc["samples"] * 1.0
    finally:
        stop.set()
        th.join()
    snap = run.latest()
    assert isinstance(snap.held, tuple) and isinstance(snap.facts, Facts) and run.pipeline.dominant() is snap.dominant


@pytest.mark.slow
def test_report_and_analyze_of_one_trace_give_the_same_advice(tmp_path: Path, cli_env) -> None:
    """Both replay through the one ``replay``: ``report`` used to build its pipeline without the
    trace's machine, so it lacked ``cpu_fast_bf16`` and recommended mixed precision on a CPU
    without bf16 instructions, where ``analyze`` did not."""
    src = (ROOT / "tests" / "data" / "cpu_compute_training" / "trace.jsonl").read_text().splitlines()
    header = json.loads(src[0])
    header["machine"]["cpu"]["flags"] = ["avx", "avx2", "fma"]  # no bf16 instructions
    trace = tmp_path / "no_bf16.jsonl"
    trace.write_text("\n".join([json.dumps(header), *src[1:]]) + "\n")
    a = run_cli(["analyze", str(trace), "--format", "json"], cli_env)
    assert a.returncode == 0, a.stderr
    r = run_cli(["report", str(trace), "-o", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json")], cli_env)
    assert r.returncode == 0, r.stderr
    analyzed, reported = json.loads(a.stdout), json.loads((tmp_path / "r.json").read_text())
    assert analyzed["facts"]["cpu_fast_bf16"] is False and reported["facts"]["cpu_fast_bf16"] is False
    assert "mixed_precision" in [x["id"] for x in analyzed["not_fitting"]]
    for key in ("verdict", "recommendations", "not_fitting", "already_in_effect", "step_phases", "throughput"):
        assert analyzed[key] == reported[key], key


def test_the_summary_keeps_the_stragglers_evidence_and_its_own_verdict() -> None:
    """A straggler's lines (diagnosis/straggler.py) follow the whole-time evidence; a verdict the
    straggler made (load imbalance) keeps its own evidence and headroom."""
    from dataclasses import replace

    run = Run(NO_PEAKS, FAST_BF16)
    for t in range(10):
        run(window_sample(LOADER_BOUND, {"data_wait": 0.7, "forward": 0.3}, {"loader_workers": 4}, t=t))
    v = run.latest().dominant
    line = "straggler: rank 2 on node-a computes 30% longer than the median rank"
    named = replace(v, evidence=(*v.evidence, line), straggler={"rank": 2, "evidence": [line]})
    s = run.pipeline.summary(named)
    assert s is not None and s.verdict.evidence[-1] == line and "over 100 steps" in s.verdict.evidence[0]
    made = replace(named, headroom=1.25, straggler={"rank": 2, "evidence": [line], "limits_the_step": True})
    assert run.pipeline.summary(made).verdict == made


def test_a_trace_in_pieces_replays_as_the_whole_and_overlapping_traces_as_nodes(tmp_path: Path) -> None:
    from bottleneckd.runtime.replay import load

    whole = ROOT / "tests" / "data" / "regime_change" / "trace.jsonl"
    lines = whole.read_text().splitlines()
    samples = [ln for ln in lines[1:] if '"type": "sample"' in ln or '"type":"sample"' in ln]
    half = len(samples) // 2
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    b.write_text("\n".join([lines[0], *samples[half:]]) + "\n")  # given first: order comes from time
    a.write_text("\n".join([lines[0], *samples[:half]]) + "\n")
    one, two = load((str(whole),)), load((str(b), str(a)))
    one.feed()
    two.feed()
    assert two.fed == one.fed == len(samples)
    r1, r2 = one.run.report(), two.run.report()
    for key in ("verdict", "step_phases", "throughput", "regime_changes", "recommendations"):
        assert r1[key] == r2[key], key
    nodes = load((str(whole), str(whole)))  # the same span twice: two nodes, merged tick by tick
    nodes.feed()
    assert nodes.fed == len(samples)


def test_the_end_reports_advice_is_made_from_the_whole_time_its_verdict_held() -> None:
    """The predictions of the end report come from its regime's samples, not its last window (under
    attach a handful of stack samples: text_collate_tokenize's data wait was 17% of its last window,
    42% of the run, and a smaller model was predicted higher than caching)."""
    run = Run(NO_PEAKS, FAST_BF16)
    for t in range(12):
        data = 0.7 if t < 8 else 0.3  # the last window waits less on the loader than the run did
        run(window_sample(LOADER_BOUND, {"data_wait": data, "forward": 1 - data}, {"loader_workers": 4}, t=t))
    snap = run.latest()
    assert snap.dominant.resource == "cpu_compute" and snap.dominant.stage == "data"
    last = snap.diagnosis.dominant_inputs.share("data_wait")
    summary = run.pipeline.summary(snap.dominant)
    whole = summary.inputs.share("data_wait")
    assert last.value == pytest.approx(0.3) and 0.5 < whole.value < 0.7
    assert whole.low <= 0.3 + 0.005 and whole.high >= 0.7 - 0.005  # the per-sample range over the regime
    doc = run.report()
    assert doc["whatif_inputs"]["shares"]["data_wait"]["value"] == pytest.approx(whole.value)
    assert doc["facts"]["job_idle_cores"] == summary.facts["job_idle_cores"]
    recs = {r["id"]: r for r in doc["recommendations"]}
    cache = recs["cache_preprocessing"]["prediction"]
    assert cache["speedup"] == pytest.approx(1 / (1 - whole.value), rel=0.05), cache
