"""PyTorch Lightning: ``Trainer(callbacks=[BottleneckCallback()])``.

Step phases come from the callback hooks (no hook on the model or optimizer): the step's data wait
ends at ``on_train_batch_start``, forward ends at ``on_before_backward``, backward at
``on_before_optimizer_step`` (Lightning calls it after the closure's backward), the step at
``on_train_batch_end`` of a batch whose optimizer stepped (micro-batches of
``accumulate_grad_batches`` are folded into their step). Validation and checkpoint time between
batches is not counted as data wait. At ``on_train_epoch_end`` the verdict and top
recommendations are logged to the trainer's loggers as ``bottleneck/...`` metrics and printed
once, on global rank zero. Lightning sets precision, gradient accumulation and the DataLoaders
when the Trainer is built, so those mitigations are offered as the setting to change.
"""

from __future__ import annotations

import sys
from typing import Any

from lightning.pytorch.callbacks import Callback

from bottleneckd.integrations._common import Marks, epoch_metrics, epoch_text

#: our mitigation -> where Lightning sets it
HOW: dict[str, str] = {
    "mixed_precision": "Trainer(precision='bf16-mixed') (or '16-mixed' on GPUs without bf16)",
    "gradient_accumulation": "Trainer(accumulate_grad_batches=k)",
    "less_frequent_sync": "Trainer(accumulate_grad_batches=k) (Lightning skips the all-reduce on the accumulating batches)",
    "dataloader_settings": "DataLoader(num_workers=..., pin_memory=True, persistent_workers=True) in your LightningDataModule",
    "activation_checkpointing": "wrap blocks with torch.utils.checkpoint in your LightningModule (or FSDPStrategy(activation_checkpointing_policy=...))",
    "ddp_comm_hook": "DDPStrategy(ddp_comm_hook=...) passed as Trainer(strategy=...)",
}


def precision_dtype(precision: Any) -> str | None:
    """Trainer(precision=...) -> the low-precision dtype its autocast runs ("bf16-mixed" -> bfloat16)."""
    p = str(precision or "")
    if p.startswith("bf16"):
        return "bfloat16"
    if p.startswith("16"):
        return "float16"
    return None


class BottleneckCallback(Callback):
    """Times every training step from Lightning's hooks and reports the bottleneck at each
    epoch's end. ``print_epoch`` prints the block on rank zero; ``log_metrics`` logs it."""

    def __init__(self, print_epoch: bool = True, log_metrics: bool = True, **watch_kwargs: Any) -> None:
        self.marks = Marks("lightning", print_epoch, **watch_kwargs)
        self.log_metrics = log_metrics
        self._stepped = False
        self.reports: list[Any] = []

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        self.marks.start(pl_module)
        self.marks.precision(precision_dtype(getattr(trainer, "precision", None)))

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self.marks.mark("step_start")

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        self.marks.mark("data_ready")
        self.marks.mark("forward_start")

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
        self.marks.mark("forward_end")

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        self.marks.mark("optimizer_start")
        self._stepped = True

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self._stepped:  # an accumulating micro-batch is folded into the step that follows it
            self.marks.end_step()
            self._stepped = False
        self.marks.mark("step_start")

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.training:  # validation inside fit: not the next batch's data wait
            self.marks.gap()

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        rep = self.marks.epoch_end()
        if rep is None:
            return
        self.reports.append(rep)
        if self.log_metrics:
            metrics = epoch_metrics(rep)
            for logger in trainer.loggers:
                self.marks.call(logger.log_metrics, metrics, trainer.global_step)
        if self.marks.print_epoch and trainer.is_global_zero:
            print(epoch_text(rep, HOW, "Lightning"), file=sys.stderr, flush=True)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.marks.close()

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage == "fit":
            self.marks.close()
