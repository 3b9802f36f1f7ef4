"""A GPU job whose optimizer runs on the CPU (its state offloaded, as ZeRO-Offload's CPU Adam does):
the optimizer step is the CPU's work while the GPU waits for the updated parameters, so a large
optimizer phase is the CPU's in the optimizer stage, not the GPU's (gpu_compute.py leaves it out
of the compute stage's share: rules/common.py ``compute_share``). Its resource is the host's memory
bandwidth where the memory-bandwidth sampler (a known peak) reads it busy while the optimizer runs
(its mean over the steps' intervals over the optimizer's share at MEMBW_BUSY or more, as for a CPU
job's compute: cpu_compute.py): Adam reads and writes ~28 bytes per parameter for a few FLOPs,
below any CPU's ridge point; else its CPU (a blind trace: CPU Adam over a 13B model with the host's
DRAM at 77% of its peak read as CPU compute at 17% of the cores)."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import headroom, offloaded, pct
from bottleneckd.diagnosis.rules.cpu_state import cpu_state
from bottleneckd.diagnosis.thresholds import MEMBW_BUSY, OFFLOADED_OPTIMIZER_HIGH
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import Phase, Resource, Stage
from bottleneckd.peaks.resolve import PeakTable

# --- scores: chosen, not measured -----------------------------------------------------------------

#: the optimizer phase's strength: its share of the step, full at 40%
FULL_SHARE = 0.4


def offloaded_optimizer(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    if not offloaded(w):
        return []
    p = w.phases
    assert p is not None
    share = p.share(Phase.OPTIMIZER) or 0.0
    if share < OFFLOADED_OPTIMIZER_HIGH:
        return []
    ev = [f"the optimizer step {pct(share)} of step time, its state offloaded to the CPU: the GPU waits for it"]
    cpu = cpu_state(w)
    if cpu.busy is not None:
        ev.append(f"job's processes at {cpu.busy:.2f} of the {cpu.cores:g} cores they may use")
    # the DRAM's use while the optimizer runs: its mean over the steps, over the optimizer's share
    # (the rest of the step is the GPU's), as a link's load during communication is read
    mbw = w.over_phases(Resource.CPU_MEMORY_BANDWIDTH, "host", "utilization")
    during = min(1.0, mbw / share) if mbw is not None else None
    dram = during is not None and during >= MEMBW_BUSY
    if dram:
        ev.append(
            f"host memory bandwidth {pct(mbw)} of its peak over the step, {pct(during)} while the optimizer runs: "
            "it streams its state (Adam reads and writes about 28 bytes per parameter for a few FLOPs, below any "
            "CPU's ridge point)"
        )
    return [
        Finding(
            resource=Resource.CPU_MEMORY_BANDWIDTH if dram else Resource.CPU_COMPUTE,
            stage=Stage.OPTIMIZER,
            score=min(1.0, share / FULL_SHARE),
            evidence=tuple(ev),
            headroom=headroom(share),
        )
    ]
