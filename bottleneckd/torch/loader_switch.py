"""DataLoader settings that take effect at the next batch, not the next epoch: the live iterator
hands over to one made with the new settings, and the epoch goes on where it was.

A DataLoader reads ``num_workers``, ``prefetch_factor``, ``persistent_workers`` and ``pin_memory``
only when it makes an iterator (at ``iter(loader)``, the start of an epoch): a setting changed
mid-epoch waits for the next one, which in a job of long epochs (ImageNet's are thousands of
steps) may be hours away. ``switch(loader)`` makes the change now, keeping the epoch's order of
samples exactly:

1. the old iterator stops taking indices (its sampler iterator is set aside), and hands out the
   batches it already has in flight, in order;
2. a new iterator of the new settings takes the rest of the same sampler iterator (the same
   indices in the same order: nothing is seen twice or skipped);
3. the old one's workers are shut down; a persistent new one becomes the loader's own (the next
   epoch reuses its workers) and its sampler is the loader's again for the epochs after.

The new iterator's worker seeds come from a generator of ours seeded from the old iterator's, so
the switch draws nothing from the job's global random state (its dropout and shuffling go on as
they would). Only map-style datasets hand over: an ``IterableDataset``'s position lives inside
its workers, so its settings wait for the next epoch (``switch`` says so by returning False).

The switch costs nothing per step: the timed iterator's ``_next`` (the bound ``__next__`` it
calls) is replaced by the hand-over until it is done, then by the new iterator's.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils.data import IterableDataset

#: the live timed iterator of each loader (the epoch in progress), set when the iterator is made
_LIVE: weakref.WeakKeyDictionary[Any, weakref.ref[Any]] = weakref.WeakKeyDictionary()
_SEEDS = itertools.count(1)


def track(loader: Any, timed: Any) -> None:
    """Remember ``timed`` as ``loader``'s live iterator (called once per epoch, where it is made)."""
    try:
        _LIVE[loader] = weakref.ref(timed)
    except TypeError:  # a loader that cannot be weakly referenced: its settings wait for the next epoch
        pass


def live(loader: Any) -> Any:
    ref = _LIVE.get(loader) if loader is not None else None
    return None if ref is None else ref()


def can_switch(loader: Any) -> bool:
    """Whether new settings can take effect inside an epoch (a map-style torch DataLoader)."""
    return hasattr(loader, "_index_sampler") and not isinstance(getattr(loader, "dataset", None), IterableDataset)


class _Rest:
    """The loader as a new iterator reads it, but whose index sampler is the rest of the old
    iterator's and whose generator (worker seeds) is ours."""

    def __init__(self, loader: Any, rest: Iterator, generator: torch.Generator) -> None:
        self._loader, self._rest, self.generator = loader, rest, generator
        self._index_sampler = self

    def __iter__(self) -> Iterator:
        return self._rest

    def __len__(self) -> int:
        return len(self._loader._index_sampler)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


def _new_iterator(loader: Any, rest: Iterator, seed: int) -> Any:
    from torch.utils.data.dataloader import _MultiProcessingDataLoaderIter, _SingleProcessDataLoaderIter

    g = torch.Generator()
    g.manual_seed(seed)
    view = _Rest(loader, rest, g)
    it = _MultiProcessingDataLoaderIter(view) if loader.num_workers > 0 else _SingleProcessDataLoaderIter(view)
    it._index_sampler = loader._index_sampler  # later epochs (a persistent iterator's _reset) sample the loader's own
    return it


def _shutdown(it: Any) -> None:
    stop = getattr(it, "_shutdown_workers", None)
    if stop is not None:
        try:
            stop()
        except Exception:  # noqa: BLE001, S110 - its workers are gone either way
            pass


class _HandOver:
    """The timed iterator's ``_next`` while it hands over: the batches the old iterators had in
    flight, oldest first, then the new iterator's."""

    def __init__(self, loader: Any, timed: Any, draining: list[Any], current: Any) -> None:
        self.loader, self.timed = loader, timed
        rest = current._sampler_iter
        current._sampler_iter = iter(())  # the current iterator takes no more indices
        seed = (int(getattr(current, "_base_seed", 0)) * 1_000_003 + next(_SEEDS)) % (2**63)
        self.draining = [*draining, current]
        self.new = _new_iterator(loader, rest, seed)  # its workers start on the rest now

    def __call__(self) -> Any:
        while self.draining:
            old = self.draining[0]
            try:
                return next(old)  # a batch an old iterator had in flight
            except StopIteration:
                self.draining.pop(0)
                self._retire(old)
        self._finish()
        return self.timed._next()

    def _retire(self, old: Any) -> None:
        if getattr(self.loader, "_iterator", None) is old:
            self.loader._iterator = None
        _shutdown(old)

    def _finish(self) -> None:
        new, loader = self.new, self.loader
        if new._persistent_workers and new._num_workers > 0:
            loader._iterator = new  # the next epoch reuses its workers (DataLoader.__iter__ resets it)
        self.timed._it, self.timed._next = new, new.__next__


def switch(loader: Any) -> bool:
    """Hand the loader's live iterator over to its current settings at the next batch; False when
    they can only wait for the next epoch (no live iterator of ours, or an iterable dataset). A
    switch during a hand-over stops the iterator that was taking over, in turn."""
    timed = live(loader)
    if timed is None or not can_switch(loader) or getattr(timed, "_over", True):
        return False
    pending = timed._next if isinstance(timed._next, _HandOver) else None
    draining, current = (pending.draining, pending.new) if pending is not None else ([], timed._it)
    if getattr(current, "_sampler_iter", None) is None:
        return False
    timed._next = _HandOver(loader, timed, draining, current)
    return True
