"""Rolling windows of samples and their statistics (bounded memory: a deque of fixed length)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bottleneckd.diagnosis.thresholds import PHASE_STACK_SAMPLES, STEP_COVER_SLACK, STEP_REPORT_LAG
from bottleneckd.model.sample import Sample, StepPhases


@dataclass(frozen=True)
class Stat:
    mean: float
    p95: float
    max: float
    last: float
    count: int


@dataclass(frozen=True)
class RankView:
    """One rank as it last reported in the window: who it is, its GPU and its own facts (each rank's
    hook reports its own roofline, dtype and allocator figures; the job's merged facts are one rank's)."""

    rank: int
    node: str
    gpu: str  # the UUID of its model's GPU ("" on CPU)
    facts: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class WindowStats:
    start: float
    end: float
    samples: int
    stats: dict[tuple[str, str, str], Stat]
    notes: dict[tuple[str, str, str], str]
    phases: StepPhases | None
    #: training steps reported since the window was created (the run so far), not only in the window
    steps_seen: int = 0
    #: node -> the ranks that reported from it in the window (empty for one process)
    topology: tuple[tuple[str, tuple[int, ...]], ...] = ()
    #: each rank's latest report in the window (empty for one process reporting without ranks)
    ranks: tuple[RankView, ...] = ()
    #: readings' means over the intervals the timed steps of ``phases`` ran in (``Window.stats``):
    #: a figure to set beside a phase's share; empty where they are the window's (stack samples)
    phase_means: Mapping[tuple[str, str, str], float] = field(default_factory=dict)
    #: False where those intervals hold more time outside one rank's steps than STEP_COVER_SLACK of
    #: it, one step and STEP_REPORT_LAG: a step longer than the others ran beside them unreported
    steps_cover_readings: bool = True

    def get(self, resource: str, device: str | None, metric: str, field: str = "mean") -> float | None:
        """One statistic; with ``device=None`` the largest over devices (the busiest GPU, disk, NIC)."""
        if device is not None:
            s = self.stats.get((resource, device, metric))
            return None if s is None else getattr(s, field)
        vals = [getattr(s, field) for (r, _, m), s in self.stats.items() if r == resource and m == metric]
        return max(vals) if vals else None

    def over_phases(self, resource: str, device: str, metric: str) -> float | None:
        """A reading's mean over the intervals the phases' steps ran in (``phase_means``), else over
        the window: the figure to compare with a phase's share of the step."""
        key = (resource, device, metric)
        return self.phase_means[key] if key in self.phase_means else self.get(resource, device, metric)

    def busiest(self, resource: str, metric: str = "utilization") -> tuple[str, float] | None:
        best = None
        for (r, d, m), s in self.stats.items():
            if r == resource and m == metric and (best is None or s.mean > best[1]):
                best = (d, s.mean)
        return best

    def devices(self, resource: str) -> list[str]:
        return sorted({d for (r, d, _) in self.stats if r == resource})

    def note(self, resource: str, metric: str = "utilization") -> str:
        return next((n for (r, _, m), n in self.notes.items() if r == resource and m == metric and n), "")


def merge_phases(items: Iterable[StepPhases | None]) -> StepPhases | None:
    steps, wall = 0, 0.0
    phases: dict[str, float] = {}
    facts: dict[str, Any] = {}
    examples: int | None = 0  # None once one interval came without a count
    any_ = False
    for p in items:
        if p is None:
            continue
        any_ = True
        steps += p.steps
        wall += p.wall_seconds
        examples = None if examples is None or p.examples is None else examples + p.examples
        for k, v in p.phases.items():
            phases[k] = phases.get(k, 0.0) + v
        facts.update(p.facts)
    return StepPhases(steps, wall, phases, facts, examples) if any_ and steps else None


#: step phases are read over the last this many samples, utilisation over the whole window: a
#: change of stage shows within 1-2 intervals (the verdict follows within 3 s at 1 Hz, issue 11
#: item 9), while the slower-moving device figures keep the full window's smoothing
PHASE_SAMPLES = 2
#: phases counted from stack samples (attach) are read over at least PHASE_STACK_SAMPLES of them
#: (diagnosis/thresholds.py, with the measurement), however many ticks that takes
STACK_SAMPLES = PHASE_STACK_SAMPLES
#: stack-sampled intervals kept for that (at 2 Hz and 1 s ticks, 20 samples take ~10 ticks)
STACK_TICKS = 60


class Window:
    def __init__(self, length: int = 30, phase_samples: int = PHASE_SAMPLES) -> None:
        self.samples: deque[Sample] = deque(maxlen=length)
        self.phase_samples = max(1, phase_samples)
        self.steps_seen = 0
        self._sampled: deque[StepPhases] = deque(maxlen=STACK_TICKS)

    def add(self, sample: Sample) -> None:
        self.samples.append(sample)
        if sample.phases is not None:
            self.steps_seen += sample.phases.steps
            if sample.phases.sampled:
                self._sampled.append(sample.phases)

    def clear(self) -> None:
        self.samples.clear()
        self._sampled.clear()

    def _stack_phases(self) -> StepPhases | None:
        """The most recent stack-sampled intervals holding STACK_SAMPLES samples (or all kept)."""
        take: list[StepPhases] = []
        for p in reversed(self._sampled):
            take.append(p)
            if sum(x.steps for x in take) >= STACK_SAMPLES:
                break
        return merge_phases(reversed(take))

    def stats(self, facts: Mapping[str, Any] | None = None) -> WindowStats | None:
        """The window's statistics. ``facts``: the one fact state of this tick (the pipeline's),
        which the rules read; without it, the latest report's in the window. Facts are never merged
        over the window: a report's whole state replaces the last (a reverted mitigation is gone
        from the tick its report arrives)."""
        if not self.samples:
            return None
        series: dict[tuple[str, str, str], list[float]] = {}
        notes: dict[tuple[str, str, str], str] = {}
        for s in self.samples:
            for r in s.readings:
                key = (r.resource, r.device, r.metric)
                if r.value is None:
                    notes[key] = r.note
                else:
                    series.setdefault(key, []).append(r.value)
        stats = {}
        for k, v in series.items():
            ordered = sorted(v)
            stats[k] = Stat(
                sum(v) / len(v), ordered[min(len(v) - 1, int(round(0.95 * (len(v) - 1))))], ordered[-1], v[-1], len(v)
            )
        recent = list(self.samples)[-self.phase_samples :]
        phases = merge_phases(s.phases for s in recent)
        if phases is not None and phases.sampled and phases.steps < STACK_SAMPLES:
            phases = self._stack_phases() or phases
        if phases is None:
            phases = merge_phases(s.phases for s in self.samples)
        timed = phases is not None and not phases.sampled
        if phases is not None:
            if facts is None:
                facts = next(s.phases.facts for s in reversed(self.samples) if s.phases is not None)
            phases = StepPhases(phases.steps, phases.wall_seconds, phases.phases, facts, phases.examples)
        nodes: dict[str, set[int]] = {}
        views: dict[str, RankView] = {}
        for s in self.samples:
            for rank in s.ranks:
                i = rank.identity
                nodes.setdefault(i.node, set()).add(i.rank)
                views[i.key] = RankView(i.rank, i.node, i.gpu, rank.phases.facts)  # the latest report wins
        return WindowStats(
            self.samples[0].t,
            self.samples[-1].t,
            len(self.samples),
            stats,
            notes,
            phases,
            self.steps_seen,
            tuple((n, tuple(sorted(rs))) for n, rs in sorted(nodes.items())),
            tuple(sorted(views.values(), key=lambda v: (v.rank, v.node))),
            *self._over_steps(phases if timed else None),
        )

    def _over_steps(self, phases: StepPhases | None) -> tuple[dict[tuple[str, str, str], float], bool]:
        """The readings' means over the intervals the timed steps of ``phases`` ran in, and whether
        the steps cover them (``WindowStats.steps_cover_readings``). The intervals: back from the
        last one in which a step ended (those after it hold a step still running, a checkpoint, an
        evaluation or a recompilation, which no phase covers yet) over as many seconds as one rank's
        steps took (a step longer than an interval, reported whole where it ends, ran in the
        intervals before). Covered: their time less the steps' at most the larger of
        STEP_COVER_SLACK of it, one step, and STEP_REPORT_LAG (steps reported in the next tick)."""
        samples = list(self.samples)
        last = next((i for i in range(len(samples) - 1, -1, -1) if samples[i].phases is not None), None)
        if phases is None or last is None or not phases.steps:
            return {}, True
        ranks = max(1, len({r.identity.key for s in samples[: last + 1] for r in s.ranks}))
        need, took = phases.wall_seconds / ranks, 0.0
        taken: list[Sample] = []
        for s in reversed(samples[: last + 1]):
            taken.append(s)
            took += s.interval
            if took >= need * (1.0 - STEP_COVER_SLACK):
                break
        step = need / max(1.0, phases.steps / ranks)
        return _means(taken), took - need <= max(STEP_COVER_SLACK * took, step, STEP_REPORT_LAG)


def _means(samples: Iterable[Sample]) -> dict[tuple[str, str, str], float]:
    """Each known reading's mean over ``samples``."""
    sums: dict[tuple[str, str, str], list[float]] = {}
    for s in samples:
        for r in s.readings:
            if r.value is not None:
                sums.setdefault((r.resource, r.device, r.metric), []).append(r.value)
    return {k: sum(v) / len(v) for k, v in sums.items()}
