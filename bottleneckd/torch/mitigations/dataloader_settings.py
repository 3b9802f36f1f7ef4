"""DataLoader settings: workers, pinned memory, persistent workers, prefetch. A map-style
dataset's loader takes them at the next batch (the epoch in progress hands over to an iterator of
the new settings, the same samples in the same order: ``torch/loader_switch.py``), so they can be
verified in step blocks like any other mitigation; an ``IterableDataset``'s loader takes them at
the next epoch. Reverting hands back the same way. Pinned memory pays off only with
``non_blocking=True`` copies in the loop. Semantics unchanged."""

from __future__ import annotations

import os
from typing import Any

from bottleneckd.torch import loader_switch
from bottleneckd.torch.mitigations.base import Context, HookMitigation, declared_hook

SETTABLE = ("num_workers", "pin_memory", "prefetch_factor", "persistent_workers")


def in_flight(workers: int | None, prefetch_factor: int | None) -> int:
    """Batches a DataLoader iterator of these settings has asked its workers for at most."""
    return int(workers or 0) * int(prefetch_factor or 2)


class DataLoaderSettings(HookMitigation):
    hook = declared_hook("dataloader_settings")
    facts = {"loader_workers": int, "pin_memory": bool, "persistent_workers": bool, "prefetch_factor": int}
    changes_semantics = False

    def __init__(
        self,
        num_workers: int | None = None,
        pin_memory: bool | None = None,
        persistent_workers: bool | None = None,
        prefetch_factor: int | None = None,
    ) -> None:
        self.wanted = {
            "num_workers": num_workers,
            "pin_memory": pin_memory,
            "persistent_workers": persistent_workers,
            "prefetch_factor": prefetch_factor,
        }
        self._old: dict[str, Any] = {}
        self._loader: Any = None
        self.note = ""
        #: the settings take effect inside the epoch (at the next batch), not only at the next one
        self.immediate = False
        self._settle = 0

    def apply(self, ctx: Context) -> None:
        loader = getattr(ctx.loader, "loader", None)
        if loader is None or not hasattr(loader, "num_workers"):
            raise ValueError("DataLoader settings need a torch DataLoader passed to watch()")
        wanted = dict(self.wanted)
        if wanted["num_workers"] is None:
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
            wanted["num_workers"] = max(1, cores - 1)  # leave a core for the training loop
        if wanted["num_workers"] and wanted["persistent_workers"] is None:
            wanted["persistent_workers"] = True
        if wanted["num_workers"] and wanted["prefetch_factor"] is None:
            wanted["prefetch_factor"] = 4
        self._loader = loader
        self._settle = in_flight(loader.num_workers, loader.prefetch_factor) + in_flight(
            wanted["num_workers"], wanted["prefetch_factor"] or loader.prefetch_factor
        )
        changed = []
        for k in SETTABLE:
            v = wanted[k]
            if v is None:
                continue
            self._old[k] = getattr(loader, k)
            object.__setattr__(loader, k, v)  # DataLoader forbids some of these after __init__; they are read at iter()
            changed.append(f"{k}={v}")
        self.immediate = loader_switch.can_switch(loader)
        if not loader_switch.switch(loader) and getattr(loader, "_iterator", None) is not None:
            loader._iterator = None  # a persistent iterator would keep the old settings
        self.note = ", ".join(changed) + (" (from the next batch)" if self.immediate else " (from the next epoch)")
        if wanted.get("pin_memory"):
            self.note += "; pinned memory pays off only with .to(device, non_blocking=True) in the loop"
        for k in SETTABLE:
            if wanted[k] is not None:
                ctx.facts.set("loader_workers" if k == "num_workers" else k, wanted[k])

    def settle_steps(self) -> int:
        """At a turn the old iterator hands out the batches it has in flight, which its workers
        go on computing beside the new iterator's, and the new one's first batches come from the
        queue it filled meanwhile: both sides' ``num_workers x prefetch_factor`` batches are run on
        the two pools together. Counted in a block, they made the side without more workers look
        as fast as the side with them (data_cpu_bound 1 -> 2 workers under ``run --tune``: x1.01
        measured, with a warm-up of 4 steps and 8 batches in flight; x1.98 by its intervention)."""
        return self._settle if self.immediate else 0

    def revert(self) -> None:
        for k, v in self._old.items():
            object.__setattr__(self._loader, k, v)
        live = self._old and not loader_switch.switch(self._loader)
        if live and getattr(self._loader, "_iterator", None) is not None:
            self._loader._iterator = None  # a persistent iterator of the new settings would outlive them
        self._old = {}
