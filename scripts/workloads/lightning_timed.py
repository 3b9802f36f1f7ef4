"""The Lightning workloads' step timer: a callback that counts steps after the first (untimed)
one and stops the Trainer after ``seconds``. A module of its own, not in common.py: the other
workloads' proofs are keyed by their sources and the workload modules they import."""

import time

import lightning as L


class Timed(L.Callback):
    """Steps per second after the first (untimed) step; stops the Trainer after ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.t0: float | None = None
        self.steps = 0

    def on_train_batch_end(self, trainer, *_a) -> None:  # noqa: ANN001
        if self.t0 is None:
            self.t0 = time.perf_counter()
            return
        self.steps += 1
        if time.perf_counter() - self.t0 >= self.seconds:
            trainer.should_stop = True
