"""Phase clocks. Both turn a step's marks into phase seconds, without synchronising.

- HostClock (CPU training): perf-counter timestamps.
- CudaClock (GPU training): CUDA events from a reused pool, recorded on the current stream at
  each mark and read once ``query()`` says the step's last event completed, a few steps later.
  Every phase is measured on the GPU's own timeline, so they add up to the GPU's step time:
  ``data_wait`` is the time the GPU sat idle between the previous step's end and the moment the
  host handed it the next batch (the input pipeline starving it); while the host runs ahead of
  the GPU that gap is zero, as it should be.

``end_step`` returns the steps completed so far as ``(phases, wall)``: ``phases`` in PHASE_KEYS
order, ``wall`` their sum.
"""

from __future__ import annotations

import os
import time
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

import torch

from bottleneckd.model.resources import HOOK_PHASES

PHASE_KEYS = HOOK_PHASES  # phase tuples from the clocks are in this order (model.resources, the one list)
Step = tuple[tuple[float, ...], float]


def _phases(t: dict[str, float], start: float, comm: float) -> Step:
    """Phase seconds from one step's timestamps (or event times), step start to step end."""
    return _phases_of(t.get("step_start"), t.get("data_ready"), t.get("forward_start"), t.get("forward_end"),
                      t.get("optimizer_start"), t["step_end"], start, comm)


def _phases_of(ss: float | None, dr: float | None, fs: float | None, fe: float | None, os_: float | None, end: float,
               start: float, comm: float) -> Step:
    wall = max(0.0, end - start)
    data = max(0.0, dr - (ss if ss is not None else start)) if dr is not None else 0.0
    transfer = max(0.0, fs - dr) if fs is not None and dr is not None else 0.0
    forward = max(0.0, fe - fs) if fe is not None and fs is not None else 0.0
    if fe is not None and os_ is not None:
        span = max(0.0, os_ - fe)
        comm = min(comm, span)
        backward = span - comm
    else:
        backward = 0.0
    optim = max(0.0, end - os_) if os_ is not None else 0.0
    busy = data + transfer + forward + backward + optim + comm
    if busy > wall > 0:  # marks from several micro-batches overlap: keep the wall, scale the phases into it
        k = wall / busy
        return (data * k, transfer * k, forward * k, backward * k, optim * k, comm * k, 0.0), wall
    return (data, transfer, forward, backward, optim, comm, wall - busy), wall


SLOTS = ("step_start", "data_ready", "forward_start", "forward_end", "optimizer_start", "step_end")
_SLOT = {k: i for i, k in enumerate(SLOTS)}
_NO_SEG = (0.0,) * len(PHASE_KEYS)
_FWD, _BWD, _OPT = PHASE_KEYS.index("forward"), PHASE_KEYS.index("backward"), PHASE_KEYS.index("optimizer")


@dataclass(frozen=True, slots=True)
class StepMarks:
    """One finished step as the hot path left it: its timestamps, turned into phases in ``drain``."""

    marks: tuple[float | None, ...]  # in SLOTS order, step_end set
    comm: float  # seconds in blocking collectives
    own_start: bool  # the step's wall starts at its own step_start (epoch start, after a dropped step)
    seg: tuple[float, ...]  # phases of the micro-batches folded in before the last one (PHASE_KEYS order)
    seg_wall: float
    seg_end: float | None  # where those micro-batches ended
    inner: tuple[float, float] | None  # forward and backward seconds inside the optimizer's closure


class HostClock:
    """The hot path only stores timestamps in fixed slots; phases are computed in ``drain()``,
    a batch at a time, when the watcher reports (every half second)."""

    def __init__(self) -> None:
        self.cur: list[float | None] = [None] * len(SLOTS)
        self.done: list[StepMarks] = []
        self.prev_end: float | None = None  # end of the last micro-batch or step (hot path)
        self._drained_end: float | None = None  # end of the last step turned into phases
        self._comm = 0.0
        self._c0 = 0.0
        self._own = True
        self._seg: tuple[float, ...] = _NO_SEG
        self._seg_wall = 0.0
        self._closure: list[float] | None = None  # [forward, backward, forward_start, forward_end] in a closure step

    def mark(self, label: str) -> None:
        now = time.perf_counter()
        i = _SLOT[label]
        if self._closure is not None and 2 <= i <= 3:
            self._closure[i] = now  # forward inside the optimizer's closure: summed in closure_end
            return
        cur = self.cur
        if i == 0 and cur[3] is not None:
            self._close_segment(now)  # a new batch after a forward, with no optimizer step between: a micro-batch
            cur = self.cur
        if (i == 0 or i == 2 or i == 4) and cur[i] is not None:
            return  # the first start and the last end of each phase
        cur[i] = now

    def closure_begin(self) -> None:
        """The optimizer calls the step's closure: its forward and backward are summed apart."""
        c = self._closure
        if c is None:
            self._closure = c = [0.0, 0.0, 0.0, 0.0]
        c[2] = c[3] = 0.0

    def closure_end(self) -> None:
        c = self._closure
        if c is None:
            return
        now = time.perf_counter()
        if c[3] >= c[2] > 0.0:
            c[0] += c[3] - c[2]
            c[1] += now - c[3]  # the loss and its backward, up to the closure's return

    def _close_segment(self, now: float) -> None:
        """Fold a finished micro-batch (data, transfer, forward, then backward up to now) into the
        step, so that phases of accumulated micro-batches add up instead of overlapping."""
        t = dict(zip(SLOTS, self.cur))
        t["optimizer_start"] = t["step_end"] = now  # its backward runs until the next batch is asked for
        ss = t["step_start"]
        start = self.prev_end if self.prev_end is not None and not self._own else (ss if ss is not None else t["forward_start"])
        ph, wall = _phases(t, start, self._comm)
        self._seg = tuple(a + b for a, b in zip(self._seg, ph))
        self._seg_wall += wall
        self.prev_end, self._own, self._comm = now, False, 0.0
        self.cur = [None] * len(SLOTS)

    def unmark(self, label: str) -> None:
        self.cur[_SLOT[label]] = None

    def comm_begin(self) -> None:
        self._c0 = time.perf_counter()

    def comm_end(self) -> None:
        self._comm += time.perf_counter() - self._c0

    def end_step(self) -> None:
        cur = self.cur
        cur[5] = end = time.perf_counter()
        c = self._closure
        self.done.append(StepMarks(tuple(cur), self._comm, self._own, self._seg, self._seg_wall, self.prev_end,
                                   None if c is None else (c[0], c[1])))
        self.prev_end = end
        self.cur, self._comm, self._own, self._closure = [None] * len(SLOTS), 0.0, False, None
        if self._seg_wall:
            self._seg, self._seg_wall = _NO_SEG, 0.0

    def drain(self) -> list[Step]:
        out: list[Step] = []
        done, self.done = self.done, []
        for s in done:
            ss, dr, fs, fe, os_, end = s.marks
            if s.seg_wall:  # micro-batches came first: this last part starts where they ended
                start = s.seg_end
            elif self._drained_end is not None and not s.own_start:
                start = self._drained_end
            else:
                start = next(v for v in s.marks if v is not None)
            self._drained_end = end
            ph, wall = _phases_of(ss, dr, fs, fe, os_, end, start, s.comm)
            if s.inner is not None:  # the closure's forward and backward ran inside optimizer.step()
                fwd, bwd = s.inner
                ph = list(ph)
                inside = min(fwd + bwd, ph[_OPT])
                scale = inside / (fwd + bwd) if fwd + bwd > 0 else 0.0
                ph[_FWD] += fwd * scale
                ph[_BWD] += bwd * scale
                ph[_OPT] -= inside
                ph = tuple(ph)
            if s.seg_wall:
                ph = tuple(a + b for a, b in zip(ph, s.seg))
            out.append((ph, wall + s.seg_wall))
        return out

    def discard_step(self) -> None:
        self.cur, self._comm, self._closure = [None] * len(SLOTS), 0.0, None
        self._seg, self._seg_wall = _NO_SEG, 0.0
        self.reset()

    def reset(self) -> None:
        self._own = True


_live_cuda_clocks: "weakref.WeakSet[CudaClock]" = weakref.WeakSet()
_fork_leak: list[Any] = []  # CUDA events a forked child inherited: never destroyed there


def _after_fork_in_child() -> None:
    """A forked child (a DataLoader worker) must not destroy the parent's CUDA events: CUDA is
    not usable after fork, and a destroy call aborts the child. Keep them alive, unused."""
    for c in list(_live_cuda_clocks):
        _fork_leak.append((c.t, c._pool, c._pending, c._comm, c._anchor, c._segs))
        c.t, c._pool, c._pending, c._comm, c._anchor, c._segs = {}, [], deque(), [], None, []
        c.active = False
        c.forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class CudaClock:
    """Times one step in ``sample_every`` with CUDA events (six, from a reused pool); the steps
    between are counted but not timed, which keeps the cost per step to a few microseconds on
    launch-bound jobs. Shares and per-step times come from the timed steps.

    Gradient accumulation: a new batch asked for after a forward, with no optimizer step between,
    closes a micro-batch segment (as in HostClock); the segments' phases add up into the step
    instead of the first start and the last end of each mark spanning every micro-batch.
    ``event_factory`` makes the timing events (``torch.cuda.Event(enable_timing=True)``; tests
    pass a fake with ``record``, ``query`` and ``elapsed_time``)."""

    def __init__(self, max_pending: int = 64, sample_every: int = 8, event_factory: Callable[[], Any] | None = None) -> None:
        self.t: dict[str, Any] = {}
        self._comm: list[tuple[Any, Any]] = []
        self._segs: list[tuple[dict[str, Any], list[tuple[Any, Any]]]] = []  # closed micro-batches of the step
        self._pending: deque[tuple[dict[str, Any], list[tuple[Any, Any]], Any, list[tuple[dict[str, Any], list[tuple[Any, Any]]]]]] = deque()
        self._pool: list[Any] = []
        self._max = max_pending
        self.every = max(1, sample_every)
        self._n = 0
        self.active = True  # the first step is timed from its own start
        self._anchor: Any = None  # end of the step before a timed one: the data-wait gap starts there
        self.forked = False
        self._new_event = event_factory or (lambda: torch.cuda.Event(enable_timing=True))
        _live_cuda_clocks.add(self)

    def _event(self) -> Any:
        e = self._pool.pop() if self._pool else self._new_event()
        e.record()
        return e

    def mark(self, label: str) -> None:
        if not self.active:
            return
        if label == "step_start" and "forward_end" in self.t:
            self._close_segment()
        if label.endswith("_start") and label in self.t:
            return
        old = self.t.get(label)
        if old is not None:
            self._pool.append(old)
        self.t[label] = self._event()

    def _close_segment(self) -> None:
        """A micro-batch ends where the next batch is asked for: its backward runs until then."""
        t, self.t = self.t, {}
        old = t.pop("step_end", None)
        if old is not None:
            self._pool.append(old)
        t["step_end"] = end = self._event()
        t.setdefault("optimizer_start", end)  # no optimizer in a micro-batch: backward ends with it
        self._segs.append((t, self._comm))
        self._comm = []

    def unmark(self, label: str) -> None:
        e = self.t.pop(label, None)
        if e is not None:
            self._pool.append(e)

    def comm_begin(self) -> None:
        if self.active:
            self._c0 = self._event()

    def comm_end(self) -> None:
        if self.active:
            self._comm.append((self._c0, self._event()))

    def end_step(self) -> None:
        if self.forked:
            return
        if self.active:
            self.mark("step_end")
            t, self.t = self.t, {}
            comm, self._comm = self._comm, []
            segs, self._segs = self._segs, []
            if len(self._pending) < self._max:
                self._pending.append((t, comm, self._anchor, segs))
            else:  # the GPU is far behind: drop this step's timing rather than hold memory
                self._release(t, comm)
                for st, sc in segs:
                    self._release(st, sc)
                if self._anchor is not None:
                    self._pool.append(self._anchor)
            self._anchor = None
        self._n += 1
        self.active = self._n % self.every == 0
        if self.active:
            self._anchor = self._event()  # this step's end, where the next (timed) step's data wait begins

    def _release(self, t: dict[str, Any], comm: list[tuple[Any, Any]]) -> None:
        events = {id(e): e for e in t.values()}  # a micro-batch's end is also its optimizer_start
        for a, b in comm:
            events[id(a)], events[id(b)] = a, b
        self._pool.extend(events.values())

    def drain(self) -> list[Step]:
        out: list[Step] = []
        while self._pending and self._pending[0][0]["step_end"].query():
            t, comm, anchor, segs = self._pending.popleft()
            parts = segs + [(t, comm)]
            first = parts[0][0]
            base = anchor if anchor is not None else first.get("step_start", first.get("data_ready", first["step_end"]))
            total, wall, start = [0.0] * len(PHASE_KEYS), 0.0, 0.0
            for k, (pt, pc) in enumerate(parts):
                ms = {name: base.elapsed_time(e) / 1000.0 for name, e in pt.items()}
                c = sum(a.elapsed_time(b) for a, b in pc) / 1000.0
                ph, w = _phases(ms, start, c)
                total = [a + b for a, b in zip(total, ph)]
                wall += w
                start = ms["step_end"]  # the next micro-batch starts where this one ended
            out.append((tuple(total), wall))
            if anchor is not None:
                self._pool.append(anchor)
            for pt, pc in parts:
                self._release(pt, pc)
        return out

    def discard_step(self) -> None:
        t, self.t = self.t, {}
        self._release(t, self._comm)
        for st, sc in self._segs:
            self._release(st, sc)
        self._comm, self._segs = [], []
        self.reset()

    def reset(self) -> None:
        """The next step is timed from its own step_start (a new epoch, after a discarded step)."""
        if self._anchor is not None:
            self._pool.append(self._anchor)
        self._anchor = None
        self.active = True
