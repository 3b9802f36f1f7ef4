"""sample -> window -> diagnosis -> recommendation -> snapshot. Live samples and recorded traces
go through this same object; the exporter, the reports and the hook read its snapshots."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from bottleneckd.diagnosis.classify import classify
from bottleneckd.diagnosis.stability import VerdictTracker
from bottleneckd.diagnosis.verdict import RegimeChange, Verdict
from bottleneckd.advice.knowledge import Mitigation, load_knowledge
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.advice.recommend import Recommendation, recommend
from bottleneckd.model.sample import Sample
from bottleneckd.model.resources import UNDETERMINED
from bottleneckd.diagnosis.window import Window, WindowStats


@dataclass(frozen=True)
class Snapshot:
    """The one current-diagnosis type every consumer reads."""

    sample: Sample
    stats: WindowStats
    verdict: Verdict
    recommendations: tuple[Recommendation, ...]
    changes: tuple[RegimeChange, ...]


class Pipeline:
    def __init__(self, peaks: PeakTable, kb: tuple[Mitigation, ...] | None = None, window: int = 5, hold: int = 2) -> None:
        self.peaks = peaks
        self.kb = kb if kb is not None else load_knowledge()
        self.window = Window(window)
        self.tracker = VerdictTracker(hold=hold)
        self._lock = threading.Lock()
        self._latest: Snapshot | None = None
        self.samples = 0
        self.first_t: float | None = None
        #: seconds each stable verdict held, and its latest instance
        self.held: dict[str, float] = {}
        #: the same, counting only windows in which training steps were reported
        self.held_training: dict[str, float] = {}
        self.last_of: dict[str, Verdict] = {}
        self.facts: dict = {}

    def __call__(self, sample: Sample) -> Snapshot:
        self.window.add(sample)
        stats = self.window.stats()
        assert stats is not None
        if stats.phases is not None:
            self.facts.update(stats.phases.facts)
        raw = classify(stats, self.peaks)
        stable = self.tracker.update(raw, stats)
        self.samples += 1
        self.first_t = self.first_t if self.first_t is not None else sample.t
        self.held[stable.resource] = self.held.get(stable.resource, 0.0) + sample.interval
        if stats.phases is not None and stats.phases.steps:
            self.held_training[stable.resource] = self.held_training.get(stable.resource, 0.0) + sample.interval
        self.last_of[stable.resource] = stable
        snap = Snapshot(sample, stats, stable, tuple(recommend(stable, self.kb, self.facts)), tuple(self.tracker.changes))
        with self._lock:
            self._latest = snap
        return snap

    @property
    def latest(self) -> Snapshot | None:
        with self._lock:
            return self._latest

    def dominant(self) -> Verdict | None:
        """The verdict that held longest over the run; idle or undetermined stretches (before the
        job starts, after it ends) do not hide a bottleneck that held for 3 or more intervals."""
        if not self.held:
            return None
        held = self.held_training or self.held  # while training, not set-up or tear-down
        determined = {r: s for r, s in held.items() if r != UNDETERMINED}
        interval = max(self.window.samples[-1].interval, 1e-9) if self.window.samples else 1.0
        if determined and max(determined.values()) >= 3 * interval * 0.9:
            return self.last_of[max(determined, key=lambda r: determined[r])]
        return self.last_of[max(held, key=lambda r: held[r])]
