"""CudaClock: GPU training's phase clock. CUDA events from a reused pool, recorded on the current
stream at each mark and read once ``query()`` says the step's last event completed, a few steps
later, without synchronising. Every phase is measured on the GPU's own timeline, so they add up to
the GPU's step time: ``data_wait`` is the time the GPU sat idle between the previous step's end and
the moment the host handed it the next batch (the input pipeline starving it); while the host runs
ahead of the GPU that gap is zero, as it should be.

Communication, as the step sees it (the ``communication`` phase is the *exposed* part):

- a collective on the compute stream (a user's ``all_reduce``; DDP's last bucket, ``add_comm``)
  holds the stream for its whole duration: all of it is exposed;
- a collective on a side stream (FSDP's all-gathers and reduce-scatters) is only in flight; the step
  is held up where the compute stream waits for it (``stream_waits.py`` times those waits with two
  of our events on the compute stream). The side-stream spans give the time in flight
  (``comm_seconds_per_step``), the waits the exposed time; the rest was overlapped.

Exposed communication comes out of the phase it fell in (a wait before forward's end out of
forward, or the transfer before it; a wait in backward out of backward).
"""

from __future__ import annotations

import os
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

import torch

from bottleneckd.torch import stream_waits
from bottleneckd.torch.clock_phases import PHASE_KEYS, Step, phases_of_marks

_live_cuda_clocks: weakref.WeakSet[CudaClock] = weakref.WeakSet()
_fork_leak: list[Any] = []  # CUDA events a forked child inherited: never destroyed there
#: kinds of communication span: on the compute stream (exposed), on a side stream (in flight), a
#: wait of the compute stream for a side stream (exposed)
BLOCK, SIDE, WAIT = 0, 1, 2
_AVG = 16  # timed steps in the moving averages reported as facts


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


def _union(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


Comm = list[tuple[Any, Any, int]]  # (start event, end event, kind)


class CudaClock:
    """Times one step in ``sample_every`` with CUDA events (six, from a reused pool); the steps
    between are counted but not timed, which keeps the cost per step to a few microseconds on
    launch-bound jobs. Shares and per-step times come from the timed steps.

    Gradient accumulation: a new batch asked for after a forward, with no optimizer step between,
    closes a micro-batch segment (as in HostClock); the segments' phases add up into the step
    instead of the first start and the last end of each mark spanning every micro-batch.
    ``event_factory`` makes the timing events (``torch.cuda.Event(enable_timing=True)``; tests
    pass a fake with ``record``, ``query`` and ``elapsed_time``); ``streams`` the stream classes
    and ``current_stream`` (stream_waits.StreamApi; tests pass fakes)."""

    def __init__(
        self,
        max_pending: int = 64,
        sample_every: int = 8,
        event_factory: Callable[[], Any] | None = None,
        streams: stream_waits.StreamApi | None = None,
    ) -> None:
        self.t: dict[str, Any] = {}
        self._comm: Comm = []
        self._segs: list[tuple[dict[str, Any], Comm]] = []  # closed micro-batches of the step
        self._pending: deque[tuple[dict[str, Any], Comm, Any, list[tuple[dict[str, Any], Comm]]]] = deque()
        self._pool: list[Any] = []
        self._max = max_pending
        self.every = max(1, sample_every)
        self._n = 0
        self.active = True  # the first step is timed from its own start
        self._anchor: Any = None  # end of the step before a timed one: the data-wait gap starts there
        self.forked = False
        self._foreign: set[int] = set()  # ids of events add_comm was given: not ours to reuse
        self._new_event = event_factory or (lambda: torch.cuda.Event(enable_timing=True))
        self._streams = streams
        self.compute_key: Any = None  # the stream the step's forward runs on (stream_waits.key)
        self._c0: tuple[Any, int] | None = None
        self.side_history: deque[tuple[float, float]] = deque(maxlen=_AVG)  # (exposed, in flight) per step
        _live_cuda_clocks.add(self)

    @property
    def streams(self) -> stream_waits.StreamApi:
        if self._streams is None:
            self._streams = stream_waits.cuda_api()
        return self._streams

    def _current(self) -> Any:
        try:
            return self.streams.current_stream()
        except Exception:  # noqa: BLE001 - no stream to tell apart: every collective counts as exposed
            return None

    def _event(self, stream: Any = None) -> Any:
        e = self._pool.pop() if self._pool else self._new_event()
        if stream is None:
            e.record()
        else:
            e.record(stream)
        return e

    def mark(self, label: str) -> None:
        if not self.active:
            return
        if label == "forward_start" or self.compute_key is None:
            self.compute_key = stream_waits.key(self._current())
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

    # --- communication ---------------------------------------------------------------------------
    def comm_begin(self) -> None:
        if not self.active:
            return
        stream = self._current()
        side = stream is not None and self.compute_key is not None and stream_waits.key(stream) != self.compute_key
        if side:
            stream_waits.note_comm_stream(stream, self, self.streams)
        self._c0 = (self._event(), SIDE if side else BLOCK)

    def comm_end(self) -> None:
        if self.active and self._c0 is not None:
            start, kind = self._c0
            self._c0 = None
            self._comm.append((start, self._event(), kind))

    def add_comm(self, pair: tuple[Any, Any]) -> None:
        """Exposed communication measured elsewhere (DDP's buckets, ddp_comm.py), as two recorded
        events; they never go into this clock's pool (their maker made them)."""
        if self.active:
            self._foreign.update((id(pair[0]), id(pair[1])))
            self._comm.append((pair[0], pair[1], BLOCK))

    def wait_begin(self, stream: Any) -> Any:
        """The compute stream is about to wait for a communication stream (stream_waits.py)."""
        return self._event(stream)

    def wait_end(self, begin: Any, stream: Any) -> None:
        self._comm.append((begin, self._event(stream), WAIT))

    # --- steps -----------------------------------------------------------------------------------
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

    def _release(self, t: dict[str, Any], comm: Comm) -> None:
        events = {id(e): e for e in t.values()}  # a micro-batch's end is also its optimizer_start
        for a, b, _ in comm:
            events[id(a)], events[id(b)] = a, b
        for k, e in events.items():
            if k in self._foreign:  # add_comm's events belong to their maker (ddp_comm.py)
                self._foreign.discard(k)
            else:
                self._pool.append(e)

    @staticmethod
    def _comm_done(pending: Any) -> bool:
        """Every communication end event of a pending step completed (some sit on other streams)."""
        t, comm, _anchor, segs = pending
        return all(c[1].query() for _, pc in [*segs, (t, comm)] for c in pc)

    def drain(self) -> list[Step]:
        out: list[Step] = []
        while self._pending and self._pending[0][0]["step_end"].query() and self._comm_done(self._pending[0]):
            t, comm, anchor, segs = self._pending.popleft()
            parts = segs + [(t, comm)]
            first = parts[0][0]
            base = anchor if anchor is not None else first.get("step_start", first.get("data_ready", first["step_end"]))
            total, wall, start = [0.0] * len(PHASE_KEYS), 0.0, 0.0
            exposed_all, flight, side = 0.0, [], False
            for pt, pc in parts:
                ms = {name: base.elapsed_time(e) / 1000.0 for name, e in pt.items()}
                fwd_end = ms.get("forward_end")
                before, after = 0.0, 0.0  # exposed seconds before forward's end, and after it
                for a, b, kind in pc:
                    s0, s1 = base.elapsed_time(a) / 1000.0, base.elapsed_time(b) / 1000.0
                    if kind != WAIT:
                        flight.append((s0, s1))
                    if kind == SIDE:
                        side = True
                        continue
                    if fwd_end is not None and s0 < fwd_end:
                        before += max(0.0, s1 - s0)
                    else:
                        after += max(0.0, s1 - s0)
                exposed_all += before + after
                ph, w = phases_of_marks(ms, start, after, before)
                total = [a + b for a, b in zip(total, ph, strict=True)]
                wall += w
                start = ms["step_end"]  # the next micro-batch starts where this one ended
            if side:
                self.side_history.append((exposed_all, _union(flight)))
            out.append((tuple(total), wall))
            if anchor is not None:
                self._pool.append(anchor)
            for pt, pc in parts:
                self._release(pt, pc)
        return out

    def comm_facts(self) -> dict[str, Any]:
        """Communication per step where collectives ran on side streams (FSDP): in flight,
        exposed (the compute stream's waits), overlapped; {} when none did (DDP's own facts stand)."""
        if not self.side_history:
            return {}
        n = len(self.side_history)
        exposed = sum(h[0] for h in self.side_history) / n
        busy = max(exposed, sum(h[1] for h in self.side_history) / n)
        return {
            "comm_seconds_per_step": busy,
            "comm_exposed_seconds_per_step": exposed,
            "comm_overlapped_seconds_per_step": busy - exposed,
            "comm_overlap_ratio": (busy - exposed) / busy if busy > 0 else None,
        }

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
