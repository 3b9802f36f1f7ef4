"""No-code-change instrumentation: the watcher installed through PyTorch's global hooks.

``bottleneckd run`` puts ``bottleneckd/torch/_inject`` on PYTHONPATH; its sitecustomize waits for
the job to import torch and then calls :func:`install`. Global module hooks find the root module
on the first step (the outermost forward); from then on only that module is timed (through its
forward, as ``watch()`` does), so the per-module cost of global hooks is paid for one step.
Optimizer steps come from the global optimizer hooks (a closure passed to ``step`` is timed as
with ``watch()``); data waits and epoch ends from ``DataLoader.__iter__``, which hands out the same
timed iterator as ``watch()``'s loaders. Everything is undone by ``close()``.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import torch
from torch.nn.modules import module as module_mod
from torch.optim import optimizer as optim_mod
from torch.utils.data import DataLoader

from bottleneckd.torch import cuda_graphs, probe
from bottleneckd.torch.collectives import wrap_collectives
from bottleneckd.torch.counting import weight_shapes
from bottleneckd.torch.hooks import StepHook, wrap_forward
from bottleneckd.torch.hot_path import DEPTH
from bottleneckd.torch.loader import LiveLoader, timed
from bottleneckd.torch.timing import CudaClock
from bottleneckd.torch.watch import Watcher

log = logging.getLogger("bottleneckd.torch")
_installed: GlobalWatcher | None = None


class _Restore:
    def __init__(self, target: Any, name: str, original: Any) -> None:
        self.target, self.name, self.original = target, name, original

    def remove(self) -> None:
        setattr(self.target, self.name, self.original)


class GlobalWatcher(Watcher):
    injected = True  # an explicit watch() in the job replaces it without a warning

    def __init__(self, **kw: Any) -> None:
        self._depth = 0
        self.root: torch.nn.Module | None = None
        self._global_module_hooks: list[Any] = []
        self._candidates: list[torch.nn.Module] = []
        self._job: list[Any] = [None, None, 0, 0]  # the job's optimizer, once one has stepped (_job_only)
        super().__init__(None, None, None, hooks=False, **kw)
        self.live_loader = LiveLoader(self)
        self._engine.loader = self.live_loader  # dataloader_settings and data_echoing work on the live loader
        self._handles.extend(self._install_global())

    def _install_global(self) -> list[Any]:
        g = self._guard
        self._global_module_hooks = [
            module_mod.register_module_forward_pre_hook(g(self._pre)),
            module_mod.register_module_forward_hook(g(self._post)),
        ]
        return [
            wrap_collectives(self),
            *self._global_module_hooks,
            # hot_path.py's own, global: a plain step's marks written by closures, the rest through
            # the full entry points below (each catches its own failures)
            StepHook(optim_mod.register_optimizer_step_pre_hook, self._job_only(self.fast_optimizer[0], pre=True)),
            StepHook(optim_mod.register_optimizer_step_post_hook, self._job_only(self.fast_optimizer[1], pre=False)),
            self._patch_loader(),
        ]

    def _job_only(self, hook: Any, pre: bool) -> Any:
        """A global optimizer hook fires for every optimizer's step: once the job's is known (the
        first to step), another's is part of the job's step, not a step of its own: a GAN's second
        optimizer (the two alternate), the inner one a wrapper such as Lookahead or ZeRO steps
        (inside the job's). An optimizer that steps twice with no step of the job's in between
        and none under way has replaced it (a new optimizer after a warm-up, or on resume): it
        becomes the job's, its first step uncounted."""
        state = self._job  # [job's optimizer, the other one seen, its steps since the job's, job steps under way]

        def only(opt: Any, args: tuple, kwargs: dict) -> Any:
            job = state[0]
            if job is None or opt is job:
                if pre:
                    state[1], state[2] = None, 0
                    state[3] += 1
                else:
                    state[3] = max(0, state[3] - 1)
                return hook(opt, args, kwargs)
            if not pre or state[3]:
                return None  # another's step ending, or one inside the job's
            if opt is state[1]:
                state[2] += 1
            else:
                state[1], state[2] = opt, 1
            if state[2] < 2:
                return None
            try:
                self._adopt(opt)
            except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                self.disable(f"{type(e).__name__}: {e}")
                return None
            state[3] = 1
            return hook(opt, args, kwargs)

        return only

    def _adopt(self, opt: Any) -> None:
        """``opt`` is the job's optimizer from now on (_job_only); the full path takes its next step."""
        self._job[0:3] = [opt, None, 0]
        self.optimizer = self._engine.optimizer = opt
        self.unplain()

    def _guard(self, fn: Any) -> Any:
        def hook(*args: Any) -> Any:
            if self.enabled:
                try:
                    return fn(*args)
                except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                    self.disable(f"{type(e).__name__}: {e}")
            return None

        return hook

    def _pre(self, module: torch.nn.Module, args: tuple) -> None:
        if self._depth == 0:
            if self.root is None and module not in self._candidates:
                self._candidates.append(module)
            self.forward_start(args)
        self._depth += 1

    def _post(self, module: torch.nn.Module, *_: Any) -> None:
        self._depth = max(0, self._depth - 1)
        if self._depth == 0:
            self.forward_end()

    def _plain_now(self) -> bool:
        """Not before the model is found: the steps until then take the full path, which finds it."""
        return self.root is not None and super()._plain_now()

    def full_before_optimizer_step(self, opt: Any, args: tuple, kwargs: dict) -> Any:
        """The first optimizer to step is the job's (its hooks are global: any optimizer's step)."""
        if self.enabled and self.optimizer is None:
            self.optimizer = self._engine.optimizer = self._job[0] = opt
        return super().full_before_optimizer_step(opt, args, kwargs)

    def full_after_optimizer_step(self) -> None:
        nested = self.hot[DEPTH] > 1  # an optimizer step inside another returned: the outer one counts
        super().full_after_optimizer_step()
        if nested or not self.enabled:
            return
        self._depth = 0
        if self.root is None and self._candidates:
            try:
                self._narrow()
            except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                self.disable(f"{type(e).__name__}: {e}")

    def _narrow(self) -> None:
        """The model is the outermost module with the most parameters (not the loss); from now on
        only its forward is timed and the global module hooks are gone."""
        self.root = self.model = self._engine.model = max(
            self._candidates, key=lambda m: sum(p.numel() for p in m.parameters())
        )
        self._candidates = []
        self._counting.weight_shapes = weight_shapes(self.root)  # before the counted step (the weights' share)
        self.facts.update(probe.model_facts(self.root, self.optimizer))
        self.device = next((p.device for p in self.root.parameters()), torch.device("cpu"))
        self.precision = probe.Precision(self.root, self.device.type)
        self.facts.update(self.precision.facts())
        self.facts["device"] = self.device.type
        for h in self._global_module_hooks:
            h.remove()
            self._handles.remove(h)
        self._handles.append(wrap_forward(self, self.root))
        if self.device.type == "cuda" and not isinstance(self.clock, CudaClock):
            self.unplain()  # the hot path writes the host clock's marks (hot_path.py): never on CUDA
            self.clock = CudaClock(sample_every=self.cuda_sample_every)
            cuda_graphs.register(self)

    def _patch_loader(self) -> _Restore:
        original = DataLoader.__iter__
        w = self

        def __iter__(loader: Any) -> Any:
            it = original(loader)
            if not w.enabled:
                return it
            if "loader_workers" not in w.facts:
                try:
                    w.facts.update(probe.loader_facts(loader))
                except Exception:  # noqa: BLE001
                    pass
            w.live_loader.current = loader  # the loader being trained on (its settings: dataloader_settings)
            return timed(loader, it, w)

        DataLoader.__iter__ = __iter__  # type: ignore[method-assign]
        return _Restore(DataLoader, "__iter__", original)


def install() -> GlobalWatcher | None:
    """Install once per process; never raises (a failure leaves the job uninstrumented)."""
    global _installed
    if _installed is not None:
        return _installed
    try:
        _installed = GlobalWatcher(local_sampling=os.environ.get("BOTTLENECKD_SOCKET") is None)
    except Exception as e:  # noqa: BLE001
        log.warning("bottleneckd: could not instrument this job (%s); it runs unchanged", e)
    return _installed
