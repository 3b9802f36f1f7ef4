"""Timing of torch.distributed communication, the 'communication' phase of a step.

The collectives are wrapped once, while at least one watcher is registered, and the time of each
blocking call is given to every registered watcher; the originals are restored when the last
watcher goes. FSDP's all-gathers and reduce-scatters go through the same functions (``*_single``,
``*_into_tensor``, ``*_tensor`` and the older ``_base`` variants); on CUDA each is timed with
events recorded on the stream it runs on, and one on a side stream (FSDP's communication streams)
counts as in flight, not as exposed: the exposed part is the compute stream's wait for it
(``stream_waits.py``, ``cuda_clock.py``). Asynchronous calls
(``async_op=True``) are not timed here. DDP's bucketed all-reduce runs inside backward with no
blocking call: ``ddp_comm.py`` times it through a wrapper around the model's one comm hook, and
``DistributedDataParallel`` is patched while we are installed so that every DDP model made (and
every hook registered on one) goes through that wrapper.
"""

from __future__ import annotations

import atexit
import functools
import os
import threading
import time
import weakref
from typing import Any

import torch.distributed as dist

from bottleneckd.torch import ddp_comm, stream_waits

NAMES = (
    "all_reduce",
    "all_reduce_coalesced",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_single",
    "_all_gather_base",
    "all_gather_coalesced",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "reduce_scatter_single",
    "_reduce_scatter_base",
    "broadcast",
    "reduce",
    "all_to_all",
    "all_to_all_single",
    "barrier",
)
_watchers: weakref.WeakSet[Any] = weakref.WeakSet()
#: the same watchers as plain weak references, rebuilt when one is added or removed: read at every
#: step by DDP's comm hook, where iterating the WeakSet took 7 Python calls (issue 23)
_refs: tuple[weakref.ref[Any], ...] = ()
_saved: dict[str, Any] = {}
_saved_ddp: dict[str, Any] = {}
_lock = threading.Lock()
#: a pause at interpreter exit, with the GIL released, in a process that used torch.distributed
#: while we were installed. The last collective's tensors are Python-owned; the communication
#: thread that drops them (a gloo worker, NCCL's watchdog) needs the GIL, and once the interpreter
#: finalizes, taking it ends that thread by a forced unwind that aborts the process ("terminate
#: called without an active exception", SIGABRT: pytorch/pytorch#190489). A 2-rank gloo job whose
#: last act is an all-reduce aborted a rank at exit in 3 of 15 runs and 3 of 13 (tests/rank_job.py
#: under ``run --no-inject`` beside a node sidecar), with this pause in the job in 0 of 15; with
#: the hook injected, 6 of 40 before this pause and 0 of 15 with it (docs/measurements.md,
#: ``scripts/exit_abort_loop.sh``)
EXIT_GRACE_SECONDS = 0.05
_used = False  # a collective ran, or a DDP model was made, while we were installed
_exit_grace_registered = False


def _exit_grace() -> None:
    if _used or (dist.is_available() and dist.is_initialized()):
        time.sleep(EXIT_GRACE_SECONDS)


def _wrap(fn: Any) -> Any:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        global _used
        _used = True
        if kwargs.get("async_op") or not _watchers:
            return fn(*args, **kwargs)
        ws = [w for w in list(_watchers) if w.enabled]
        for w in ws:
            w.comm_begin()
        try:
            return fn(*args, **kwargs)
        finally:
            for w in ws:
                w.comm_end()

    timed._bottleneckd = True  # type: ignore[attr-defined]
    return timed


class _Registration:
    def __init__(self, watcher: Any) -> None:
        self._w = weakref.ref(watcher)

    def remove(self) -> None:
        w = self._w()
        with _lock:
            if w is not None:
                _watchers.discard(w)
            _refresh()
            if not _watchers:
                for name, fn in _saved.items():
                    setattr(dist, name, fn)
                _saved.clear()
                cls = ddp_comm.ddp_class()
                for name, fn in _saved_ddp.items():
                    setattr(cls, name, fn)
                _saved_ddp.clear()
                stream_waits.uninstall()


def _refresh() -> None:
    global _refs
    _refs = tuple(weakref.ref(w) for w in _watchers)


def _enabled_watchers() -> list[Any]:
    return [w for r in _refs if (w := r()) is not None and w.enabled]


def _attach(ddp: Any) -> None:
    """Time this DDP model's all-reduce; never raises (a failure leaves DDP as it was)."""
    global _used
    _used = True
    try:
        got = ddp_comm.attach(ddp, _enabled_watchers, _saved_ddp["register_comm_hook"])
    except Exception as e:  # noqa: BLE001
        got = f"{type(e).__name__}: {e}"
    for w in _enabled_watchers():
        _ddp_facts(w, ddp, got)


def _ddp_facts(w: Any, ddp: Any, timer: Any) -> None:
    w.facts["ddp"] = True
    w.facts["ddp_comm_timing"] = "comm hook" if isinstance(timer, ddp_comm.DdpCommTimer) else f"off: {timer}"[:64]
    pg = getattr(ddp, "process_group", None)
    try:
        if pg is not None:
            w.facts["world_size"] = pg.size()
            w.facts["comm_backend"] = str(dist.get_backend(pg))
    except Exception:  # noqa: BLE001
        pass


def _patch_ddp() -> None:
    """While we are installed: every DDP model made is timed, every comm hook registered on one is
    wrapped (a model accepts one hook: ours stays, the user's goes inside it)."""
    cls = ddp_comm.ddp_class()
    if cls is None or _saved_ddp:
        return
    init, register, builtin = cls.__init__, cls.register_comm_hook, cls._register_builtin_comm_hook
    _saved_ddp.update({"__init__": init, "register_comm_hook": register, "_register_builtin_comm_hook": builtin})

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if _enabled_watchers():
            _attach(self)

    @functools.wraps(register)
    def register_comm_hook(self: Any, state: object, hook: Any) -> None:
        if (
            not _enabled_watchers()
            or getattr(self, "_bottleneckd_comm_timer", None) is None
            and getattr(self, "_comm_hooks", None)
        ):
            return register(self, state, hook)
        ddp_comm.register_through(self, state, hook, register, _enabled_watchers)

    @functools.wraps(builtin)
    def _register_builtin_comm_hook(self: Any, comm_hook_type: Any) -> None:
        py = (
            ddp_comm.builtin_as_python(self, comm_hook_type)
            if getattr(self, "_bottleneckd_comm_timer", None) is not None
            else None
        )
        if py is None:
            return builtin(self, comm_hook_type)
        ddp_comm.register_through(self, py[0], py[1], register, _enabled_watchers)

    cls.__init__, cls.register_comm_hook, cls._register_builtin_comm_hook = (
        __init__,
        register_comm_hook,
        _register_builtin_comm_hook,
    )


def wrap_collectives(watcher: Any) -> _Registration:
    global _exit_grace_registered
    if dist.is_available():
        with _lock:
            if not _exit_grace_registered:  # once per process; it acts only if distributed was used
                atexit.register(_exit_grace)
                _exit_grace_registered = True
            if not _saved:
                for name in NAMES:
                    fn = getattr(dist, name, None)
                    if fn is not None:
                        _saved[name] = fn
                        setattr(dist, name, _wrap(fn))
            _watchers.add(watcher)
            _refresh()
            _patch_ddp()
        cls = ddp_comm.ddp_class()
        model = getattr(watcher, "model", None)
        if cls is not None and isinstance(model, cls):
            _attach(model)
        if dist.is_initialized():
            watcher.facts["world_size"] = dist.get_world_size()
        elif "WORLD_SIZE" in os.environ:
            watcher.facts["world_size"] = int(os.environ["WORLD_SIZE"])
        if "LOCAL_WORLD_SIZE" in os.environ:
            watcher.facts["local_world_size"] = int(os.environ["LOCAL_WORLD_SIZE"])
        watcher.facts["ddp"] = bool(watcher.facts.get("ddp")) or (cls is not None and isinstance(model, cls))
    return _Registration(watcher)


#: seconds a rank identity read from the environment is reused before a process group exists (then
#: it is fixed): reading the environment each report cost ~190 us in situ on the training thread (a
#: copy of it; 18 ``os.environ.get`` cost ~30 us in a tight loop on the 2-core VM), issue 23's
#: budget; a launcher's variables set after the watcher began show within this time
IDENTITY_REREAD_S = 10.0


class RankIdentityCache:
    """This process's rank identity for each report: the launcher's environment, with rank and
    world size from the process group once there is one (``torch.multiprocessing.spawn`` sets no
    RANK), and the GPU's UUID where the model is on one. Fixed once the process group exists;
    before, read again after ``IDENTITY_REREAD_S``, for another device, in a forked process, and
    after ``forget`` (a new watcher). A device given as ``cuda`` without an index follows a later
    ``torch.cuda.set_device`` only at the next read."""

    def __init__(self) -> None:
        self._fixed: Any = None
        self._last: Any = None
        self._device: Any = None
        self._pid = 0
        self._until = 0.0

    def forget(self) -> None:
        self._fixed = self._last = None

    def get(self, device: Any = None) -> Any:
        from bottleneckd.model.identity import RankIdentity

        if self._fixed is not None:
            return self._fixed
        ready = dist.is_available() and dist.is_initialized()
        now = time.monotonic()
        pid = os.getpid()  # a process forked since: its own identity
        if not ready and self._last is not None and now < self._until and device == self._device and pid == self._pid:
            return self._last
        env = dict(os.environ)
        if ready:
            env["RANK"], env["WORLD_SIZE"] = str(dist.get_rank()), str(dist.get_world_size())
            if "LOCAL_RANK" not in env and "SLURM_LOCALID" not in env:
                env["LOCAL_RANK"] = env["RANK"]  # spawn: every rank on this host
        ident = RankIdentity.from_env(env, gpu=_gpu_uuid(device))
        if ready:
            self._fixed = ident
        else:
            self._last, self._device, self._pid, self._until = ident, device, pid, now + IDENTITY_REREAD_S
        return ident


def _gpu_uuid(device: Any) -> str:
    try:
        import torch

        if device is None or getattr(device, "type", "") != "cuda":
            return ""
        idx = device.index if device.index is not None else torch.cuda.current_device()
        u = str(torch.cuda.get_device_properties(idx).uuid)
        return u if u.startswith(("GPU-", "MIG-")) else f"GPU-{u}"
    except Exception:  # noqa: BLE001 - no UUID is "", never an error
        return ""


_IDENTITY = RankIdentityCache()  # one process is one rank
rank_identity = _IDENTITY.get
forget_rank_identity = _IDENTITY.forget
