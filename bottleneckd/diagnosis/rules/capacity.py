"""Capacity: GPU memory, host memory (swap, pressure), storage nearly full."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import data_share, headroom, pct, stack_samples
from bottleneckd.diagnosis.rules.gpu_memory import gpu_memory
from bottleneckd.diagnosis.thresholds import CAPACITY_HIGH, JOB_MEMORY_SHARE, MEMORY_STALL, STORAGE_FULL, SWAP_RATE
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import Resource, Stage
from bottleneckd.model.units import fmt_value
from bottleneckd.peaks.resolve import PeakTable

# --- scores: chosen, not measured -----------------------------------------------------------------

#: capacity at CAPACITY_HIGH scores 0.75, rising 5 per unit of share: 95% and more scores 1
AT_THRESHOLD = 0.75
PER_SHARE = 5
#: host memory: swapping adds half a point, pressure stalls their share
SWAP_SCORE = 0.5
#: a file system at STORAGE_FULL scores as memory at CAPACITY_HIGH (its share less 0.05)
STORAGE_OFFSET = 0.05


def _capacity_score(used: float) -> float:
    """Capacity nearly full limits what the job can do next (a larger batch, a cached dataset, a
    checkpoint) and risks failure: 90% used scores 0.75, 95% and more scores 1."""
    return 0.0 if used < CAPACITY_HIGH else min(1.0, AT_THRESHOLD + (used - CAPACITY_HIGH) * PER_SHARE)


def capacity(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """The family: each capacity nearly full, with its finding."""
    # GPU memory: the job's GPUs, by what its tensors need, not what the allocator keeps (gpu_memory.py)
    return gpu_memory(w, peaks) + [f for f in (_host_memory_short(w), _storage_full(w)) if f is not None]


def _host_memory_short(w: WindowStats) -> Finding | None:
    """Host memory nearly full, swapping, or stalling tasks on reclaim."""
    c = w.get(Resource.CPU_MEMORY, "host", "utilization")
    swap = (w.get(Resource.CPU_MEMORY, "host", "swap_in_bytes_per_second") or 0) + (
        w.get(Resource.CPU_MEMORY, "host", "swap_out_bytes_per_second") or 0
    )
    psi = w.get(Resource.CPU_MEMORY, "host", "pressure_some")
    if not ((c is not None and c >= CAPACITY_HIGH) or swap > SWAP_RATE or (psi or 0) > MEMORY_STALL):
        return None
    ev = [f"host memory {pct(c)} used"]
    if swap > 0:
        ev.append(f"swapping {fmt_value(swap, 'B/s')}")
    if psi:
        ev.append(f"memory pressure stalls {pct(psi)} of the time")
    rss = w.get(Resource.CPU_MEMORY, "job", "resident_bytes")
    if rss:
        ev.append(f"job resident memory {fmt_value(rss, 'B')}")
    share = job_memory_share(w)
    if share is not None and share <= JOB_MEMORY_SHARE:
        ev.append(
            f"the job's processes hold {pct(share)} of the memory in use: other processes hold the rest, which the "
            "job's own savings do not free"
        )
    score = min(1.0, _capacity_score(c or 0.0) + (SWAP_SCORE if swap > SWAP_RATE else 0) + (psi or 0))
    # named in the data stage: at most the data wait is removed (a probe's trace printed "no removable
    # stage" beside a 38% data wait)
    return Finding(
        resource=Resource.CPU_MEMORY,
        stage=Stage.DATA,
        score=score,
        evidence=tuple(ev),
        headroom=headroom(data_share(w), stack_samples(w)),
    )


def job_memory_share(w: WindowStats) -> float | None:
    """The job's resident memory (ranks and loader workers) over the host's memory in use, or None."""
    rss, used = w.get(Resource.CPU_MEMORY, "job", "resident_bytes"), w.get(Resource.CPU_MEMORY, "host", "used")
    return min(1.0, rss / used) if rss is not None and used else None


def _storage_full(w: WindowStats) -> Finding | None:
    """A file system nearly full."""
    s = w.busiest(Resource.STORAGE_CAPACITY)
    if s is None or not s[1] >= STORAGE_FULL:
        return None
    free = fmt_value(w.get(Resource.STORAGE_CAPACITY, s[0], "free"), "B")
    return Finding(
        resource=Resource.STORAGE_CAPACITY,
        stage=Stage.OTHER,
        score=_capacity_score(s[1] - STORAGE_OFFSET),
        evidence=(f"{s[0]} {pct(s[1])} full, {free} free",),
    )
