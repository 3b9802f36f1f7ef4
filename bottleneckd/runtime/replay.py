"""Recorded traces through a ``Run`` (runtime/run.py), exactly as live samples go: ``analyze``,
``report`` and ``serve --trace`` all replay through ``load`` (then ``feed`` or ``pace``).

Several traces are either pieces of one run (one after the other) or the nodes of one job (at the
same time): traces whose time spans overlap are nodes, merged tick by tick with every rank
together (outputs/trace_merge.py); traces that follow each other are pieces, read in time order.
The machine and peaks are those of the trace (of the node with rank 0)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from bottleneckd.diagnosis.thresholds import WINDOW_SAMPLES
from bottleneckd.model.errors import InputError, TraceError
from bottleneckd.model.protocol import Event
from bottleneckd.model.sample import Sample
from bottleneckd.outputs.trace import TraceHeader, read_events, read_trace
from bottleneckd.outputs.trace_merge import merge_node_traces
from bottleneckd.runtime.run import Run
from bottleneckd.runtime.sinks import Outputs, Wired

#: seconds between two samples of a paced replay at most (a trace recorded at 0.1 Hz still moves)
MAX_PACE = 1.0


@dataclass
class Replay:
    """Traces opened for a run: their samples are fed by ``feed`` (all at once) or ``pace``."""

    paths: tuple[str, ...]
    header: TraceHeader
    run: Run
    samples: Iterable[Sample]
    events: list[Event]  # every trace's, in time order
    error: TraceError | None = None  # the first bad line: the samples before it were replayed
    fed: int = 0
    shown: list[Event] = field(default_factory=list)  # what the run's events() gives

    def feed(self, outputs: Outputs | None = None) -> Wired:
        """Every sample through the run, with ``outputs`` wired; a bad line ends it (kept in ``error``)."""
        wired = self.run.wire(outputs or Outputs())
        self.shown[:] = self.events
        try:
            for s in self.samples:
                self.run(s)
                self.fed += 1
        except TraceError as e:
            self.error = self.error or e
        finally:
            wired.close()
        return wired

    def read_all(self) -> list[Sample]:
        """The samples, read now (InputError when there are none)."""
        items = self.samples if isinstance(self.samples, list) else list(self.samples)
        if not items:
            raise InputError(f"{', '.join(self.paths)}: the trace holds no samples")
        self.samples = items
        return items

    def pace(self, duration: float | None, sleep: Callable[[float], None] = time.sleep) -> None:
        """The samples at the trace's own pace (as if live; round again until ``duration`` when
        one is given); an event is shown once its time has come, with its time moved to now."""
        items = self.read_all()
        t0 = time.monotonic()
        k = 0
        while duration is None or time.monotonic() - t0 < duration:
            s = items[k % len(items)]
            self.run(s)
            self.fed += 1
            for e in self.events:
                if items[0].t <= e.t <= s.t and not any(x.name == e.name for x in self.shown):
                    self.shown.append(replace(e, t=time.time()))
            k += 1
            sleep(min(self.header.interval, MAX_PACE))
            if duration is None and k >= len(items):
                break


def load(paths: Sequence[str], *, window: int = WINDOW_SAMPLES, one_machine: bool = False) -> Replay:
    """Open ``paths`` (every header checked before any sample is read). ``one_machine``: traces
    of several machines are refused (one HTML report draws one machine's run)."""
    opened = [(path, *read_trace(path)) for path in paths]
    hosts = {h.machine.hostname for _, h, _ in opened}
    if one_machine and len(hosts) > 1:
        raise InputError(
            f"the traces come from {len(hosts)} machines ({', '.join(sorted(hosts))}): one report covers one "
            "machine's run; report each machine's traces separately"
        )
    error: TraceError | None = None
    samples: Iterable[Sample]
    if len(opened) == 1:
        header, samples = opened[0][1], opened[0][2]
    else:
        loaded = []
        for _path, h, it in opened:
            got: list[Sample] = []
            try:
                for s in it:  # the samples before a bad line are kept
                    got.append(s)
            except TraceError as e:  # the good part is kept; the error is raised after the report
                error = error or e
            loaded.append((h, got))
        header, samples = _combine(loaded)
    events = sorted((e for path in paths for e in read_events(path)), key=lambda e: e.t)
    shown: list[Event] = []  # what the run's events() gives: all of them, or (paced) those whose time has come
    run = Run(header.peaks, header.machine, window=window, interval=header.interval, events=lambda: list(shown))
    return Replay(tuple(paths), header, run, samples, events, error, shown=shown)


def _combine(loaded: list[tuple[TraceHeader, list[Sample]]]) -> tuple[TraceHeader, Iterable[Sample]]:
    """Pieces of one run in time order, or the nodes of one job merged (the header of the node of rank 0)."""
    chains: list[tuple[TraceHeader, list[Sample]]] = []  # one per node: its pieces, one after the other
    for h, got in sorted(loaded, key=lambda hg: hg[1][0].t if hg[1] else float("inf")):
        if not got:
            continue
        chain = next((c for c in chains if c[0].machine.hostname == h.machine.hostname and c[1][-1].t < got[0].t), None)
        if chain is None:
            chains.append((h, list(got)))
        else:
            chain[1].extend(got)
    if not chains:
        return loaded[0][0], []
    if len(chains) == 1:
        return chains[0]
    lowest = [min((r.identity.rank for s in got for r in s.ranks), default=1 << 30) for _, got in chains]
    header = chains[lowest.index(min(lowest))][0]
    return header, merge_node_traces([(h.machine.hostname, got) for h, got in chains])
