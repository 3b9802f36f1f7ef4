"""Host-to-device copies: the CPU-GPU interconnect."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import BUSY, INPUT_HIGH, headroom, pct, stack_samples
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.peaks.resolve import PeakTable


def transfer(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    p = w.phases
    share = p.share("transfer") if p else None
    pcie = w.busiest("cpu_gpu_interconnect")
    sm = w.get("gpu_compute", None, "sm_activity")
    score, ev = 0.0, []
    if share is not None and share >= INPUT_HIGH:
        score = min(1.0, share / 0.4)
        ev.append(f"host-to-device copies {pct(share)} of step time")
    if pcie is not None and pcie[1] >= BUSY and (sm is None or sm < 0.3):
        score = max(score, min(1.0, pcie[1]))
        ev.append(
            f"{pcie[0]} PCIe at {pct(pcie[1])} of its peak per direction"
            + (f" while SM activity is {pct(sm)}" if sm is not None else "")
        )
    head = headroom(share, stack_samples(w))
    return [Finding("cpu_gpu_interconnect", "transfer", score, tuple(ev), head)] if score else []
