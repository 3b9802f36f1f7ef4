"""Mixed precision (Micikevicius et al., 2017): autocast around the model's forward; for fp16,
dynamic loss scaling. Changes training semantics (numerics): check quality (section 5).

Loss scaling without touching the loop or the process: a full backward pre-hook on the root
module multiplies the gradient flowing into the model's outputs by the scale, so every parameter
gradient comes out scaled (the loss function's own backward, usually in float32 under autocast,
is not scaled: an output gradient that already underflows in fp16 at the model's output stays
zero). At the watcher's BEFORE_OPTIMIZER_STEP event the gradients are unscaled and, if any is not
finite, the step is skipped by clearing them and the scale halves (as GradScaler does; this check
reads one flag per step from the device)."""

from __future__ import annotations

from typing import Any

import torch

from bottleneckd.torch.mitigations.base import Context, Handles, HookMitigation, LoopEvent, declared_hook


class MixedPrecision(HookMitigation):
    hook = declared_hook("mixed_precision")
    facts = {"autocast_dtype": str}
    changes_semantics = True

    def __init__(self, dtype: str = "bfloat16", init_scale: float = 2.0**16, growth_interval: int = 2000) -> None:
        if dtype not in ("bfloat16", "float16"):
            raise ValueError("dtype must be 'bfloat16' or 'float16'")
        self.dtype = getattr(torch, dtype)
        self.scale = init_scale
        self.growth_interval = growth_interval
        self._good = 0
        self.skipped_steps = 0
        self._h = Handles()
        self._ctx: Any = None
        self.events: tuple[LoopEvent, ...] = (LoopEvent.BEFORE_OPTIMIZER_STEP,) if dtype == "float16" else ()
        self.note = f"autocast {dtype}" + (" with dynamic loss scaling" if dtype == "float16" else "")

    def apply(self, ctx: Context) -> None:
        device = next((p.device.type for p in ctx.model.parameters()), "cpu")
        if self.dtype is torch.float16 and ctx.optimizer is None:
            raise ValueError("fp16 loss scaling needs the optimizer: watch(model, optimizer, ...)")

        def enter(*_: Any) -> None:
            self._ctx = torch.autocast(device_type=device, dtype=self.dtype)
            self._ctx.__enter__()

        def leave(*_: Any) -> None:
            if self._ctx is not None:
                self._ctx.__exit__(None, None, None)
                self._ctx = None

        self._h.add(ctx.model.register_forward_pre_hook(enter))
        self._h.add(ctx.model.register_forward_hook(leave))
        if self.dtype is torch.float16:
            self._h.add(ctx.model.register_full_backward_pre_hook(self._scale_output_grad))
        ctx.facts.set("autocast_dtype", str(self.dtype).split(".")[-1])

    def _scale_output_grad(self, _m: torch.nn.Module, grad_output: tuple) -> tuple:
        s = self.scale
        return tuple(g * s if g is not None else None for g in grad_output)

    def on_event(self, event: LoopEvent, ctx: Context) -> None:
        opt = ctx.optimizer
        if opt is None:
            return
        grads = [p.grad for g in opt.param_groups for p in g["params"] if p.grad is not None]
        if not grads:
            return
        finite = torch.stack([torch.isfinite(g).all() for g in grads]).all()
        if bool(finite):  # one device read per step, as GradScaler
            torch._foreach_div_(grads, self.scale)
            self._good += 1
            if self._good >= self.growth_interval:
                self.scale *= 2.0
                self._good = 0
        else:
            for g in opt.param_groups:
                for p in g["params"]:
                    p.grad = None  # the optimizer skips parameters without gradients
            self.scale /= 2.0
            self._good = 0
            self.skipped_steps += 1

    def revert(self) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)
            self._ctx = None
        self._h.undo()
