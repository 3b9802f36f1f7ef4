"""Without step phases: the SageMaker-style rules on utilization alone."""

from __future__ import annotations

from bottleneckd.diagnosis.job_gpus import job_busiest
from bottleneckd.diagnosis.rules.common import pct
from bottleneckd.diagnosis.rules.network_storage import NetworkStorage, network_storage, nic_beside
from bottleneckd.diagnosis.rules.storage import io_wait, storage_evidence
from bottleneckd.diagnosis.thresholds import (
    BUSY,
    GPU_IDLE,
    HOST_CPU_BUSY,
    IO_WAIT_STRONG,
    IOWAIT_HIGH,
    IOWAIT_IO_BOUND,
)
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import Resource, Stage
from bottleneckd.peaks.resolve import PeakTable

# --- scores: chosen, not measured -----------------------------------------------------------------

#: an idle GPU beside a busy CPU or busy storage (SageMaker Debugger's rules)
IDLE_GPU_SCORE = 0.75
#: no GPU: storage named from utilization alone, 0.6 of its strength (at least 0.6, full at 80% busy)
NO_GPU_STORAGE_WEIGHT = 0.6
STORAGE_FLOOR = 0.6
FULL_UTILIZATION = 0.8


def machine_only(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """The family: with no step phases, each busy resource beside an idle (or absent) GPU."""
    if w.phases is not None:
        return []
    gpu = job_busiest(w, peaks, Resource.GPU_COMPUTE, "busy_fraction")  # the job's GPUs, not another tenant's
    gpu_busy = gpu[1] if gpu else None
    nvl = job_busiest(w, peaks, Resource.INTER_GPU_INTERCONNECT)  # the job's GPUs' links
    nfs = network_storage(w)
    nic = nic_beside(w, nfs)  # a NIC whose bytes are the network file system's: the storage's finding below
    found = (
        _cpu_beside_idle_gpu(w, gpu_busy),
        _storage_beside_idle_gpu(w, gpu_busy),
        _storage_without_gpu(w, gpu_busy),
        _busy_link(Resource.INTER_NODE_INTERCONNECT, Stage.COMMUNICATION, "{dev} at {pct} of its line rate", nic),
        _busy_link(Resource.INTER_GPU_INTERCONNECT, Stage.COMMUNICATION, "{dev} at {pct} of its peak", nvl),
        _network_storage(nfs),
    )
    return [f for f in found if f is not None]


def _network_storage(nfs: NetworkStorage | None) -> Finding | None:
    """A network file system busy on its own: writes (over a path that sends more than it receives)
    are a checkpoint or log between the steps, reads the loader's."""
    if nfs is None or not nfs.utilization >= BUSY:
        return None
    return Finding(
        resource=Resource.STORAGE_NETWORK_BANDWIDTH,
        stage=Stage.OTHER if nfs.writes else Stage.DATA,
        score=min(1.0, nfs.utilization),
        evidence=(nfs.said(),),
    )


def _gpu_idle(gpu_busy: float | None) -> bool:
    return gpu_busy is not None and gpu_busy < GPU_IDLE


def _cpu_beside_idle_gpu(w: WindowStats, gpu_busy: float | None) -> Finding | None:
    cpu = w.get(Resource.CPU_COMPUTE, "host", "utilization")
    if not (_gpu_idle(gpu_busy) and cpu is not None and cpu > HOST_CPU_BUSY):
        return None
    return Finding(
        resource=Resource.CPU_COMPUTE,
        stage=Stage.DATA,
        score=IDLE_GPU_SCORE,
        evidence=(f"GPU busy {pct(gpu_busy)} while CPUs are {pct(cpu)} busy",),
    )


def _storage_beside_idle_gpu(w: WindowStats, gpu_busy: float | None) -> Finding | None:
    iowait = w.get(Resource.CPU_COMPUTE, "host", "iowait")
    s_util, s_ev, _ = storage_evidence(w)
    io, io_ev = io_wait(w)  # peak-free: threads in disk wait, I/O stalls, disk busy time
    if not (_gpu_idle(gpu_busy) and ((iowait or 0) > IOWAIT_IO_BOUND or s_util >= BUSY or io >= IO_WAIT_STRONG)):
        return None
    return Finding(
        resource=Resource.STORAGE_BANDWIDTH,
        stage=Stage.DATA,
        score=IDLE_GPU_SCORE,
        evidence=tuple([f"GPU busy {pct(gpu_busy)} with iowait {pct(iowait)}"] + s_ev + io_ev),
    )


def _storage_without_gpu(w: WindowStats, gpu_busy: float | None) -> Finding | None:
    if gpu_busy is not None:
        return None
    iowait = w.get(Resource.CPU_COMPUTE, "host", "iowait")
    s_util, s_ev, _ = storage_evidence(w)
    io, io_ev = io_wait(w)
    if not (s_util >= BUSY or (iowait or 0) > IOWAIT_HIGH or io >= IO_WAIT_STRONG):
        return None
    score = NO_GPU_STORAGE_WEIGHT * max(STORAGE_FLOOR, min(1.0, max(s_util / FULL_UTILIZATION, io)))
    return Finding(
        resource=Resource.STORAGE_BANDWIDTH,
        stage=Stage.DATA,
        score=score,
        evidence=tuple(s_ev + io_ev + ([f"iowait {pct(iowait)}"] if iowait is not None else [])),
    )


def _busy_link(resource: Resource, stage: Stage, text: str, best: tuple[str, float] | None) -> Finding | None:
    """A link busy on its own (NIC, NVLink, network file system): ``best``, its busiest device."""
    if best is None or not best[1] >= BUSY:
        return None
    return Finding(
        resource=resource,
        stage=stage,
        score=min(1.0, best[1]),
        evidence=(text.format(dev=best[0], pct=pct(best[1])),),
    )
