"""Phase clocks: host perf counters on CPU; CUDA events read lazily on GPU (no synchronize)."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import torch


class HostClock:
    """Marks are host timestamps; a step's phases are ready at once."""

    def __init__(self) -> None:
        self._marks: list[tuple[str, float]] = []

    def mark(self, label: str) -> None:
        self._marks.append((label, time.perf_counter()))

    def end_step(self) -> list[tuple[str, float]]:
        m, self._marks = self._marks, []
        return m

    def ready(self) -> list[list[tuple[str, float]]]:
        return []


class CudaClock:
    """Device phases through CUDA events; each step's events are read once ``query()`` says the
    last one completed, a few steps later. Host-side phases (data wait) use perf counters."""

    def __init__(self, max_pending: int = 64) -> None:
        self._marks: list[tuple[str, Any]] = []
        self._pending: deque[list[tuple[str, Any]]] = deque()
        self._max = max_pending

    def mark(self, label: str) -> None:
        if label in ("data_ready", "step_start"):
            self._marks.append((label, time.perf_counter()))
            if label == "step_start":
                return
            label = "data_ready_device"  # device-side anchor: later events are timed from it
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        self._marks.append((label, e))

    def end_step(self) -> list[tuple[str, float]]:
        m, self._marks = self._marks, []
        if len(self._pending) < self._max:  # beyond that, drop rather than hold memory
            self._pending.append(m)
        return []

    def ready(self) -> list[list[tuple[str, float]]]:
        """Steps whose events completed, converted to seconds relative to the first device mark."""
        out = []
        while self._pending:
            marks = self._pending[0]
            events = [(l, e) for l, e in marks if not isinstance(e, float)]
            if events and not events[-1][1].query():
                break
            self._pending.popleft()
            if not events:
                continue
            host = [(l, t) for l, t in marks if isinstance(t, float)]
            first_label, first = events[0]
            base = dict(host).get("data_ready", host[-1][1] if host else 0.0)
            conv = [(l, base + first.elapsed_time(e) / 1000.0) for l, e in events if l != "data_ready_device"]
            out.append(host + conv)
        return out
