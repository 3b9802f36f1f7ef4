"""Constructed scenario traces, for bottlenecks this project's machines cannot produce for real.

    python -m tests.data.construct          # rewrites tests/data/<scenario>/trace.jsonl

Construction, documented: the machine is a fake node (tests/fake_hardware.py: 8-core Xeon 8380,
64 GiB, NVMe gen4, 100 GbE, HDR InfiniBand, an NFS mount; two H100 SXM through tests/fake_nvml.py).
Its peaks are resolved by the real code from the real catalog. Every sample starts from a healthy
baseline (GPUs moderately busy, nothing near a peak, a step of 90% compute) and the scenario
changes the figures that the named bottleneck moves, to values reported for it elsewhere (the
sources in docs/thresholds.md, e.g. KempnerPulse's transfer-bound rule): e.g. copies of 45% of the
step with PCIe at 83% of its peak and SM activity at 15%. Samples carry +-3% deterministic jitter.
The traces go through the real TraceWriter.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bottleneckd.hardware.detect import detect_machine
from bottleneckd.model.sample import Reading, Sample, StepPhases
from bottleneckd.outputs.trace import TraceWriter
from bottleneckd.peaks.catalog import load_catalog
from bottleneckd.peaks.resolve import resolve_peaks
from tests.fake_hardware import fake_tree_at
from tests.fake_nvml import FakeGpu, FakeNvml

HERE = Path(__file__).resolve().parent
T0 = 1_796_000_000.0
N = 14

Figures = dict[str, Any]


def baseline() -> Figures:
    return {
        "sm": 0.45,
        "tensor": 0.30,
        "busy": 0.92,
        "dram": 0.35,
        "gpu_mem": 0.55,
        "pcie": 2e9,
        "nvlink": 20e9,
        "host_cpu": 0.30,
        "job_cores": 2.0,
        "worker_cores": 1.2,
        "iowait": 0.01,
        "host_mem": 0.40,
        "swap": 0.0,
        "disk_bytes": 50e6,
        "disk_ops": 2000.0,
        "disk_busy": 0.05,
        "root_used": 0.50,
        "nic": 0.5e9,
        "ib": 1e9,
        "nfs": 0.0,
        "phases": {
            "data_wait": 0.02,
            "transfer": 0.02,
            "forward": 0.30,
            "backward": 0.50,
            "optimizer": 0.10,
            "other": 0.06,
        },
        "step": 0.25,
        "facts": {"device": "cuda", "loader_workers": 6, "world_size": 2, "local_world_size": 2, "ddp": True},
    }


def readings(f: Figures, peaks: Any, jitter: Callable[[float], float]) -> list[Reading]:
    j = jitter
    out: list[Reading] = []
    for g in ("gpu0", "gpu1"):
        out += [
            Reading("gpu_compute", g, "sm_activity", j(f["sm"]), "ratio"),
            Reading("gpu_compute", g, "tensor_activity", j(f["tensor"]), "ratio"),
            Reading("gpu_compute", g, "busy_fraction", min(1.0, j(f["busy"])), "ratio"),
            Reading("gpu_compute", g, "utilization", j(f["sm"]), "ratio"),
            Reading("gpu_compute", g, "up", 1.0, "bool"),
            Reading("gpu_memory_bandwidth", g, "utilization", j(f["dram"]), "ratio"),
            Reading("gpu_memory", g, "utilization", min(1.0, j(f["gpu_mem"])), "ratio"),
            Reading("gpu_memory", g, "used", f["gpu_mem"] * 80e9, "B"),
        ]
        pcie_peak = peaks.value("cpu_gpu_interconnect", g)
        out += [
            Reading("cpu_gpu_interconnect", g, "throughput", j(f["pcie"]), "B/s"),
            Reading("cpu_gpu_interconnect", g, "utilization", j(f["pcie"]) / pcie_peak, "ratio"),
        ]
        nvl_peak = peaks.value("inter_gpu_interconnect", g)
        out += [
            Reading("inter_gpu_interconnect", g, "throughput", j(f["nvlink"]), "B/s"),
            Reading("inter_gpu_interconnect", g, "utilization", j(f["nvlink"]) / nvl_peak, "ratio"),
        ]
    out += [
        Reading("cpu_compute", "host", "utilization", j(f["host_cpu"]), "ratio"),
        Reading("cpu_compute", "host", "cores", 8.0, "cores"),
        Reading("cpu_compute", "host", "iowait", j(f["iowait"]), "ratio"),
        Reading("cpu_compute", "job", "busy_cores", j(f["job_cores"]), "cores"),
        Reading("cpu_compute", "job", "worker_busy_cores", j(f["worker_cores"]), "cores"),
        Reading("cpu_compute", "job", "main_busy_cores", j(f["job_cores"] - f["worker_cores"]), "cores"),
        Reading("cpu_memory", "host", "utilization", min(1.0, j(f["host_mem"])), "ratio"),
        Reading("cpu_memory", "host", "used", f["host_mem"] * 64 * 2**30, "B"),
        Reading("cpu_memory", "job", "resident_bytes", 12e9, "B"),
        Reading("cpu_memory", "host", "swap_in_bytes_per_second", f["swap"], "B/s"),
        Reading("cpu_memory", "host", "swap_out_bytes_per_second", f["swap"], "B/s"),
        Reading(
            "cpu_memory_bandwidth",
            "host",
            "utilization",
            None,
            "ratio",
            "no memory-bandwidth counters (constructed machine)",
        ),
    ]
    seq, iops = (
        peaks.value("storage_bandwidth", "nvme0n1", "sequential_read"),
        peaks.value("storage_bandwidth", "nvme0n1", "random_read_4k_iops"),
    )
    bu, ou = j(f["disk_bytes"]) / seq, j(f["disk_ops"]) / iops
    out += [
        Reading("storage_bandwidth", "nvme0n1", "throughput", j(f["disk_bytes"]), "B/s"),
        Reading("storage_bandwidth", "nvme0n1", "read_bytes_per_second", j(f["disk_bytes"]), "B/s"),
        Reading("storage_bandwidth", "nvme0n1", "operations_per_second", j(f["disk_ops"]), "IO/s"),
        Reading("storage_bandwidth", "nvme0n1", "byte_utilization", bu, "ratio"),
        Reading("storage_bandwidth", "nvme0n1", "operation_utilization", ou, "ratio"),
        Reading("storage_bandwidth", "nvme0n1", "utilization", max(bu, ou), "ratio"),
        Reading("storage_bandwidth", "nvme0n1", "busy", j(f["disk_busy"]), "ratio"),
        Reading("storage_capacity", "/", "utilization", min(1.0, j(f["root_used"])), "ratio"),
        Reading("storage_capacity", "/", "free", (1 - f["root_used"]) * 2e12, "B"),
    ]
    nic_peak, ib_peak = (
        peaks.value("inter_node_interconnect", "eth0"),
        peaks.value("inter_node_interconnect", "mlx5_0/1"),
    )
    out += [
        Reading("inter_node_interconnect", "eth0", "utilization", j(f["nic"]) / nic_peak, "ratio"),
        Reading("inter_node_interconnect", "mlx5_0/1", "utilization", j(f["ib"]) / ib_peak, "ratio"),
        Reading(
            "storage_network_bandwidth",
            "/mnt/data",
            "utilization",
            j(f["nfs"]) / peaks.value("storage_network_bandwidth", "/mnt/data"),
            "ratio",
        ),
    ]
    return out


def phases(f: Figures, steps: int = 4) -> StepPhases:
    wall = f["step"] * steps
    return StepPhases(steps, wall, {k: v * wall for k, v in f["phases"].items()}, dict(f["facts"]))


def ph(**shares: float) -> dict[str, float]:
    return shares


SCENARIOS: dict[str, tuple[str, str, str, Callable[[Figures, int], None]]] = {
    # name: (expected resource, expected stage, what was changed, mutate(figures, tick))
    "gpu_memory": (
        "gpu_memory",
        "compute",
        "GPU memory 96% used by NVML; the hook's allocator figures: the job's tensors peak at 95% of the GPU "
        "and cudaMalloc is retried after a cache flush twice a step (activations of a large batch)",
        lambda f, k: f.update(
            gpu_mem=0.96,
            sm=0.40,
            facts={
                **f["facts"],
                "cuda_memory_total_bytes": 80 * 10**9,
                "cuda_memory_peak_allocated_bytes": 76 * 10**9,
                "cuda_memory_reserved_bytes": 77 * 10**9,
                "cuda_memory_allocated_bytes": 40 * 10**9,
                "cuda_alloc_retries": 8 * (k + 1),
                "cuda_alloc_retries_per_step": 2.0,
            },
        ),
    ),
    "cpu_gpu_interconnect": (
        "cpu_gpu_interconnect",
        "transfer",
        "host-to-device copies 45% of the step; PCIe at 52 GB/s (83% of gen5 x16); SM 15%",
        lambda f, k: f.update(
            pcie=52e9,
            sm=0.15,
            tensor=0.05,
            phases=ph(data_wait=0.02, transfer=0.45, forward=0.18, backward=0.27, optimizer=0.05, other=0.03),
        ),
    ),
    "inter_node_interconnect": (
        "inter_node_interconnect",
        "communication",
        "16 ranks over 2 nodes; all-reduce 40% of the step; HDR port at 85% of 25 GB/s",
        lambda f, k: f.update(
            ib=21e9,
            sm=0.30,
            phases=ph(
                data_wait=0.02,
                transfer=0.02,
                forward=0.15,
                backward=0.30,
                communication=0.40,
                optimizer=0.08,
                other=0.03,
            ),
            facts={**f["facts"], "world_size": 16, "local_world_size": 8},
        ),
    ),
    "storage_capacity": (
        "storage_capacity",
        "other",
        "the root file system 98.5% full (checkpoints accumulating)",
        lambda f, k: f.update(root_used=0.985),
    ),
    "storage_network_bandwidth": (
        "storage_network_bandwidth",
        "data",
        "waiting for data 55% of the step; the NFS mount at 90% of the 25 GB/s link; local disk idle",
        lambda f, k: f.update(
            nfs=22.5e9,
            sm=0.20,
            phases=ph(data_wait=0.55, transfer=0.02, forward=0.13, backward=0.22, optimizer=0.05, other=0.03),
        ),
    ),
    "balanced": (
        "undetermined",
        "*",
        "nothing near a peak: SM 45%, DRAM 35%, data wait 2%, no capacity pressure",
        lambda f, k: None,
    ),
}


def build(out_dir: Path = HERE) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sys_root, proc_root = fake_tree_at(Path(tmp))
        machine = detect_machine(sys_root, proc_root, nvml=FakeNvml([FakeGpu(), FakeGpu()]))
    peaks = resolve_peaks(machine, load_catalog())
    for name, (resource, stage, what, mutate) in SCENARIOS.items():
        rng = random.Random(name)
        d = out_dir / name
        d.mkdir(parents=True, exist_ok=True)
        path = d / "trace.jsonl"
        w = TraceWriter(str(path), machine, peaks, 1.0, {"constructed": what}, overwrite=True)
        for k in range(N):
            f = baseline()
            mutate(f, k)
            jitter = lambda x, rng=rng: x * (1 + rng.uniform(-0.03, 0.03))  # noqa: E731
            w(Sample(T0 + k, 1.0, tuple(readings(f, peaks, jitter)), phases(f)))
        w.close()
        (d / "expected.json").write_text(
            json.dumps(
                {"resource": resource, "stage": stage, "provenance": f"constructed: {what} (tests/data/construct.py)"},
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    build()
