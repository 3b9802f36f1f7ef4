"""A GPU job whose optimizer runs on the CPU (its state offloaded, as ZeRO-Offload's CPU Adam does):
the optimizer step is the CPU's work while the GPU waits for the updated parameters, so a large
optimizer phase is CPU compute in the optimizer stage, not the GPU's (gpu_compute.py leaves it out
of the compute stage's share: rules/common.py ``compute_share``)."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import headroom, offloaded, pct
from bottleneckd.diagnosis.rules.cpu_state import cpu_state
from bottleneckd.diagnosis.thresholds import OFFLOADED_OPTIMIZER_HIGH
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
    return [
        Finding(
            resource=Resource.CPU_COMPUTE,
            stage=Stage.OPTIMIZER,
            score=min(1.0, share / FULL_SHARE),
            evidence=tuple(ev),
            headroom=headroom(share),
        )
    ]
