"""Loader instrumentation: the wait for each batch is the step's ``data_wait``, and the end of an
iteration is the end of an epoch.

``watch(model, opt, loader)`` instruments the loader OBJECT itself: its class is swapped for a
subclass made on the fly whose ``__iter__`` hands out a timed iterator, so the loop as written
(``for x, y in loader``, ``enumerate(loader)``, ``itertools.islice(loader, n)``) is timed. The
swap is undone by ``close()``. Iterables whose class cannot be swapped (a list, a generator) are
timed only through ``watcher.dataloader``, a thin proxy over them.

An iteration ends an epoch when the loader is exhausted, or when its iterator is dropped after at
least one step (a ``break``, an ``islice``): the next step then belongs to a new epoch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from torch.autograd import profiler as _profiler

from bottleneckd.torch import loader_switch
from bottleneckd.torch.hot_path import REST, REST_IT, RESTED, clock_now


class LoaderEvents(Protocol):
    """What the timed iterator tells the watcher."""

    echo: int  # each batch is handed out this many times (data echoing)
    enabled: bool
    fetch_batch: Callable[[Callable[[], Any]], Any]  # both marks around the loader's next() (hot_path.py)
    hot: list[Any]  # the hot path's state (hot_path.py): a rest's untimed steps are counted here

    def unmark(self, label: str) -> None: ...

    def rest_over(self, now: float, n: int) -> None: ...

    def steps_done(self) -> int: ...

    def loader_finished(self, exhausted: bool) -> None: ...


class TimedIterator:
    """Wraps the loader's iterator: times ``next()``; repeats a batch ``echo`` times. Inside a rest
    of untimed steps (sampling.py) it only counts the batches: one Python call a step, the least
    an untimed step can cost; the rest's first and last fetch go through ``fetch_batch``."""

    __slots__ = ("_next", "_it", "_ev", "_fetch", "_hot", "_pc", "_batch", "_left", "_steps0", "_over", "__weakref__")

    def __init__(self, it: Iterator, events: LoaderEvents) -> None:
        self._it = it
        self._next = it.__next__
        self._ev = events
        self._fetch = events.fetch_batch
        self._hot = events.hot
        self._pc = clock_now()  # the hot path's clock
        self._batch: Any = None
        self._left = 0
        self._steps0 = events.steps_done()
        self._over = False

    def __iter__(self) -> TimedIterator:
        return self

    def __len__(self) -> int:
        return len(self._it)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:  # the wrapped iterator's own attributes (_num_workers ...)
        return getattr(self._it, name)

    def __next__(self) -> Any:
        if self._left:
            self._left -= 1
            return self._fetch(self._echoed)
        hot = self._hot
        n = hot[RESTED]
        # inside a rest of this iterator's batches (hot_path.loader_marks takes its first and last
        # fetch, another iterator's, and one while the profiler records)
        if n and n < hot[REST] and hot[REST_IT] is self._next and not _profiler._is_profiler_enabled:
            try:
                batch = self._next()
            except StopIteration:
                self._ev.rest_over(self._pc(), n)  # the rest's n steps ended now
                self._ev.unmark("step_start")
                self._end(True)
                raise
            hot[RESTED] = n + 1
            return batch
        try:
            batch = self._fetch(self._next)
        except StopIteration:
            self._ev.unmark("step_start")
            self._end(True)
            raise
        echo = self._ev.echo
        if echo > 1:
            self._batch, self._left = batch, echo - 1
        return batch

    def _echoed(self) -> Any:
        return self._batch

    def _end(self, exhausted: bool) -> None:
        if self._over:
            return
        self._over = True
        self._batch = None
        hot = self._hot
        if hot[REST] and hot[REST_IT] is self._next:  # dropped inside a rest (a break, an islice)
            self._ev.rest_over(self._pc(), hot[RESTED])  # after the step of its last batch: all ended
        if exhausted or self._ev.steps_done() > self._steps0:
            self._ev.loader_finished(exhausted)

    def __del__(self) -> None:
        try:  # at interpreter shutdown module globals (sys itself) may already be None
            if not self._over and not sys.is_finalizing():
                self._end(False)  # dropped before the end (a break, an islice): the epoch ends here
        except Exception:  # noqa: BLE001 - never raise from a finaliser
            pass


def timed(loader: Any, it: Iterator, events: LoaderEvents) -> TimedIterator:
    """The timed iterator of one epoch of ``loader``, known as its live one (new settings can then
    take effect at the next batch: ``loader_switch``)."""
    t = TimedIterator(it, events)
    loader_switch.track(loader, t)
    return t


_SUBCLASSES: dict[type, type] = {}
_EVENTS = "_bottleneckd_events"


def _timed_class(cls: type) -> type:
    sub = _SUBCLASSES.get(cls)
    if sub is None:

        def __iter__(self: Any) -> Iterator:
            it = super(sub, self).__iter__()  # type: ignore[arg-type]
            ev = self.__dict__.get(_EVENTS)
            return timed(self, it, ev) if ev is not None and ev.enabled else it

        sub = type(
            cls.__name__,
            (cls,),
            {
                "__iter__": __iter__,
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
                "_bottleneckd_timed": True,
            },
        )
        _SUBCLASSES[cls] = sub
    return sub


class _Proxy:
    """``watcher.dataloader`` for an iterable whose class cannot be swapped (a list, a generator)."""

    def __init__(self, loader: Iterable, events: LoaderEvents) -> None:
        self._loader = loader
        self._ev = events

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def __len__(self) -> int:
        return len(self._loader)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator:
        it = iter(self._loader)
        return timed(self._loader, it, self._ev) if getattr(self._ev, "enabled", True) else it


class InstrumentedLoader:
    """The loader a watcher times: ``iterable`` is what ``watcher.dataloader`` returns (the loader
    itself when its class was swapped), ``loader`` the user's object, ``echo`` the data-echoing
    factor read by the timed iterator."""

    def __init__(self, loader: Iterable, events: LoaderEvents) -> None:
        self.loader = loader
        self._events = events
        self._cls = type(loader)
        self.swapped = False
        if not getattr(self._cls, "_bottleneckd_timed", False) and hasattr(self._cls, "__iter__"):
            try:
                loader.__class__ = _timed_class(self._cls)
                object.__setattr__(loader, _EVENTS, events)
                self.swapped = True
            except (TypeError, AttributeError):  # a builtin or slotted type: proxy only
                if type(loader) is not self._cls:
                    loader.__class__ = self._cls
        self.iterable: Iterable = loader if self.swapped else _Proxy(loader, events)

    @property
    def echo(self) -> int:
        return self._events.echo

    @echo.setter
    def echo(self, factor: int) -> None:
        self._events.echo = factor

    def restore(self) -> None:
        if self.swapped:
            self.swapped = False
            self.loader.__dict__.pop(_EVENTS, None)
            if type(self.loader) is _SUBCLASSES.get(self._cls):
                self.loader.__class__ = self._cls


class LiveLoader:
    """The loader a mitigation works on when none was given to the watcher (``bottleneckd run``'s
    injected hook): the DataLoader whose epoch was started last, held until the next one starts (a
    weak reference died with ``for x in DataLoader(...)``, whose loader only its iterator's epoch
    uses: run --tune then found no loader); ``echo`` is the watcher's, as with an
    ``InstrumentedLoader``."""

    def __init__(self, events: LoaderEvents) -> None:
        self._events = events
        self.current: Any = None

    @property
    def loader(self) -> Any:
        return self.current

    @property
    def echo(self) -> int:
        return self._events.echo

    @echo.setter
    def echo(self, factor: int) -> None:
        self._events.echo = factor
