"""The step's phases as ranges in the user's own profiler traces: ``torch.profiler.record_function``
ranges named ``bottleneckd.<phase>`` (and NVTX ranges of the same names on CUDA, for Nsight
Systems under ``torch.autograd.profiler.emit_nvtx``), only while a PyTorch profiler runs.

Zero cost otherwise: the watcher reads ``torch.autograd.profiler._is_profiler_enabled``, the flag
PyTorch itself keeps for "fast python checks" (set by ``torch.profiler.profile``,
``torch.autograd.profiler.profile`` and ``emit_nvtx`` while they record), and calls in here only
when it is set or a range of ours is still open. Nothing else runs per step.

A phase's range starts at the mark that starts the phase (README, "In a training script"):
``step_start`` data_wait, ``data_ready`` transfer, ``forward_start`` forward, ``forward_end``
backward, ``optimizer_start`` optimizer, and the step's end closes it. Trace readers need slices on
one thread to nest: ``Optimizer.step`` opens its own range before its pre-hooks run, so a backward
range closed in the pre-hook would straddle it. While a profiler runs the optimizer's step is
therefore wrapped (an instance attribute, as ``torch.optim.lr_scheduler`` wraps it): the wrapper
closes backward and opens optimizer before ``Optimizer.step``'s range, and closes it after; marks
inside the step (an LBFGS closure's forward and backward) make no range of their own. The wrapper
is removed with the watcher's other hooks.
"""

from __future__ import annotations

import functools
import logging
import types
from typing import Any

import torch
from torch.autograd import profiler as _profiler

from bottleneckd.model.resources import Phase

log = logging.getLogger("bottleneckd.torch")

PREFIX = "bottleneckd."
#: the mark that starts each phase's range ("step_end" closes the open one)
STARTS: dict[str, str] = {
    "step_start": Phase.DATA_WAIT,
    "data_ready": Phase.TRANSFER,
    "forward_start": Phase.FORWARD,
    "forward_end": Phase.BACKWARD,
    "optimizer_start": Phase.OPTIMIZER,
}


def profiling() -> bool:
    """A PyTorch profiler records (the flag PyTorch keeps for cheap checks)."""
    return _profiler._is_profiler_enabled


class PhaseRanges:
    """The one open range of the phase in progress, on the thread that marks the step."""

    __slots__ = ("phase", "_record", "_nvtx", "_optimizer", "_handle", "_in_step")

    def __init__(self, nvtx: bool, optimizer: torch.optim.Optimizer | None = None) -> None:
        self.phase = ""  # the open range's phase ("" none)
        self._record: Any = None
        self._nvtx = nvtx
        self._optimizer = optimizer  # wrapped while a profiler runs (see the module's doc)
        self._handle: _UnwrapStep | None = None
        self._in_step = False

    def at(self, label: str) -> None:
        """A mark (or ``step_end``): close the open range and open the phase this mark starts."""
        if not profiling():
            self.close()  # the profiler stopped with a range of ours open
            return
        if self._optimizer is not None and self._handle is None:
            self._handle = _wrap_step(self, self._optimizer)
        if self._in_step:
            return  # inside the wrapped optimizer step: one optimizer range
        phase = STARTS.get(label, "")
        if phase == self.phase:
            return  # the first start of a phase marked twice
        self.close()
        if phase:
            self._open(phase)

    def _open(self, phase: str) -> None:
        name = PREFIX + phase
        rec = _profiler.record_function(name)
        rec.__enter__()
        self._record, self.phase = rec, phase
        if self._nvtx:
            torch.cuda.nvtx.range_push(name)

    def close(self) -> None:
        rec, self._record, self.phase = self._record, None, ""
        if rec is None:
            return
        rec.__exit__(None, None, None)
        if self._nvtx:
            torch.cuda.nvtx.range_pop()

    def step_begins(self) -> None:
        """The wrapped ``optimizer.step`` is entered, before its own range."""
        if profiling():
            self.at("optimizer_start")
        self._in_step = True

    def step_ends(self) -> None:
        self._in_step = False
        self.close()

    def remove(self) -> None:
        """Close any open range and unwrap the optimizer (the watcher's teardown)."""
        self._in_step = False
        self.close()
        if self._handle is not None:
            self._handle.remove()
            self._handle = None


class _UnwrapStep:
    def __init__(self, optimizer: torch.optim.Optimizer, step: Any) -> None:
        self.optimizer, self.step = optimizer, step

    def remove(self) -> None:
        if self.optimizer.__dict__.get("step") is self.step:
            del self.optimizer.step


def _wrap_step(ranges: PhaseRanges, optimizer: torch.optim.Optimizer) -> _UnwrapStep:
    # the bound method (with torch's own profiling wrapper and hooks), or the plain function an LR
    # scheduler made earlier put in its place
    original = optimizer.step

    @functools.wraps(getattr(original, "__func__", original))
    def step(_self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            ranges.step_begins()
        except Exception as e:  # noqa: BLE001 - our failure never breaks the step
            log.warning("bottleneckd: profiler ranges off (%s: %s)", type(e).__name__, e)
        try:
            return original(*args, **kwargs)
        finally:
            try:
                ranges.step_ends()
            except Exception:  # noqa: BLE001
                pass

    # a bound method, as the attribute was: an LR scheduler made now wraps it through its __func__
    bound = types.MethodType(step, optimizer)
    optimizer.step = bound  # type: ignore[method-assign]
    return _UnwrapStep(optimizer, bound)
