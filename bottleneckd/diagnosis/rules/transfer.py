"""Host-to-device copies: the CPU-GPU interconnect."""

from __future__ import annotations

from bottleneckd.diagnosis.job_gpus import job_busiest
from bottleneckd.diagnosis.rules.common import BUSY, INPUT_HIGH, headroom, pct
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.peaks.resolve import PeakTable


def transfer(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    p = w.phases
    share = p.share("transfer") if p else None
    pcie = job_busiest(w, peaks, "cpu_gpu_interconnect")  # the job's GPUs' links, not another tenant's
    sm_of = job_busiest(w, peaks, "gpu_compute", "sm_activity")
    sm = sm_of[1] if sm_of else None
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
    return [Finding("cpu_gpu_interconnect", "transfer", score, tuple(ev), headroom(share))] if score else []
