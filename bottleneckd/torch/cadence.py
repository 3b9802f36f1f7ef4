"""When the watcher reports: its timed steps go to the sidecar every ``report_every`` seconds, and
an epoch block is printed every ``every_steps`` steps or ``every_seconds`` seconds when set (loops
without a DataLoader, whose iteration end would mark the epoch)."""

from __future__ import annotations

import time


class Cadence:
    __slots__ = ("report_every", "every_steps", "every_seconds", "last_send", "last_epoch", "steps_at_epoch")

    def __init__(self, report_every: float, every_steps: int | None, every_seconds: float | None) -> None:
        self.report_every = report_every
        self.every_steps, self.every_seconds = every_steps, every_seconds
        self.last_send = self.last_epoch = time.perf_counter()
        self.steps_at_epoch = 0

    def send_due(self, now: float) -> bool:
        return now - self.last_send >= self.report_every

    def epoch_due(self, now: float, steps: int) -> bool:
        return bool(
            (self.every_steps and steps - self.steps_at_epoch >= self.every_steps)
            or (self.every_seconds and now - self.last_epoch >= self.every_seconds)
        )

    def sent(self) -> None:
        self.last_send = time.perf_counter()

    def epoch_started(self, steps: int) -> None:
        self.last_epoch, self.steps_at_epoch = time.perf_counter(), steps
