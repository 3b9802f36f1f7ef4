"""Every output a run feeds while it runs (its sinks), made and ordered here and nowhere else.

A command says what it wants in an ``Outputs``; ``wire`` (called by ``Run.wire``) makes one named
sink per field, in the order of ``SINK_ORDER``: a trace line is written before the sample is
diagnosed, the views after it, the stop test last. A sink that fails is logged once and skipped
until it works again; the others go on. Adding a sink: CONTRIBUTING.md ("Adding an output sink").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bottleneckd.advice.stage import Snapshot
from bottleneckd.channel.link import PhaseReceiver
from bottleneckd.channel.report_file import remove_report_file, write_report_file
from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.model.protocol import Event
from bottleneckd.model.sample import Sample
from bottleneckd.outputs.timeline import Timeline
from bottleneckd.outputs.trace import TraceWriter
from bottleneckd.peaks.resolve import PeakTable

log = logging.getLogger(__name__)

Sink = Callable[[Sample], None]

#: where the sample is diagnosed and advised among the sinks
DIAGNOSE = "diagnose"
#: every sink there is, in the order each runs in a tick
SINK_ORDER = ("trace", "trace_events", DIAGNOSE, "timeline", "report_file", "view", "stop")
#: ticks between two writes of the report file the hook reads at epoch end
REPORT_FILE_EVERY = 2


@dataclass(frozen=True)
class TraceOut:
    """A trace to record: where, what its header adds, and how a failed write is said."""

    path: str
    meta: dict[str, Any] = field(default_factory=dict)
    force: bool = False
    what: str = "-o"  # the option that named it, for error lines
    on_error: Callable[[str], None] | None = None


@dataclass(frozen=True)
class Outputs:
    """What a command asks of a run while it runs (its report comes after, from ``Run.report``)."""

    #: "trace", and "trace_events" (the hook's events copied from the receiver, when there is one)
    trace: TraceOut | None = None
    #: "timeline": what the HTML report plots over time
    timeline: bool = False
    #: "report_file": the current report, beside the receiver's socket, for the hook's epoch block
    report_file: bool = False
    #: "view": called with each snapshot (the live screen or line, analyze's timeline)
    view: Callable[[Snapshot], None] | None = None
    #: "stop": the run's source is stopped once this is true
    stop_when: Callable[[], bool] | None = None


class Sinks:
    """A run's sinks by name, in ``SINK_ORDER``; only ``wire`` adds to them."""

    def __init__(self) -> None:
        self._sinks: dict[str, Sink] = {}
        self._failed: set[str] = set()

    def add(self, name: str, sink: Sink) -> None:
        """Add ``sink`` under ``name``, in ``SINK_ORDER``. Raises ValueError when the name is not in
        ``SINK_ORDER`` (or is the diagnosis itself) or is already set."""
        if name not in SINK_ORDER or name == DIAGNOSE:
            raise ValueError(f"sink {name!r} is not one of SINK_ORDER (runtime/sinks.py): add it there")
        if name in self._sinks:
            raise ValueError(f"sink {name!r} is already set")
        self._sinks[name] = sink
        self._sinks = dict(sorted(self._sinks.items(), key=lambda kv: SINK_ORDER.index(kv[0])))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._sinks)

    def before(self, sample: Sample) -> None:
        """The sinks that run before the sample is diagnosed."""
        self._feed(sample, lambda k: k < SINK_ORDER.index(DIAGNOSE))

    def after(self, sample: Sample) -> None:
        self._feed(sample, lambda k: k > SINK_ORDER.index(DIAGNOSE))

    def _feed(self, sample: Sample, here: Callable[[int], bool]) -> None:
        for name, sink in list(self._sinks.items()):
            if not here(SINK_ORDER.index(name)):
                continue
            try:
                sink(sample)
                self._failed.discard(name)
            except Exception as e:  # noqa: BLE001 - one failing sink must not stop the others
                failing(self._failed, name, f"sink {name}", e)


def failing(failed: set[str], key: str, what: str, e: Exception) -> None:
    """Log a failure once, with its traceback, until that part works again (not every tick)."""
    if key not in failed:
        log.warning("%s failed (%s: %s); skipped until it recovers", what, type(e).__name__, e, exc_info=e)
        failed.add(key)


class ReportFile:
    """Every ``every`` ticks, the current report beside the channel socket (the hook's epoch block),
    written through the receiver's held directory (channel/report_file.py)."""

    def __init__(
        self, receiver: PhaseReceiver, report: Callable[[], dict[str, Any]], every: int = REPORT_FILE_EVERY
    ) -> None:
        self.receiver = receiver
        self.report = report
        self.every = every
        self.n = 0
        self.failed = False

    def __call__(self, _sample: Sample) -> None:
        self.n += 1
        if self.failed or self.n % self.every:
            return
        if self.receiver.dir is None:  # no socket: no hook to read it
            return
        try:
            write_report_file(self.receiver.dir, self.report())
        except OSError as e:  # the hook then prints its block without the sidecar's verdict
            log.warning(
                "cannot write the report file for the hook (%s); epoch-end blocks go without it", e.strerror or e
            )
            self.failed = True

    def close(self) -> None:
        remove_report_file(self.receiver.dir)


class EventCopier:
    """Copies the hook's events (mitigations applied) into the trace, each once, by sequence
    number; events lost because the receiver's log was full are counted in the trace."""

    def __init__(self, receiver: PhaseReceiver, writer: TraceWriter) -> None:
        self.receiver = receiver
        self.writer = writer
        self.seq = 0

    def __call__(self, _sample: Sample | None) -> None:
        events, total = self.receiver.events_since(self.seq)
        missed = total - self.seq - len(events)
        self.seq = total
        if missed:
            note = f"{missed} of the hook's events did not fit the sidecar's buffer"
            self.writer.event(Event("events_lost", "", time.time(), note=note))
        for e in events:
            self.writer.event(e)


@dataclass
class Wired:
    """The sinks made for one ``Outputs``: what the command reads back, and what is closed."""

    trace: TraceWriter | None = None
    timeline: Timeline | None = None
    report_file: ReportFile | None = None
    closed: bool = False

    def close(self) -> None:
        """The trace closed and the report file removed (once)."""
        if self.closed:
            return
        self.closed = True
        if self.trace is not None:
            self.trace.close()
        if self.report_file is not None:
            self.report_file.close()


def wire(
    sinks: Sinks,
    outputs: Outputs,
    *,
    machine: Machine | None,
    peaks: PeakTable,
    interval: float,
    latest: Callable[[], Snapshot | None],
    report: Callable[[], dict[str, Any]],
    receiver: PhaseReceiver | None = None,
    stop: Callable[[], None] | None = None,
) -> Wired:
    """One sink per field of ``outputs`` that is set, added to ``sinks`` (raises, leaving nothing
    open, when the trace cannot be created)."""
    out = Wired()
    if outputs.trace is not None:
        t = outputs.trace
        if machine is None:
            raise ValueError("a trace records the machine it ran on: the run needs one")
        out.trace = TraceWriter(
            t.path, machine, peaks, interval, t.meta, overwrite=t.force, what=t.what, on_error=t.on_error
        )
        sinks.add("trace", out.trace)
        if receiver is not None:
            sinks.add("trace_events", EventCopier(receiver, out.trace))
    if outputs.timeline:
        out.timeline = timeline = Timeline()
        sinks.add("timeline", lambda sample: timeline.add(sample, latest()))
    if outputs.report_file:
        if receiver is None:
            raise ValueError("the report file lies beside the receiver's socket: the run needs one")
        out.report_file = ReportFile(receiver, report)
        sinks.add("report_file", out.report_file)
    if outputs.view is not None:
        view = outputs.view

        def show(_sample: Sample) -> None:
            snap = latest()
            if snap is not None:
                view(snap)

        sinks.add("view", show)
    if outputs.stop_when is not None:
        if stop is None:
            raise ValueError("stop_when needs a source that can be stopped")
        stop_when = outputs.stop_when
        sinks.add("stop", lambda _sample: stop() if stop_when() else None)
    return out
