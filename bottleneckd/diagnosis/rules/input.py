"""Input pipeline: the step waits for the next batch. What the loader waits on is named from
evidence: network storage busy, local storage (peak-free: threads in disk wait, I/O stalls, disk
busy time), or the loader's CPU (its workers at their cores, or the main thread at ~100% of one
core when it builds batches itself). With none of these the verdict is undetermined, saying so:
"CPUs not saturated" is never evidence for a CPU bottleneck."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import (
    BUSY,
    CPU_STALL,
    INPUT_HIGH,
    INPUT_MODERATE,
    ONE_CORE,
    SATURATED,
    CpuState,
    cpu_state,
    fmt_s,
    headroom,
    io_wait,
    pct,
    stack_samples,
    storage_evidence,
)
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED
from bottleneckd.peaks.resolve import PeakTable


def data_wait(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    p = w.phases
    if p is None:
        return []
    share = (p.share("data_wait") or 0.0) + (p.share("file_io") or 0.0)
    if share < INPUT_MODERATE:
        return []
    strength = min(1.0, share / INPUT_HIGH) * (0.95 if share >= INPUT_HIGH else 0.7)
    if p.facts.get("phase_source") == "py-spy":
        ev = [f"main thread waiting for the next batch in {pct(share)} of {p.steps} stack samples (py-spy)"]
    else:
        ev = [
            f"waiting for the next batch {pct(share)} of step time ({fmt_s(p.per_step('data_wait'))} per step over {p.steps} steps)"
        ]
    head = headroom(share, stack_samples(w))
    cpu = cpu_state(w)
    s_util, s_ev, s_kind = storage_evidence(w)
    io, io_ev = io_wait(w)
    net = w.busiest("storage_network_bandwidth")
    out = []
    if net is not None and net[1] >= BUSY:
        out.append(
            Finding(
                "storage_network_bandwidth",
                "data",
                strength * min(1.0, net[1] / 0.8),
                tuple(ev + [f"network file system {net[0]} at {pct(net[1])} of the link"]),
                head,
            )
        )
    if s_util >= BUSY or io:
        extra = list(io_ev)
        if s_kind == "operations" and s_util >= BUSY:
            extra.append("limited by operations per second, not bytes: small random reads")
        nfs = w.busiest("storage_network_bandwidth", "throughput")
        local = sum(
            s.mean
            for (r, d, m), s in w.stats.items()
            if r == "storage_bandwidth" and m == "read_bytes_per_second" and d not in ("job", "host")
        )
        resource = "storage_bandwidth"
        if nfs is not None and nfs[1] > 2 * max(local, 1.0):  # the reads go over the network, not to a local disk
            resource = "storage_network_bandwidth"
            extra.append(f"network file system {nfs[0]} reading while local disks read {local / 1e6:.1f} MB/s")
        out.append(
            Finding(
                resource,
                "data",
                strength * max(0.6, min(1.0, max(s_util / 0.8, io))),
                tuple(ev + (s_ev if s_util else []) + extra),
                head,
            )
        )
    loader_ev, weight = _loader_busy(cpu)
    if loader_ev:
        out.append(Finding("cpu_compute", "data", strength * weight, tuple(ev + cpu.describe() + loader_ev), head))
    if not out:
        why = (
            "waiting for the next batch, but no loader process or thread is near a full core "
            "and no storage wait is seen: the loader waits on something no sampler measures (a sleep, a lock, a remote service)"
        )
        out.append(Finding(UNDETERMINED, "data", strength * 0.9, tuple(ev + cpu.describe() + [why]), head))
    return out


def _loader_busy(cpu: CpuState) -> tuple[list[str], float]:
    """Why the batches are CPU-bound and how directly the evidence says so, or ([], 0)."""
    if cpu.saturated:
        return [f"the job's processes use {SATURATED * 100:.0f}% or more of the cores they may use"], 1.0
    own_worker = cpu.worker_max or 0.0
    if cpu.n_workers and own_worker >= ONE_CORE:
        return [
            "each loader worker builds batches at a full core: more workers (or cheaper transforms) would keep up"
        ], 0.95
    if cpu.n_workers and cpu.workers is not None and cpu.workers >= SATURATED * cpu.n_workers:
        return ["the loader workers are busy all the time"], 0.95
    own_main = max(cpu.main or 0.0, cpu.hottest or 0.0)
    if cpu.n_workers < 0.5 and own_main >= ONE_CORE:
        return [
            "no loader workers: the main thread builds each batch itself at a full core (a serial input pipeline)"
        ], 0.95
    # running plus waiting on a run queue: the loader wants the CPU, other processes hold it
    if cpu.n_workers and cpu.worker_hot >= ONE_CORE or cpu.n_workers < 0.5 and cpu.serial or cpu.contended:
        return [
            "the loader's threads want a full core but wait for a CPU other processes hold: the cores are contended"
        ], 0.75
    if cpu.waiting is None and cpu.pressure is not None and cpu.pressure >= CPU_STALL and (cpu.busy or 0.0) >= 0.5:
        return ["the loader's processes are runnable but wait for a CPU: the cores are contended"], 0.7
    return [], 0.0
