import time

import pytest

from bottleneckd.hardware.detect import detect_machine
from bottleneckd.model.sample import Sample
from bottleneckd.peaks.catalog import load_catalog
from bottleneckd.peaks.resolve import resolve_peaks
from bottleneckd.runtime.loop import SamplingLoop
from bottleneckd.runtime.sidecar import build_samplers
from bottleneckd.samplers.cpu_memory_bandwidth import CpuMemoryBandwidthSampler
from bottleneckd.samplers.gpu import GpuSampler
from bottleneckd.samplers.inter_node import InterNodeSampler
from bottleneckd.samplers.storage_network import StorageNetworkSampler, read_nfs_bytes
from tests.conftest import write
from tests.fake_nvml import FakeGpu, FakeNvml


def by(readings, device, metric):
    return next((r for r in readings if r.device == device and r.metric == metric), None)


def setup(fake_tree, gpus):
    sys_root, proc_root = fake_tree
    nvml = FakeNvml(gpus)
    m = detect_machine(sys_root, proc_root, nvml=nvml)
    return m, resolve_peaks(m, load_catalog()), nvml


def test_gpm_gpu_reports_sm_tensor_dram_against_peaks(fake_tree):
    m, peaks, nvml = setup(fake_tree, [FakeGpu()])
    s = GpuSampler(peaks, nvml)
    first = s.sample()
    assert (
        by(first, "gpu0", "sm_activity").value is None and by(first, "gpu0", "sm_activity").note == "first GPM interval"
    )
    r = s.sample()
    assert by(r, "gpu0", "sm_activity").value == pytest.approx(0.85)
    assert by(r, "gpu0", "tensor_activity").value == pytest.approx(0.70)
    assert by(r, "gpu0", "busy_fraction").value == pytest.approx(0.97)
    dram = [x for x in r if x.resource == "gpu_memory_bandwidth" and x.metric == "utilization"][0]
    assert dram.value == pytest.approx(0.30)
    mem = [x for x in r if x.resource == "gpu_memory" and x.metric == "utilization"][0]
    assert mem.value == pytest.approx(10 / 80)
    pcie = [x for x in r if x.resource == "cpu_gpu_interconnect" and x.metric == "throughput"][0]
    assert pcie.value == pytest.approx(200 * 1048576)  # GPM RX MiB/s, the busier direction
    assert by(r, "gpu0", "throttle:sw_power_cap").value == 1.0
    assert by(r, "gpu0", "sm_clock_ratio").value == pytest.approx(1500 / 1980)
    assert by(r, "gpu0", "process_bytes:4242") is None  # process list only every 10th tick
    assert by(first, "gpu0", "process_bytes:4242").value == 9e9


def test_pre_gpm_gpu_leaves_sm_and_dram_unknown_not_zero(fake_tree):
    m, peaks, nvml = setup(fake_tree, [FakeGpu(name="NVIDIA A100-SXM4-80GB", gpm=None, power=None, reasons=None)])
    s = GpuSampler(peaks, nvml)
    s.sample()
    r = s.sample()
    for metric in ("sm_activity", "tensor_activity", "utilization"):
        x = [y for y in r if y.resource == "gpu_compute" and y.metric == metric][0]
        assert x.value is None and "GPM not supported" in x.note
    dram = [y for y in r if y.resource == "gpu_memory_bandwidth" and y.metric == "utilization"][0]
    assert dram.value is None and "GPM" in dram.note
    assert by(r, "gpu0", "power").value is None
    pcie = [x for x in r if x.resource == "cpu_gpu_interconnect" and x.metric == "throughput"][0]
    assert pcie.value == 2e9  # the NVML counter when GPM is absent
    nvl = [x for x in r if x.resource == "inter_gpu_interconnect" and x.metric == "utilization"][0]
    assert nvl.value is not None and nvl.value > 0  # NVLink counters differenced


def test_lost_gpu_is_marked_down_and_the_others_go_on(fake_tree):
    m, peaks, nvml = setup(fake_tree, [FakeGpu(), FakeGpu(lost_after=2), FakeGpu()])
    s = GpuSampler(peaks, nvml)
    for _ in range(2):
        r = s.sample()
    assert by(r, "gpu1", "up").value == 1.0
    r = s.sample()
    assert by(r, "gpu1", "up").value == 0.0
    assert [x for x in r if x.device == "gpu1" and x.metric != "up"] == []
    assert by(r, "gpu0", "up").value == 1.0 and by(r, "gpu2", "busy_fraction").value == pytest.approx(0.97)
    r = s.sample()
    assert [x.metric for x in r if x.device == "gpu1"] == ["up"]


def test_infiniband_and_resctrl_counters_become_rates(fake_tree):
    sys_root, proc_root = fake_tree
    m, peaks, _ = setup(fake_tree, [])
    ib = InterNodeSampler(peaks, m, sys_root)
    bw = CpuMemoryBandwidthSampler(peaks, sys_root)
    assert bw.available() == (True, "")
    t0 = time.monotonic()  # before the first reading: the rates are over at most this long
    ib.sample(), bw.sample()
    time.sleep(0.2)
    write(
        __import__("pathlib").Path(sys_root),
        "class/infiniband/mlx5_0/ports/1/counters/port_rcv_data",
        str(2000 + 25_000_000),
    )
    write(__import__("pathlib").Path(sys_root), "fs/resctrl/mon_data/mon_L3_00/mbm_total_bytes", str(1_000_000 + 10**9))
    r = ib.sample()
    x = [y for y in r if y.device == "mlx5_0/1" and y.metric == "throughput"][0]
    # 25e6 words x 4 bytes over ~0.2 s: at most over 0.2 s, at least over the time since t0 (a stall
    # of a loaded machine lengthens the interval, never shortens it)
    assert 100e6 / (time.monotonic() - t0) <= x.value <= 100e6 / 0.2 * 1.01
    u = [y for y in r if y.device == "mlx5_0/1" and y.metric == "utilization"][0]
    assert u.value == pytest.approx(x.value / 25e9)
    b = [y for y in bw.sample() if y.metric == "throughput"][0]
    assert 1e9 / (time.monotonic() - t0) <= b.value <= 1e9 / 0.2 * 1.01


def test_no_resctrl_means_unknown_with_reason(tmp_path):
    m = detect_machine(str(tmp_path), str(tmp_path), nvml=None)
    peaks = resolve_peaks(m, load_catalog())
    s = CpuMemoryBandwidthSampler(peaks, str(tmp_path))
    ok, why = s.available()
    assert not ok and "resctrl" in why
    u = [r for r in s.sample() if r.metric == "utilization"][0]
    assert u.value is None and "resctrl" in u.note


def test_nfs_bytes_from_mountstats(fake_tree):
    sys_root, proc_root = fake_tree
    assert read_nfs_bytes(proc_root) == {"/mnt/data": 5001000.0}
    m, peaks, _ = setup(fake_tree, [])
    s = StorageNetworkSampler(peaks, m, proc_root)
    assert s.available()[0]
    s.sample()


def test_real_psutil_samplers_on_this_machine():
    import os

    m = detect_machine()
    peaks = resolve_peaks(m, load_catalog())
    samplers, why = build_samplers(m, peaks, pid=os.getpid())
    names = {s.name for s in samplers}
    assert {"cpu_compute", "cpu_memory", "cpu_memory_bandwidth"} <= names
    loop = SamplingLoop(samplers, 0.1)
    loop.tick()
    time.sleep(0.15)
    s = loop.tick()
    assert all(st.up for st in s.samplers), [st for st in s.samplers if not st.up]
    host = s.get("cpu_compute", "host", "utilization")
    assert host is not None and 0.0 <= host <= 1.0
    mem = s.get("cpu_memory", "host", "utilization")
    assert 0.0 < mem < 1.0
    assert s.get("cpu_memory", "job", "resident_bytes") > 10e6  # this pytest process
    assert s.get("cpu_compute", "job", "processes") >= 1


class Boom:
    name = "boom"

    def __init__(self):
        self.calls = 0

    def available(self):
        return True, ""

    def sample(self):
        self.calls += 1
        raise RuntimeError("sensor fell off")


def test_a_failing_sampler_is_isolated_and_logged_once(caplog):
    from bottleneckd.model.sample import Reading

    class Fine:
        name = "fine"

        def available(self):
            return True, ""

        def sample(self):
            return [Reading("cpu_compute", "host", "utilization", 0.5, "ratio")]

    boom = Boom()
    got: list[Sample] = []
    loop = SamplingLoop([boom, Fine()], 0.1, got.append)
    for _ in range(3):
        loop.tick()
    assert boom.calls == 3 and len(got) == 3
    assert got[-1].get("cpu_compute", "host", "utilization") == 0.5
    st = {x.name: x for x in got[-1].samplers}
    assert not st["boom"].up and "sensor fell off" in st["boom"].error and st["fine"].up
    assert sum("sampler boom failed" in r.message for r in caplog.records) == 1


def test_interval_bounds():
    with pytest.raises(ValueError):
        SamplingLoop([], 0.05)


def test_loop_runs_at_its_rate_with_bounded_window():
    from bottleneckd.diagnosis.pipeline import Pipeline

    m = detect_machine()
    peaks = resolve_peaks(m, load_catalog())
    samplers, _ = build_samplers(m, peaks)
    p = Pipeline(peaks, window=5)
    loop = SamplingLoop(samplers, 0.1, p)
    loop.run(duration=1.05)
    assert 8 <= p.samples <= 11
    assert len(p.window.samples) == 5
