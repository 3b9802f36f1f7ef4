"""The Hugging Face workloads' step timer: a TrainerCallback that counts optimizer steps after the
first (untimed) one and stops training after ``seconds``, and ``train_for``, the quiet CPU Trainer
they all train with. A module of its own, not in common.py: the other workloads' proofs are keyed
by their sources and the workload modules they import."""

import tempfile
import time
from typing import Any

from common import report
from transformers import Trainer, TrainerCallback, TrainingArguments


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


def train_for(seconds: float, model: Any, train_dataset: Any, collator: Any = None, **args_kw: Any) -> None:
    """Train ``model`` on the CPU with no saving, logging, reporting or progress bar, the loading in
    the training process, for ``seconds`` after its first step; print steps/s. ``args_kw``: more
    of TrainingArguments' (``per_device_train_batch_size``, ``bf16``, ...)."""
    timed = Timed(seconds)
    targs = TrainingArguments(
        output_dir=tempfile.mkdtemp(prefix="hf-workload-"),
        max_steps=1_000_000,
        learning_rate=1e-4,
        save_strategy="no",
        report_to=[],
        logging_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
        **{"dataloader_num_workers": 0, **args_kw},
    )
    Trainer(model=model, args=targs, train_dataset=train_dataset, data_collator=collator, callbacks=[timed]).train()
    report(timed.steps, time.perf_counter() - (timed.t0 or time.perf_counter()))
