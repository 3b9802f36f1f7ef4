"""The one watcher of a process: a second ``watch()`` replaces the first (one warning line: no
double hooks, no second sampler thread); an explicit ``watch()`` replaces the instrumentation
``bottleneckd run`` injected without a word."""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger("bottleneckd.torch")
_lock = threading.Lock()
_current: Any = None  # the one watcher of this process (watch() or `bottleneckd run`)


def replace_current(w: Any) -> None:
    global _current
    with _lock:
        old, _current = _current, w
    if old is not None and not old.closed:
        if old.enabled and not getattr(old, "injected", False):
            log.warning("bottleneckd: watch() called again: the new watcher replaces the previous one")
        old.close()
        with _lock:
            _current = w


def forget(w: Any) -> None:
    global _current
    with _lock:
        if _current is w:
            _current = None
