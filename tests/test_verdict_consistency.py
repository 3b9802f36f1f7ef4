"""No verdict contradicts its own evidence: a property of every window of every scenario trace and
of generated windows (hypothesis). The evidence each verdict needs is written here from the raw
window figures, independently of the rules' own helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bottleneckd.diagnosis.classify import classify
from bottleneckd.diagnosis.pipeline import Pipeline
from bottleneckd.diagnosis.ridge import lowest_ridge
from bottleneckd.diagnosis.verdict import Verdict
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import CAPACITY_RESOURCES, UNDETERMINED
from bottleneckd.outputs.trace import read_trace
from bottleneckd.peaks.resolve import PeakTable
from tests.windows import NO_PEAKS, window

DATA = Path(__file__).resolve().parent / "data"
SCENARIOS = sorted(p.parent.name for p in DATA.glob("*/expected.json"))


def _share(w: WindowStats, *names: str) -> float:
    p = w.phases
    return sum(p.share(n) or 0.0 for n in names) if p else 0.0


def cpu_is_busy(w: WindowStats) -> bool:
    g = w.get
    cores = g("cpu_compute", "job", "usable_cores") or g("cpu_compute", "host", "cores") or 1.0
    busy = g("cpu_compute", "job", "busy_cores")
    demand = None if busy is None else busy + (g("cpu_compute", "job", "runqueue_wait_cores") or 0.0)
    threads = [
        g("cpu_compute", "job", m) or 0.0
        for m in (
            "main_busy_cores",
            "hottest_thread_busy",
            "main_thread_demand",
            "hottest_thread_demand",
            "worker_max_busy_cores",
            "worker_max_demand",
        )
    ]
    if max(threads) >= 0.85:
        return True
    if busy is None:
        return (g("cpu_compute", "host", "utilization") or 0.0) >= 0.8
    workers, n = g("cpu_compute", "job", "worker_busy_cores"), g("cpu_compute", "job", "workers")
    if n is None and g("cpu_compute", "job", "processes") is not None:
        n = g("cpu_compute", "job", "processes") - 1
    if workers is not None and n and workers >= 0.8 * n:
        return True
    psi = g("cpu_compute", "job", "pressure_some") or g("cpu_compute", "host", "pressure_some") or 0.0
    return max(busy, demand or 0.0) >= 0.8 * cores or (psi >= 0.2 and busy >= 0.5)


def gpu_never_idles(w: WindowStats) -> bool:
    """Some GPU ran kernels 95% of the time or more (NVML's busy fraction)."""
    return (w.get("gpu_compute", None, "busy_fraction") or 0.0) >= 0.95


def storage_is_waited_on(w: WindowStats) -> bool:
    g = w.get
    return any(
        [
            (g("storage_bandwidth", None, "utilization") or 0.0) >= 0.6,
            (g("storage_bandwidth", None, "busy") or 0.0) >= 0.3,
            (
                g("cpu_compute", "job", "threads_in_disk_wait")
                or g("cpu_compute", "job", "processes_in_disk_wait")
                or 0.0
            )
            >= 0.3,
            (g("cpu_compute", "host", "iowait") or 0.0) >= 0.3,
            (g("storage_bandwidth", "job", "pressure_some") or g("storage_bandwidth", "host", "pressure_some") or 0.0)
            >= 0.2,
            (g("storage_bandwidth", "job", "write_bytes_per_second") or 0.0) >= 20e6,
        ]
    )


def memory_bound_evidence(w: WindowStats, peaks: PeakTable) -> bool:
    facts = w.phases.facts if w.phases else {}
    ai = facts.get("arithmetic_intensity")
    ridge = lowest_ridge()
    pb, pc = peaks.value("cpu_memory_bandwidth", "host"), peaks.value("cpu_compute", "cpu")
    byts, flops = facts.get("achieved_bytes_per_second"), facts.get("achieved_flops")
    return any(
        [
            (w.get("cpu_memory_bandwidth", "host", "utilization") or 0.0) >= 0.6,
            ai is not None and ridge is not None and ai < ridge.flop_per_byte,
            (facts.get("low_intensity_op_share") or 0.0) >= 0.6,
            bool(pb and pc and byts is not None and flops is not None and byts / pb > flops / pc),
        ]
    )


def check(v: Verdict, w: WindowStats, peaks: PeakTable) -> None:
    where = (v.resource, v.stage, v.evidence)
    if v.resource == UNDETERMINED:
        assert v.reason, where
        return
    assert v.evidence, where
    assert not any("CPUs not saturated" in e for e in v.evidence), where
    if v.resource == "cpu_compute" and not (
        w.devices("gpu_compute") and (w.phases and str(w.phases.facts.get("device", "")).startswith("cuda"))
    ):
        assert cpu_is_busy(w), ("cpu_compute needs the job's CPUs (or one thread) busy", where)
    if v.resource == "storage_bandwidth":
        assert storage_is_waited_on(w), where
    if v.resource == "cpu_memory_bandwidth":
        assert memory_bound_evidence(w, peaks), where
    if v.resource in ("inter_gpu_interconnect", "inter_node_interconnect") and w.phases is not None:
        facts = w.phases.facts
        ranks = max(w.get("cpu_compute", "job", "ranks") or 1, facts.get("world_size") or 1)
        link = max(
            w.get("inter_node_interconnect", None, "utilization") or 0.0,
            w.get("inter_gpu_interconnect", None, "utilization") or 0.0,
        )
        assert _share(w, "communication") >= 0.1 or ranks > 1 or link >= 0.6, where
    if w.phases is not None and w.phases.steps and v.resource not in CAPACITY_RESOURCES:  # capacity limits no one stage
        if v.stage == "data":
            assert _share(w, "data_wait", "file_io") >= 0.05 or w.phases.facts.get("phase_source") == "py-spy", where
        if v.stage == "compute" and v.resource in (
            "cpu_compute",
            "cpu_memory_bandwidth",
            "gpu_compute",
            "gpu_memory_bandwidth",
        ):
            compute = _share(w, "forward", "backward", "optimizer", "gpu_wait")
            if v.resource.startswith("gpu_") and gpu_never_idles(w):  # the host waited on the GPU outside them
                compute = 1.0 - _share(w, "data_wait", "file_io", "transfer", "communication")
            assert compute >= 0.5, where


@pytest.mark.parametrize("name", SCENARIOS)
def test_no_verdict_of_any_window_of_a_scenario_contradicts_its_evidence(name):
    header, samples = read_trace(str(DATA / name / "trace.jsonl"))
    p = Pipeline(header.peaks)
    n = 0
    for s in samples:
        snap = p(s)
        check(classify(snap.stats, header.peaks), snap.stats, header.peaks)
        n += 1
    assert n > 0


share = st.floats(0.0, 1.0)
cores = st.sampled_from([1.0, 2.0, 4.0, 16.0])


@st.composite
def windows(draw):
    usable = draw(cores)
    n_workers = draw(st.sampled_from([0, 1, 2, 4]))
    busy = draw(st.floats(0.0, usable))
    fig = {
        "cpu_compute/host/cores": usable,
        "cpu_compute/host/utilization": draw(share),
        "cpu_compute/host/iowait": draw(st.floats(0, 0.6)),
        "cpu_compute/job/busy_cores": busy,
        "cpu_compute/job/main_busy_cores": draw(share),
        "cpu_compute/job/hottest_thread_busy": draw(share),
        "cpu_compute/job/usable_cores": usable,
        "cpu_compute/job/workers": float(n_workers),
        "cpu_compute/job/worker_busy_cores": draw(st.floats(0.0, float(max(n_workers, 0)))) if n_workers else 0.0,
        "cpu_compute/job/worker_max_busy_cores": draw(share) if n_workers else None,
        "cpu_compute/job/runqueue_wait_cores": draw(st.floats(0.0, 2.0)),
        "cpu_compute/job/main_thread_demand": draw(share),
        "cpu_compute/job/ranks": float(draw(st.sampled_from([1, 2, 4]))),
        "cpu_compute/job/threads_in_disk_wait": draw(st.sampled_from([0.0, 0.0, 0.5, 2.0])),
        "cpu_compute/host/pressure_some": draw(share),
        "storage_bandwidth/vda/busy": draw(share),
        "storage_bandwidth/host/pressure_some": draw(share),
        "storage_bandwidth/job/read_bytes_per_second": draw(st.sampled_from([0.0, 1e6, 80e6])),
        "storage_bandwidth/job/read_chars_per_second": draw(st.sampled_from([1e6, 80e6, 1e9])),
        "storage_bandwidth/job/read_calls_per_second": draw(st.sampled_from([10.0, 2e4])),
        "storage_bandwidth/job/write_bytes_per_second": draw(st.sampled_from([0.0, 1e6, 300e6])),
        "cpu_memory/host/utilization": draw(st.floats(0.2, 0.99)),
    }
    names = ["data_wait", "forward", "backward", "optimizer", "communication", "other", "file_io"]
    raw = [draw(st.floats(0.0, 1.0)) for _ in names]
    total = sum(raw) or 1.0
    shares = {k: v / total for k, v in zip(names, raw, strict=True)} if draw(st.booleans()) else None
    facts = {"device": "cpu"}
    if draw(st.booleans()):
        facts["arithmetic_intensity"] = draw(st.sampled_from([0.05, 0.5, 2.0, 10.0, 60.0]))
        facts["achieved_bytes_per_second"] = draw(st.sampled_from([1e6, 1e9, 30e9]))
    if draw(st.booleans()):
        facts["world_size"] = draw(st.sampled_from([1, 2, 8]))
    return window(fig, shares, facts)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(windows())
def test_no_verdict_of_a_generated_window_contradicts_its_evidence(w):
    check(classify(w, NO_PEAKS), w, NO_PEAKS)


def test_the_property_can_fail():
    """The checker rejects a verdict of cpu_compute on a job whose CPUs are idle (the issue's DDP case)."""
    w = window(
        {
            "cpu_compute/host/cores": 2.0,
            "cpu_compute/host/utilization": 0.07,
            "cpu_compute/job/busy_cores": 0.14,
            "cpu_compute/job/main_busy_cores": 0.07,
            "cpu_compute/job/usable_cores": 2.0,
        },
        {"forward": 0.5, "backward": 0.5},
    )
    wrong = Verdict(
        resource="cpu_compute", stage="compute", confidence=0.8, evidence=("training process at 0.07 of 2 cores",)
    )
    with pytest.raises(AssertionError):
        check(wrong, w, NO_PEAKS)
    assert json.dumps(classify(w, NO_PEAKS).resource) != '"cpu_compute"'
