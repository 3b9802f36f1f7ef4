"""Progressive layer freezing, FreezeOut (Brock et al., 2017): layer i stops training at a
fraction t_i of the run, earliest layers first (t_0 = ``start``, the last at 1.0), and drops out
of the backward pass. Changes training semantics."""

from __future__ import annotations

from typing import Any

import torch

from bottleneckd.torch.mitigations.base import Context, Handles


class ProgressiveFreezing:
    name = "progressive_freezing"
    changes_semantics = True

    def __init__(self, total_steps: int, start: float = 0.5, layers: list[torch.nn.Module] | None = None) -> None:
        self.total = total_steps
        self.start = start
        self.layers = layers
        self.step = 0
        self._h = Handles()
        self._frozen: list[torch.nn.Parameter] = []
        self.note = ""

    def schedule(self, n: int) -> list[int]:
        """The step at which each of n layers freezes (the last never does before the end)."""
        if n == 1:
            return [self.total]
        return [int(self.total * (self.start + (1 - self.start) * i / (n - 1))) for i in range(n)]

    def apply(self, ctx: Context) -> None:
        layers = self.layers or [m for m in ctx.model.children() if any(p.requires_grad for p in m.parameters())]
        when = self.schedule(len(layers))
        me = self

        def tick(*_: Any) -> None:
            me.step += 1
            for layer, t in zip(layers, when):
                if me.step >= t:
                    for p in layer.parameters():
                        if p.requires_grad:
                            p.requires_grad_(False)
                            me._frozen.append(p)

        if ctx.optimizer is None:
            raise ValueError("progressive freezing counts optimizer steps: pass the optimizer")
        self._h.add(ctx.optimizer.register_step_post_hook(tick))
        self.note = f"{len(layers)} layers freeze at steps {when}"

    def revert(self) -> None:
        self._h.undo()
        for p in self._frozen:
            p.requires_grad_(True)
        self._frozen = []
