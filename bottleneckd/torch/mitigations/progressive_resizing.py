"""Progressive resizing (Howard, 2018; Touvron et al., 2019; Hoffer et al., 2019): image inputs
are downscaled early in training and grow to full size by ``until`` of the run, in steps of
``multiple`` pixels; the schedule follows the watcher's STEP_END event. Changes training semantics."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from bottleneckd.torch.mitigations.base import Context, Handles, HookMitigation, LoopEvent, declared_hook


class ProgressiveResizing(HookMitigation):
    hook = declared_hook("progressive_resizing")
    facts = {}
    changes_semantics = True
    events = (LoopEvent.STEP_END,)

    def __init__(self, total_steps: int, start_scale: float = 0.5, until: float = 0.75, multiple: int = 8) -> None:
        self.total = total_steps
        self.start_scale = start_scale
        self.until = until
        self.multiple = multiple
        self.step = 0  # steps since applied (from the watcher's count)
        self._step0 = 0
        self._h = Handles()
        self.note = f"inputs from {start_scale:.0%} to full size by {until:.0%} of {total_steps} steps"

    def scale(self) -> float:
        frac = min(1.0, self.step / max(1, self.until * self.total))
        return self.start_scale + (1 - self.start_scale) * frac

    def apply(self, ctx: Context) -> None:
        me = self

        def resize(_m: Any, args: tuple) -> tuple:
            s = me.scale()
            if s >= 1.0:
                return args
            out = []
            for a in args:
                if isinstance(a, torch.Tensor) and a.dim() == 4 and a.is_floating_point():
                    h = max(me.multiple, int(a.shape[-2] * s) // me.multiple * me.multiple)
                    w = max(me.multiple, int(a.shape[-1] * s) // me.multiple * me.multiple)
                    a = F.interpolate(a, size=(h, w), mode="bilinear", align_corners=False, antialias=True)
                out.append(a)
            return tuple(out)

        self._step0 = ctx.step
        self._h.add(ctx.model.register_forward_pre_hook(resize))

    def on_event(self, event: LoopEvent, ctx: Context) -> None:
        self.step = ctx.step - self._step0

    def revert(self) -> None:
        self._h.undo()
