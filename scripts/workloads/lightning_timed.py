"""The Lightning workloads' step timer: a callback that counts steps after the first (untimed)
one and stops the Trainer after ``seconds``, and ``fit_for``, the quiet CPU Trainer they all fit
with. A module of its own, not in common.py: the other workloads' proofs are keyed by their sources
and the workload modules they import."""

import time
from typing import Any

import lightning as L
from common import report


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


def fit_for(
    seconds: float, model: L.LightningModule, loader: Any = None, datamodule: Any = None, **trainer_kw: Any
) -> None:
    """Fit ``model`` on ``loader`` (or ``datamodule``) on the CPU with no logger, checkpoint,
    progress bar or summary for ``seconds`` after its first step; print steps/s. ``trainer_kw``:
    more of the Trainer's arguments (``precision``)."""
    timed = Timed(seconds)
    trainer = L.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=-1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[timed],
        **trainer_kw,
    )
    trainer.fit(model, loader, datamodule=datamodule)
    report(timed.steps, time.perf_counter() - (timed.t0 or time.perf_counter()))
