"""The hooks ``watch()`` installs on the objects it is given (nothing process-wide but the
timing of blocking collectives, see collectives.py):

- the root module's forward, through an instance attribute: a module hook would push every call
  of the model off torch's hook-free fast path;
- the optimizer's step pre- and post-hooks (one step per ``step()`` call; a closure passed to
  ``step`` is wrapped so that the forward and backward inside it are timed).

Each returns a handle with ``remove()``; every hook runs our code fail-open. Each also comes off
and goes back on (``off()``, ``on()``) for a rest of untimed steps (sampling.py), switched from the
timed iterator's fetch of a batch: never from inside a dict of hooks torch is iterating.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils.hooks import RemovableHandle

from bottleneckd.torch import hot_path


class ForwardWrap:
    def __init__(self, module: torch.nn.Module, forward: Any) -> None:
        self.module, self.forward = module, forward

    def remove(self) -> None:
        self.off()

    def off(self) -> bool:
        """Off; False when another wrapper was set over ours (then ours stays under it)."""
        current = self.module.__dict__.get("forward")
        if current is self.forward:
            del self.module.forward
            return True
        return current is None

    def on(self) -> None:
        """Back on, unless someone else set the instance's forward meanwhile (theirs is kept)."""
        if "forward" not in self.module.__dict__:
            self.module.forward = self.forward  # type: ignore[method-assign]


class StepHook:
    """An optimizer step pre- or post-hook (an optimizer's or a global one) that can come off and
    go back on."""

    def __init__(self, register: Callable[[Any], RemovableHandle], hook: Any) -> None:
        self._register, self._hook = register, hook
        self._handle: RemovableHandle | None = register(hook)

    def remove(self) -> None:
        self.off()

    def off(self) -> bool:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        return True

    def on(self) -> None:
        if self._handle is None:
            self._handle = self._register(self._hook)


def _not_compiled(fn: Any) -> Any:
    """Kept out of torch.compile's tracing: a model compiled after watch() (``model.compile()``)
    traces its forward, and ours with it; dynamo would break the graph inside our code (with a
    warning per call site) instead of once at each edge of the forward."""
    disable = getattr(getattr(torch, "compiler", None), "disable", None)
    return disable(fn, recursive=True) if disable is not None else fn


def wrap_forward(w: Any, module: torch.nn.Module) -> ForwardWrap:
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
    return ForwardWrap(module, forward)


def optimizer_hooks(w: Any, optimizer: torch.optim.Optimizer) -> list[Any]:
    """torch's step pre- and post-hooks: hot_path.py's, which call the watcher's full entry points
    (``full_before_optimizer_step``, ``full_after_optimizer_step``) off the fast path."""
    pre, post = w.fast_optimizer  # hot_path.optimizer_marks
    return [StepHook(optimizer.register_step_pre_hook, pre), StepHook(optimizer.register_step_post_hook, post)]


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
