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

from bottleneckd.torch import hot_path


class _Unwrap:
    def __init__(self, module: torch.nn.Module, forward: Any) -> None:
        self.module, self.forward = module, forward

    def remove(self) -> None:
        if self.module.__dict__.get("forward") is self.forward:
            del self.module.forward


def _not_compiled(fn: Any) -> Any:
    """Kept out of torch.compile's tracing: a model compiled after watch() (``model.compile()``)
    traces its forward, and ours with it; dynamo would break the graph inside our code (with a
    warning per call site) instead of once at each edge of the forward."""
    disable = getattr(getattr(torch, "compiler", None), "disable", None)
    return disable(fn, recursive=True) if disable is not None else fn


def wrap_forward(w: Any, module: torch.nn.Module) -> _Unwrap:
    original = module.forward

    @_not_compiled
    def start(args: tuple) -> None:
        w.unplain()  # traced: every step takes the full path
        if w.enabled:
            try:
                w.forward_start(args)
            except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                w.disable(f"{type(e).__name__}: {e}")

    @_not_compiled
    def end() -> None:
        if w.enabled:
            try:
                w.forward_end()
            except Exception as e:  # noqa: BLE001
                w.disable(f"{type(e).__name__}: {e}")

    def traced(*args: Any, **kwargs: Any) -> Any:  # under torch.compile: the graph breaks at our edges only
        start(args)
        out = original(*args, **kwargs)
        end()
        return out

    forward = hot_path.forward_wrapper(w, w.hot_cur, original, traced)
    module.forward = forward  # type: ignore[method-assign]
    return _Unwrap(module, forward)


def optimizer_hooks(w: Any, optimizer: torch.optim.Optimizer) -> list[Any]:
    """torch's step pre- and post-hooks: hot_path.py's, which call the watcher's full entry points
    (``full_before_optimizer_step``, ``full_after_optimizer_step``) off the fast path."""
    pre, post = w.fast_optimizer  # hot_path.optimizer_marks
    return [optimizer.register_step_pre_hook(pre), optimizer.register_step_post_hook(post)]


def install_hooks(w: Any) -> list[Any]:
    from bottleneckd.torch.collectives import wrap_collectives

    handles: list[Any] = [wrap_collectives(w)]
    if w.model is not None:
        handles.append(wrap_forward(w, w.model))
    if w.optimizer is not None:
        handles.extend(optimizer_hooks(w, w.optimizer))
    return handles


def remove_all(handles: list[Any]) -> None:
    """Remove every handle; one that fails to come off does not keep the others on."""
    for h in handles:
        try:
            h.remove()
        except Exception:  # noqa: BLE001
            pass
