"""Gradient accumulation to a larger effective batch: the optimizer updates every ``k`` calls of
``optimizer.step()`` with the average of the k micro-batches' gradients. On a
DistributedDataParallel model the in-between micro-steps also skip gradient synchronisation
(``no_sync``): less frequent synchronisation (Dutta et al., 2018; Lin et al., 2018). Changes
training semantics (effective batch x k; a learning-rate scheduler stepped per call advances k
times per update).

Nothing is replaced: at the watcher's BEFORE_OPTIMIZER_STEP event (inside ``optimizer.step()``,
before it updates anything) a micro-step adds each gradient to a buffer of ours and sets
``p.grad = None``, so the optimizer skips every parameter (torch's optimizers skip parameters
without a gradient: no update, no state change); the k-th call puts the averaged sum back and the
optimizer steps on it. The call count is the watcher's (``ctx.optimizer_calls``)."""

from __future__ import annotations

from typing import Any

import torch

from bottleneckd.torch.mitigations.base import Context, Handles, HookMitigation, LoopEvent, declared_hook


class GradientAccumulation(HookMitigation):
    hook = declared_hook("gradient_accumulation")
    facts = {"gradient_accumulation": int}
    changes_semantics = True
    events = (LoopEvent.BEFORE_OPTIMIZER_STEP,)

    def __init__(self, k: int = 4, sync_every_step: bool = False) -> None:
        if k < 2:
            raise ValueError("accumulating fewer than 2 micro-batches does nothing")
        self.k = k
        self.sync_every_step = sync_every_step
        self._first_call = 0
        self._next_is_micro = True
        self._buf: dict[torch.nn.Parameter, torch.Tensor] = {}
        self._h = Handles()
        self._no_sync: Any = None
        self.note = f"optimizer steps every {k} batches (effective batch x{k})"

    def apply(self, ctx: Context) -> None:
        if ctx.optimizer is None:
            raise ValueError("gradient accumulation needs the optimizer")
        self._first_call = ctx.optimizer_calls  # calls before this one do not count
        ddp = ctx.model if isinstance(ctx.model, torch.nn.parallel.DistributedDataParallel) else None
        if ddp is not None and not self.sync_every_step:

            def enter(*_: Any) -> None:
                if self._next_is_micro and self._no_sync is None:  # not the last micro-step: skip the all-reduce
                    self._no_sync = ddp.no_sync()
                    self._no_sync.__enter__()

            self._h.add(ddp.register_forward_pre_hook(enter))
            self.note += "; gradients synchronised once per effective step (no_sync)"
        ctx.facts.set("gradient_accumulation", self.k)

    def on_event(self, event: LoopEvent, ctx: Context) -> None:
        self._leave_no_sync()  # backward is done: the micro-step's no_sync ends here
        opt = ctx.optimizer
        assert opt is not None
        n = ctx.optimizer_calls - self._first_call  # 1, 2, ... since applied
        last = n % self.k == 0
        self._next_is_micro = (n + 1) % self.k != 0
        for g in opt.param_groups:
            for p in g["params"]:
                b = self._buf.get(p)
                if last:
                    if p.grad is None:
                        p.grad = b
                    elif b is not None:
                        p.grad.add_(b)
                    if p.grad is not None:
                        p.grad.div_(self.k)
                elif p.grad is not None:
                    if b is None:
                        self._buf[p] = p.grad
                    else:
                        b.add_(p.grad)
                    p.grad = None  # the optimizer skips it on this micro-step
        if last:
            self._buf = {}
        else:
            ctx.micro_step = True

    def _leave_no_sync(self) -> None:
        if self._no_sync is not None:
            self._no_sync.__exit__(None, None, None)
            self._no_sync = None

    def revert(self) -> None:
        self._leave_no_sync()
        self._h.undo()
        self._buf = {}
