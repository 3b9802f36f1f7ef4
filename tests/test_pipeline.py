"""Pipeline: facts replaced per report over the machine's, the dominant verdict, and a snapshot
that holds everything a reader on another thread needs (issue 10 items 1 and 8)."""

from __future__ import annotations

import threading

from bottleneckd.diagnosis.pipeline import Pipeline, dominant_of
from bottleneckd.diagnosis.verdict import Verdict
from bottleneckd.hardware.detect.machine import CpuInfo, Machine
from bottleneckd.model.facts import Facts
from bottleneckd.model.sample import Sample, StepPhases
from bottleneckd.outputs.report import build_report
from bottleneckd.peaks.resolve import PeakTable


def v(resource: str) -> Verdict:
    return Verdict(resource=resource, stage="compute", confidence=0.7, evidence=())


def test_dominant_prefers_a_bottleneck_that_held_three_intervals_over_longer_idle() -> None:
    last = {"undetermined": v("undetermined"), "cpu_compute": v("cpu_compute")}
    assert dominant_of({"undetermined": 20.0, "cpu_compute": 3.0}, {}, last, 1.0).resource == "cpu_compute"
    assert dominant_of({"undetermined": 20.0, "cpu_compute": 2.0}, {}, last, 1.0).resource == "undetermined"
    assert dominant_of({}, {}, {}, 1.0) is None


def test_dominant_counts_training_windows_first() -> None:
    last = {"cpu_compute": v("cpu_compute"), "storage_bandwidth": v("storage_bandwidth")}
    held = {"cpu_compute": 30.0, "storage_bandwidth": 10.0}  # set-up and tear-down were CPU-bound
    training = {"storage_bandwidth": 10.0, "cpu_compute": 1.0}
    assert dominant_of(held, training, last, 1.0).resource == "storage_bandwidth"


def sample(t: float, facts: dict | None) -> Sample:
    ph = None if facts is None else StepPhases(2, 1.0, {"forward": 0.5, "data_wait": 0.5}, Facts(facts))
    return Sample(t, 1.0, (), ph)


def test_facts_are_replaced_not_merged_and_the_machine_facts_stay() -> None:
    m = Machine("h", CpuInfo("x", 4, 4, 1, None, ("avx2",)), None, (), (), (), (), ())
    p = Pipeline(PeakTable(()), machine=m)
    s1 = p(sample(1.0, {"device": "cpu", "autocast_dtype": "bfloat16"}))
    s2 = p(sample(2.0, {"device": "cpu"}))
    s3 = p(sample(3.0, None))  # no report in this interval: the last state holds
    assert s1.facts.get("autocast_dtype") == "bfloat16" and "autocast_dtype" not in s2.facts
    assert s3.facts == s2.facts and s2.facts.get("cpu_fast_bf16") is False and s2.facts.get("gpu_count") == 0


def test_the_report_reads_one_snapshot_while_the_loop_runs() -> None:
    p = Pipeline(PeakTable(()))
    p(sample(0.0, {"device": "cpu"}))
    stop = threading.Event()

    def loop() -> None:
        t = 1.0
        while not stop.is_set():
            p(sample(t, {"device": "cpu", "epoch": int(t)}))
            t += 1.0

    th = threading.Thread(target=loop)
    th.start()
    try:
        for _ in range(200):
            doc = build_report(p)
            assert doc["samples"] >= 1 and sum(doc["held_seconds"].values()) == doc["samples"] * 1.0
    finally:
        stop.set()
        th.join()
    snap = p.latest
    assert isinstance(snap.held, tuple) and isinstance(snap.facts, Facts) and p.dominant() is snap.dominant
