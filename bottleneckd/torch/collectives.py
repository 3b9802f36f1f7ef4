"""Timing of blocking torch.distributed collectives, the 'communication' phase of a step.

The collectives are wrapped once, while at least one watcher is registered, and the time of each
blocking call is given to every registered watcher; the originals are restored when the last
watcher goes. Asynchronous collectives (``async_op=True``, DDP's bucketed all-reduce) overlap the
backward pass and are not timed here: their exposed cost shows up inside backward.
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from typing import Any

import torch.distributed as dist

NAMES = ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "broadcast", "reduce",
         "all_to_all", "all_to_all_single", "barrier")
_watchers: "weakref.WeakSet[Any]" = weakref.WeakSet()
_saved: dict[str, Any] = {}
_lock = threading.Lock()


def _wrap(fn: Any) -> Any:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
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
            if not _watchers:
                for name, fn in _saved.items():
                    setattr(dist, name, fn)
                _saved.clear()


def wrap_collectives(watcher: Any) -> _Registration:
    if dist.is_available():
        with _lock:
            if not _saved:
                for name in NAMES:
                    fn = getattr(dist, name, None)
                    if fn is not None:
                        _saved[name] = fn
                        setattr(dist, name, _wrap(fn))
            _watchers.add(watcher)
        if dist.is_initialized():
            watcher.facts["world_size"] = dist.get_world_size()
        elif "WORLD_SIZE" in os.environ:
            watcher.facts["world_size"] = int(os.environ["WORLD_SIZE"])
        if "LOCAL_WORLD_SIZE" in os.environ:
            watcher.facts["local_world_size"] = int(os.environ["LOCAL_WORLD_SIZE"])
        watcher.facts["ddp"] = watcher.facts.get("world_size", 1) > 1
    return _Registration(watcher)
