"""The GPU compute rule on constructed windows: the job's own peak, the floor, the busiest pipe, the job's GPUs."""

from __future__ import annotations

import pytest

from bottleneckd.diagnosis.rules.gpu_compute import gpu_compute
from bottleneckd.diagnosis.window import Stat, WindowStats
from bottleneckd.hardware.detect import detect_machine
from bottleneckd.model.facts import Facts
from bottleneckd.model.resources import UNDETERMINED
from bottleneckd.model.sample import StepPhases
from bottleneckd.peaks.catalog import load_catalog
from bottleneckd.peaks.resolve import resolve_peaks
from bottleneckd.peaks.select import compute_peak
from tests.fake_nvml import FakeGpu, FakeNvml


def _peaks(fake_tree, *names):
    m = detect_machine(*fake_tree, nvml=FakeNvml([FakeGpu(name=n) for n in names]))
    return resolve_peaks(m, load_catalog())


def _w(readings: dict[tuple[str, str, str], float], **facts) -> WindowStats:
    phases = StepPhases(
        10,
        1.0,
        {"forward": 0.3, "backward": 0.6, "optimizer": 0.05, "data_wait": 0.05},
        Facts({"device": "cuda", **facts}),
    )
    stats = {k: Stat(v, v, v, v, 5) for k, v in readings.items()}
    return WindowStats(0.0, 5.0, 5, stats, {}, phases)


H200 = "NVIDIA H200"


def test_fp32_compute_bound_job_is_judged_against_the_fp32_peak(fake_tree):
    """50 TFLOP/s fp32 on an H200 is 75% of its 67 TFLOP/s, not 5% of bf16's 989 (which read as memory-bound)."""
    peaks = _peaks(fake_tree, H200)
    w = _w(
        {("gpu_compute", "gpu0", "busy_fraction"): 0.97},
        param_dtype="float32",
        allow_tf32=False,
        achieved_flops=50e12,
        achieved_bytes_per_second=1.5e12,
    )
    f = gpu_compute(w, peaks)
    assert [x.resource for x in f] == ["gpu_compute"]
    assert any("fp32 peak" in e for e in f[0].evidence)


@pytest.mark.parametrize(
    "facts,path,value",
    [
        ({"autocast_dtype": "bfloat16", "param_dtype": "float32"}, "bf16 tensor", 989e12),
        ({"param_dtype": "float32", "allow_tf32": True}, "tf32 tensor", 494.5e12),
        ({"param_dtype": "float32", "allow_tf32": False}, "fp32", 67e12),
        ({"param_dtype": "float64"}, "fp64 tensor", 67e12),
    ],
)
def test_the_peak_follows_what_the_job_runs(fake_tree, facts, path, value):
    p = compute_peak(_peaks(fake_tree, H200), "gpu0", Facts(facts))
    assert (p.path, p.value) == (path, pytest.approx(value))


def test_v100_and_t4_have_no_bf16_path(fake_tree):
    peaks = _peaks(fake_tree, "Tesla V100-SXM2-32GB", "Tesla T4")
    for dev, fp32 in (("gpu0", 15.7e12), ("gpu1", 8.1e12)):
        p = compute_peak(peaks, dev, Facts({"autocast_dtype": "bfloat16"}))
        assert p.path == "fp32" and p.value == pytest.approx(fp32) and "no bf16 tensor path" in p.why
        assert compute_peak(peaks, dev, Facts({"autocast_dtype": "float16"})).path == "fp16 tensor"


def test_unknown_dtype_does_not_use_the_roofline(fake_tree):
    """Without the roofline and without SM activity, NVML's busy 97% does not name compute (issue 19 item 4)."""
    peaks = _peaks(fake_tree, H200)
    w = _w({("gpu_compute", "gpu0", "busy_fraction"): 0.97}, achieved_flops=50e12, achieved_bytes_per_second=1.5e12)
    f = gpu_compute(w, peaks)
    assert [x.resource for x in f] == [UNDETERMINED] and any("roofline not used" in e for e in f[0].evidence)


def test_launch_bound_job_is_host_overhead_not_memory_bandwidth(fake_tree):
    """busy 0.7, SM 0.2, 2 TFLOP/s, 60 GB/s (bf16 on H200) was called gpu_memory_bandwidth 'at 1%'."""
    peaks = _peaks(fake_tree, H200)
    r = {
        ("gpu_compute", "gpu0", "busy_fraction"): 0.7,
        ("gpu_compute", "gpu0", "sm_activity"): 0.2,
        ("gpu_compute", "gpu0", "tensor_activity"): 0.05,
        ("gpu_memory_bandwidth", "gpu0", "utilization"): 0.02,
    }
    facts = dict(autocast_dtype="bfloat16", achieved_flops=2e12, achieved_bytes_per_second=60e9)
    f = gpu_compute(_w({**r, ("cpu_compute", "job", "main_busy_cores"): 0.97}, **facts), peaks)
    assert [x.resource for x in f] == ["cpu_compute"]
    assert any("kernel launches / host-side Python" in e and "0.97" in e for e in f[0].evidence)
    assert any("neither FLOP/s nor bytes/s is near its peak" in e for e in f[0].evidence)
    # the main thread not saturated: no resource is named without evidence for it
    f = gpu_compute(_w({**r, ("cpu_compute", "job", "main_busy_cores"): 0.3}, **facts), peaks)
    assert [x.resource for x in f] == [UNDETERMINED]


def test_fp32_job_without_tensor_cores_is_compute_bound_by_its_busiest_pipe(fake_tree):
    """DRAM 0.6 at SM 95% with no tensor use was memory-bound (DRAM >= tensor); the FP32 pipe is at 90%."""
    peaks = _peaks(fake_tree, H200)
    r = {
        ("gpu_compute", "gpu0", "busy_fraction"): 1.0,
        ("gpu_compute", "gpu0", "sm_activity"): 0.95,
        ("gpu_compute", "gpu0", "tensor_activity"): 0.0,
        ("gpu_compute", "gpu0", "fp32_activity"): 0.9,
        ("gpu_memory_bandwidth", "gpu0", "utilization"): 0.6,
    }
    f = gpu_compute(_w(r, param_dtype="float32"), peaks)
    assert [x.resource for x in f] == ["gpu_compute"]
    r[("gpu_compute", "gpu0", "fp32_activity")] = 0.3  # now DRAM is above every pipe: memory-bound
    assert [x.resource for x in gpu_compute(_w(r, param_dtype="float32"), peaks)] == ["gpu_memory_bandwidth"]


def test_another_tenants_memory_bound_gpu_does_not_decide_the_jobs_verdict(fake_tree):
    peaks = _peaks(fake_tree, H200, H200)
    r = {
        ("gpu_compute", "gpu0", "busy_fraction"): 1.0,
        ("gpu_compute", "gpu0", "sm_activity"): 0.9,
        ("gpu_compute", "gpu0", "tensor_activity"): 0.8,
        ("gpu_memory_bandwidth", "gpu0", "utilization"): 0.2,
        ("gpu_compute", "gpu1", "busy_fraction"): 1.0,
        ("gpu_compute", "gpu1", "sm_activity"): 0.9,
        ("gpu_compute", "gpu1", "tensor_activity"): 0.1,
        ("gpu_memory_bandwidth", "gpu1", "utilization"): 0.9,
    }
    mine = {("gpu_compute", "gpu0", "job_process"): 1.0, ("gpu_compute", "gpu1", "job_process"): 0.0}
    f = gpu_compute(_w({**r, **mine}, param_dtype="float32"), peaks)
    assert [x.resource for x in f] == ["gpu_compute"] and any("gpu0" in e for e in f[0].evidence)
    # in a container NVML's PIDs are not the job's: the CUDA UUIDs the hook reports decide
    other_ns = {("gpu_compute", "gpu0", "job_process"): 0.0, ("gpu_compute", "gpu1", "job_process"): 0.0}
    f = gpu_compute(_w({**r, **other_ns}, param_dtype="float32", cuda_uuids=("GPU-fake-0",)), peaks)
    assert [x.resource for x in f] == ["gpu_compute"] and any("gpu0" in e for e in f[0].evidence)
    f = gpu_compute(_w({**r, **other_ns}, param_dtype="float32", cuda_uuids=("GPU-fake-1",)), peaks)
    assert [x.resource for x in f] == ["gpu_memory_bandwidth"]
    # without either every GPU is considered, and the evidence says so
    f = gpu_compute(_w(r, param_dtype="float32"), peaks)
    assert sorted(x.resource for x in f) == ["gpu_compute", "gpu_memory_bandwidth"]
    assert all(any("which GPUs are the job's is unknown" in e for e in x.evidence) for x in f)
