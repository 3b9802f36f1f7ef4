"""CudaClock: GPU training's phase clock. CUDA events from a reused pool, recorded on the current
stream at each mark and read once ``query()`` says the step's last event completed, a few steps
later, without synchronising. Every phase is measured on the GPU's own timeline, so they add up to
the GPU's step time: ``data_wait`` is the time the GPU sat idle between the previous step's end and
the moment the host handed it the next batch (the input pipeline starving it); while the host runs
ahead of the GPU that gap is zero, as it should be.
"""

from __future__ import annotations

import os
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

import torch

from bottleneckd.torch.clock_phases import PHASE_KEYS, Step, phases_of_marks

_live_cuda_clocks: weakref.WeakSet[CudaClock] = weakref.WeakSet()
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

    def __init__(
        self, max_pending: int = 64, sample_every: int = 8, event_factory: Callable[[], Any] | None = None
    ) -> None:
        self.t: dict[str, Any] = {}
        self._comm: list[tuple[Any, Any]] = []
        self._segs: list[tuple[dict[str, Any], list[tuple[Any, Any]]]] = []  # closed micro-batches of the step
        self._pending: deque[
            tuple[dict[str, Any], list[tuple[Any, Any]], Any, list[tuple[dict[str, Any], list[tuple[Any, Any]]]]]
        ] = deque()
        self._pool: list[Any] = []
        self._max = max_pending
        self.every = max(1, sample_every)
        self._n = 0
        self.active = True  # the first step is timed from its own start
        self._anchor: Any = None  # end of the step before a timed one: the data-wait gap starts there
        self.forked = False
        self._foreign: set[int] = set()  # ids of events add_comm was given: not ours to reuse
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

    def add_comm(self, pair: tuple[Any, Any]) -> None:
        """Exposed communication measured elsewhere (DDP's buckets, ddp_comm.py), as two recorded
        events; they never go into this clock's pool (their maker made them)."""
        if self.active:
            self._foreign.update((id(pair[0]), id(pair[1])))
            self._comm.append(pair)

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
        for k, e in events.items():
            if k in self._foreign:  # add_comm's events belong to their maker (ddp_comm.py)
                self._foreign.discard(k)
            else:
                self._pool.append(e)

    @staticmethod
    def _comm_done(pending: Any) -> bool:
        """Every communication end event of a pending step completed (add_comm's may sit on another stream)."""
        t, comm, _anchor, segs = pending
        return all(b.query() for _, pc in [*segs, (t, comm)] for _, b in pc)

    def drain(self) -> list[Step]:
        out: list[Step] = []
        while self._pending and self._pending[0][0]["step_end"].query() and self._comm_done(self._pending[0]):
            t, comm, anchor, segs = self._pending.popleft()
            parts = segs + [(t, comm)]
            first = parts[0][0]
            base = anchor if anchor is not None else first.get("step_start", first.get("data_ready", first["step_end"]))
            total, wall, start = [0.0] * len(PHASE_KEYS), 0.0, 0.0
            for k, (pt, pc) in enumerate(parts):
                ms = {name: base.elapsed_time(e) / 1000.0 for name, e in pt.items()}
                c = sum(a.elapsed_time(b) for a, b in pc) / 1000.0
                ph, w = phases_of_marks(ms, start, c)
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
