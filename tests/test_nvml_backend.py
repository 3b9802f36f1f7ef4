"""The real NVML backend (PynvmlBackend) under a fake of pynvml's API and errors (tests/fake_pynvml.py)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pynvml
import pytest

from bottleneckd.hardware import nvml as nv
from bottleneckd.hardware.detect import detect_machine
from bottleneckd.hardware.pynvml_backend import PynvmlBackend
from bottleneckd.peaks.catalog import load_catalog
from bottleneckd.peaks.resolve import resolve_peaks
from bottleneckd.samplers.gpu import GpuSampler
from tests.fake_pynvml import Dev, FakePynvml


def _by(readings, dev, metric):
    return next((r.value for r in readings if r.device == dev and r.metric == metric), "absent")


def test_a_gpu_nvml_refuses_is_left_out_with_the_reason_not_raised(fake_tree):
    lib = FakePynvml([Dev(), Dev(uuid="GPU-b", handle_error=pynvml.NVML_ERROR_NO_PERMISSION), Dev(uuid="GPU-c")])
    b = PynvmlBackend(lib)
    assert b.device_count() == 2 and [b.label(i) for i in range(2)] == ["gpu0", "gpu2"]  # NVML indexes kept
    sys_root, proc_root = fake_tree
    m = detect_machine(sys_root, proc_root, nvml=b)
    assert [g.device for g in m.gpus] == ["gpu0", "gpu2"] and [g.uuid for g in m.gpus] == [Dev().uuid, "GPU-c"]
    assert "Insufficient Permissions" in m.unknown["gpu1"]


def test_nvml_that_cannot_start_is_unavailable_with_the_reason():
    with pytest.raises(nv.NvmlUnavailable, match="Driver Not Loaded"):
        PynvmlBackend(FakePynvml([], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED))


def test_a_gpu_already_lost_when_the_sampler_starts_is_down_not_a_crash(fake_tree):
    lost = Dev(uuid="GPU-lost")
    lib = FakePynvml([Dev(), lost])
    b = PynvmlBackend(lib)
    m = detect_machine(*fake_tree, nvml=b)
    lost.lost = True  # falls off the bus between detection and the sampler
    s = GpuSampler(resolve_peaks(m, load_catalog()), b)
    r = s.sample()
    assert _by(r, "gpu1", "up") == 0.0 and _by(r, "gpu0", "up") == 1.0


def test_process_list_falls_back_to_v2_without_losing_the_tick(fake_tree):
    """Drivers before R510 lack the _v3 symbol: pynvml raises NVMLLibraryMismatchError (not an NVMLError)."""
    lib = FakePynvml([Dev(procs=[4242])], missing={"nvmlDeviceGetComputeRunningProcesses_v3"})
    b = PynvmlBackend(lib)
    assert b.process_memory(0) == {4242: 2**30}
    assert b.process_memory(0) == {4242: 2**30}
    assert lib.calls.count("nvmlDeviceGetComputeRunningProcesses_v3") == 1  # tried once, then _v2 only
    m = detect_machine(*fake_tree, nvml=b)
    s = GpuSampler(resolve_peaks(m, load_catalog()), b, process_every=1)
    r = s.sample()
    assert _by(r, "gpu0", "process_bytes:4242") == 2**30 and _by(r, "gpu0", "busy_fraction") == pytest.approx(0.97)


def test_clock_event_reasons_fall_back_to_the_throttle_call_before_r535():
    lib = FakePynvml([Dev()], missing={"nvmlDeviceGetCurrentClocksEventReasons"})
    b = PynvmlBackend(lib)
    assert b.clock_event_reasons(0) == 0x4 and b.clock_event_reasons(0) == 0x4
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" in lib.calls


def test_nvlink_state_gpu_lost_is_raised_not_swallowed():
    lib = FakePynvml([Dev(nvlink_lost=True)])
    with pytest.raises(nv.GpuLostError):
        PynvmlBackend(lib).nvlink_active_links(0)


def test_gpm_sample_alloc_failure_is_unsupported_not_an_exception():
    lib = FakePynvml([Dev()], missing={"nvmlGpmSampleAlloc"})
    b = PynvmlBackend(lib)
    assert b.gpm_metrics(0) is None and b.gpm_metrics(0) is None


def test_gpm_interval_is_strictly_longer_than_100_ms_and_early_reads_reuse_the_last(monkeypatch: pytest.MonkeyPatch):
    clock = [500.0]  # the backend's clock, moved by the test (a real sleep flaked on a loaded machine)
    monkeypatch.setattr("bottleneckd.hardware.pynvml_backend.time", SimpleNamespace(monotonic=lambda: clock[0]))
    lib = FakePynvml([Dev()])
    b = PynvmlBackend(lib)
    assert b.gpm_metrics(0) is None  # the first sample opens the interval
    clock[0] += 0.09
    assert b.gpm_metrics(0) is None  # 90 ms on: too soon, no second sample taken
    assert len(lib.gpm_samples) == 1
    clock[0] += 0.02
    got = b.gpm_metrics(0)
    assert got is not None and got[nv.GPM_SM_UTIL] == 85.0 and got[nv.GPM_FP32_UTIL] == 10.0
    assert got[nv.GPM_FP64_UTIL] is None  # not reported: unknown, not 0
    assert b.gpm_metrics(0) == got and len(lib.gpm_samples) == 2  # an out-of-schedule tick: the last interval


def test_mig_slices_are_units_with_mig_gpm_and_scaled_peaks(fake_tree):
    s1 = Dev(
        name="NVIDIA H100 80GB HBM3 MIG 1g.10gb",
        uuid="MIG-a",
        memory=(10 * 2**30, 2**30),
        slice_count=1,
        gi_id=7,
        gpm={2: 90.0, 10: 70.0},
    )
    s3 = Dev(name="NVIDIA H100 80GB HBM3 MIG 3g.40gb", uuid="MIG-b", memory=(40 * 2**30, 2**30), slice_count=3, gi_id=1)
    lib = FakePynvml([Dev(mig=[s1, s3])])
    b = PynvmlBackend(lib)
    assert [b.label(i) for i in range(b.device_count())] == ["gpu0.mig0", "gpu0.mig1"]
    m = detect_machine(*fake_tree, nvml=b)
    t = resolve_peaks(m, load_catalog())
    assert t.value("gpu_compute", "gpu0.mig0", "fp16_bf16_tensor_dense") == pytest.approx(989e12 / 7)
    assert t.value("gpu_memory_bandwidth", "gpu0.mig0") == pytest.approx(3.35e12 * 10 / 80)
    assert t.value("gpu_compute", "gpu0.mig1", "fp32") == pytest.approx(67e12 * 3 / 7)
    s = GpuSampler(t, b)
    s.sample()
    time.sleep(0.11)
    r = s.sample()
    assert ("GPU-11111111-2222-3333-4444-555555555555", 7) in lib.gpm_samples  # nvmlGpmMigSampleGet(parent, gi 7)
    assert _by(r, "gpu0.mig0", "sm_activity") == pytest.approx(0.9)
    assert _by(r, "gpu0.mig0", "busy_fraction") is None  # NVML has no utilisation per MIG slice
    assert (
        _by(r, "gpu0.mig0", "utilization") is not None and _by(r, "gpu0.mig0", "power") is None
    )  # whole-GPU fields: not per slice


def test_every_pynvml_name_the_backend_uses_exists_in_nvidia_ml_py():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "bottleneckd/hardware"
    src = (root / "pynvml_backend.py").read_text() + (root / "mig.py").read_text()
    names = set(re.findall(r"\bn\.((?:nvml|NVML|c_nvml)\w+)", src)) | set(re.findall(r"self\._n\.(\w+)", src))
    assert len(names) > 40
    assert [n for n in sorted(names) if not hasattr(pynvml, n)] == []
    # the GPM metric ids kept in nvml.py are nvml.h's
    for ours, theirs in (
        (nv.GPM_SM_UTIL, "SM_UTIL"),
        (nv.GPM_ANY_TENSOR_UTIL, "ANY_TENSOR_UTIL"),
        (nv.GPM_DRAM_BW_UTIL, "DRAM_BW_UTIL"),
        (nv.GPM_FP32_UTIL, "FP32_UTIL"),
        (nv.GPM_FP16_UTIL, "FP16_UTIL"),
        (nv.GPM_FP64_UTIL, "FP64_UTIL"),
        (nv.GPM_INTEGER_UTIL, "INTEGER_UTIL"),
        (nv.GPM_SM_OCCUPANCY, "SM_OCCUPANCY"),
    ):
        assert ours == getattr(pynvml, f"NVML_GPM_METRIC_{theirs}")


def test_every_nvml_structure_field_the_backend_reads_exists_in_nvidia_ml_py():
    """The fields read off NVML's structures (MIG device attributes, field values) are pynvml's."""
    fields = {
        "c_nvmlDeviceAttributes": ("gpuInstanceSliceCount", "computeInstanceSliceCount", "memorySizeMB"),
        "c_nvmlFieldValue_t": ("nvmlReturn", "valueType", "value"),
        "c_nvmlValue_t": ("ullVal",),
    }
    for struct, names in fields.items():
        have = {f for f, _ in getattr(pynvml, struct)._fields_}
        assert set(names) <= have, (struct, set(names) - have)
