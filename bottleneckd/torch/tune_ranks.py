"""The tuners of a multi-rank job, in step: rank 0 leads, the other ranks do what it says at the
same step.

A DataLoader setting tried on one rank alone gains nothing while the other ranks wait for theirs
at the all-reduce, and a trial whose blocks turn at different steps on different ranks measures a
mix of both settings. So every rank's tuner acts only at control ticks, at step counts every rank
reaches together in a synchronous job (``Cadence.tick_at``): at tick ``m`` rank 0 writes, into the
job's own c10d store, the commands for tick ``m + 1`` and the step of the tick after it; each other
rank reads them when it reaches tick ``m + 1``. Rank 0 wrote them a whole tick earlier, so in a
synchronous job the read finds them there and waits for nothing (tick 0's, written at tick 0, waits
at most for the ranks' skew within a step). The commands: start a trial (the mitigation, its
settings and its blocks, so every rank turns at the same step), settle a trial as rank 0 measured
it (kept or reverted), stop. A rank that finds nothing within ``wait_seconds`` stops tuning and
reverts what it has in trial: a job whose ranks do not run in step cannot be tuned in step.

Costs: one ``set`` a tick on rank 0, one ``wait`` and ``get`` a tick on each other rank (a loopback
or LAN round trip), at most once every ``TICK_SECONDS``; nothing per step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

#: a control tick about this often: a trial planned by rank 0 starts at most this much later
TICK_SECONDS = 1.0
MIN_TICK_STEPS, MAX_TICK_STEPS = 2, 10_000
#: the first tick, the same step count on every rank: the step count the tuner plans at earliest
FIRST_TICK_STEP = 8
#: how long a rank waits for rank 0's commands at a tick before it stops tuning. In a synchronous
#: job they were written a tick earlier; a rank that waits this long runs out of step with rank 0
WAIT_SECONDS = 30.0
#: the keys, under the job's c10d store (a PrefixStore: nothing of the job's own is touched)
PREFIX = "bottleneckd/tune/"


@dataclass(frozen=True)
class Tick:
    """What every rank does at a tick, and the step count of the next tick."""

    commands: tuple[dict[str, Any], ...]
    next_step: int

    def dumps(self) -> str:
        return json.dumps({"do": list(self.commands), "next": self.next_step})

    @staticmethod
    def loads(text: str | bytes) -> Tick:
        d = json.loads(text)
        return Tick(tuple(d.get("do") or ()), int(d["next"]))


def tick_steps(step_seconds: float) -> int:
    """Steps between ticks: about TICK_SECONDS of steps of this length."""
    if step_seconds <= 0:
        return MIN_TICK_STEPS
    return max(MIN_TICK_STEPS, min(MAX_TICK_STEPS, round(TICK_SECONDS / step_seconds)))


class RankLink:
    """Rank 0's commands to the other ranks, one key a tick in the job's c10d store."""

    def __init__(self, store: Any, rank: int, world: int, wait_seconds: float = WAIT_SECONDS) -> None:
        self.store, self.rank, self.world, self.wait_seconds = store, rank, world, wait_seconds

    @property
    def leader(self) -> bool:
        return self.rank == 0

    def publish(self, tick: int, t: Tick) -> None:
        self.store.set(str(tick), t.dumps())

    def read(self, tick: int) -> Tick:
        """Rank 0's commands for this tick; raises (the store's error) after ``wait_seconds``."""
        self.store.wait([str(tick)], timedelta(seconds=self.wait_seconds))
        return Tick.loads(self.store.get(str(tick)))


def link_of_job() -> RankLink | str | None:
    """The link of this process's multi-rank job: None in a job of one rank (or none initialised
    yet), why not where the ranks cannot be kept in step."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if not dist.is_available() or not dist.is_initialized():
        return None
    world = dist.get_world_size()
    if world <= 1:
        return None
    try:
        from torch.distributed.distributed_c10d import _get_default_store

        store = dist.PrefixStore(PREFIX, _get_default_store())
    except Exception as e:  # noqa: BLE001 - no store (a private API that moved): not in step
        return f"the job's c10d store cannot be reached ({type(e).__name__}: {e}); the ranks cannot switch together"
    return RankLink(store, dist.get_rank(), world)
