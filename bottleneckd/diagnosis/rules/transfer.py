"""Host-to-device copies: the CPU-GPU interconnect.

The evidence says how busy the job's PCIe link is while it copies (its utilization over the interval
divided by the copies' share of it, as the inter-node rule reads a NIC during communication), and
whether the host memory is pinned: a pageable copy stages through the driver's pinned buffer and
cannot fill the link (20.4 vs 55.5 GB/s host-to-device on an H200, docs/measurements.md)."""

from __future__ import annotations

from bottleneckd.diagnosis.job_gpus import job_busiest
from bottleneckd.diagnosis.rules.common import gpu_idles_through, headroom, pct, stack_samples
from bottleneckd.diagnosis.rules.input import HIGH_WEIGHT
from bottleneckd.diagnosis.thresholds import BUSY, COPY_SM_IDLE, PAGEABLE_LINK_MAX, TRANSFER_HIGH
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import Phase, Resource, Stage
from bottleneckd.peaks.resolve import PeakTable

#: score (chosen, not measured): the copies' share of the step, full at 40%
FULL_SHARE = 0.4


def transfer(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """The family: timed copies taking a high share of the step, or PCIe busy while the SMs idle;
    the stronger of the two scores, the evidence of both."""
    p = w.phases
    if p is not None and p.facts.get("gpu_count") == 0:
        return []  # no GPU on this machine: no CPU-GPU link to limit a copy (a stack line read as one is a cast)
    share = p.share(Phase.TRANSFER) if p else None
    copies, copies_ev = _timed_copies(w, peaks, share)
    if copies:
        copies_ev += _while_copying(w, peaks, share)
    link, link_ev = _pcie_busy_while_sms_idle(w, peaks)
    score = max(copies, link)
    if not score:
        return []
    return [
        Finding(
            resource=Resource.CPU_GPU_INTERCONNECT,
            stage=Stage.TRANSFER,
            score=score,
            evidence=tuple(copies_ev + link_ev),
            headroom=headroom(share, stack_samples(w)),
        )
    ]


def _timed_copies(w: WindowStats, peaks: PeakTable, share: float | None) -> tuple[float, list[str]]:
    """The copies' strength: their share of the step, full at FULL_SHARE; where the GPU idles through
    them (blocking copies: ``non_blocking=False``, or pageable memory, on the compute stream), as a
    data wait's is (rules/input.py: full from INPUT_HIGH, TRANSFER_HIGH's source, weighed
    HIGH_WEIGHT): the same starved GPU (a blind trace: blocking copies of pinned batches 20% of the
    step, the GPU idle as long, read gpu_compute/compute from its 78%)."""
    if share is None or share < TRANSFER_HIGH:
        return 0.0, []
    ev = [f"host-to-device copies {pct(share)} of step time"]
    idle = gpu_idles_through(w, peaks, Stage.TRANSFER, besides=(Stage.DATA, Stage.OTHER))
    if idle is None:
        return min(1.0, share / FULL_SHARE), ev
    ev.append(
        f"{idle[0]}, the job's least busy GPU, ran kernels {pct(idle[1])} of the time: it idles through the copies "
        "(they block its stream)"
    )
    return min(1.0, share / TRANSFER_HIGH) * HIGH_WEIGHT, ev


def link_while_copying(w: WindowStats, peaks: PeakTable | None) -> tuple[str, float] | None:
    """The job's busiest PCIe link and its host-to-device share of the peak while the step copies
    (the GPU's received bytes over the link's peak, else its utilization, either over the interval
    divided by the copies' share of the step, at most 1), or None where the copies are under
    TRANSFER_HIGH of the step (a small share magnifies a noisy rate) or either is not measured."""
    share = w.phases.share(Phase.TRANSFER) if w.phases is not None else None
    pcie = job_busiest(w, peaks, Resource.CPU_GPU_INTERCONNECT)
    if pcie is None or share is None or share < TRANSFER_HIGH:
        return None
    rx = w.get(Resource.CPU_GPU_INTERCONNECT, pcie[0], "rx_bytes_per_second")
    peak = w.get(Resource.CPU_GPU_INTERCONNECT, pcie[0], "peak")
    rate = rx / peak if rx is not None and peak else pcie[1]
    return pcie[0], min(1.0, rate / share)


def _while_copying(w: WindowStats, peaks: PeakTable | None, share: float | None) -> list[str]:
    """The job's busiest PCIe link during the copies, and whether the host memory is pinned."""
    ev = []
    pcie = job_busiest(w, peaks, Resource.CPU_GPU_INTERCONNECT)
    if pcie is not None and share:
        ev.append(
            f"{pcie[0]} PCIe at {pct(pcie[1])} of its peak per direction over the interval, "
            f"{pct(min(1.0, pcie[1] / share))} while copying"
        )
    if w.phases is not None and w.phases.facts.get("pin_memory") is False:
        copying = link_while_copying(w, peaks)
        if copying is not None and copying[1] >= PAGEABLE_LINK_MAX:
            ev.append(
                f"host memory not pinned (DataLoader pin_memory=False), yet the link ran at {pct(copying[1])} of its "
                "peak while copying, more than a pageable copy reaches: the copies' volume limits them, not the staging"
            )
        else:
            ev.append(
                "host memory not pinned (DataLoader pin_memory=False): a pageable copy stages through a pinned "
                "buffer and runs at about a third of a pinned one's rate"
            )
    return ev


def _pcie_busy_while_sms_idle(w: WindowStats, peaks: PeakTable | None) -> tuple[float, list[str]]:
    """The job's GPUs' links and SMs (diagnosis/job_gpus.py), not another tenant's."""
    pcie = job_busiest(w, peaks, Resource.CPU_GPU_INTERCONNECT)
    sm_of = job_busiest(w, peaks, Resource.GPU_COMPUTE, "sm_activity")
    sm = sm_of[1] if sm_of else None
    if pcie is not None and pcie[1] >= BUSY and (sm is None or sm < COPY_SM_IDLE):
        while_sm = f" while SM activity is {pct(sm)}" if sm is not None else ""
        return min(1.0, pcie[1]), [f"{pcie[0]} PCIe at {pct(pcie[1])} of its peak per direction{while_sm}"]
    return 0.0, []
