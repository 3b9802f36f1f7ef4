"""Exposed communication on CUDA: the time the compute stream waits for it.

FSDP runs its all-gathers and reduce-scatters on side streams so that they overlap compute; the
compute stream depends on them only where it waits for an event recorded on such a stream
(``Stream.wait_event``; ``Stream.wait_stream`` records one and waits on it; ``Event.wait``). Timing
each collective on its side stream measures how long communication was in flight, not how long the
step was held up by it: 13 ms of all-gather fully hidden behind a 36 ms step read as 36%
communication. The step is held up exactly while its compute stream stands at such a wait.

While a CUDA clock has seen a collective on a side stream (``note_comm_stream``), three methods are
wrapped (restored by ``uninstall`` when the last watcher goes):

- ``Event.record``: an event recorded on a stream that carried a collective is tagged;
- ``Stream.wait_event`` and ``Event.wait``: when the stream made to wait is a clock's compute stream
  and the event is tagged, the clock records one of its events on that stream before the wait and
  one after; the time between them (read later, never by synchronising) is the time the compute
  stream stood still for communication.

Waits on other streams (an input-copy stream) are not communication and are left alone. Any failure
of ours falls through to the original method: the training step is never affected.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bottleneckd.torch import cuda_graphs

_TAG = "_bottleneckd_comm"


@dataclass(frozen=True)
class StreamApi:
    """The CUDA stream and event classes and ``current_stream`` (tests pass fakes)."""

    stream_cls: Any
    event_cls: Any
    current_stream: Callable[[], Any]


def cuda_api() -> StreamApi:
    import torch

    return StreamApi(torch.cuda.Stream, torch.cuda.Event, torch.cuda.current_stream)


def key(stream: Any) -> Any:
    """A stream's identity (stream objects are made anew by current_stream()): the CUDA handle, or
    for a generic ``torch.Stream`` (``torch.accelerator.current_stream()``) its device and id."""
    handle = getattr(stream, "cuda_stream", None)
    if handle is not None or stream is None:
        return handle
    sid = getattr(stream, "stream_id", None)
    return None if sid is None else (getattr(stream, "device_index", None), sid)


_clocks: weakref.WeakSet[Any] = weakref.WeakSet()  # clocks that time waits (cuda_clock.CudaClock)
_comm_streams: set[Any] = set()  # keys of streams that carried a collective
_saved: dict[tuple[Any, str], Any] = {}
_lock = threading.Lock()


def installed() -> bool:
    return bool(_saved)


def note_comm_stream(stream: Any, clock: Any, api: StreamApi) -> None:
    """A collective ran on ``stream``, not on ``clock``'s compute stream: time the waits on it."""
    _comm_streams.add(key(stream))
    _clocks.add(clock)
    if not _saved:
        install(api)


def _waiting_clock(stream: Any, event: Any) -> Any:
    """The clock whose compute stream ``stream`` is, if ``event`` marks communication."""
    if not getattr(event, _TAG, False) or cuda_graphs.STATE.capturing is not None:
        return None  # not communication, or inside a CUDA-graph capture (nothing of ours recorded there)
    k = key(stream)
    for c in list(_clocks):
        if c.active and c.compute_key == k:
            return c
    return None


def _timed_wait(clock: Any, stream: Any, wait: Callable[[], Any]) -> Any:
    try:
        begin = clock.wait_begin(stream)
    except Exception:  # noqa: BLE001 - ours failed: the wait as it was
        return wait()
    out = wait()
    try:
        clock.wait_end(begin, stream)
    except Exception:  # noqa: BLE001
        pass
    return out


def install(api: StreamApi) -> None:

    with _lock:
        if _saved:
            return
        rec, wait_event, ev_wait = api.event_cls.record, api.stream_cls.wait_event, api.event_cls.wait
        _saved.update(
            {
                (api.event_cls, "record"): rec,
                (api.stream_cls, "wait_event"): wait_event,
                (api.event_cls, "wait"): ev_wait,
            }
        )

        def record(event: Any, stream: Any = None) -> Any:
            out = rec(event, stream) if stream is not None else rec(event)
            try:
                s = stream if stream is not None else api.current_stream()
                if key(s) in _comm_streams:
                    setattr(event, _TAG, True)
                elif getattr(event, _TAG, False):
                    setattr(event, _TAG, False)
            except Exception:  # noqa: BLE001
                pass
            return out

        def stream_wait_event(stream: Any, event: Any) -> Any:
            clock = _waiting_clock(stream, event)
            if clock is None:
                return wait_event(stream, event)
            return _timed_wait(clock, stream, lambda: wait_event(stream, event))

        def event_wait(event: Any, stream: Any = None) -> Any:
            try:
                s = stream if stream is not None else api.current_stream()
                clock = _waiting_clock(s, event)
            except Exception:  # noqa: BLE001
                clock = None
            if clock is None:
                return ev_wait(event, stream) if stream is not None else ev_wait(event)
            return _timed_wait(clock, s, lambda: ev_wait(event, s))

        api.event_cls.record = record
        api.stream_cls.wait_event = stream_wait_event
        api.event_cls.wait = event_wait


def uninstall() -> None:
    """Put the original methods back (the last watcher went)."""
    with _lock:
        for (cls, name), fn in _saved.items():
            setattr(cls, name, fn)
        _saved.clear()
        _comm_streams.clear()
