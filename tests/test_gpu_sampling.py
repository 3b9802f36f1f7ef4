"""The GPU sampler on a big node and without GPM: the tick's cost with NVML's documented latencies,
the PCIe byte counters, a dcgm-exporter's profiling fields (a real HTTP server serving a captured
page), NVML's memory-busy rate, MIG compute instances, and NVLink against a calibrated peak."""

from __future__ import annotations

import http.server
import statistics
import threading
import time
from pathlib import Path

import pynvml
import pytest

from bottleneckd.hardware.detect import detect_machine
from bottleneckd.hardware.pynvml_backend import PynvmlBackend
from bottleneckd.peaks.catalog import load_catalog
from bottleneckd.peaks.profile import Measurement, Profile
from bottleneckd.peaks.resolve import resolve_peaks
from bottleneckd.samplers import gpu as gpu_sampler
from bottleneckd.samplers.dcgm import DcgmSource
from bottleneckd.samplers.gpu import GpuSampler
from bottleneckd.samplers.gpu_fields import nvlink_readings
from tests.fake_nvml import FakeGpu, FakeNvml
from tests.fake_pynvml import Dev, FakePynvml

PAGE = (Path(__file__).resolve().parent / "data/dcgm/a100_mig_exporter.txt").read_bytes()
A100 = "NVIDIA A100-SXM4-80GB"
A100_UUID = "GPU-34319582-d595-d1c7-d1d2-179bcfa61660"  # the GPU of the captured page
PCIE_WINDOW = 0.020  # nvml.h: nvmlDeviceGetPcieThroughput counts over a 20 ms window and blocks for it


def _by(readings, dev, metric, resource=None):
    return next(
        (
            r
            for r in readings
            if r.device == dev and r.metric == metric and (resource is None or r.resource == resource)
        ),
        None,
    )


def _value(readings, dev, metric, resource=None):
    r = _by(readings, dev, metric, resource)
    return "absent" if r is None else r.value


# --- the tick's cost on 8 GPUs --------------------------------------------------------------------


def _eight_a100s(counters: int | None = None) -> FakePynvml:
    devs = [Dev(name=A100, uuid=f"GPU-{k:08d}", gpm=None, pcie_counter_type=counters) for k in range(8)]
    return FakePynvml(devs, latency={"nvmlDeviceGetPcieThroughput": PCIE_WINDOW})


def tick_seconds(lib: FakePynvml, fake_tree, ticks: int = 5) -> float:
    """The median wall time of a GPU sampler tick after the first (which opens the counters)."""
    b = PynvmlBackend(lib)
    s = GpuSampler(resolve_peaks(detect_machine(*fake_tree, nvml=b), load_catalog()), b, dcgm="off")
    s.sample()
    times = []
    for _ in range(ticks):
        t0 = time.perf_counter()
        s.sample()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def test_eight_gpus_without_gpm_are_read_concurrently_not_one_after_another(fake_tree, monkeypatch):
    """Two 20 ms PCIe reads per GPU: 320 ms of every tick on 8 A100s read in turn (the old sampler,
    one worker here); read concurrently the tick costs about one GPU's 40 ms."""
    serial_floor = 8 * 2 * PCIE_WINDOW
    monkeypatch.setattr(gpu_sampler, "MAX_WORKERS", 1)
    serial = tick_seconds(_eight_a100s(), fake_tree, ticks=2)
    monkeypatch.setattr(gpu_sampler, "MAX_WORKERS", 16)
    concurrent = tick_seconds(_eight_a100s(), fake_tree)
    assert serial >= serial_floor
    assert concurrent < serial_floor / 2, (serial, concurrent)  # ~40 ms; the margin is for a loaded 2-core machine


def test_pcie_byte_counters_replace_the_blocking_20_ms_read(fake_tree):
    lib = _eight_a100s(counters=pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG)
    took = tick_seconds(lib, fake_tree)
    blocking = lib.calls.count("nvmlDeviceGetPcieThroughput")
    assert blocking == 8 * 2  # the first tick only: it opens the counters
    assert took < 2 * PCIE_WINDOW, took


def test_pcie_rate_from_counters_and_32_bit_counters_are_not_used():
    lib = FakePynvml(
        [Dev(pcie_counter_type=pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, pcie_bytes_per_read=(10**9, 3 * 10**9))]
    )
    b = PynvmlBackend(lib)
    first = b.pcie_throughput(0)
    assert first == (1000 * 1000.0, 1000 * 1000.0)  # the fake's 20 ms window: 1000 KB/s each way
    time.sleep(0.05)
    tx, rx = b.pcie_throughput(0)
    assert rx == pytest.approx(3 * tx) and 1e9 / 1.0 < tx < 1e9 / 0.05  # 1 GB over >= 50 ms
    narrow = FakePynvml([Dev(pcie_counter_type=pynvml.NVML_VALUE_TYPE_UNSIGNED_INT)])
    b = PynvmlBackend(narrow)
    b.pcie_throughput(0)
    b.pcie_throughput(0)
    assert narrow.calls.count("nvmlDeviceGetPcieThroughput") == 4  # wraps every 4 GiB: the window each time
    assert narrow.calls.count("nvmlDeviceGetFieldValues") == 1  # asked once, then not again


# --- a dcgm-exporter's profiling fields ------------------------------------------------------------


class _Exporter:
    """A real HTTP server on a free loopback port serving ``body`` at /metrics."""

    def __init__(self, body: bytes) -> None:
        self.body, self.hits = body, 0
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                outer.hits += 1
                self.send_response(200 if self.path == "/metrics" else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write(outer.body if self.path == "/metrics" else b"")

            def log_message(self, *a) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def exporter():
    e = _Exporter(PAGE)
    yield e
    e.close()


def test_a100_without_gpm_reads_tensor_and_dram_activity_from_dcgm_exporter(fake_tree, exporter):
    nvml = FakeNvml(
        [
            FakeGpu(name=A100, uuid=A100_UUID, gpm=None, util=(99.0, 62.0)),
            FakeGpu(name=A100, uuid="GPU-not-on-the-page", gpm=None),
            FakeGpu(
                name="NVIDIA A100-SXM4-80GB MIG 1g.10gb",
                uuid="MIG-aaaa",
                gpm=None,
                label="gpu2.mig0",
                mig=(1 / 7, 1 / 8),
                mig_instance=(A100_UUID, 13),
            ),
        ]
    )
    peaks = resolve_peaks(detect_machine(*fake_tree, nvml=nvml), load_catalog())
    s = GpuSampler(peaks, nvml, dcgm=exporter.url)
    r = s.sample()
    assert exporter.hits == 1  # one read per tick
    assert _value(r, "gpu0", "tensor_activity") == pytest.approx(0.92926)
    assert _value(r, "gpu0", "utilization", "gpu_memory_bandwidth") == pytest.approx(0.690789)
    assert _value(r, "gpu0", "throughput", "gpu_memory_bandwidth") == pytest.approx(0.690789 * 2.039e12, rel=1e-3)
    assert _value(r, "gpu0", "activity_source:dcgm-exporter") == 1.0
    sm = _by(r, "gpu0", "sm_activity")  # the default counters leave SM activity out: unknown, with why
    assert sm.value is None and "dcgm-exporter's page" in sm.note
    assert _value(r, "gpu0", "busy_fraction") == pytest.approx(0.99)
    assert _value(r, "gpu0", "memory_busy_fraction") == pytest.approx(0.62)  # NVML's own memory-busy rate
    other = _by(r, "gpu1", "tensor_activity")
    assert other.value is None and "not on the dcgm-exporter's page" in other.note
    # the MIG slice's rows (GPU_I_ID 13), not the whole GPU's
    assert _value(r, "gpu2.mig0", "utilization", "gpu_memory_bandwidth") == pytest.approx(0.800339)
    assert _value(r, "gpu2.mig0", "tensor_activity") == pytest.approx(0.930433)


def test_dcgm_source_settings_and_a_failing_exporter(fake_tree, exporter):
    assert DcgmSource.configured(env={"BOTTLENECKD_DCGM_URL": "off"}).url is None
    assert DcgmSource.configured(env={"BOTTLENECKD_DCGM_URL": exporter.url}).url == exporter.url
    exporter.body = b"# a Prometheus page without DCGM fields\nup 1\n"
    src = DcgmSource(exporter.url)
    assert src.read() == {} and "no DCGM profiling fields" in src.why
    exporter.close()
    src = DcgmSource(exporter.url)
    t0 = time.perf_counter()
    assert src.read() == {} and "not readable" in src.why
    assert all(src.read() == {} for _ in range(5)) and time.perf_counter() - t0 < 2.0  # backs off, no stall
    nvml = FakeNvml([FakeGpu(name=A100, uuid=A100_UUID, gpm=None)])
    s = GpuSampler(resolve_peaks(detect_machine(*fake_tree, nvml=nvml), load_catalog()), nvml, dcgm="off")
    sm = _by(s.sample(), "gpu0", "sm_activity")
    assert sm.value is None and "GPM not supported" in sm.note and "BOTTLENECKD_DCGM_URL=off" in sm.note


# --- MIG compute instances, calibration keys, NVLink against a calibrated peak --------------------------


def test_a_compute_instance_smaller_than_its_gpu_instance_gets_its_own_share(fake_tree):
    """A 3g.40gb GPU instance split into 1c.3g compute instances: each has 1/7 of the compute, all 40 GB."""
    ci = Dev(
        name="NVIDIA H100 80GB HBM3 MIG 1c.3g.40gb",
        uuid="MIG-c",
        memory=(40 * 2**30, 0),
        slice_count=3,
        ci_slice_count=1,
    )
    b = PynvmlBackend(FakePynvml([Dev(mig=[ci])]))
    assert b.mig_fractions(0) == pytest.approx((1 / 7, 0.5))
    t = resolve_peaks(detect_machine(*fake_tree, nvml=b), load_catalog())
    assert t.value("gpu_compute", "gpu0.mig0", "fp16_bf16_tensor_dense") == pytest.approx(989e12 / 7)
    assert b.mig_instance(0) == (Dev().uuid, 0)


def test_calibration_of_a_mig_slice_is_found_under_its_mig_uuid(fake_tree):
    """calibrate writes GPU-<CUDA's uuid>; NVML names the slice MIG-<uuid>."""
    nvml = FakeNvml([FakeGpu(name="NVIDIA H100 80GB HBM3 MIG 1g.10gb", uuid="MIG-ab12", mig=(1 / 7, 1 / 8))])
    prof = Profile(
        "h", 0.0, (Measurement("gpu_compute", "GPU-AB12", "bf16_matmul", 120e12, "FLOP/s", "torch.mm", 1.0),)
    )
    t = resolve_peaks(detect_machine(*fake_tree, nvml=nvml), load_catalog(), prof)
    p = t.get("gpu_compute", "gpu0", "bf16_matmul")
    assert p is not None and p.origin == "calibrated" and p.value == pytest.approx(120e12)


def test_nvlink_against_a_calibrated_one_way_copy_is_per_direction(fake_tree):
    """A one-way peer copy of 300 GB/s is the peak of one direction: 100 GB/s out and 200 GB/s in is
    2/3 of it, not (100 + 200) / 300 = 100%; against the catalog's both-ways 900 GB/s it is 1/3."""
    m = detect_machine(*fake_tree, nvml=FakeNvml([FakeGpu(uuid="GPU-a"), FakeGpu(uuid="GPU-b")]))
    copy = Measurement("inter_gpu_interconnect", "GPU-a", "copy_to_GPU-b", 300e9, "B/s", "cuda:0 to cuda:1 copy", 1.0)
    calibrated = resolve_peaks(m, load_catalog(), Profile("h", 0.0, (copy,)))
    assert calibrated.get("inter_gpu_interconnect", "gpu0").direction == "per direction"
    r = nvlink_readings("gpu0", 100e9, 200e9, calibrated)
    assert _value(r, "gpu0", "utilization") == pytest.approx(2 / 3)
    catalog = resolve_peaks(m, load_catalog())
    assert catalog.get("inter_gpu_interconnect", "gpu0").direction == "both"
    assert _value(nvlink_readings("gpu0", 100e9, 200e9, catalog), "gpu0", "utilization") == pytest.approx(1 / 3)
