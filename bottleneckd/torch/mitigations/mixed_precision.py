"""Mixed precision (Micikevicius et al., 2017): autocast around the model's forward; for fp16,
dynamic loss scaling. Changes training semantics (numerics): check quality (section 5).

Loss scaling without touching the loop or the process: a full backward pre-hook on the root
module multiplies the gradient flowing into the model's outputs by the scale, so every parameter
gradient comes out scaled (the loss function's own backward, usually in float32 under autocast,
is not scaled: an output gradient that already underflows in fp16 at the model's output stays
zero). At the watcher's BEFORE_OPTIMIZER_STEP event the gradients are checked and unscaled as
``GradScaler`` does: one fused kernel per device and dtype
(``torch._amp_foreach_non_finite_check_and_unscale_``), the scale and its growth kept on the device
(``torch._amp_update_scale_``: halved after an overflow, doubled after ``growth_interval`` good
steps). An optimizer that takes AMP scaling itself (fused Adam/AdamW/SGD) is handed the scale and
the overflow flag and skips the step on the device: no host synchronisation at all. Any other
skips a step with non-finite gradients by clearing them, which needs the flag on the host: one read
per step, as GradScaler's ``step`` does for such optimizers."""

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
        self.init_scale = init_scale
        self.growth_interval = growth_interval
        self._t: dict[str, torch.Tensor] = {}  # scale, growth tracker, skipped steps: on the gradients' device
        self._h = Handles()
        self._ctx: Any = None
        fp16 = dtype == "float16"
        self.events: tuple[LoopEvent, ...] = (LoopEvent.BEFORE_OPTIMIZER_STEP, LoopEvent.STEP_END) if fp16 else ()
        self.note = f"autocast {dtype}" + (" with dynamic loss scaling" if fp16 else "")

    @property
    def scale(self) -> float:
        """The loss scale now (read from the device on demand: never in the step)."""
        return float(self._t["scale"]) if self._t else self.init_scale

    @property
    def skipped_steps(self) -> int:
        return int(self._t["skipped"]) if self._t else 0

    def _tensors(self, device: torch.device) -> dict[str, torch.Tensor]:
        t = self._t
        if not t or t["scale"].device != device:
            t["scale"] = torch.full((), self.scale, dtype=torch.float32, device=device)
            t["growth"] = torch.zeros((), dtype=torch.int32, device=device)
            t["skipped"] = torch.zeros((), dtype=torch.float32, device=device)
        return t

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
        out = []
        for g in grad_output:
            out.append(g * self._tensors(g.device)["scale"] if g is not None else None)  # 0-dim: keeps g's dtype
        return tuple(out)

    def on_event(self, event: LoopEvent, ctx: Context) -> None:
        opt = ctx.optimizer
        if opt is None:
            return
        if event is LoopEvent.STEP_END:
            for k in ("grad_scale", "found_inf"):
                opt.__dict__.pop(k, None)
            return
        grads = [p.grad for g in opt.param_groups for p in g["params"] if p.grad is not None]
        if not grads:
            return
        t = self._tensors(grads[0].device)
        fused = bool(getattr(opt, "_step_supports_amp_scaling", False))
        inv = torch.ones((), device=t["scale"].device) if fused else t["scale"].double().reciprocal().float()
        found = torch.zeros((), dtype=torch.float32, device=t["scale"].device)
        groups: dict[tuple[torch.device, torch.dtype], list[torch.Tensor]] = {}
        for g in grads:
            groups.setdefault((g.device, g.dtype), []).append(g)
        for (dev, _), gs in groups.items():  # one fused check (and unscale) per device and dtype
            f = found if dev == found.device else torch.zeros((), dtype=torch.float32, device=dev)
            torch._amp_foreach_non_finite_check_and_unscale_(gs, f, inv.to(dev))
            if f is not found:
                found += f.to(found.device)
        if fused:  # the optimizer unscales and skips on the device (as GradScaler hands it)
            # what a fused optimizer reads (GradScaler sets the same two attributes)
            opt.grad_scale, opt.found_inf = t["scale"], found  # type: ignore[attr-defined]
        elif found.item():  # one read per step, as GradScaler's step for an optimizer without AMP support
            for g in opt.param_groups:
                for p in g["params"]:
                    p.grad = None  # the optimizer skips parameters without gradients
        t["skipped"] += found.clamp(max=1.0)
        torch._amp_update_scale_(t["scale"], t["growth"], found, 2.0, 0.5, self.growth_interval)

    def revert(self) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)
            self._ctx = None
        self._h.undo()
