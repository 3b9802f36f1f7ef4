"""The GPU path between NVML and the rules: UUID keys, the job's GPUs, GPM bytes, one NVML per process."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from bottleneckd.hardware import pynvml_backend
from bottleneckd.hardware.detect import detect_machine
from bottleneckd.hardware.nvml import NvmlUnavailable
from bottleneckd.peaks.catalog import load_catalog
from bottleneckd.peaks.profile import Measurement, Profile
from bottleneckd.peaks.resolve import resolve_peaks
from bottleneckd.samplers.gpu import GpuSampler
from bottleneckd.samplers.process_tree import ProcessTree
from tests.fake_nvml import FakeGpu, FakeNvml

ROOT = Path(__file__).resolve().parents[1]


def _by(readings, dev, metric, resource=None):
    return next(
        (
            r.value
            for r in readings
            if r.device == dev and r.metric == metric and (resource is None or r.resource == resource)
        ),
        "absent",
    )


def test_calibration_is_keyed_by_gpu_uuid_not_index(fake_tree):
    """CUDA_VISIBLE_DEVICES=1: torch's cuda:0 is NVML's GPU 1; its measurement must land on gpu1."""
    nvml = FakeNvml([FakeGpu(uuid="GPU-aaaa"), FakeGpu(uuid="GPU-bbbb")])
    m = detect_machine(*fake_tree, nvml=nvml)
    prof = Profile(
        "h",
        0.0,
        (
            Measurement("gpu_compute", "GPU-bbbb", "fp32_matmul", 50e12, "FLOP/s", "torch.mm", 1.0),
            Measurement("gpu_compute", "gpu0", "fp32_matmul", 1e12, "FLOP/s", "an index-keyed profile", 1.0),
        ),
    )
    t = resolve_peaks(m, load_catalog(), prof)
    g1 = t.get("gpu_compute", "gpu1", "fp32_matmul")
    assert g1.value == pytest.approx(50e12) and g1.origin == "calibrated" and g1.catalog_value == pytest.approx(67e12)
    assert t.get("gpu_compute", "gpu0", "fp32_matmul") is None  # an index is not an identity
    assert t.get("gpu_compute", "gpu0", "fp32").value == pytest.approx(67e12)


def test_gpm_dram_bytes_use_the_theoretical_peak_not_the_calibrated_one(fake_tree):
    """nvml.h: DRAM_BW_UTIL is a percentage of the theoretical maximum."""
    nvml = FakeNvml([FakeGpu(uuid="GPU-aaaa")])
    m = detect_machine(*fake_tree, nvml=nvml)
    prof = Profile(
        "h", 0.0, (Measurement("gpu_memory_bandwidth", "GPU-aaaa", "dram_bandwidth", 3.0e12, "B/s", "copy", 1.0),)
    )
    s = GpuSampler(resolve_peaks(m, load_catalog(), prof), nvml)
    s.sample()
    r = s.sample()
    assert _by(r, "gpu0", "utilization", "gpu_memory_bandwidth") == pytest.approx(0.30)
    assert _by(r, "gpu0", "throughput", "gpu_memory_bandwidth") == pytest.approx(0.30 * 3.35e12)  # H100 SXM theoretical


def test_gpm_pipes_are_read(fake_tree):
    g = FakeGpu()
    g.gpm = {**g.gpm, 12: 91.0, 13: 0.0, 11: 2.0, 4: 20.0}
    nvml = FakeNvml([g])
    s = GpuSampler(resolve_peaks(detect_machine(*fake_tree, nvml=nvml), load_catalog()), nvml)
    s.sample()
    r = s.sample()
    assert (
        _by(r, "gpu0", "fp32_activity"),
        _by(r, "gpu0", "fp16_activity"),
        _by(r, "gpu0", "fp64_activity"),
        _by(r, "gpu0", "integer_activity"),
    ) == pytest.approx((0.91, 0.0, 0.02, 0.20))


def test_job_process_marks_the_jobs_gpus_from_nvml_process_lists(fake_tree):
    import os

    me = os.getpid()
    other = os.getppid()  # another tenant's process, visible in this PID namespace
    nvml = FakeNvml([FakeGpu(processes={other: 10**9}), FakeGpu(processes={me: 10**9})])
    s = GpuSampler(resolve_peaks(detect_machine(*fake_tree, nvml=nvml), load_catalog()), nvml, tree=ProcessTree(me))
    r = s.sample()
    assert _by(r, "gpu0", "job_process") == 0.0 and _by(r, "gpu1", "job_process") == 1.0
    nvml.gpus[1].processes = {}
    r = s.sample()  # process lists are read every tenth tick; the last answer holds in between
    assert _by(r, "gpu0", "job_process") == 0.0 and _by(r, "gpu1", "job_process") == 1.0


def test_job_process_is_unknown_when_nvml_lists_pids_of_another_namespace(fake_tree):
    """A PID we cannot see (the host's PID of a process in a container): the job's absence proves nothing."""
    import os

    nvml = FakeNvml([FakeGpu(processes={99999999: 10**9}), FakeGpu(processes={})])
    s = GpuSampler(
        resolve_peaks(detect_machine(*fake_tree, nvml=nvml), load_catalog()), nvml, tree=ProcessTree(os.getpid())
    )
    r = s.sample()
    assert _by(r, "gpu0", "job_process") is None and _by(r, "gpu1", "job_process") == 0.0  # an empty list: not here
    note = next(x.note for x in r if x.device == "gpu0" and x.metric == "job_process")
    assert "another PID namespace" in note


def test_nvml_is_opened_once_per_process(monkeypatch, fake_tree):
    opened = []

    class Counting(FakeNvml):
        def __init__(self) -> None:
            opened.append(1)
            super().__init__([FakeGpu()])

    monkeypatch.setattr(pynvml_backend, "PynvmlBackend", Counting)
    monkeypatch.setattr(pynvml_backend, "_shared", None)
    monkeypatch.setattr(pynvml_backend, "_failed", None)  # an earlier test may have found no NVML here
    m = detect_machine(*fake_tree, nvml="auto")
    GpuSampler(resolve_peaks(m, load_catalog()), "auto").sample()
    assert len(opened) == 1 and len(m.gpus) == 1


@pytest.mark.slow
def test_detect_has_no_import_cycle_and_no_function_local_imports():
    for mod in ("host", "gpus", "machine", "types"):
        path = ROOT / "bottleneckd/hardware/detect" / f"{mod}.py"
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert not [n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))], (
                    f"{mod}.{fn.name} imports inside"
                )
        # each module imports on its own, first, in a fresh interpreter
        r = subprocess.run(
            [sys.executable, "-c", f"import bottleneckd.hardware.detect.{mod}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
    imports = {
        mod: {
            n.module
            for n in ast.walk(ast.parse((ROOT / "bottleneckd/hardware/detect" / f"{mod}.py").read_text()))
            if isinstance(n, ast.ImportFrom) and n.module
        }
        for mod in ("host", "gpus")
    }
    assert not any("detect.machine" in m for ms in imports.values() for m in ms)  # detectors do not import the assembly


def test_gh200_host_link_is_c2c_and_gets_no_h200_figures(fake_tree):
    m = detect_machine(*fake_tree, nvml=FakeNvml([FakeGpu(name="NVIDIA GH200 480GB")]))
    t = resolve_peaks(m, load_catalog())
    link = t.get("cpu_gpu_interconnect", "gpu0")
    assert link.metric.startswith("nvlink_c2c") and link.value == pytest.approx(450e9)
    assert t.value("gpu_memory_bandwidth", "gpu0") == pytest.approx(4.0e12)  # not the H200's 4.8 TB/s


def test_nvml_that_cannot_open_is_tried_once_per_process(monkeypatch, fake_tree):
    tries = []

    class Absent:
        def __init__(self) -> None:
            tries.append(1)
            raise NvmlUnavailable("no driver")

    monkeypatch.setattr(pynvml_backend, "PynvmlBackend", Absent)
    monkeypatch.setattr(pynvml_backend, "_shared", None)
    monkeypatch.setattr(pynvml_backend, "_failed", None)
    m = detect_machine(*fake_tree, nvml="auto")
    s = GpuSampler(resolve_peaks(m, load_catalog()), "auto")
    assert len(tries) == 1 and m.gpus == () and "no driver" in m.unknown["gpus"]
    assert s.available() == (False, "NVML unavailable: no driver")
