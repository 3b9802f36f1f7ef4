"""One run of the diagnosis: sources -> diagnose -> advise -> sinks -> report.

Every command drives a ``Run``: a live sidecar's sampling loop (runtime/sidecar.py) and a replayed
trace (runtime/replay.py) call it with each sample, in the same order, through the same stages:

- the sinks that record the raw sample (a trace) run first;
- the run's accounts (its step phases and energy over the whole run) take the sample;
- diagnose (diagnosis/pipeline.py), then advise (advice/stage.py): one ``Snapshot`` published;
- the sinks that show or keep the snapshot (timeline, report file, view, stop test) run after.

``report`` builds the report (outputs/report.py) from the latest snapshot and the run's accounts:
the one place the report's JSON is put together. Threads: only the source's thread calls the run;
``latest``, ``steps``, ``events`` and ``report`` may be called from any thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bottleneckd.advice.fit import machine_facts
from bottleneckd.advice.knowledge import Mitigation
from bottleneckd.advice.stage import Advisor, Snapshot, advise
from bottleneckd.channel.link import PhaseReceiver
from bottleneckd.diagnosis.pipeline import Diagnosis, Pipeline
from bottleneckd.diagnosis.thresholds import HOLD, WINDOW_SAMPLES
from bottleneckd.diagnosis.throughput import run_throughput_json
from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.model.protocol import Event
from bottleneckd.model.sample import Sample, StepPhases
from bottleneckd.outputs.energy import EnergyMeter, job_steps_of
from bottleneckd.outputs.report import build_report
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.runtime.sinks import Outputs, Sinks, Wired, failing, wire


class Totals:
    """The whole run's step phases (from any source), the hook's own steps, and the run's span."""

    def __init__(self) -> None:
        self.steps = 0
        self.wall = 0.0
        self.phases: dict[str, float] = {}
        self.examples: int | None = 0
        self.hook_steps = 0  # steps the hook reported (stack samples are not steps)
        self.start: float | None = None
        self.end: float | None = None

    def add(self, sample: Sample) -> None:
        if self.start is None:
            self.start = sample.t - sample.interval
        self.end = sample.t
        p = sample.phases
        if p is None:
            return
        self.steps += p.steps
        self.wall += p.wall_seconds
        for k, x in p.phases.items():
            self.phases[k] = self.phases.get(k, 0.0) + x
        self.examples = None if self.examples is None or p.examples is None else self.examples + p.examples
        if p.facts.get("phase_source") != "py-spy":
            self.hook_steps += job_steps_of(p, sample.ranks)  # the job's steps: one step on 8 ranks is one

    def step_phases(self) -> StepPhases:
        """The run's steps, their wall time and phase seconds, summed (examples None when a sample
        lacked them)."""
        return StepPhases(self.steps, self.wall, dict(self.phases), examples=self.examples)

    @property
    def seconds(self) -> float:
        """Wall seconds from the first sample's start to the last sample (0 before any)."""
        return 0.0 if self.start is None or self.end is None else self.end - self.start

    def throughput(self, snap: Diagnosis | None) -> dict[str, Any]:
        """What 'bottleneckd compare' reads of a run (steps, examples and their wall time), with the
        run's samples/s, tokens/s and MFU (diagnosis/throughput.py) against ``snap``'s peak."""
        known = self.steps > 0
        return run_throughput_json(
            self.steps, self.examples if known else None, self.wall if known else None, self.start, snap
        )


class Run:
    """One run: call it with each sample (from one thread); read it from any."""

    def __init__(
        self,
        peaks: PeakTable,
        machine: Machine | None = None,
        *,
        window: int = WINDOW_SAMPLES,
        hold: int = HOLD,
        interval: float = 1.0,
        kb: tuple[Mitigation, ...] | None = None,
        events: Callable[[], list[Event]] | None = None,
        channel: Callable[[], dict[str, int]] | None = None,
    ) -> None:
        self.peaks = peaks
        self.machine = machine
        self.interval = interval
        self.pipeline = Pipeline(peaks, window=window, hold=hold, base_facts=machine_facts(machine))
        self.advisor = Advisor(kb)
        self.totals = Totals()
        #: joules per step and per example (the exporter's energy counters), of the job's own GPUs
        self.energy = EnergyMeter(gpu_uuids=peaks.gpu_uuids())
        self.sinks = Sinks()
        self._events = events or (lambda: [])
        #: the hook -> sidecar channel's counters (a live run's receiver; a replayed trace has none)
        self.channel = channel
        self._lock = threading.Lock()
        self._latest: Snapshot | None = None
        self._failed: set[str] = set()

    def __call__(self, sample: Sample) -> Snapshot | None:
        """One tick: record, account, diagnose and advise, then show. A failing stage is logged
        once and the others go on (the snapshot stays the last one that could be made)."""
        self.sinks.before(sample)
        self.totals.add(sample)
        self.energy(sample)
        snap = None
        try:
            snap = self.advisor(self.pipeline(sample))
            self._failed.discard("diagnose")
        except Exception as e:  # noqa: BLE001 - the run goes on, its outputs too
            failing(self._failed, "diagnose", "diagnosis", e)
        if snap is not None:
            with self._lock:
                self._latest = snap
        self.sinks.after(sample)
        return snap

    def wire(
        self, outputs: Outputs, receiver: PhaseReceiver | None = None, stop: Callable[[], None] | None = None
    ) -> Wired:
        """The sinks ``outputs`` asks for (runtime/sinks.py), fed from the next sample on."""
        return wire(
            self.sinks,
            outputs,
            machine=self.machine,
            peaks=self.peaks,
            interval=self.interval,
            latest=self.latest,
            report=lambda: self.report(current=True),
            receiver=receiver,
            stop=stop,
        )

    # what the exporter reads (outputs.metrics_server.MetricsSource)
    def latest(self) -> Snapshot | None:
        """The last diagnosis and its advice; None before the first sample is diagnosed."""
        with self._lock:
            return self._latest

    def steps(self) -> int:
        """The job's training steps the hook reported so far (stack samples are not steps)."""
        return self.totals.hook_steps

    def events(self) -> list[Event]:
        """The hook's events the run has received so far (mitigations applied and reverted, ...)."""
        return self._events()

    def report(
        self,
        *,
        current: bool = False,
        extra: dict[str, Any] | None = None,
        energy: bool = False,
        grid_intensity: float | None = None,
        base: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The report: on the run's dominant verdict over the whole time it held, with the step
        phases and throughput of the whole run; with ``current``, on the latest verdict and window
        (the hook's epoch-end block). ``energy``: with the energy account (carbon at
        ``grid_intensity`` gCO2/kWh); ``extra``: what the command adds about the run; ``base``:
        another sidecar's report in place of this run's (the node's, which ``run`` joined)."""
        if base is not None:
            doc = dict(base)
            if energy:
                doc["energy"] = self.energy.account().to_json(grid_intensity)
            return {**doc, **(extra or {})}
        snap = self.latest()
        summary = None
        if not current and snap is not None and snap.dominant is not None:
            summary = self.pipeline.summary(snap.dominant)
            if summary is not None and summary.inputs is not None:  # advised on the whole time it held
                snap = replace(
                    snap,
                    diagnosis=replace(snap.diagnosis, facts=summary.facts, dominant_inputs=summary.inputs),
                    dominant_advice=advise(snap.dominant, self.advisor.kb, summary.facts, summary.inputs),
                )
        return build_report(
            snap,
            current=current,
            summary=summary,
            totals=None if current else self.totals.step_phases(),
            run_seconds=self.totals.seconds,
            throughput=None if current else self.totals.throughput(snap.diagnosis if snap else None),
            energy=self.energy.account().to_json(grid_intensity) if energy else None,
            extra=extra,
        )
