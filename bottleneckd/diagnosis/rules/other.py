"""A step spent mostly outside data, forward, backward, optimizer and communication ("other":
Python code between the phases, checkpoint writes, logging, evaluation). Explained from what the
samplers see: the job writing to storage (or stalled on I/O), one thread at a full core (Python
code), the job's processes at their cores; undetermined with the reason otherwise."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import cpu_state, headroom, io_wait, pct, stack_samples
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED
from bottleneckd.model.units import fmt_value
from bottleneckd.peaks.resolve import PeakTable

OTHER_HIGH = 0.5
#: share of the recent "other" stack samples in which the sampled thread waited (sleep, lock, child
#: process, socket) at or above which the time outside the phases is waiting, not computing
IDLE_HIGH = 0.5
#: job writes at this rate or more while outside the phases: checkpoint or log writes (20 MB/s is
#: ~10 s to write a 200 MB checkpoint, a cost that shows in a 1 s sampling window)
WRITES = 20e6


def other_share(w: WindowStats) -> float | None:
    p = w.phases
    if p is None or p.wall_seconds <= 0 or not p.steps:
        return None
    named = sum(v for k, v in p.phases.items() if k != "other")
    return max(
        0.0,
        min(
            1.0,
            (p.phases.get("other", 0.0) + max(0.0, p.wall_seconds - named - p.phases.get("other", 0.0)))
            / p.wall_seconds,
        ),
    )


def other(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    share = other_share(w)
    if share is None or share < OTHER_HIGH:
        return []
    src = "stack samples" if w.phases and w.phases.facts.get("phase_source") == "py-spy" else "step time"
    ev = [f"{pct(share)} of {src} outside data loading, forward, backward, optimizer and communication"]
    head = headroom(share, stack_samples(w))
    strength = min(1.0, share / 0.8)
    writes = w.get("storage_bandwidth", "job", "write_bytes_per_second")
    io, io_ev = io_wait(w)
    if (writes is not None and writes >= WRITES) or io:
        extra = [f"job writing {fmt_value(writes, 'B/s')} (checkpoints or logs)"] if writes else []
        return [Finding("storage_bandwidth", "other", 0.85 * strength, tuple(ev + extra + io_ev), head)]
    cpu = cpu_state(w)
    idle = w.phases.facts.get("other_idle_share") if w.phases else None
    if (
        idle is not None and idle >= IDLE_HIGH
    ):  # the stacks saw the thread wait there: whatever the CPU figures, not its compute
        why = (
            f"the sampled thread was waiting (sleep, lock, child process, socket) in {pct(idle)} of its recent stack samples "
            "outside the phases: a sleep, a lock or another process, not this thread's compute"
        )
        return [Finding(UNDETERMINED, "other", 0.7 * strength, tuple(ev + cpu.describe() + [why]), head)]
    if cpu.busy_evidence:
        what = (
            "one thread at a full core: Python code between the phases (logging, metrics, host-side bookkeeping)"
            if cpu.serial and not cpu.saturated
            else "the job's processes at their cores outside the timed phases"
        )
        return [Finding("cpu_compute", "other", 0.8 * strength, tuple(ev + cpu.describe() + [what]), head)]
    why = "the job neither computes (no thread near a full core) nor writes nor waits on storage there: a sleep, a lock or another process"
    return [Finding(UNDETERMINED, "other", 0.7 * strength, tuple(ev + cpu.describe() + [why]), head)]
