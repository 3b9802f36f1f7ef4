"""Constructed GPU traces as a held-out judge would write them: labelled situations on H100, H200,
A100, L4 nodes, with what a performance engineer would call each.

    python -m tests.data.construct_gpu      # rewrites tests/data/gpu_heldout/<name>/{trace,expected}

Each trace is 20 samples at 1 s. The GPU readings come from the real GpuSampler reading the fake NVML
(tests/data/gpu_node.py: GPM on Hopper only, NVML's busy and memory-busy fractions, PCIe, NVLink
counters, clocks and clock-event reasons, process lists); the CPU, memory, storage and network
readings are written in the samplers' own form; the step phases and facts are what each rank's hook
reports (tests/data/gpu_hook.py), merged over the ranks as the sidecar merges them. Figures carry
+-3% deterministic jitter. The scenarios and their sources are in tests/data/gpu_scenarios.py.
"""

from __future__ import annotations

import json
import random
import tempfile
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from bottleneckd.model.sample import Sample, SamplerStatus
from bottleneckd.outputs.trace import TraceWriter
from tests.data.gpu_hook import job_report
from tests.data.gpu_node import Node
from tests.data.gpu_scenarios import SCENARIOS, Scenario

HERE = Path(__file__).resolve().parent
OUT = HERE / "gpu_heldout"
T0 = 1_797_000_000.0
N = 20
SAMPLERS = ("gpu", "cpu_compute", "cpu_memory", "cpu_memory_bandwidth", "storage", "storage_network", "inter_node")


def jittered(obj: Any, rng: random.Random, spread: float = 0.03) -> Any:
    """A copy of a figures dataclass with every float moved by up to +-``spread`` (ratios kept <= 1)."""
    if not is_dataclass(obj):
        return obj
    for f in fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, float) and v and f.name not in _FIXED:
            nv = v * (1 + rng.uniform(-spread, spread))
            setattr(obj, f.name, min(nv, 1.0) if v <= 1.0 and f.name not in _RAW else nv)
    return obj


#: figures that do not wander: the cores a job may use
_FIXED = {"usable"}
#: float fields that are not ratios (cores, bytes/s, watts): never capped at 1
_RAW = {
    "rank_busy",
    "worker_busy",
    "worker_max",
    "main",
    "launch",
    "hottest",
    "usable",
    "waiting",
    "d_threads",
    "worker_hottest",
    "launcher",
    "pcie_tx",
    "pcie_rx",
    "nvlink",
    "power",
    "disk_read",
    "disk_ops",
    "disk_queue",
    "job_reads",
    "job_chars",
    "job_calls",
    "job_writes",
    "eth",
    "ib",
    "nfs",
}


def build_one(name: str, sc: Scenario, out_dir: Path) -> None:
    rng = random.Random(name)
    with tempfile.TemporaryDirectory() as tmp:
        node = Node(sc.node, Path(tmp), sc.job_pids, sc.other_pids)
        d = out_dir / name
        d.mkdir(parents=True, exist_ok=True)
        w = TraceWriter(str(d / "trace.jsonl"), node.machine, node.peaks, 1.0, {"constructed": sc.what}, overwrite=True)
        for k in range(N):
            tick, hook = sc.tick(node, k)
            tick.gpus = [jittered(g, rng) for g in tick.gpus]
            tick.job = jittered(tick.job, rng)
            tick.host = jittered(tick.host, rng)
            readings = tuple(node.readings(tick))
            phases, ranks = None, ()
            if hook is not None and hook.ranks:
                for r in hook.ranks:
                    r.shares = {p: s * (1 + rng.uniform(-0.03, 0.03)) for p, s in r.shares.items()}
                    total = sum(r.shares.values())
                    r.shares = {p: s / total for p, s in r.shares.items()}
                phases, ranks = job_report(hook.ranks, k, hook.world, hook.local, sc.node.hostname)
            elif hook is not None:
                phases = hook.phases
            status = tuple(SamplerStatus(s, True, 0.002) for s in SAMPLERS)
            w(Sample(T0 + k, 1.0, readings, phases, status, ranks))
        w.close()
    _fix_created(d / "trace.jsonl")
    expected = {
        "resource": sc.resource,
        "stage": sc.stage,
        "why": sc.why,
        "top_recommendations": list(sc.top),
        **({"straggler_rank": sc.straggler} if sc.straggler is not None else {}),
        "provenance": f"constructed: {sc.what} (tests/data/construct_gpu.py)",
    }
    (d / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


def _fix_created(path: Path) -> None:
    """The header's creation time set to the trace's start, so that a rebuild writes the same bytes."""
    lines = path.read_text().split("\n")
    head = json.loads(lines[0])
    head["created"] = T0
    lines[0] = json.dumps(head, separators=(",", ":"))
    path.write_text("\n".join(lines))


def build(out_dir: Path = OUT) -> None:
    for old in out_dir.glob("*/expected.json"):  # a scenario renamed or removed leaves no stale trace
        if old.parent.name not in SCENARIOS:
            for f in old.parent.iterdir():
                f.unlink()
            old.parent.rmdir()
    for name, sc in SCENARIOS.items():
        build_one(name, sc, out_dir)


if __name__ == "__main__":
    build()
