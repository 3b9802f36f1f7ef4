"""Gradient accumulation to a larger effective batch: the optimizer steps every ``k`` calls and
gradients are kept (and averaged) in between. On a DistributedDataParallel model the in-between
micro-steps also skip gradient synchronisation (``no_sync``): less frequent synchronisation
(Dutta et al., 2018; Lin et al., 2018). Changes training semantics (effective batch x k)."""

from __future__ import annotations

from typing import Any

import torch

from bottleneckd.torch.mitigations.base import Context, Handles


class GradientAccumulation:
    name = "gradient_accumulation"
    changes_semantics = True

    def __init__(self, k: int = 4, sync_every_step: bool = False) -> None:
        if k < 2:
            raise ValueError("accumulating fewer than 2 micro-batches does nothing")
        self.k = k
        self.sync_every_step = sync_every_step
        self._calls = 0
        self._h = Handles()
        self._no_sync: Any = None
        self.note = f"optimizer steps every {k} batches (effective batch x{k})"

    def apply(self, ctx: Context) -> None:
        opt = ctx.optimizer
        if opt is None:
            raise ValueError("gradient accumulation needs the optimizer")
        step, zero = opt.step, opt.zero_grad
        me = self
        ddp = ctx.model if isinstance(ctx.model, torch.nn.parallel.DistributedDataParallel) else None

        def accumulate_step(*a: Any, **kw: Any) -> Any:
            me._leave_no_sync()  # backward is done: the micro-step's no_sync ends here
            me._calls += 1
            if me._calls % me.k:
                return None  # keep accumulating
            for g in opt.param_groups:
                for p in g["params"]:
                    if p.grad is not None:
                        p.grad.div_(me.k)
            out = step(*a, **kw)
            zero(set_to_none=True)
            return out

        def accumulate_zero(*a: Any, **kw: Any) -> None:
            return None  # gradients are cleared after the real step only

        opt.step = accumulate_step  # type: ignore[method-assign]
        opt.zero_grad = accumulate_zero  # type: ignore[method-assign]
        self._h.add(lambda: (opt.__dict__.pop("step", None), opt.__dict__.pop("zero_grad", None)))
        if ddp is not None and not self.sync_every_step:
            def enter(*_: Any) -> None:
                if (me._calls + 1) % me.k:  # not the last micro-step: skip the all-reduce
                    me._no_sync = ddp.no_sync()
                    me._no_sync.__enter__()

            self._h.add(ddp.register_forward_pre_hook(enter))
            self.note += "; gradients synchronised once per effective step (no_sync)"
        ctx.watcher.facts["gradient_accumulation"] = self.k
        self._h.add(lambda: ctx.watcher.facts.pop("gradient_accumulation", None))

    def _leave_no_sync(self) -> None:
        if self._no_sync is not None:
            self._no_sync.__exit__(None, None, None)
            self._no_sync = None

    def revert(self) -> None:
        self._leave_no_sync()
        self._h.undo()


class LessFrequentSync(GradientAccumulation):
    name = "less_frequent_sync"
