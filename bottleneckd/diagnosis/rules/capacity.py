"""Capacity: GPU memory (rules/gpu_memory.py), host memory (swap, pressure), storage nearly full."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import CAPACITY_HIGH, pct
from bottleneckd.diagnosis.rules.gpu_memory import gpu_memory
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.units import fmt_value
from bottleneckd.peaks.resolve import PeakTable


def _capacity_score(used: float) -> float:
    """Capacity nearly full limits what the job can do next (a larger batch, a cached dataset, a
    checkpoint) and risks failure: 90% used scores 0.75, 95% and more scores 1."""
    return 0.0 if used < CAPACITY_HIGH else min(1.0, 0.75 + (used - CAPACITY_HIGH) * 5)


def capacity(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    out = gpu_memory(w, peaks)  # the job's GPUs, by what its tensors need (rules/gpu_memory.py)
    c = w.get("cpu_memory", "host", "utilization")
    swap = (w.get("cpu_memory", "host", "swap_in_bytes_per_second") or 0) + (
        w.get("cpu_memory", "host", "swap_out_bytes_per_second") or 0
    )
    psi = w.get("cpu_memory", "host", "pressure_some")
    if (c is not None and c >= CAPACITY_HIGH) or swap > 1e6 or (psi or 0) > 0.1:
        ev = [f"host memory {pct(c)} used"]
        if swap > 0:
            ev.append(f"swapping {fmt_value(swap, 'B/s')}")
        if psi:
            ev.append(f"memory pressure stalls {pct(psi)} of the time")
        rss = w.get("cpu_memory", "job", "resident_bytes")
        if rss:
            ev.append(f"job resident memory {fmt_value(rss, 'B')}")
        out.append(
            Finding(
                "cpu_memory",
                "data",
                min(1.0, _capacity_score(c or 0.0) + (0.5 if swap > 1e6 else 0) + (psi or 0)),
                tuple(ev),
            )
        )
    s = w.busiest("storage_capacity")
    if s is not None and s[1] >= 0.95:
        out.append(
            Finding(
                "storage_capacity",
                "other",
                _capacity_score(s[1] - 0.05),
                (f"{s[0]} {pct(s[1])} full, {fmt_value(w.get('storage_capacity', s[0], 'free'), 'B')} free",),
            )
        )
    return out
