"""sample -> window -> diagnosis -> recommendation -> snapshot. Live samples and recorded traces
go through this same object; the exporter, the reports and the hook read its snapshots.

Threads: only the loop thread calls the pipeline; every other thread (the exporter, the hook's
epoch report) reads the immutable ``Snapshot`` it publishes under a lock, never the loop's own
dicts. Facts are the latest report's whole state (replaced, never merged: a reverted mitigation
is no longer in effect) over the machine's own facts, with what the last training window measured
(diagnosis/measured.py: idle cores, a stage waiting on latency).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from bottleneckd.advice.fit import machine_facts
from bottleneckd.advice.inputs import StepInputs, step_inputs
from bottleneckd.advice.knowledge import Mitigation, load_knowledge
from bottleneckd.advice.recommend import Recommendation, recommend
from bottleneckd.diagnosis.classify import classify
from bottleneckd.diagnosis.code import CodeProfile
from bottleneckd.diagnosis.measured import measured_facts
from bottleneckd.diagnosis.stability import VerdictTracker
from bottleneckd.diagnosis.straggler import with_straggler
from bottleneckd.diagnosis.straggler_history import StragglerHistory
from bottleneckd.diagnosis.thresholds import (
    DOMINANT_INTERVALS,
    DOMINANT_UNDETERMINED_RATIO,
    HOLD,
    INTERVAL_JITTER,
    WINDOW_SAMPLES,
)
from bottleneckd.diagnosis.verdict import RegimeChange, Verdict
from bottleneckd.diagnosis.window import Window, WindowStats
from bottleneckd.model.facts import Facts
from bottleneckd.model.resources import UNDETERMINED
from bottleneckd.model.sample import Sample
from bottleneckd.peaks.resolve import PeakTable

if TYPE_CHECKING:
    from bottleneckd.hardware.detect.machine import Machine


#: a sample's interval is at least this (s), so that a trace with zero intervals divides by no zero
MIN_INTERVAL = 1e-9


@dataclass(frozen=True)
class Snapshot:
    """The one current-diagnosis type every consumer reads."""

    sample: Sample
    stats: WindowStats
    verdict: Verdict
    recommendations: tuple[Recommendation, ...]
    changes: tuple[RegimeChange, ...]
    #: the facts the recommendations were made on (the job's latest report over the machine's)
    facts: Facts = field(default_factory=Facts)
    #: samples seen so far, and seconds each stable verdict held (largest first)
    samples: int = 0
    held: tuple[tuple[str, float], ...] = ()
    #: the verdict that held longest over the run (see Pipeline.dominant)
    dominant: Verdict | None = None
    #: the what-if models' measured inputs (advice/inputs.py): of this window, and of the last
    #: training window in which the dominant verdict held (None: no step timed)
    inputs: StepInputs | None = None
    dominant_inputs: StepInputs | None = None


def dominant_of(
    held: dict[str, float], held_training: dict[str, float], last_of: dict[str, Verdict], interval: float
) -> Verdict | None:
    """The verdict that held longest; idle or undetermined stretches (before the job starts,
    after it ends) do not hide a bottleneck that held for 3 or more intervals and for at least a
    quarter of the training time that was undetermined: a few seconds of a confident verdict at
    the end of a run that was undetermined throughout (a job's tear-down, a noisy window) do not
    become the run's verdict."""
    if not held:
        return None
    use = held_training or held  # while training, not set-up or tear-down
    determined = {r: s for r, s in use.items() if r != UNDETERMINED}
    longest = max(determined.values(), default=0.0)
    undetermined_training = held_training.get(UNDETERMINED, 0.0)  # idle before and after the job is not counted
    held_long = longest >= DOMINANT_INTERVALS * interval * INTERVAL_JITTER
    if determined and held_long and longest * DOMINANT_UNDETERMINED_RATIO >= undetermined_training:
        return last_of[max(determined, key=lambda r: determined[r])]
    return last_of[max(use, key=lambda r: use[r])]


class Pipeline:
    def __init__(
        self,
        peaks: PeakTable,
        kb: tuple[Mitigation, ...] | None = None,
        window: int = WINDOW_SAMPLES,
        hold: int = HOLD,
        machine: Machine | None = None,
    ) -> None:
        self.peaks = peaks
        self.kb = kb if kb is not None else load_knowledge()
        self.window = Window(window)
        self.tracker = VerdictTracker(hold=hold)
        self._lock = threading.Lock()
        self._latest: Snapshot | None = None
        self._machine_facts = machine_facts(machine)
        self._job_facts = Facts()
        self._measured = Facts()  # the last training window's (tear-down measures nothing of the job)
        # written by the loop thread only; others read the snapshot
        self._samples = 0
        self._held: dict[str, float] = {}
        self._held_training: dict[str, float] = {}  # only windows in which training steps were reported
        self._last_of: dict[str, Verdict] = {}
        self._stragglers = StragglerHistory()
        self._held_stage: dict[tuple[str, str], float] = {}
        self.code = CodeProfile()  # stack samples by the user's code, over the run
        self._inputs_of: dict[str, StepInputs] = {}  # resource -> inputs of the last training window it held

    def __call__(self, sample: Sample) -> Snapshot:
        self.window.add(sample)
        if sample.stacks is not None:
            self.code.add(sample.stacks)
        stats = self.window.stats()
        assert stats is not None
        if sample.phases is not None:
            self._job_facts = Facts(sample.phases.facts)  # the report's whole state replaces the last
        raw = with_straggler(
            classify(stats, self.peaks), self._stragglers.observe(sample), self._stragglers
        )  # the rank the others wait for
        self._stragglers.update(raw)
        stable = self.tracker.update(raw, stats)
        if stats.phases is not None and stats.phases.steps:
            self._measured = measured_facts(stats, stable)
        facts = Facts({**self._machine_facts, **self._job_facts, **self._measured})
        self._samples += 1
        self._held[stable.resource] = self._held.get(stable.resource, 0.0) + sample.interval
        if stats.phases is not None and stats.phases.steps:
            self._held_training[stable.resource] = self._held_training.get(stable.resource, 0.0) + sample.interval
        # a resource's verdict is the instance of the stage that held longest while training (the
        # stage at tear-down, a job printing its summary, is not the job's stage)
        key = (stable.resource, stable.stage)
        if stats.phases is not None and stats.phases.steps:
            self._held_stage[key] = self._held_stage.get(key, 0.0) + sample.interval
        best = self._last_of.get(stable.resource)
        if (
            best is None
            or best.stage == stable.stage
            or self._held_stage.get(key, 0.0) >= self._held_stage.get((stable.resource, best.stage), 0.0)
        ):
            self._last_of[stable.resource] = stable
        interval = max(self.window.samples[-1].interval, MIN_INTERVAL)
        dominant = self._stragglers.apply(dominant_of(self._held, self._held_training, self._last_of, interval))
        inputs = step_inputs(stats, self.window.samples, self.peaks, facts, self.code)
        if inputs is not None:
            self._inputs_of[stable.resource] = inputs
        snap = Snapshot(
            sample,
            stats,
            self.with_code(stable, facts),
            tuple(recommend(stable, self.kb, facts, inputs=inputs)),
            tuple(self.tracker.changes),
            facts,
            self._samples,
            tuple(sorted(self._held.items(), key=lambda kv: -kv[1])),
            None if dominant is None else self.with_code(dominant, facts),
            inputs,
            None if dominant is None else self._inputs_of.get(dominant.resource),
        )
        with self._lock:
            self._latest = snap
        return snap

    def with_code(self, v: Verdict, facts: Facts | None = None) -> Verdict:
        """The verdict with the user's code its stage runs (evidence and ``code``), when stacks name
        it; an undetermined one only when the step waits in its stage with nothing busy (latency:
        the code that waits is named)."""
        if v.resource == UNDETERMINED and (facts or {}).get("idle_wait_stage") != v.stage:
            return v
        a = self.code.attribute(v.stage)
        return v if a is None else replace(v, code=a, evidence=v.evidence + (a.evidence(),))

    @property
    def latest(self) -> Snapshot | None:
        with self._lock:
            return self._latest

    @property
    def samples(self) -> int:
        snap = self.latest
        return snap.samples if snap else 0

    @property
    def facts(self) -> Facts:
        """The facts of the latest snapshot (the machine's alone before any)."""
        snap = self.latest
        return snap.facts if snap else self._machine_facts

    @property
    def held(self) -> dict[str, float]:
        snap = self.latest
        return dict(snap.held) if snap else {}

    def dominant(self) -> Verdict | None:
        """The verdict that held longest over the run (from the latest snapshot)."""
        snap = self.latest
        return snap.dominant if snap else None
