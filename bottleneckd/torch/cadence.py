"""When the watcher reports: its timed steps go to the sidecar every ``report_every`` seconds, and
an epoch block is printed every ``every_steps`` steps or ``every_seconds`` seconds when set (loops
without a DataLoader, whose iteration end would mark the epoch); the tuner of a multi-rank job asks
for a control tick at a step count (``tick_at``: torch/tune_ranks.py), the same on every rank.

The step's hot path asks one question, ``due(now, steps)``: two comparisons against the earliest
time and step count at which anything is due, kept up to date when a report is sent or an epoch
starts. ``send_due`` and ``epoch_due`` then say which."""

from __future__ import annotations

import time
from collections.abc import Callable

_NEVER = float("inf")


class Cadence:
    __slots__ = (
        "report_every",
        "every_steps",
        "every_seconds",
        "last_send",
        "last_epoch",
        "steps_at_epoch",
        "due_at",
        "due_step",
        "mirror",
        "tick_step",
    )

    def __init__(
        self,
        report_every: float,
        every_steps: int | None,
        every_seconds: float | None,
        mirror: Callable[[float, float], None] | None = None,
    ) -> None:
        self.mirror = mirror  # told the due time and step whenever they change (the hot path's copy)
        self.report_every = report_every
        self.every_steps, self.every_seconds = every_steps, every_seconds
        self.last_send = self.last_epoch = time.perf_counter()
        self.steps_at_epoch = 0
        self.due_at = self.due_step = self.tick_step = _NEVER
        self._next()

    def _next(self) -> None:
        at = self.last_send + self.report_every
        if self.every_seconds:
            at = min(at, self.last_epoch + self.every_seconds)
        self.due_at = at
        epoch = self.steps_at_epoch + self.every_steps if self.every_steps else _NEVER
        self.due_step = min(epoch, self.tick_step)
        if self.mirror is not None:
            self.mirror(self.due_at, self.due_step)

    def due(self, now: float, steps: int) -> bool:
        """Anything due (a report or an epoch end) at this step."""
        return now >= self.due_at or steps >= self.due_step

    def tick_at(self, step: float) -> None:
        """The next control tick is due at the end of step number ``step`` (never: ``inf``)."""
        self.tick_step = step
        self._next()

    def tick_due(self, steps: int) -> bool:
        return steps >= self.tick_step

    def send_due(self, now: float) -> bool:
        return now - self.last_send >= self.report_every

    def epoch_due(self, now: float, steps: int) -> bool:
        return bool(
            (self.every_steps and steps - self.steps_at_epoch >= self.every_steps)
            or (self.every_seconds and now - self.last_epoch >= self.every_seconds)
        )

    def sent(self) -> None:
        self.last_send = time.perf_counter()
        self._next()

    def epoch_started(self, steps: int) -> None:
        self.last_epoch, self.steps_at_epoch = time.perf_counter(), steps
        self._next()
