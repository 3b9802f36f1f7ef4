"""A CPU job in its compute stage whose CPUs are not busy: the step waits inside forward/backward.
Several ranks wait on the gradient all-reduce (DDP runs it inside backward, so no communication
phase is timed); one process waits on storage when its I/O says so; otherwise what it waits on is
not measured and the finding says so (undetermined). Called by ``cpu_compute``'s family."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bottleneckd.diagnosis.rules.cpu_state import CpuState
from bottleneckd.diagnosis.rules.storage import io_wait
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED, Resource, Stage

# --- scores: chosen, not measured -----------------------------------------------------------------

#: ranks idle inside backward wait on the all-reduce; a wait on nothing measured: a middle strength
ALL_REDUCE_SCORE = 0.6
UNDETERMINED_SCORE = 0.6
#: storage waits inside the compute phases: 0.55 of the I/O evidence's strength, at least 0.8 of it
STORAGE_WEIGHT = 0.55
STORAGE_FLOOR = 0.8


def waiting_inside_compute(w: WindowStats, cpu: CpuState, cev: list[str], facts: Mapping[str, Any]) -> list[Finding]:
    """Compute phases dominate the step but no CPU of the job is busy: it waits inside them."""
    world = facts.get("world_size") or 1
    local = facts.get("local_world_size") or world
    ranks = max(cpu.ranks, int(world) if world else 1)
    if ranks > 1 or facts.get("ddp"):
        return [_waits_on_all_reduce(ranks, world, local, cev)]
    io, io_ev = io_wait(w)
    if io:
        return [_waits_on_storage(io, cev + io_ev)]
    return [_waits_on_something_unmeasured(cev)]


def _waits_on_all_reduce(ranks: int, world: Any, local: Any, cev: list[str]) -> Finding:
    resource = Resource.INTER_NODE_INTERCONNECT if world > local else Resource.INTER_GPU_INTERCONNECT
    ev = cev + [
        f"{ranks} ranks whose processes are not busy inside forward/backward: backward waits on the gradient "
        "all-reduce (DDP runs it inside backward, so no communication phase is timed)"
    ]
    return Finding(resource=resource, stage=Stage.COMMUNICATION, score=ALL_REDUCE_SCORE, evidence=tuple(ev))


def _waits_on_storage(io: float, ev: list[str]) -> Finding:
    return Finding(
        resource=Resource.STORAGE_BANDWIDTH,
        stage=Stage.COMPUTE,
        score=STORAGE_WEIGHT * max(STORAGE_FLOOR, io),
        evidence=tuple(ev),
    )


def _waits_on_something_unmeasured(cev: list[str]) -> Finding:
    why = (
        "the step is in forward/backward/optimizer but neither the job's processes nor any of its threads is near a "
        "full core, and no storage wait is seen: it waits on something no sampler measures (a lock, a sleep, another "
        "process)"
    )
    return Finding(resource=UNDETERMINED, stage=Stage.COMPUTE, score=UNDETERMINED_SCORE, evidence=tuple(cev + [why]))
