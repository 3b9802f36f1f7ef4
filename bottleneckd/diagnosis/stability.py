"""Hysteresis, so the verdict does not flap, and regime changes reported with their time."""

from __future__ import annotations

from dataclasses import replace

from bottleneckd.diagnosis.thresholds import CHECKPOINT_WRITES, FLAP_WINDOWS, JUMP, TRACKER_HOLD, WINDOW_SAMPLES, WRITES
from bottleneckd.diagnosis.verdict import RegimeChange, Verdict
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED, Resource

#: regime changes kept (the latest; ``changes_total`` counts all): memory stays bounded on a run
#: of weeks, and a report lists what a reader can follow (a run that changed regime more often
#: than this flapped, and the count says so)
MAX_REGIME_CHANGES = 100


def regime_label(w: WindowStats, before: str, after: str, before_stage: str = "", after_stage: str = "") -> str:
    steps = w.phases.steps if w.phases else None
    disks = [
        (m, s.mean) for (r, d, m), s in w.stats.items() if r == Resource.STORAGE_BANDWIDTH and d not in ("job", "host")
    ]
    reads = sum(v for m, v in disks if m == "read_bytes_per_second")
    # a disk's throughput is its bytes read and written (samplers/storage.py)
    writes = max(0.0, sum(v for m, v in disks if m == "throughput") - reads)
    writing = writes >= WRITES and writes > CHECKPOINT_WRITES * max(reads, 1.0)
    if steps == 0 and writing:
        return "checkpoint writing (no steps, storage busy writing)"
    if steps == 0:
        return "no training steps (evaluation, checkpoint or a pause)"
    if before == UNDETERMINED and steps:
        return f"training steps under way: {after} now limits the step"
    epoch = w.phases.facts.get("epoch") if w.phases else None
    if after in (Resource.STORAGE_BANDWIDTH, Resource.STORAGE_NETWORK_BANDWIDTH) and writing:
        return "writing to storage (checkpoints or logs)"
    if after in (Resource.STORAGE_BANDWIDTH, Resource.STORAGE_NETWORK_BANDWIDTH) and epoch is not None:
        return f"epoch {epoch}: reading from storage (cold cache)"
    if before == after:
        return f"{after} still limits the step, now in the {after_stage} stage (was {before_stage})"
    return f"bottleneck moved from {before} to {after}"


def regime(v: Verdict) -> tuple[str, str]:
    """What a regime is: the limiting resource and the stage it limits (an undetermined verdict's
    stage is not a regime of its own)."""
    return (v.resource, "" if v.resource == UNDETERMINED else v.stage)


class VerdictTracker:
    """A new verdict (resource and stage) replaces the current one after ``hold`` consecutive
    windows agree, or at once when it is much stronger (confidence margin ``jump``). A verdict that
    has just come back from an excursion (A -> B -> A) leaves again for the same regime within
    FLAP_WINDOWS windows only when WINDOW_SAMPLES windows in a row agree: a finding whose figure
    sits on its threshold would otherwise flap each time the sliding window's mean crosses it, while
    one noisy excursion still ends on the hold."""

    def __init__(self, hold: int = TRACKER_HOLD, jump: float = JUMP) -> None:
        self.hold = hold
        self.jump = jump
        self.current: Verdict | None = None
        self._candidate: tuple[str, str] | None = None
        self._count = 0
        #: the regimes replaced at the last change and the one before, and the windows seen since
        self._left: tuple[str, str] | None = None
        self._left_before: tuple[str, str] | None = None
        self._since_change = 0
        #: the latest regime changes, oldest first: an immutable tuple replaced on each change, so
        #: that a snapshot holds it without a copy per tick
        self.changes: tuple[RegimeChange, ...] = ()
        self.changes_total = 0

    def update(self, v: Verdict, w: WindowStats) -> Verdict:
        cur = self.current
        if cur is None:
            self.current = v
            return v
        self._since_change += 1
        if regime(v) == regime(cur):
            self._candidate, self._count = None, 0
            self.current = replace(v, since=cur.since)
            return self.current
        if regime(v) == self._candidate:
            self._count += 1
        else:
            self._candidate, self._count = regime(v), 1
        if regime(v) == self._left and regime(cur) == self._left_before and self._since_change <= FLAP_WINDOWS:
            # a third turn between the same two regimes: only on agreement over a window's length of
            # samples (the windows slide one sample at a time, so two in a row are mostly the same
            # evidence); a first return from an excursion is taken on the hold, as any change
            agreed = self._count >= max(self.hold, WINDOW_SAMPLES)
        else:
            agreed = self._count >= self.hold or v.confidence - cur.confidence >= self.jump
        if agreed:
            change = RegimeChange(
                v.t,
                cur.resource,
                v.resource,
                regime_label(w, cur.resource, v.resource, cur.stage, v.stage),
                cur.stage,
                v.stage,
            )
            self.changes = (*self.changes[-(MAX_REGIME_CHANGES - 1) :], change)
            self.changes_total += 1
            self.current = replace(v, since=v.t)
            self._candidate, self._count = None, 0
            self._left_before, self._left, self._since_change = self._left, regime(cur), 0
            return self.current
        return replace(cur, t=v.t)
