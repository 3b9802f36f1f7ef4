"""Progressive layer freezing, FreezeOut (Brock et al., 2017): layer i stops training at a
fraction t_i of the run, earliest layers first (t_0 = ``start``, the last at 1.0), and drops out
of the backward pass. Driven by the watcher's STEP_END event (its step count). Changes training
semantics."""

from __future__ import annotations

import torch

from bottleneckd.torch.mitigations.base import Context, HookMitigation, LoopEvent, declared_hook


class ProgressiveFreezing(HookMitigation):
    hook = declared_hook("progressive_freezing")
    facts = {}
    changes_semantics = True
    events = (LoopEvent.STEP_END,)

    def __init__(self, total_steps: int, start: float = 0.5, layers: list[torch.nn.Module] | None = None) -> None:
        self.total = total_steps
        self.start = start
        self.layers = layers
        self.step = 0  # steps since applied (from the watcher's count)
        self._step0 = 0
        self._layers: list[torch.nn.Module] = []
        self._when: list[int] = []
        self._frozen: list[torch.nn.Parameter] = []
        self.note = ""

    def schedule(self, n: int) -> list[int]:
        """The step at which each of n layers freezes (the last never does before the end)."""
        if n == 1:
            return [self.total]
        return [int(self.total * (self.start + (1 - self.start) * i / (n - 1))) for i in range(n)]

    def apply(self, ctx: Context) -> None:
        if ctx.optimizer is None:
            raise ValueError("progressive freezing follows optimizer steps: pass the optimizer")
        self._layers = self.layers or [m for m in ctx.model.children() if any(p.requires_grad for p in m.parameters())]
        self._when = self.schedule(len(self._layers))
        self._step0 = ctx.step
        self.note = f"{len(self._layers)} layers freeze at steps {self._when}"

    def on_event(self, event: LoopEvent, ctx: Context) -> None:
        self.step = ctx.step - self._step0
        for layer, t in zip(self._layers, self._when, strict=True):
            if self.step >= t:
                for p in layer.parameters():
                    if p.requires_grad:
                        p.requires_grad_(False)
                        self._frozen.append(p)

    def revert(self) -> None:
        for p in self._frozen:
            p.requires_grad_(True)
        self._frozen = []
