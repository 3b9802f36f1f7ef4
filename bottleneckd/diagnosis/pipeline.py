"""sample -> window -> diagnosis. Live samples and recorded traces go through this same object
(driven by ``runtime/run.py``'s ``Run``, which advises on what it publishes).

Threads: only the loop thread calls the pipeline; every other thread reads the immutable
``Diagnosis`` it publishes under a lock, never the loop's own dicts. The fact state is one per
tick, read by the rules and the advice alike: the latest report's whole state (replaced, never
merged: a reverted mitigation is gone from the tick its report arrives) over the machine's facts.
The advice reads it with what the last training window measured besides (diagnosis/measured.py:
idle cores, a stage waiting on latency), which the rules produce rather than read.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from bottleneckd.diagnosis.classify import classify, findings
from bottleneckd.diagnosis.code import CodeProfile
from bottleneckd.diagnosis.held import Held, HeldAccounts
from bottleneckd.diagnosis.measured import measured_facts
from bottleneckd.diagnosis.stability import VerdictTracker, regime
from bottleneckd.diagnosis.step_inputs import NO_OTHER, OtherCode, StepInputs, other_code, phase_ranges, step_inputs
from bottleneckd.diagnosis.straggler import with_straggler
from bottleneckd.diagnosis.straggler_history import RUN_NOTES, StragglerHistory
from bottleneckd.diagnosis.thresholds import (
    DOMINANT_INTERVALS,
    DOMINANT_UNDETERMINED_RATIO,
    HOLD,
    INTERVAL_JITTER,
    OTHER_LARGEST,
    WINDOW_SAMPLES,
)
from bottleneckd.diagnosis.throughput import window_throughput
from bottleneckd.diagnosis.verdict import RegimeChange, Verdict
from bottleneckd.diagnosis.whole_run import WHOLE_RUN, between_the_phases, from_whole_run
from bottleneckd.diagnosis.window import Window, WindowStats
from bottleneckd.model.facts import EMPTY, Facts
from bottleneckd.model.resources import UNDETERMINED, Phase, Stage
from bottleneckd.model.sample import Sample
from bottleneckd.model.throughput import Throughput
from bottleneckd.peaks.capabilities import gpu_facts
from bottleneckd.peaks.resolve import PeakTable

#: a sample's interval is at least this (s), so that a trace with zero intervals divides by no zero
MIN_INTERVAL = 1e-9


@dataclass(frozen=True)
class Diagnosis:
    """One tick's diagnosis, as published (immutable: any thread may read it)."""

    sample: Sample
    stats: WindowStats
    verdict: Verdict
    #: the latest regime changes (bounded, diagnosis/stability.py), oldest first
    changes: tuple[RegimeChange, ...]
    #: what the advice reads: this tick's one fact state (the job's latest report over the machine's, which
    #: the rules read too) with what the last training window measured (diagnosis/measured.py)
    facts: Facts
    #: samples seen so far, and seconds each stable verdict held (largest first)
    samples: int = 0
    held: tuple[tuple[str, float], ...] = ()
    #: the verdict that held longest over the run (see dominant_of)
    dominant: Verdict | None = None
    #: the what-if models' measured inputs (diagnosis/step_inputs.py): of this window, and of the last
    #: training window in which the dominant verdict held (None: no step timed)
    inputs: StepInputs | None = None
    dominant_inputs: StepInputs | None = None
    #: samples/s, tokens/s and MFU over the window's step phases (the peak alone before any)
    throughput: Throughput | None = None


@dataclass(frozen=True)
class Summary:
    """A verdict over the whole time it held while training: its evidence and headroom from all its
    windows (``verdict``), and its last window's own (``last``), kept as a note; the facts and the
    what-if inputs its advice reads, measured over that time too (None: no step timed in it)."""

    verdict: Verdict
    last: Verdict
    seconds: float
    samples: int
    steps: int  # summed over the ranks that reported (each rank's own steps: steps / ranks)
    facts: Facts = field(default_factory=Facts)
    inputs: StepInputs | None = None
    ranks: int = 1  # the ranks whose steps it sums
    #: read over all the training time as one window, not a regime's (diagnosis/whole_run.py)
    whole_run: bool = False


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
        window: int = WINDOW_SAMPLES,
        hold: int = HOLD,
        base_facts: Mapping[str, Any] | None = None,
    ) -> None:
        """``base_facts``: the machine's own facts (advice/fit.py ``machine_facts``), under the job's."""
        self.peaks = peaks
        self.window = Window(window)
        self.tracker = VerdictTracker(hold=hold)
        self._lock = threading.Lock()
        self._latest: Diagnosis | None = None
        self._base_facts = Facts({**gpu_facts(peaks), **(base_facts or {})})
        self._facts = self._base_facts  # one object while no report changes it
        self._measured = Facts()  # the last training window's (tear-down measures nothing of the job)
        self._advised_facts = self._base_facts  # the state and the measured facts, one object while equal
        # written by the loop thread only; others read the published diagnosis
        self._samples = 0
        self._held: dict[str, float] = {}
        self._held_training: dict[str, float] = {}  # only windows in which training steps were reported
        self._last_of: dict[str, Verdict] = {}
        self._stragglers = StragglerHistory()
        self._held_stage: dict[tuple[str, str], float] = {}
        self._last_of_stage: dict[tuple[str, str], Verdict] = {}  # each regime's last verdict while training
        self._accounts = HeldAccounts()  # each regime over all its time (under the lock)
        self.code = CodeProfile()  # stack samples by the user's code, over the run
        self._inputs_of: dict[str, StepInputs] = {}  # resource -> inputs of the last training window it held
        # what the code profile says, as of the last tick (immutable: summary() reads them from another thread)
        self._other: OtherCode = NO_OTHER
        self._drawn: dict[str, float] = {}

    def __call__(self, sample: Sample) -> Diagnosis:
        if sample.phases is not None:  # the report's whole state replaces the last
            facts = Facts({**self._base_facts, **sample.phases.facts})
            if facts != self._facts:  # the same object while the state holds (the advice is kept)
                self._facts = facts
        facts = self._facts
        self.window.add(sample)
        if sample.stacks is not None:
            self.code.add(sample.stacks)
        stats = self.window.stats(facts)
        assert stats is not None  # the window holds the sample just added
        raw = with_straggler(
            classify(stats, self.peaks), self._stragglers.observe(sample), self._stragglers
        )  # the rank the others wait for
        self._stragglers.update(raw)
        stable = self.tracker.update(raw, stats)
        if stats.phases is not None and stats.phases.steps:
            self._measured = measured_facts(stats, stable, self.peaks)
        self._drawn = drawn = _drawn_fact(self.code)  # over the run, as the code named
        advised = Facts({**facts, **self._measured, **drawn})
        if advised != self._advised_facts:  # the same object while equal (the advice is kept)
            self._advised_facts = advised
        self._samples += 1
        self._held[stable.resource] = self._held.get(stable.resource, 0.0) + sample.interval
        training = stats.phases is not None and stats.phases.steps > 0
        if training:
            self._held_training[stable.resource] = self._held_training.get(stable.resource, 0.0) + sample.interval
        # a resource's verdict is the instance of the stage that held longest while training (the
        # stage at tear-down, a job printing its summary, is not the job's stage)
        key = (stable.resource, stable.stage)
        if training:
            self._held_stage[key] = self._held_stage.get(key, 0.0) + sample.interval
            self._last_of_stage[key] = stable
        best = self._last_of.get(stable.resource)
        if (
            best is None
            or best.stage == stable.stage
            or self._held_stage.get(key, 0.0) >= self._held_stage.get((stable.resource, best.stage), 0.0)
        ):
            self._last_of[stable.resource] = stable
        interval = max(sample.interval, MIN_INTERVAL)
        if training:
            with self._lock:
                self._accounts.add(regime(stable), sample)
        dominant = self._stragglers.apply(dominant_of(self._held, self._held_training, self._last_of, interval))
        dominant = self._whole_run(dominant, facts, interval) or dominant  # the whole run's, where it speaks
        self._other = other_code(self.code)
        inputs = step_inputs(stats, phase_ranges(self.window.samples), self.peaks, self._advised_facts, self._other)
        if inputs is not None:
            self._inputs_of[stable.resource] = inputs
        diagnosis = Diagnosis(
            sample=sample,
            stats=stats,
            verdict=self.with_code(stable, self._advised_facts),
            changes=self.tracker.changes,
            facts=self._advised_facts,
            samples=self._samples,
            held=tuple(sorted(self._held.items(), key=lambda kv: -kv[1])),
            dominant=None if dominant is None else self.with_code(dominant, self._advised_facts),
            inputs=inputs,
            dominant_inputs=None if dominant is None else self._inputs_of.get(dominant.resource),
            throughput=window_throughput(stats, self.peaks, self._advised_facts),
        )
        with self._lock:
            self._latest = diagnosis
        return diagnosis

    def _whole_run(self, dominant: Verdict | None, facts: Facts, interval: float) -> Verdict | None:
        """The run's verdict from all its training time as one window, where its other stage limits it
        and the regime held longest is another stage's (diagnosis/whole_run.py); read only once the
        whole run's other stage reaches the share its rule needs, beside a regime held longest of
        another stage and no straggler (then a second pass of the rules, over the run's sums, each
        tick: a report at any tick, the last included, reads the run as it stands)."""
        share = self._accounts.run_share(Phase.OTHER)
        if dominant is None or dominant.stage == Stage.OTHER or dominant.straggler or share is None:
            return None
        if share < OTHER_LARGEST:
            return None
        held_other = [(self._last_of_stage[k], s) for k, s in self._held_stage.items() if k[1] == Stage.OTHER]
        return between_the_phases(
            dominant,
            self._accounts.whole(facts, self.window.steps_seen),
            self.peaks,
            held_other,
            min_seconds=DOMINANT_INTERVALS * interval * INTERVAL_JITTER,
        )

    def with_code(self, v: Verdict, facts: Facts | None = None) -> Verdict:
        """The verdict with the user's code its stage runs (evidence and ``code``), when stacks name
        it; an undetermined one only when the step waits in its stage with nothing busy (latency:
        the code that waits is named)."""
        if v.resource == UNDETERMINED and (facts or EMPTY).get("idle_wait_stage") != v.stage:
            return v
        a = self.code.attribute(v.stage)
        return v if a is None else replace(v, code=a, evidence=v.evidence + (a.evidence(),))

    @property
    def latest(self) -> Diagnosis | None:
        with self._lock:
            return self._latest

    @property
    def samples(self) -> int:
        d = self.latest
        return d.samples if d else 0

    @property
    def held(self) -> dict[str, float]:
        d = self.latest
        return dict(d.held) if d else {}

    def dominant(self) -> Verdict | None:
        """The verdict that held longest over the run (from the latest diagnosis)."""
        d = self.latest
        return d.dominant if d else None

    def summary(self, v: Verdict) -> Summary | None:
        """``v`` (a verdict of this run) over the whole time its regime held while training: the
        rules read the sums of all its samples as one window, and its evidence, headroom and figures
        are theirs; the straggler, the secondary pressures and the confidence stay ``v``'s. None
        when it never held while training (then only its last window speaks for it). Its facts and
        what-if inputs are that time's too: the advice on the run's verdict is not made from its last
        window alone (under attach a few stack samples, whose shares range over 0-50% where the whole
        time's is 42%)."""
        with self._lock:
            state = self._facts
            whole = from_whole_run(v)  # the verdict says so: not the loop's state of a later tick
            held = (self._accounts.whole if whole else partial(self._accounts.held, regime(v)))(
                state, self.window.steps_seen
            )
        if held is None:
            return None
        measured = measured_facts(held.stats, v, self.peaks) if held.steps else Facts()
        facts = Facts({**state, **measured, **self._drawn})
        return Summary(
            verdict=_over(v, held, self.peaks),
            last=v,
            seconds=held.seconds,
            samples=held.samples,
            steps=held.steps,
            facts=facts,
            inputs=step_inputs(held.stats, held.ranges, self.peaks, facts, self._other),
            ranks=max(1, len(held.stats.ranks)),
            whole_run=whole,
        )


def _drawn_fact(code: CodeProfile) -> dict[str, float]:
    """The facts of the share of the loader's stack samples drawing random numbers, and of those
    the share seeded by the sample, where known."""
    drawn, seeded = code.data_random_share(), code.data_seeded_share()
    return {
        **({} if drawn is None else {"data_random_share": drawn}),
        **({} if seeded is None else {"data_seeded_share": seeded}),
    }


def _over(v: Verdict, held: Held, peaks: PeakTable) -> Verdict:
    """``v`` with the evidence the rules give over all of its regime's samples (the straggler's
    evidence, from diagnosis/straggler.py, kept after it)."""
    straggler = v.straggler or {}
    if straggler.get("limits_the_step"):  # the straggler's own verdict (load imbalance): its evidence stands
        return v
    if v.resource == UNDETERMINED:
        whole = classify(held.stats, peaks)
        if whole.resource != UNDETERMINED:
            return v  # undetermined window by window, not over the whole: the windows speak
        return replace(v, evidence=_whole_run_notes(v) + whole.evidence, reason=whole.reason)
    f = next((f for f in findings(held.stats, peaks) if f.resource == v.resource and f.stage == v.stage), None)
    if f is None:  # no rule names it over the whole time: the windows that did speak for it
        return v
    code = (v.code.evidence(),) if v.code is not None else ()  # the code named stays named
    notes = tuple(e for e in v.evidence if e.startswith(RUN_NOTES))  # the run's ranks, none named
    return replace(
        v,
        evidence=_whole_run_notes(v) + f.evidence + tuple(straggler.get("evidence", ())) + notes + code,
        headroom=f.headroom,
        figures=f.figures,
    )


def _whole_run_notes(v: Verdict) -> tuple[str, ...]:
    """Why the whole run, not the regime held longest, gave ``v`` (diagnosis/whole_run.py): first."""
    return tuple(e for e in v.evidence if e.startswith(WHOLE_RUN))
