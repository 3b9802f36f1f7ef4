"""The GPU sampler's tick on a big node without a GPU: 8 A100s (no GPM) through the real NVML backend
over tests/fake_pynvml.py, whose nvmlDeviceGetPcieThroughput blocks for the 20 ms window nvml.h
documents (every other call returns at once: NVML's utilisation and memory calls take microseconds).

    PYTHONPATH=. python scripts/bench_gpu_tick.py [--gpus 8] [--ticks 20]

Prints the median and the 90th percentile of the tick's wall time for the GPUs read one after
another (the sampler before issue 19, one worker), concurrently (one worker per GPU), and
concurrently where the driver keeps the 64-bit PCIe byte counters (no blocking read after the first).
What a real driver does with concurrent NVML calls is not measured here (no GPU): it is one of the
checks for the next GPU machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pynvml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bottleneckd.hardware.detect import detect_machine  # noqa: E402
from bottleneckd.hardware.pynvml_backend import PynvmlBackend  # noqa: E402
from bottleneckd.peaks.catalog import load_catalog  # noqa: E402
from bottleneckd.peaks.resolve import resolve_peaks  # noqa: E402
from bottleneckd.samplers import gpu as gpu_sampler  # noqa: E402
from tests.fake_hardware import fake_tree_at  # noqa: E402
from tests.fake_pynvml import Dev, FakePynvml  # noqa: E402

PCIE_WINDOW = 0.020  # nvml.h: nvmlDeviceGetPcieThroughput counts over 20 ms and blocks for it
WORKERS = gpu_sampler.MAX_WORKERS  # the sampler's own


def ticks(n_gpus: int, n_ticks: int, workers: int, counters: bool, tree: tuple[str, str]) -> list[float]:
    devs = [
        Dev(
            name="NVIDIA A100-SXM4-80GB",
            uuid=f"GPU-{k:08d}",
            gpm=None,
            pcie_counter_type=pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG if counters else None,
        )
        for k in range(n_gpus)
    ]
    lib = FakePynvml(devs, latency={"nvmlDeviceGetPcieThroughput": PCIE_WINDOW})
    backend = PynvmlBackend(lib)
    gpu_sampler.MAX_WORKERS = workers
    s = gpu_sampler.GpuSampler(resolve_peaks(detect_machine(*tree, nvml=backend), load_catalog()), backend, dcgm="off")
    s.sample()  # the first tick opens the counters
    out = []
    for _ in range(n_ticks):
        t0 = time.perf_counter()
        s.sample()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--ticks", type=int, default=20)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tree = fake_tree_at(Path(tmp))
        print(f"{a.gpus} A100s without GPM, PCIe throughput read blocking {PCIE_WINDOW * 1e3:.0f} ms per direction")
        print(f"{'how':<52} {'median':>9} {'p90':>9}")
        for label, workers, counters in (
            ("one after another (1 worker, the old sampler)", 1, False),
            (f"concurrently ({min(WORKERS, a.gpus)} workers)", WORKERS, False),
            ("concurrently, 64-bit PCIe byte counters", WORKERS, True),
        ):
            t = sorted(ticks(a.gpus, a.ticks, workers, counters, tree))
            p90 = t[min(len(t) - 1, int(0.9 * len(t)))]
            print(f"{label:<52} {statistics.median(t) * 1e3:8.1f}ms {p90 * 1e3:8.1f}ms")


if __name__ == "__main__":
    main()
