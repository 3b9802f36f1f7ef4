"""DDP's gradient all-reduce, timed: exposed communication apart from communication overlapped
with backward.

DDP runs its all-reduce inside ``loss.backward()``, bucket by bucket as gradients become ready,
so no blocking collective is ever called and the step's communication was invisible. A DDP model
accepts exactly one communication hook, so ours is a timing wrapper *around* the hook the model
uses: the user's (``register_comm_hook`` is wrapped while we are installed; a later call swaps the
hook inside our wrapper instead of registering a second one) or, when there is none, DDP's own
default ``allreduce_hook`` (the same arithmetic as the built-in C++ all-reduce).

Per bucket we note when it was handed to the hook (its gradients are ready) and when its
communication completed (a ``then`` callback on the hook's future). At the end of backward (an
autograd final callback queued behind DDP's own ``finalize_backward``, which waits for every
bucket):

- exposed = last completion - last bucket ready: the time backward waits for communication after
  the last gradient was computed (the step's critical path);
- busy = the union of the buckets' [ready, completion] intervals: the time any all-reduce was in
  flight; overlapped = busy - exposed.

On CPU (gloo) these are host clocks. On CUDA they are CUDA events: the ready event on the stream
that produced the gradients, the completion event recorded inside the ``then`` callback, which
CUDA futures run on a stream synchronised with the communication kernels; events are read only
once ``query()`` says they completed, never by synchronising. A failure inside our timing falls
back to the plain hook (training goes on; our timing stops).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from bottleneckd.torch import cuda_graphs

log = logging.getLogger("bottleneckd.torch")
_AVG = 16  # steps in the moving averages reported as facts
_ENGINE = torch.autograd.Variable._execution_engine  # autograd's engine: queue_callback at the end of backward


def _union(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


class DdpCommTimer:
    """One per DDP model. ``watchers()`` returns the watchers to report to (collectives.py)."""

    def __init__(self, ddp: Any, inner: Callable, state: Any, watchers: Callable[[], list[Any]]) -> None:
        self.ddp = ddp
        self.inner, self.state = inner, state
        self._watchers = watchers
        self.on_cuda = any(p.is_cuda for p in ddp.parameters())
        self._ready: list[Any] = []
        self._done: list[Any] = []
        self._timing = False  # this step's buckets are being timed
        self._pending: deque[tuple[list[Any], list[Any]]] = deque()  # CUDA steps whose events are not read yet
        self._pool: list[Any] = []
        self.failed = ""
        self.user_hook = False  # the hook inside is the user's (not DDP's default)
        self.steps = 0
        self.history: deque[tuple[float, float, int]] = deque(maxlen=_AVG)  # (exposed, busy, buckets) per timed step
        # bound once: handed to torch (and the watchers) at every timed step without making a method object each time
        self._facts = self.facts
        self._on_completed = self._completed
        self._on_backward_done = self._queue_step_end
        self._on_step_end = self._step_end

    # --- the hook DDP calls ---------------------------------------------------------------
    def hook(self, _state, bucket):  # noqa: ANN001, ANN201 - DDP rejects string annotations on its hooks
        inner, state = self.inner, self.state
        if self.failed or cuda_graphs.STATE.capturing is not None:  # nothing of ours inside a graph capture
            return inner(state, bucket)
        try:
            self._bucket_ready()
        except Exception as e:  # noqa: BLE001 - our failure never breaks the step
            self._fail(e)
            return inner(state, bucket)
        fut = inner(state, bucket)
        if not self._timing:
            return fut
        try:
            return fut.then(self._on_completed)
        except Exception as e:  # noqa: BLE001
            self._fail(e)
            return fut

    def _bucket_ready(self) -> None:
        if not self._ready and not self._timing:  # the first bucket of this backward
            ws = [w for w in self._watchers() if w.enabled]
            if not ws:
                return
            # on CUDA only steps the watchers' clocks time (one in eight): events cost little
            self._timing = not self.on_cuda or any(getattr(getattr(w, "clock", None), "active", True) for w in ws)
            if not self._timing:
                return
            # runs after the graph task; it queues the real end-of-step callback, which then runs
            # after DDP's finalize_backward (queued when the last bucket was launched)
            _ENGINE.queue_callback(self._on_backward_done)
        if self._timing:
            self._ready.append(self._stamp())

    def _completed(self, fut: Any) -> Any:
        if self._timing:
            try:
                self._done.append(self._stamp())
            except Exception as e:  # noqa: BLE001
                self._fail(e)
        return fut.value()

    def _stamp(self) -> Any:
        if not self.on_cuda:
            return time.perf_counter()
        e = self._pool.pop() if self._pool else torch.cuda.Event(enable_timing=True)
        e.record()
        return e

    def _queue_step_end(self) -> None:
        try:
            _ENGINE.queue_callback(self._on_step_end)
        except Exception as e:  # noqa: BLE001
            self._fail(e)

    # --- end of backward ------------------------------------------------------------------
    def _step_end(self) -> None:
        ready, done = self._ready, self._done
        self._ready, self._done, self._timing = [], [], False
        try:
            self.steps += 1
            if not ready or len(done) < len(ready):
                return  # a bucket's completion was not seen (its hook failed): no figure this step
            ws = self._watchers()  # once per step: the enabled watchers
            if self.on_cuda:
                last = (ready[-1], done[-1])  # NCCL runs buckets in order: the last completes last
                for w in ws:
                    if w.enabled:
                        w.comm_exposed(last)
                self._pending.append((ready, done))
                self._read_cuda()
            else:
                exposed = max(0.0, max(done) - max(ready))
                busy = _union(list(zip(ready, done, strict=False)))
                self.history.append((exposed, busy, len(ready)))
                for w in ws:
                    if w.enabled:
                        w.comm_exposed(exposed)
            if self.history:
                for w in ws:  # the averages are computed when a watcher reports (fact_sources), not per step
                    w.fact_sources[self] = self._facts
        except Exception as e:  # noqa: BLE001
            self._fail(e)

    def _read_cuda(self) -> None:
        """Busy time of steps whose events completed (never waits for one)."""
        while self._pending and all(e.query() for e in self._pending[0][1]):
            ready, done = self._pending.popleft()
            ref = ready[0]
            r = [0.0] + [ref.elapsed_time(e) / 1000.0 for e in ready[1:]]
            d = [ref.elapsed_time(e) / 1000.0 for e in done]
            self.history.append((max(0.0, d[-1] - r[-1]), _union(list(zip(r, d, strict=False))), len(ready)))
            self._pool += ready[:-1] + done[:-1]  # the last pair went to the watchers' clocks: never reused
        while len(self._pending) > 64:  # the GPU is far behind: drop, never hold memory
            ready, done = self._pending.popleft()

    def facts(self) -> dict[str, Any]:
        """The moving averages over the last ``_AVG`` timed steps, as facts (read by each watcher
        when it reports: ``Watcher.fact_sources``); empty before the first timed step."""
        h = self.history
        if not h:
            return {}
        n = len(h)
        exposed = sum(x[0] for x in h) / n
        busy = sum(x[1] for x in h) / n
        return {
            "ddp": True,
            "ddp_buckets": h[-1][2],
            "comm_seconds_per_step": busy,
            "comm_exposed_seconds_per_step": exposed,
            "comm_overlapped_seconds_per_step": max(0.0, busy - exposed),
            "comm_overlap_ratio": (max(0.0, busy - exposed) / busy) if busy > 0 else None,
        }

    def _fail(self, e: Exception) -> None:
        if not self.failed:
            self.failed = f"{type(e).__name__}: {e}"
            log.warning(
                "bottleneckd: DDP communication timing off after an internal error (%s); training is unaffected",
                self.failed,
            )
            for w in self._watchers():
                w.facts["ddp_comm_timing"] = f"off: {self.failed}"[:64]
        self._ready, self._done, self._timing = [], [], False


def _default_hook() -> tuple[Callable, Callable[[Any], Any]]:
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    return default_hooks.allreduce_hook, lambda ddp: ddp.process_group


_BUILTIN = {"ALLREDUCE": "allreduce_hook", "FP16_COMPRESS": "fp16_compress_hook"}


def attach(ddp: Any, watchers: Callable[[], list[Any]], original_register: Callable) -> DdpCommTimer | str:
    """Put the timing wrapper on one DDP model; returns the timer, or why it cannot be timed."""
    timer = getattr(ddp, "_bottleneckd_comm_timer", None)
    if timer is not None:
        return timer
    if getattr(ddp, "_use_python_reducer", False):
        return "DDP under compiled autograd (python reducer) has no bucket hook to time"
    if getattr(ddp, "_comm_hooks", None):
        return (
            "a communication hook was registered before bottleneckd was; "
            "call watch() before register_comm_hook to time it"
        )
    if getattr(ddp, "logger", None) is None or getattr(ddp, "reducer", None) is None:
        return "this DDP model has no reducer"
    hook, state_of = _default_hook()
    timer = DdpCommTimer(ddp, hook, state_of(ddp), watchers)
    original_register(ddp, None, timer.hook)
    ddp._bottleneckd_comm_timer = timer
    return timer


def register_through(
    ddp: Any, state: Any, hook: Callable, original_register: Callable, watchers: Callable[[], list[Any]]
) -> None:
    """``DistributedDataParallel.register_comm_hook`` while we are installed: the user's hook goes
    inside our timing wrapper (registered now, or already registered with DDP's default)."""
    timer = getattr(ddp, "_bottleneckd_comm_timer", None)
    if timer is None:
        ddp._check_comm_hook(hook)  # the user's errors stay the user's errors
        timer = DdpCommTimer(ddp, hook, state, watchers)
        timer.user_hook = True
        original_register(ddp, None, timer.hook)
        ddp._bottleneckd_comm_timer = timer
        return
    if getattr(timer, "user_hook", False):
        raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
    ddp._check_comm_hook(hook)
    timer.inner, timer.state, timer.user_hook = hook, state, True
    ddp.logger._set_comm_hook_name(hook.__qualname__)


def builtin_as_python(ddp: Any, comm_hook_type: Any) -> tuple[Any, Callable] | None:
    """The python equivalent of a built-in hook type (to time it through the wrapper)."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    name = _BUILTIN.get(getattr(comm_hook_type, "name", str(comm_hook_type).rsplit(".", 1)[-1]))
    return None if name is None else (ddp.process_group, getattr(default_hooks, name))


def ddp_class() -> Any:
    if not dist.is_available():
        return None
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel
