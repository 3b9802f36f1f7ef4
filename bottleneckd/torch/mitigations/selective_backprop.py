"""Selective backprop (Jiang et al., 2019): the backward pass runs only for the samples with the
highest loss. Applied as a forward hook on the loss module: the per-sample losses are computed
and the returned loss averages the kept fraction only. Changes training semantics."""

from __future__ import annotations

from typing import Any

import torch

from bottleneckd.torch.mitigations.base import Context, Handles, HookMitigation, declared_hook


class SelectiveBackprop(HookMitigation):
    hook = declared_hook("selective_backprop")
    facts = {}
    changes_semantics = True

    def __init__(self, loss_module: torch.nn.Module, keep: float = 0.5) -> None:
        if not 0 < keep < 1:
            raise ValueError("keep must be between 0 and 1")
        if not hasattr(loss_module, "reduction"):
            raise ValueError(
                "selective backprop needs a loss module with a 'reduction' attribute (e.g. nn.CrossEntropyLoss)"
            )
        self.loss = loss_module
        self.keep = keep
        self._h = Handles()
        self.last_kept: int | None = None
        self.note = f"backward through the {keep:.0%} highest-loss samples of each batch"

    def apply(self, ctx: Context) -> None:
        me = self

        def select(module: torch.nn.Module, args: tuple, _out: torch.Tensor) -> torch.Tensor:
            reduction = module.reduction
            module.reduction = "none"  # type: ignore[assignment]  # a loss module's str attribute
            try:
                per_sample = module(*args)  # hooks do not run again: we are inside forward's hook
            finally:
                module.reduction = reduction
            per_sample = per_sample.reshape(per_sample.shape[0], -1).mean(dim=1)
            k = max(1, int(round(me.keep * per_sample.shape[0])))
            idx = torch.topk(per_sample.detach(), k).indices
            me.last_kept = k
            return per_sample[idx].mean()

        self._guard = False

        def hook(module: torch.nn.Module, args: tuple, out: Any) -> Any:
            if me._guard:
                return None
            me._guard = True
            try:
                return select(module, args, out)
            finally:
                me._guard = False

        self._h.add(self.loss.register_forward_hook(hook))

    def revert(self) -> None:
        self._h.undo()
