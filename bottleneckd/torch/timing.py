"""Phase clocks. Both turn a step's marks into phase seconds, without synchronising.

- HostClock (CPU training, here): perf-counter timestamps.
- CudaClock (GPU training, in cuda_clock; imported here too): CUDA events read a few steps later.

``end_step`` returns the steps completed so far as ``(phases, wall)``: ``phases`` in PHASE_KEYS
order, ``wall`` their sum.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from bottleneckd.torch.clock_phases import PHASE_KEYS, Step, phases_of, phases_of_marks
from bottleneckd.torch.cuda_clock import CudaClock

__all__ = ["PHASE_KEYS", "SLOTS", "CudaClock", "HostClock", "Step", "StepMarks"]

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
        start = (
            self.prev_end
            if self.prev_end is not None and not self._own
            else (ss if ss is not None else t["forward_start"])
        )
        ph, wall = phases_of_marks(t, start, self._comm)
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

    def add_comm(self, seconds: float) -> None:
        self._comm += seconds

    def end_step(self) -> None:
        cur = self.cur
        cur[5] = end = time.perf_counter()
        c = self._closure
        self.done.append(
            StepMarks(
                tuple(cur),
                self._comm,
                self._own,
                self._seg,
                self._seg_wall,
                self.prev_end,
                None if c is None else (c[0], c[1]),
            )
        )
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
            ph, wall = phases_of(ss, dr, fs, fe, os_, end, start, s.comm)
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
