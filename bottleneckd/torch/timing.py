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
from typing import Any

import torch

from bottleneckd.model.resources import HOOK_PHASES

PHASE_KEYS = HOOK_PHASES
Step = tuple[tuple[float, ...], float]


def _phases(t: dict[str, float], start: float, comm: float) -> Step:
    """Phase seconds from one step's timestamps (or event times), step start to step end."""
    end = t["step_end"]
    wall = max(0.0, end - start)
    dr, ss, fs, fe, os_ = t.get("data_ready"), t.get("step_start"), t.get("forward_start"), t.get("forward_end"), t.get("optimizer_start")
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
    parts = [data, transfer, forward, backward, optim, comm]
    busy = sum(parts)
    if busy > wall > 0:  # marks from several micro-batches overlap: keep the wall, scale the phases into it
        parts = [p * wall / busy for p in parts]
        busy = wall
    return (*parts, wall - busy), wall


SLOTS = ("step_start", "data_ready", "forward_start", "forward_end", "optimizer_start", "step_end")
_SLOT = {k: i for i, k in enumerate(SLOTS)}


class HostClock:
    """The hot path only stores timestamps in fixed slots; phases are computed in ``drain()``,
    a batch at a time, when the watcher reports (every half second)."""

    def __init__(self) -> None:
        self.cur: list[float | None] = [None] * len(SLOTS)
        self.done: list[tuple[list[float | None], float, bool]] = []
        self.prev_end: float | None = None  # end of the last micro-batch or step (hot path)
        self._drained_end: float | None = None  # end of the last step turned into phases
        self._comm = 0.0
        self._own = True
        self._seg = [0.0] * len(PHASE_KEYS)
        self._seg_wall = 0.0

    def mark(self, label: str) -> None:
        now = time.perf_counter()
        i = _SLOT[label]
        if i == 0 and self.cur[3] is not None:
            self._close_segment(now)  # a new batch after a forward, with no optimizer step between: a micro-batch
        if i in (0, 2, 4) and self.cur[i] is not None:
            return  # the first start and the last end of each phase
        self.cur[i] = now

    def _close_segment(self, now: float) -> None:
        """Fold a finished micro-batch (data, transfer, forward, then backward up to now) into the
        step, so that phases of accumulated micro-batches add up instead of overlapping."""
        slots = self.cur
        t = {k: v for k, v in zip(SLOTS, slots) if v is not None}
        t["optimizer_start"] = t["step_end"] = now  # its backward runs until the next batch is asked for
        start = self.prev_end if self.prev_end is not None and not self._own else t.get("step_start", t["forward_start"])
        ph, wall = _phases(t, start, self._comm)
        self._seg = [a + b for a, b in zip(self._seg, ph)]
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
        self.cur[5] = time.perf_counter()
        self.done.append((self.cur, self._comm, self._own, self._seg, self._seg_wall, self.prev_end))
        self.prev_end = self.cur[5]
        self.cur, self._comm, self._own = [None] * len(SLOTS), 0.0, False
        self._seg, self._seg_wall = [0.0] * len(PHASE_KEYS), 0.0

    def drain(self) -> list[Step]:
        out: list[Step] = []
        done, self.done = self.done, []
        for slots, comm, own, seg, seg_wall, seg_end in done:
            t = {k: v for k, v in zip(SLOTS, slots) if v is not None}
            if seg_wall:  # micro-batches came first: this last part starts where they ended
                start = seg_end
            else:
                start = self._drained_end if self._drained_end is not None and not own else t.get(
                    "step_start", t.get("data_ready", t.get("forward_start", t["step_end"])))
            self._drained_end = t["step_end"]
            ph, wall = _phases(t, start, comm)
            out.append((tuple(a + b for a, b in zip(ph, seg)), wall + seg_wall))
        return out

    def discard_step(self) -> None:
        self.cur, self._comm = [None] * len(SLOTS), 0.0
        self._seg, self._seg_wall = [0.0] * len(PHASE_KEYS), 0.0
        self.reset()

    def reset(self) -> None:
        self._own = True


_live_cuda_clocks: "weakref.WeakSet[CudaClock]" = weakref.WeakSet()
_fork_leak: list[Any] = []  # CUDA events a forked child inherited: never destroyed there


def _after_fork_in_child() -> None:
    """A forked child (a DataLoader worker) must not destroy the parent's CUDA events: CUDA is
    not usable after fork, and a destroy call aborts the child. Keep them alive, unused."""
    for c in list(_live_cuda_clocks):
        _fork_leak.append((c.t, c._pool, c._pending, c._comm, c._anchor))
        c.t, c._pool, c._pending, c._comm, c._anchor = {}, [], deque(), [], None
        c.active = False
        c.forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class CudaClock:
    """Times one step in ``sample_every`` with CUDA events (six, from a reused pool); the steps
    between are counted but not timed, which keeps the cost per step to a few microseconds on
    launch-bound jobs. Shares and per-step times come from the timed steps."""

    def __init__(self, max_pending: int = 64, sample_every: int = 8) -> None:
        self.t: dict[str, Any] = {}
        self._comm: list[tuple[Any, Any]] = []
        self._pending: deque[tuple[dict[str, Any], list[tuple[Any, Any]], Any]] = deque()
        self._pool: list[Any] = []
        self._max = max_pending
        self.every = max(1, sample_every)
        self._n = 0
        self.active = True  # the first step is timed from its own start
        self._anchor: Any = None  # end of the step before a timed one: the data-wait gap starts there
        self.forked = False
        _live_cuda_clocks.add(self)

    def _event(self) -> Any:
        e = self._pool.pop() if self._pool else torch.cuda.Event(enable_timing=True)
        e.record()
        return e

    def mark(self, label: str) -> None:
        if not self.active:
            return
        if label.endswith("_start") and label in self.t:
            return
        old = self.t.get(label)
        if old is not None:
            self._pool.append(old)
        self.t[label] = self._event()

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
            if len(self._pending) < self._max:
                self._pending.append((t, comm, self._anchor))
            else:  # the GPU is far behind: drop this step's timing rather than hold memory
                self._release(t, comm)
                if self._anchor is not None:
                    self._pool.append(self._anchor)
            self._anchor = None
        self._n += 1
        self.active = self._n % self.every == 0
        if self.active:
            self._anchor = self._event()  # this step's end, where the next (timed) step's data wait begins

    def _release(self, t: dict[str, Any], comm: list[tuple[Any, Any]]) -> None:
        self._pool.extend(t.values())
        for a, b in comm:
            self._pool += [a, b]

    def drain(self) -> list[Step]:
        out: list[Step] = []
        while self._pending and self._pending[0][0]["step_end"].query():
            t, comm, anchor = self._pending.popleft()
            start = anchor if anchor is not None else t.get("step_start", t.get("data_ready", t["step_end"]))
            ms = {k: start.elapsed_time(e) / 1000.0 for k, e in t.items()}
            c = sum(a.elapsed_time(b) for a, b in comm) / 1000.0
            out.append(_phases(ms, 0.0, c))
            if anchor is not None:
                self._pool.append(anchor)
            self._release(t, comm)
        return out

    def discard_step(self) -> None:
        t, self.t = self.t, {}
        self._release(t, self._comm)
        self._comm = []
        self.reset()

    def reset(self) -> None:
        """The next step is timed from its own step_start (a new epoch, after a discarded step)."""
        if self._anchor is not None:
            self._pool.append(self._anchor)
        self._anchor = None
        self.active = True
