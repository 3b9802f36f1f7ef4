"""Hugging Face Transformers: ``Trainer(..., callbacks=[BottleneckCallback()])``.

Step phases from the Trainer's events: ``on_step_begin`` (the micro-batches of the step have been
fetched: data wait ends), ``on_substep_end`` (a micro-batch's forward and backward done),
``on_pre_optimizer_step`` (backward done), ``on_optimizer_step``, ``on_step_end``. The Trainer has
no event between forward and backward, so forward + backward is reported as ``forward`` unless
the model's own forward is timed (``time_forward=True``, the default: an instance wrapper around
``model.forward`` that marks only while the model is training, and counts the examples and
tokens of the model's main input). Evaluation and checkpoints run between steps and are not
counted as data wait.

Every training log (``logging_steps``) carries the metrics of the steps since the last one
(``bottleneck/...``: phase shares, samples/s, tokens/s, MFU, the verdict; integrations/_common.py),
so they reach the ``report_to`` loggers (TensorBoard, W&B, MLflow ...) and ``state.log_history``.
The Trainer runs its reporting callbacks before the user's (``default_callbacks + callbacks``) and
hands each the same ``logs`` dict in turn: a key added by a callback after them reaches no
logger. So at ``on_train_begin`` this callback moves itself to the front of the Trainer's
``CallbackHandler`` (found as the caller of the event, the one object that runs callbacks); where
it cannot, it says so once and the metrics reach ``state.log_history`` only. The block is printed
at each epoch's end on the main process. Callbacks are read-only apart from ``TrainerControl``:
recommendations say which ``TrainingArguments`` to change.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_callback import CallbackHandler

from bottleneckd.integrations._common import Marks, epoch_text, first_tensor, grouped

log = logging.getLogger("bottleneckd.integrations")
#: frames above the callback's own method searched for the CallbackHandler that called it
HANDLER_DEPTH = 4

#: our mitigation -> the TrainingArguments that apply it
HOW: dict[str, str] = {
    "mixed_precision": "TrainingArguments(bf16=True) (fp16=True on GPUs without bf16)",
    "gradient_accumulation": "TrainingArguments(gradient_accumulation_steps=k)",
    "less_frequent_sync": (
        "TrainingArguments(gradient_accumulation_steps=k) (no all-reduce on accumulating micro-batches)"
    ),
    "dataloader_settings": (
        "TrainingArguments(dataloader_num_workers=N, dataloader_pin_memory=True, "
        "dataloader_persistent_workers=True, dataloader_prefetch_factor=2)"
    ),
    "activation_checkpointing": "TrainingArguments(gradient_checkpointing=True)",
    "ddp_comm_hook": (
        "no TrainingArguments for it; register it on the DDP model "
        "(bottleneckd.torch.watch(...).apply('ddp_comm_hook'))"
    ),
}


class BottleneckCallback(TrainerCallback):
    def __init__(self, print_epoch: bool = True, time_forward: bool = True, **watch_kwargs: Any) -> None:
        self.marks = Marks("transformers", print_epoch, **watch_kwargs)
        self.time_forward = time_forward
        self.reports: list[Any] = []
        self._model: Any = None

    # --- set-up --------------------------------------------------------------------------------
    def on_train_begin(
        self, args: Any, state: Any, control: Any, model: Any = None, optimizer: Any = None, **kw: Any
    ) -> None:
        self.marks.call(self._go_first, sys._getframe(1))
        self.marks.start(model, None)
        self.marks.precision(
            "bfloat16" if getattr(args, "bf16", False) else "float16" if getattr(args, "fp16", False) else None
        )
        if self.time_forward and model is not None:
            self.marks.call(self._wrap_forward, model)
        self.marks.mark("step_start")

    def _go_first(self, frame: Any) -> None:
        """Run before the reporting callbacks (see the module's doc): move to the front of the
        CallbackHandler that runs this event."""
        for _ in range(HANDLER_DEPTH):
            if frame is None:
                break
            handler = frame.f_locals.get("self")
            if isinstance(handler, CallbackHandler) and self in handler.callbacks:
                handler.callbacks.remove(self)
                handler.callbacks.insert(0, self)
                return
            frame = frame.f_back
        log.warning(
            "bottleneckd: could not run before the Trainer's reporting callbacks: the bottleneck/* metrics "
            "reach state.log_history, not the report_to loggers"
        )

    def _wrap_forward(self, model: Any) -> None:
        original = model.forward
        marks = self.marks
        main = getattr(model, "main_input_name", "input_ids")

        def forward(*a: Any, **k: Any) -> Any:
            if model.training:
                marks.forward_start(first_tensor(a[0] if a else k.get(main, k)))
            out = original(*a, **k)
            if model.training:
                marks.mark("forward_end")
            return out

        model.forward = forward
        self._model = (model, forward)

    def _unwrap(self) -> None:
        if self._model is not None:
            model, forward = self._model
            if model.__dict__.get("forward") is forward:
                del model.forward
            self._model = None

    # --- the step ------------------------------------------------------------------------------
    def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.marks.mark("data_ready")
        if not self.time_forward:
            self.marks.mark("forward_start")

    def on_substep_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if not self.time_forward:
            self.marks.mark("forward_end")
        # the next micro-batch of this step: already fetched (the Trainer prefetches a step's batches)
        self.marks.mark("step_start")
        self.marks.mark("data_ready")

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if not self.time_forward:
            self.marks.mark("forward_end")
        self.marks.mark("optimizer_start")

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.marks.end_step()
        self.marks.mark("step_start")

    def on_evaluate(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.marks.gap()

    def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.marks.gap()

    # --- reporting -----------------------------------------------------------------------------
    def on_epoch_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        rep = self.marks.epoch_end()
        if rep is None:
            return
        self.reports.append(rep)
        if self.marks.print_epoch and state.is_world_process_zero:
            print(epoch_text(rep, HOW, "Transformers"), file=sys.stderr, flush=True)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
        """A training log gets the metrics of the steps since the last one (evaluation logs do not)."""
        if logs is None or any(k.startswith(("eval_", "test_")) for k in logs):
            return
        metrics = grouped(self.marks.log_metrics())
        if not metrics:
            return
        logs.update(metrics)  # before the reporting callbacks read it: we run first (_go_first)
        last = state.log_history[-1] if state.log_history else None
        if isinstance(last, dict) and last.get("step") == state.global_step:
            last.update(metrics)  # the Trainer copied logs into its history before this event

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._unwrap()
        self.marks.close()
