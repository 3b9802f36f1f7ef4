"""Input pipeline: the step waits for the next batch. What the loader waits on is named from
evidence: network storage busy, local storage (peak-free: threads in disk wait, I/O stalls, disk
busy time), or the loader's CPU (its workers at their cores, or the main thread at ~100% of one
core when it builds batches itself). With none of these the verdict is undetermined, saying so:
"CPUs not saturated" is never evidence for a CPU bottleneck."""

from __future__ import annotations

from collections.abc import Callable

from bottleneckd.diagnosis.rules.common import data_share, fmt_s, headroom, pct, stack_samples
from bottleneckd.diagnosis.rules.cpu_state import CpuState, cpu_state
from bottleneckd.diagnosis.rules.network_storage import network_storage
from bottleneckd.diagnosis.rules.storage import io_wait, storage_evidence
from bottleneckd.diagnosis.thresholds import (
    BUSY,
    CPU_STALL,
    IDLE_COVERS_OTHER,
    INPUT_HIGH,
    INPUT_MODERATE,
    LOADER_BUSY_CORES,
    NFS_OVER_LOCAL,
    NO_WORKERS,
    ONE_CORE,
    SATURATED,
)
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED, Resource, Stage
from bottleneckd.peaks.resolve import PeakTable

# --- scores: chosen, not measured -----------------------------------------------------------------

#: the wait's strength: its share against INPUT_HIGH, weighed 0.95 when high and 0.7 when moderate
HIGH_WEIGHT = 0.95
MODERATE_WEIGHT = 0.7
#: a link or disk at 80% of its peak counts as full (DCGM's practical maximum for DRAM, applied here)
FULL_UTILIZATION = 0.8
#: storage named from I/O evidence alone scores at least 0.6 of the wait's strength
STORAGE_FLOOR = 0.6
#: the loader's CPU: how directly the evidence says so (the job's cores full; one worker, all workers
#: or the main thread at a full core; the cores contended; CPU pressure stalls only)
LOADER_SATURATED = 1.0
LOADER_AT_FULL_CORE = 0.95
LOADER_CONTENDED = 0.75
LOADER_PRESSURE = 0.7
#: waiting for batches with no evidence of what the loader waits on
UNDETERMINED_WEIGHT = 0.9


def data_wait(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """The family: the step waits for the next batch; what the loader waits on, each with its finding
    (network storage, local storage, the loader's CPU), else undetermined with the reason."""
    p, share = w.phases, data_share(w)
    if p is None or share is None:
        return []
    if share < INPUT_MODERATE:
        return []
    strength = min(1.0, share / INPUT_HIGH) * (HIGH_WEIGHT if share >= INPUT_HIGH else MODERATE_WEIGHT)
    if p.facts.get("phase_source") == "py-spy":
        ev = [f"main thread waiting for the next batch in {pct(share)} of {p.steps} stack samples (py-spy)"]
    else:
        ev = [
            f"waiting for the next batch {pct(share)} of step time ({fmt_s(p.per_step('data_wait'))} per step over "
            f"{p.steps} steps)"
        ]
    head = headroom(share, stack_samples(w))
    cpu = cpu_state(w)
    out = [
        f
        for f in (
            _network_storage(w, strength, ev, head),
            _storage(w, strength, ev, head),
            _loader_cpu(cpu, strength, ev, head) or _main_thread_in_the_wait(w, cpu, share, strength, ev, head),
        )
        if f is not None
    ]
    return out or [_waits_unexplained(cpu, strength, ev, head)]


def _data(resource: Resource, score: float, ev: list[str], head: float | None) -> Finding:
    return Finding(resource=resource, stage=Stage.DATA, score=score, evidence=tuple(ev), headroom=head)


def _network_storage(w: WindowStats, strength: float, ev: list[str], head: float | None) -> Finding | None:
    """A network file system's link busy (rules/network_storage.py: or the NIC it runs over)."""
    net = network_storage(w)
    if net is None or not net.utilization >= BUSY or net.writes:  # a path that sends: writes, not reads
        return None
    return _data(
        Resource.STORAGE_NETWORK_BANDWIDTH,
        strength * min(1.0, net.utilization / FULL_UTILIZATION),
        ev + [net.said()],
        head,
    )


def _storage(w: WindowStats, strength: float, ev: list[str], head: float | None) -> Finding | None:
    """A busy disk (its peak known) or the job's I/O waits (peak-free); over the network when the
    network file system reads far more than the local disks."""
    s_util, s_ev, s_kind = storage_evidence(w)
    io, io_ev = io_wait(w)
    if not (s_util >= BUSY or io):
        return None
    extra = list(io_ev)
    if s_kind == "operations" and s_util >= BUSY:
        extra.append("limited by operations per second, not bytes: small random reads")
    nfs = w.busiest(Resource.STORAGE_NETWORK_BANDWIDTH, "throughput")
    local = sum(
        s.mean
        for (r, d, m), s in w.stats.items()
        if r == Resource.STORAGE_BANDWIDTH and m == "read_bytes_per_second" and d not in ("job", "host")
    )
    resource = Resource.STORAGE_BANDWIDTH
    if nfs is not None and nfs[1] > NFS_OVER_LOCAL * max(local, 1.0):
        resource = Resource.STORAGE_NETWORK_BANDWIDTH
        extra.append(f"network file system {nfs[0]} reading while local disks read {local / 1e6:.1f} MB/s")
    score = strength * max(STORAGE_FLOOR, min(1.0, max(s_util / FULL_UTILIZATION, io)))
    return _data(resource, score, ev + (s_ev if s_util else []) + extra, head)


def _loader_cpu(cpu: CpuState, strength: float, ev: list[str], head: float | None) -> Finding | None:
    """The loader's CPU: the first of LOADER_SIGNS that holds, weighed by how directly it says so."""
    for sign in LOADER_SIGNS:
        found = sign(cpu)
        if found is not None:
            why, weight = found
            return _data(Resource.CPU_COMPUTE, strength * weight, ev + cpu.describe() + [why], head)
    return None


def main_thread_works_in_the_wait(w: WindowStats, cpu: CpuState, share: float) -> float | None:
    """The step waits ``share`` of its time for batches its loader workers make, yet its main thread
    runs through most of that wait: over the intervals the phases were read in (a change of regime
    in the window's earlier seconds is not read against the phases' later ones), busy beyond the rest
    of the step by at least IDLE_COVERS_OTHER of the wait (a thread blocked on the workers' queue
    does not run). The training process does loading work of its own between the workers' batches
    (a collate or concatenation there, a conversion or copy of each batch), which more workers do
    not share. Its cores where it does, else None."""
    main = w.over_phases(Resource.CPU_COMPUTE, "job", "main_busy_cores")
    if cpu.n_workers < NO_WORKERS or main is None or main < ONE_CORE or share < INPUT_HIGH:
        return None
    return main if main - (1.0 - share) >= IDLE_COVERS_OTHER * share else None


def _main_thread_in_the_wait(
    w: WindowStats, cpu: CpuState, share: float, strength: float, ev: list[str], head: float | None
) -> Finding | None:
    main = main_thread_works_in_the_wait(w, cpu, share)
    if main is None:
        return None
    why = (
        f"the main thread runs {main:.2f} of a core while the step waits {pct(share)} for its workers' batches: it "
        "works through the wait (a collate or concatenation in the training process, a conversion or copy of each "
        "batch), which more workers do not share"
    )
    return _data(Resource.CPU_COMPUTE, strength * LOADER_AT_FULL_CORE, ev + cpu.describe() + [why], head)


def _waits_unexplained(cpu: CpuState, strength: float, ev: list[str], head: float | None) -> Finding:
    why = (
        "waiting for the next batch, but no loader process or thread is near a full core "
        "and no storage wait is seen: the loader waits on something no sampler measures (a sleep, a lock, a remote "
        "service)"
    )
    return Finding(
        resource=UNDETERMINED,
        stage=Stage.DATA,
        score=strength * UNDETERMINED_WEIGHT,
        evidence=tuple(ev + cpu.describe() + [why]),
        headroom=head,
    )


# --- why the batches are CPU-bound: (the evidence, its weight), or None ----------------------------


def _job_saturated(cpu: CpuState) -> tuple[str, float] | None:
    if cpu.saturated:
        return f"the job's processes use {SATURATED * 100:.0f}% or more of the cores they may use", LOADER_SATURATED
    return None


def _a_worker_at_full_core(cpu: CpuState) -> tuple[str, float] | None:
    if cpu.n_workers and (cpu.worker_max or 0.0) >= ONE_CORE:
        return (
            "each loader worker builds batches at a full core: more workers (or cheaper transforms) would keep up",
            LOADER_AT_FULL_CORE,
        )
    return None


def _workers_busy(cpu: CpuState) -> tuple[str, float] | None:
    if cpu.n_workers and cpu.workers is not None and cpu.workers >= SATURATED * cpu.n_workers:
        return "the loader workers are busy all the time", LOADER_AT_FULL_CORE
    return None


def _main_thread_builds_batches(cpu: CpuState) -> tuple[str, float] | None:
    if cpu.n_workers < NO_WORKERS and max(cpu.main or 0.0, cpu.hottest or 0.0) >= ONE_CORE:
        return (
            "no loader workers: the main thread builds each batch itself at a full core (a serial input pipeline)",
            LOADER_AT_FULL_CORE,
        )
    return None


def _a_side_thread_at_full_core(cpu: CpuState) -> tuple[str, float] | None:
    if cpu.side_thread_at_full_core:
        return (
            f"a thread of the training process other than the main one at {cpu.hottest:.2f} of a core while the "
            "main thread and every loader worker run less: the batches wait on that one thread (the pin-memory "
            "thread of a DataLoader with pin_memory=True copying large batches, or a prefetching thread); more "
            "workers do not add to it, fewer bytes per batch shorten it",
            LOADER_AT_FULL_CORE,
        )
    return None


def _loader_contended(cpu: CpuState) -> tuple[str, float] | None:
    """Running plus waiting on a run queue: the loader wants the CPU, other processes hold it."""
    if cpu.n_workers and cpu.worker_hot >= ONE_CORE or cpu.n_workers < NO_WORKERS and cpu.serial or cpu.contended:
        return (
            "the loader's threads want a full core but wait for a CPU other processes hold: the cores are contended",
            LOADER_CONTENDED,
        )
    return None


def _cpu_pressure(cpu: CpuState) -> tuple[str, float] | None:
    """No run-queue figures: CPU pressure stalls while the job uses some CPU."""
    if (
        cpu.waiting is None
        and cpu.pressure is not None
        and cpu.pressure >= CPU_STALL
        and (cpu.busy or 0.0) >= LOADER_BUSY_CORES
    ):
        return "the loader's processes are runnable but wait for a CPU: the cores are contended", LOADER_PRESSURE
    return None


LOADER_SIGNS: tuple[Callable[[CpuState], tuple[str, float] | None], ...] = (
    _job_saturated,
    _a_worker_at_full_core,
    _workers_busy,
    _main_thread_builds_batches,
    _a_side_thread_at_full_core,
    _loader_contended,
    _cpu_pressure,
)
