"""Phase clocks. Both turn a step's marks into phase seconds, without synchronising.

- HostClock (CPU training, here): perf-counter timestamps.
- CudaClock (GPU training, in cuda_clock; imported here too): CUDA events read a few steps later.

``drain`` returns the steps completed so far as ``(phases, wall)``: ``phases`` in PHASE_KEYS
order, ``wall`` their sum.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass

from bottleneckd.model.resources import Phase
from bottleneckd.torch.clock_phases import PHASE_KEYS, Step, phases_of, phases_of_marks
from bottleneckd.torch.cuda_clock import CudaClock

__all__ = ["PHASE_KEYS", "SLOTS", "CudaClock", "HostClock", "Step", "StepMarks"]

SLOTS = ("step_start", "data_ready", "forward_start", "forward_end", "optimizer_start", "step_end")
_NO_SEG = (0.0,) * len(PHASE_KEYS)
_FWD, _BWD, _OPT = PHASE_KEYS.index(Phase.FORWARD), PHASE_KEYS.index(Phase.BACKWARD), PHASE_KEYS.index(Phase.OPTIMIZER)
#: a finished step in the clock's buffer: its six SLOTS timestamps (0.0: not marked; perf_counter is
#: CLOCK_MONOTONIC, never 0 after boot), the seconds in blocking collectives, 1.0 when its wall
#: starts at its own step_start (the first step, after a reset or a dropped step), and the end of the
#: micro-batch or step before it (``prev_end``: kept in the same list, so that the hot path, hot_path.py,
#: writes one object a step; copied with the step and not read back)
_COMM, _OWN, _PREV, _WIDTH = 6, 7, 8, 9
_FRESH = (0.0,) * _WIDTH


@dataclass(frozen=True, slots=True)
class StepMarks:
    """One finished step as the hot path left it (``HostClock.finished()``): its timestamps, turned
    into phases in ``drain``."""

    marks: tuple[float | None, ...]  # in SLOTS order, step_end set
    comm: float  # seconds in blocking collectives
    own_start: bool  # the step's wall starts at its own step_start (epoch start, after a dropped step)
    seg: tuple[float, ...]  # phases of the micro-batches folded in before the last one (PHASE_KEYS order)
    seg_wall: float
    seg_end: float | None  # where those micro-batches ended
    inner: tuple[float, float] | None  # forward and backward seconds inside the optimizer's closure


class HostClock:
    """The hot path stores timestamps in a fixed list of floats (``cur``) and, at a step's end,
    copies them into one flat array of doubles: no object is made or kept per step (a micro-batch
    or closure step keeps its few extras in ``_extra``). Phases are computed in ``drain()``, a
    batch at a time, when the watcher reports (every half second)."""

    def __init__(self) -> None:
        self.cur: list[float] = [*_FRESH]  # this step: SLOTS timestamps, comm seconds, own-start flag, prev_end
        self.cur[_OWN] = 1.0
        self.buf = array("d")  # finished steps, _WIDTH floats each, until drained
        self._extra: dict[int, tuple[tuple[float, ...], float, float | None, tuple[float, float] | None]] = {}
        self._drained_end: float | None = None  # end of the last step turned into phases
        self._c0 = 0.0
        self._seg: tuple[float, ...] = _NO_SEG
        self._seg_wall = 0.0
        self._closure: list[float] | None = None  # [forward, backward, forward_start, forward_end] in a closure step
        self._marks = {
            "step_start": self.step_start,
            "data_ready": self.data_ready,
            "forward_start": self.forward_start,
            "forward_end": self.forward_end,
            "optimizer_start": self.optimizer_start,
        }

    @property
    def prev_end(self) -> float | None:
        """End of the last micro-batch or step (None: none yet)."""
        return self.cur[_PREV] or None

    @prev_end.setter
    def prev_end(self, t: float | None) -> None:
        self.cur[_PREV] = t or 0.0

    def plain(self) -> bool:
        """No micro-batch folded into the step in progress and no closure timed: what hot_path.py's
        step end assumes."""
        return not self._seg_wall and self._closure is None

    # --- the hot path: one method per mark --------------------------------------------------
    def mark(self, label: str) -> None:
        self._marks[label]()

    def step_start(self) -> None:
        """The loop asks for a batch (the first request of a step counts)."""
        now = time.perf_counter()
        cur = self.cur
        if cur[3]:
            self._close_segment(now)  # a new batch after a forward, with no optimizer step between: a micro-batch
        if not cur[0]:
            cur[0] = now

    def data_ready(self) -> None:
        self.cur[1] = time.perf_counter()

    def forward_start(self) -> None:
        now = time.perf_counter()
        c = self._closure
        if c is not None:
            c[2] = now  # forward inside the optimizer's closure: summed in closure_end
        elif not self.cur[2]:
            self.cur[2] = now  # the first start and the last end of each phase

    def forward_end(self) -> None:
        now = time.perf_counter()
        c = self._closure
        if c is not None:
            c[3] = now
        else:
            self.cur[3] = now

    def optimizer_start(self) -> None:
        now = time.perf_counter()
        if not self.cur[4]:
            self.cur[4] = now

    def end_step(self) -> None:
        cur = self.cur
        cur[5] = end = time.perf_counter()
        if self._seg_wall or self._closure is not None:
            c = self._closure
            self._extra[len(self.buf) // _WIDTH] = (
                self._seg,
                self._seg_wall,
                self.prev_end,
                None if c is None else (c[0], c[1]),
            )
            self._seg, self._seg_wall, self._closure = _NO_SEG, 0.0, None
        self.buf.extend(cur)
        cur[:] = _FRESH  # the next step's wall starts at this one's end
        cur[_PREV] = end

    def unmark(self, label: str) -> None:
        self.cur[SLOTS.index(label)] = 0.0

    def comm_begin(self) -> None:
        self._c0 = time.perf_counter()

    def comm_end(self) -> None:
        self.cur[_COMM] += time.perf_counter() - self._c0

    def add_comm(self, seconds: float) -> None:
        self.cur[_COMM] += seconds

    # --- closures and micro-batches -----------------------------------------------------------
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
        cur = self.cur
        t = {k: v for k, v in zip(SLOTS, cur[:6], strict=True) if v}
        t["optimizer_start"] = t["step_end"] = now  # its backward runs until the next batch is asked for
        ss = t.get("step_start")
        start = (
            self.prev_end
            if self.prev_end is not None and not cur[_OWN]
            else (ss if ss is not None else t.get("forward_start", now))
        )
        ph, wall = phases_of_marks(t, start, cur[_COMM])
        self._seg = tuple(a + b for a, b in zip(self._seg, ph, strict=True))
        self._seg_wall += wall
        cur[:] = _FRESH
        cur[_PREV] = now

    # --- reports ------------------------------------------------------------------------------
    def drain(self) -> list[Step]:
        buf, extra = self.buf, self._extra
        if not buf:
            return []
        vals = buf.tolist()
        del buf[:]
        self._extra = {}
        out: list[Step] = []
        prev = self._drained_end
        it = iter(vals)
        start: float
        for k, (ss, dr, fs, fe, os_, end, comm, own, _prev) in enumerate(
            zip(it, it, it, it, it, it, it, it, it, strict=True)
        ):
            x = extra.get(k) if extra else None
            if x is not None and x[1]:  # micro-batches came first: this last part starts where they ended
                start = x[2]  # type: ignore[assignment]  # set whenever x[1] is
            elif prev is not None and not own:
                start = prev
            else:
                start = ss or dr or fs or fe or os_ or end
            prev = end
            ph, wall = phases_of(ss or None, dr or None, fs or None, fe or None, os_ or None, end, start, comm or 0.0)
            if x is not None:
                ph, wall = _with_extra(ph, wall, x)
            out.append((ph, wall))
        self._drained_end = prev
        return out

    def finished(self) -> list[StepMarks]:
        """The steps ended and not yet drained, as typed records (for inspection; ``drain`` reads
        the buffer directly)."""
        vals = self.buf.tolist()
        out = []
        for k in range(len(vals) // _WIDTH):
            v = vals[k * _WIDTH : (k + 1) * _WIDTH]
            seg, seg_wall, seg_end, inner = self._extra.get(k, (_NO_SEG, 0.0, None, None))
            marks = tuple(m or None for m in v[:6])
            out.append(StepMarks(marks, v[_COMM], bool(v[_OWN]), seg, seg_wall, seg_end, inner))
        return out

    def discard_step(self) -> None:
        prev = self.cur[_PREV]
        self.cur[:] = _FRESH
        self.cur[_PREV] = prev
        self._closure = None
        self._seg, self._seg_wall = _NO_SEG, 0.0
        self.reset()

    def reset(self) -> None:
        self.cur[_OWN] = 1.0

    def resume_after(self, end: float) -> None:
        """Untimed steps ran up to ``end`` (a rest, sampling.py; drained first): the next step's
        wall starts there."""
        self.cur[:] = _FRESH
        self.cur[_PREV] = end
        self._drained_end = end


def _with_extra(
    ph: tuple[float, ...],
    wall: float,
    x: tuple[tuple[float, ...], float, float | None, tuple[float, float] | None],
) -> Step:
    """A step's phases with its closure's forward and backward moved out of the optimizer phase,
    and the micro-batches folded in before it added."""
    seg, seg_wall, _seg_end, inner = x
    if inner is not None:  # the closure's forward and backward ran inside optimizer.step()
        fwd, bwd = inner
        p = list(ph)
        inside = min(fwd + bwd, p[_OPT])
        scale = inside / (fwd + bwd) if fwd + bwd > 0 else 0.0
        p[_FWD] += fwd * scale
        p[_BWD] += bwd * scale
        p[_OPT] -= inside
        ph = tuple(p)
    if seg_wall:
        ph = tuple(a + b for a, b in zip(ph, seg, strict=True))
    return ph, wall + seg_wall
