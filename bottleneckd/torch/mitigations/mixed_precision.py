"""Mixed precision (Micikevicius et al., 2017): autocast around the model's forward; for fp16,
dynamic loss scaling. Changes training semantics (numerics): check quality (section 5).

Loss scaling without touching the loop: while active, ``Tensor.backward`` on a scalar loss is
given the scale as its gradient; before the optimizer step the gradients are unscaled and, if any
is not finite, the step is skipped by clearing them and the scale halves (as GradScaler does; this
check reads one flag per step from the device)."""

from __future__ import annotations

from typing import Any

import torch

from bottleneckd.torch.mitigations.base import Context, Handles


class MixedPrecision:
    name = "mixed_precision"
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
        self.note = f"autocast {dtype}" + (" with dynamic loss scaling" if dtype == "float16" else "")

    def apply(self, ctx: Context) -> None:
        device = next((p.device.type for p in ctx.model.parameters()), "cpu")

        def enter(*_: Any) -> None:
            self._ctx = torch.autocast(device_type=device, dtype=self.dtype)
            self._ctx.__enter__()

        def leave(*_: Any) -> None:
            if self._ctx is not None:
                self._ctx.__exit__(None, None, None)
                self._ctx = None

        self._h.add(ctx.model.register_forward_pre_hook(enter))
        self._h.add(ctx.model.register_forward_hook(leave))
        ctx.watcher.facts["autocast_dtype"] = str(self.dtype).split(".")[-1]
        self._h.add(lambda: ctx.watcher.facts.pop("autocast_dtype", None))
        if self.dtype is torch.float16:
            self._install_scaling(ctx)

    def _install_scaling(self, ctx: Context) -> None:
        original = torch.Tensor.backward
        me = self

        def backward(t: torch.Tensor, gradient: Any = None, *a: Any, **kw: Any) -> Any:
            if gradient is None and t.numel() == 1 and t.requires_grad:
                gradient = torch.full_like(t, me.scale)
            return original(t, gradient, *a, **kw)

        torch.Tensor.backward = backward  # type: ignore[method-assign]
        self._h.add(lambda: setattr(torch.Tensor, "backward", original))
        opt = ctx.optimizer
        if opt is None:
            raise ValueError("fp16 loss scaling needs the optimizer: watch(model, optimizer, ...)")

        def unscale(*_: Any) -> None:
            grads = [p.grad for g in opt.param_groups for p in g["params"] if p.grad is not None]
            if not grads:
                return
            finite = torch.stack([torch.isfinite(g).all() for g in grads]).all()
            if bool(finite):  # one device read per step, as GradScaler
                torch._foreach_div_(grads, me.scale)
                me._good += 1
                if me._good >= me.growth_interval:
                    me.scale *= 2.0
                    me._good = 0
            else:
                for g in opt.param_groups:
                    for p in g["params"]:
                        p.grad = None  # the optimizer skips parameters without gradients
                me.scale /= 2.0
                me._good = 0
                me.skipped_steps += 1

        self._h.add(opt.register_step_pre_hook(unscale))

    def revert(self) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)
            self._ctx = None
        self._h.undo()
