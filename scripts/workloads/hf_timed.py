"""The Hugging Face workloads' step timer: a TrainerCallback that counts optimizer steps after the
first (untimed) one and stops training after ``seconds``. A module of its own, not in common.py:
the other workloads' proofs are keyed by their sources and the workload modules they import."""

import time

from transformers import TrainerCallback


class Timed(TrainerCallback):
    """Optimizer steps per second after the first (untimed) one; stops after ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.t0: float | None = None
        self.steps = 0

    def on_step_end(self, _args, state, control, **_kw):  # noqa: ANN001, ANN201
        if self.t0 is None:
            self.t0 = time.perf_counter()
            return control
        self.steps += 1
        if time.perf_counter() - self.t0 >= self.seconds:
            control.should_training_stop = True
        return control
