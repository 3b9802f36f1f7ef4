"""The hooks ``watch()`` installs on the objects it is given (nothing process-wide but the
timing of blocking collectives, see collectives.py):

- the root module's forward, through an instance attribute: a module hook would push every call
  of the model off torch's hook-free fast path;
- the optimizer's step pre- and post-hooks (one step per ``step()`` call; a closure passed to
  ``step`` is wrapped so that the forward and backward inside it are timed).

Each returns a handle with ``remove()``; every hook runs our code fail-open.
"""

from __future__ import annotations

from typing import Any

import torch


class _Unwrap:
    def __init__(self, module: torch.nn.Module, forward: Any) -> None:
        self.module, self.forward = module, forward

    def remove(self) -> None:
        if self.module.__dict__.get("forward") is self.forward:
            del self.module.forward


def wrap_forward(w: Any, module: torch.nn.Module) -> _Unwrap:
    original = module.forward

    def forward(*args: Any, **kwargs: Any) -> Any:
        if w.enabled:
            try:
                w.forward_start(args)
            except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                w.disable(f"{type(e).__name__}: {e}")
        out = original(*args, **kwargs)
        if w.enabled:
            try:
                w.forward_end()
            except Exception as e:  # noqa: BLE001
                w.disable(f"{type(e).__name__}: {e}")
        return out

    module.forward = forward  # type: ignore[method-assign]
    return _Unwrap(module, forward)


def optimizer_hooks(w: Any, optimizer: torch.optim.Optimizer) -> list[Any]:
    def pre(_opt: Any, args: tuple, kwargs: dict) -> Any:
        if w.enabled:
            try:
                return w.before_optimizer_step(args, kwargs)
            except Exception as e:  # noqa: BLE001
                w.disable(f"{type(e).__name__}: {e}")
        return None

    def post(*_: Any) -> None:
        w.end_step()

    return [optimizer.register_step_pre_hook(pre), optimizer.register_step_post_hook(post)]


def install_hooks(w: Any) -> list[Any]:
    from bottleneckd.torch.collectives import wrap_collectives

    handles: list[Any] = [wrap_collectives(w)]
    if w.model is not None:
        handles.append(wrap_forward(w, w.model))
    if w.optimizer is not None:
        handles.extend(optimizer_hooks(w, w.optimizer))
    return handles
