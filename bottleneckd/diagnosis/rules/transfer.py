"""Host-to-device copies: the CPU-GPU interconnect."""

from __future__ import annotations

from bottleneckd.diagnosis.job_gpus import job_busiest
from bottleneckd.diagnosis.rules.common import headroom, pct, stack_samples
from bottleneckd.diagnosis.thresholds import BUSY, COPY_SM_IDLE, TRANSFER_HIGH
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.peaks.resolve import PeakTable

#: score (chosen, not measured): the copies' share of the step, full at 40%
FULL_SHARE = 0.4


def transfer(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """The family: timed copies taking a high share of the step, or PCIe busy while the SMs idle;
    the stronger of the two scores, the evidence of both."""
    p = w.phases
    share = p.share("transfer") if p else None
    copies, copies_ev = _timed_copies(share)
    link, link_ev = _pcie_busy_while_sms_idle(w, peaks)
    score = max(copies, link)
    if not score:
        return []
    return [
        Finding(
            resource="cpu_gpu_interconnect",
            stage="transfer",
            score=score,
            evidence=tuple(copies_ev + link_ev),
            headroom=headroom(share, stack_samples(w)),
        )
    ]


def _timed_copies(share: float | None) -> tuple[float, list[str]]:
    if share is not None and share >= TRANSFER_HIGH:
        return min(1.0, share / FULL_SHARE), [f"host-to-device copies {pct(share)} of step time"]
    return 0.0, []


def _pcie_busy_while_sms_idle(w: WindowStats, peaks: PeakTable | None) -> tuple[float, list[str]]:
    """The job's GPUs' links and SMs (diagnosis/job_gpus.py), not another tenant's."""
    pcie = job_busiest(w, peaks, "cpu_gpu_interconnect")
    sm_of = job_busiest(w, peaks, "gpu_compute", "sm_activity")
    sm = sm_of[1] if sm_of else None
    if pcie is not None and pcie[1] >= BUSY and (sm is None or sm < COPY_SM_IDLE):
        while_sm = f" while SM activity is {pct(sm)}" if sm is not None else ""
        return min(1.0, pcie[1]), [f"{pcie[0]} PCIe at {pct(pcie[1])} of its peak per direction{while_sm}"]
    return 0.0, []
