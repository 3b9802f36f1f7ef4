"""No-code-change instrumentation: the watcher installed through PyTorch's global hooks.

``bottleneckd run`` puts ``bottleneckd/torch/_inject`` on PYTHONPATH; its sitecustomize waits for
the job to import torch and then calls :func:`install`. Global module hooks find the root module
on the first step (the outermost forward); from then on only that module is hooked, so the
per-module cost of global hooks is paid for one step. Optimizer steps come from the global
optimizer hooks; data waits from the DataLoader iterator's ``__next__``.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import torch
from torch.nn.modules import module as module_mod
from torch.optim import optimizer as optim_mod
from torch.utils.data import dataloader as dl_mod

from bottleneckd.torch.collectives import wrap_collectives
from bottleneckd.torch.timing import CudaClock
from bottleneckd.torch.watch import Watcher, loader_facts, model_facts

log = logging.getLogger("bottleneckd.torch")
_installed: "GlobalWatcher | None" = None


class _Restore:
    def __init__(self, target: Any, name: str, original: Any) -> None:
        self.target, self.name, self.original = target, name, original

    def remove(self) -> None:
        setattr(self.target, self.name, self.original)


class GlobalWatcher(Watcher):
    def __init__(self, **kw: Any) -> None:
        self._depth = 0
        self.root: torch.nn.Module | None = None
        self._global_module_hooks: list[Any] = []
        self._narrowed = False
        self._candidates: list[torch.nn.Module] = []
        self._is_global = True
        super().__init__(None, None, None, **kw)

    def _install(self) -> None:
        self._handles.append(wrap_collectives(self))
        self._global_module_hooks = [
            module_mod.register_module_forward_pre_hook(self._guard(self._pre)),
            module_mod.register_module_forward_hook(self._guard(self._post)),
        ]
        self._handles += self._global_module_hooks
        self._handles.append(optim_mod.register_optimizer_step_pre_hook(self._guard(lambda *a: self._mark("optimizer_start"))))
        self._handles.append(optim_mod.register_optimizer_step_post_hook(self._guard(lambda *a: self._global_step_end())))
        self._patch_loader()

    def _pre(self, module: torch.nn.Module, args: tuple) -> None:
        if self._depth == 0:
            if not self._narrowed and module not in self._candidates:
                self._candidates.append(module)
            self._forward_start(module, args)
        self._depth += 1

    def _post(self, module: torch.nn.Module, *_: Any) -> None:
        self._depth = max(0, self._depth - 1)
        if self._depth == 0:
            self._mark("forward_end")

    def _global_step_end(self) -> None:
        self._depth = 0
        self._end_step()
        if not self._narrowed and self._candidates:
            # narrow: the model is the outermost module with the most parameters (not the loss);
            # from now on hook it alone
            self.root = max(self._candidates, key=lambda m: sum(p.numel() for p in m.parameters()))
            self._candidates = []
            self.facts.update(model_facts(self.root))
            self.device = next((p.device for p in self.root.parameters()), torch.device("cpu"))
            self.facts["device"] = self.device.type
            for h in self._global_module_hooks:
                h.remove()
                self._handles.remove(h)
            self._handles.append(self._wrap_forward(self.root))
            self._narrowed = True
            if self.device.type == "cuda" and not isinstance(self._clock, CudaClock):
                self._clock = CudaClock()

    def _patch_loader(self) -> None:
        cls = dl_mod._BaseDataLoaderIter
        original = cls.__next__
        w = self

        def __next__(it: Any) -> Any:
            if not w.enabled:
                return original(it)
            if "loader_workers" not in w.facts:
                try:
                    w.facts.update(loader_facts(_LoaderView(it)))
                except Exception:  # noqa: BLE001
                    pass
            return w.timed_next(lambda: original(it))

        cls.__next__ = __next__
        self._handles.append(_Restore(cls, "__next__", original))


class _LoaderView:
    """The DataLoader settings, read from a live iterator."""

    def __init__(self, it: Any) -> None:
        self.num_workers = getattr(it, "_num_workers", 0)
        self.pin_memory = getattr(it, "_pin_memory", False)
        self.persistent_workers = getattr(it, "_persistent_workers", False)
        self.prefetch_factor = getattr(it, "_prefetch_factor", None)


def install() -> GlobalWatcher | None:
    """Install once per process; never raises (a failure leaves the job uninstrumented)."""
    global _installed
    if _installed is not None:
        return _installed
    try:
        from bottleneckd.torch import watch as watch_mod

        _installed = GlobalWatcher(local_sampling=os.environ.get("BOTTLENECKD_SOCKET") is None)
        watch_mod._global_watcher = _installed
    except Exception as e:  # noqa: BLE001
        log.warning("bottleneckd: could not instrument this job (%s); it runs unchanged", e)
    return _installed
