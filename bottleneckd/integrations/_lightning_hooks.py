"""The Lightning callback's hooks, shared by both of Lightning's package names: ``lightning.pytorch``
(``integrations.lightning``) and the older ``pytorch_lightning`` (``integrations.pytorch_lightning``).
A Trainer accepts only callbacks of its own package's ``Callback`` class, so each module mixes these
hooks into its own; this module imports neither package.

Step phases come from the callback hooks (no hook on the model or optimizer): the step's data wait
ends at ``on_train_batch_start`` (where the batch's first tensor gives the step's examples and,
for token ids, its tokens), forward ends at ``on_before_backward``, backward at
``on_before_optimizer_step`` (Lightning calls it after the closure's backward), the step at
``on_train_batch_end`` of a batch whose optimizer stepped (micro-batches of
``accumulate_grad_batches`` are folded into their step). Validation and checkpoint time between
batches is not counted as data wait.

Metrics are logged as Lightning's own monitors log theirs (DeviceStatsMonitor): on the steps the
trainer logs (``log_every_n_steps``, its logger connector's ``should_update_logs``), to every logger,
at the step Lightning logs its own step metrics, with each logger's ``group_separator``
(``bottleneck/share_data_wait``, ``bottleneck/samples_per_second``, ``bottleneck/mfu`` ...): the
metrics of the steps since the last log. At ``on_train_epoch_end`` the steps not yet logged are
logged and the epoch's block is printed once, on global rank zero. Lightning sets precision,
gradient accumulation and the DataLoaders when the Trainer is built, so those mitigations are
offered as the setting to change.
"""

from __future__ import annotations

import sys
from typing import Any

from bottleneckd.integrations._common import Marks, epoch_text, first_tensor, grouped

#: our mitigation -> where Lightning sets it
HOW: dict[str, str] = {
    "mixed_precision": "Trainer(precision='bf16-mixed') (or '16-mixed' on GPUs without bf16)",
    "gradient_accumulation": "Trainer(accumulate_grad_batches=k)",
    "less_frequent_sync": (
        "Trainer(accumulate_grad_batches=k) (Lightning skips the all-reduce on the accumulating batches)"
    ),
    "dataloader_settings": (
        "DataLoader(num_workers=..., pin_memory=True, persistent_workers=True) in your LightningDataModule"
    ),
    "activation_checkpointing": (
        "wrap blocks with torch.utils.checkpoint in your LightningModule "
        "(or FSDPStrategy(activation_checkpointing_policy=...))"
    ),
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


def should_log(trainer: Any) -> bool:
    """Lightning logs this step's metrics (``log_every_n_steps``; its connector's own test, else
    the same rule on the optimizer steps done)."""
    connector = getattr(trainer, "_logger_connector", None)
    if connector is not None and hasattr(connector, "should_update_logs"):
        return bool(connector.should_update_logs)
    every = getattr(trainer, "log_every_n_steps", 0) or 0
    return bool(every) and trainer.global_step % every == 0


def log_step(trainer: Any) -> int:
    """The step Lightning logs its own step metrics at (its loop's stepped batches), else the
    optimizer steps done."""
    loop = getattr(getattr(trainer, "fit_loop", None), "epoch_loop", None)
    stepped = getattr(loop, "_batches_that_stepped", None)
    return int(stepped) if isinstance(stepped, int) else int(trainer.global_step)


class LightningHooks:
    """Times every training step from Lightning's hooks, logs ``bottleneck/*`` metrics with the
    trainer's logging cadence and reports the bottleneck at each epoch's end. ``print_epoch``
    prints the block on rank zero; ``log_metrics`` logs the metrics."""

    def __init__(self, print_epoch: bool = True, log_metrics: bool = True, **watch_kwargs: Any) -> None:
        super().__init__()
        # no profiler ranges: Lightning runs training_step inside optimizer.step(closure), so a phase
        # range opened at the batch start would straddle Optimizer.step's own (torch/ranges.py);
        # Lightning's own profilers annotate its hooks
        self.marks = Marks("lightning", print_epoch, **{"profiler_ranges": False, **watch_kwargs})
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
        self.marks.forward_start(first_tensor(batch))

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
        self.marks.mark("forward_end")

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        self.marks.mark("optimizer_start")
        self._stepped = True

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self._stepped:  # an accumulating micro-batch is folded into the step that follows it
            self.marks.end_step()
            self._stepped = False
            if self.log_metrics and self.marks.call(should_log, trainer):
                self._log(trainer)
        self.marks.mark("step_start")

    def _log(self, trainer: Any) -> None:
        metrics = self.marks.log_metrics()
        if not metrics:
            return
        step = self.marks.call(log_step, trainer)
        for logger in trainer.loggers:
            sep = getattr(logger, "group_separator", "/")
            self.marks.call(logger.log_metrics, grouped(metrics, sep), step)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.training:  # validation inside fit: not the next batch's data wait
            self.marks.gap()

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        rep = self.marks.epoch_end()
        if rep is None:
            return
        self.reports.append(rep)
        if self.log_metrics:
            self._log(trainer)  # the steps since the last log
        if self.marks.print_epoch and trainer.is_global_zero:
            print(epoch_text(rep, HOW, "Lightning"), file=sys.stderr, flush=True)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.marks.close()

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage == "fit":
            self.marks.close()
