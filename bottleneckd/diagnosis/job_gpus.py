"""The job's GPUs in a window (model/job_gpus.py over the window's ranks, facts and readings)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bottleneckd.diagnosis.thresholds import CO_TENANT_BYTES, GPU_NEVER_IDLE, GPU_NO_KERNELS
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.job_gpus import JobGpus, job_gpus
from bottleneckd.model.resources import Resource
from bottleneckd.peaks.resolve import PeakTable


def rank_uuids(w: WindowStats) -> dict[int, list[str]]:
    """Rank -> the GPU UUIDs it names (its identity's GPU and its hook's ``cuda_uuids``); one
    process without rank reports is rank 0 with the job's facts."""
    if w.ranks:
        return {r.rank: [r.gpu, *(r.facts.get("cuda_uuids") or ())] for r in w.ranks}
    facts = w.phases.facts if w.phases else {}
    return {0: list(facts.get("cuda_uuids") or ())}


def job_pids(w: WindowStats) -> set[int]:
    """The job's processes its hook named (each rank's ``pid`` fact); empty when none did (attach)."""
    facts = [r.facts for r in w.ranks] or [w.phases.facts if w.phases else {}]
    return {int(p) for f in facts if isinstance(p := f.get("pid"), int) and not isinstance(p, bool)}


def _listed(w: WindowStats, dev: str) -> dict[int, float]:
    """NVML's process list of ``dev``: PID -> the memory it holds."""
    return {
        int(m.split(":", 1)[1]): s.mean
        for (r, d, m), s in w.stats.items()
        if r == Resource.GPU_MEMORY and d == dev and m.startswith("process_bytes:") and m.split(":", 1)[1].isdigit()
    }


def job_listed(w: WindowStats, dev: str) -> bool:
    """NVML's process list of ``dev`` names one of the job's PIDs."""
    pids = job_pids(w)
    return bool(pids and pids & _listed(w, dev).keys())


def co_tenants(w: WindowStats, dev: str) -> tuple[int, float] | None:
    """Processes on ``dev`` that are not the job's (NVML's process list, by PID) holding
    CO_TENANT_BYTES or more each, and the memory they hold: their kernels are time-sliced with the
    job's. A bare CUDA context (a loader worker or compile subprocess of the job's that touched
    CUDA) holds less. None when the job's PIDs are not known or the GPU lists none of them (not the
    job's GPU)."""
    pids = job_pids(w)
    if not pids:
        return None
    listed = _listed(w, dev)
    if not listed or not pids & listed.keys():
        return None
    others = {p: b for p, b in listed.items() if p not in pids and b >= CO_TENANT_BYTES}
    return (len(others), sum(others.values())) if others else None


def largest_other_process(w: WindowStats, dev: str) -> float | None:
    """The memory of the largest process on ``dev`` that is not the job's (None: none, or unknown)."""
    pids = job_pids(w)
    listed = _listed(w, dev)
    others = [b for p, b in listed.items() if p not in pids]
    return max(others) if pids and pids & listed.keys() and others else None


def window_job_gpus(w: WindowStats, peaks: PeakTable | None) -> JobGpus:
    """``peaks``: for the GPUs' UUIDs (without them only NVML's process lists tell). A job whose hook
    reports a device other than CUDA (a CPU job) has no GPU of this node, whatever NVML's process
    lists could not tell (another tenant's PIDs in another namespace leave them unknown)."""
    devs = w.devices(Resource.GPU_COMPUTE)
    device = str((w.phases.facts.get("device") if w.phases else None) or "")
    seen = {d: v for d in devs if (v := w.get(Resource.GPU_COMPUTE, d, "job_process")) is not None}
    sampled = any((Resource.GPU_COMPUTE, d, "job_process") in w.notes for d in devs)
    if not seen and not sampled:  # the sampler's own "unknown" (PIDs of another namespace) stands
        seen = _seen_in_process_lists(w, devs)
    return job_gpus(
        devs, peaks.gpu_uuids() if peaks is not None else {}, rank_uuids(w), seen, device, _not_the_jobs(w, devs)
    )


def _not_the_jobs(w: WindowStats, devs: list[str]) -> list[str]:
    """The GPUs that ran no kernel throughout the window (GPU_NO_KERNELS), offered as not the job's
    only where that cannot be another tenant's work standing in for the job's: the hook says the job
    trains on CUDA, and as many GPUs ran kernels as the job's ranks on this node (one where it does
    not say). Without the hook (attach), or with more GPUs busy than the job has ranks here, none."""
    facts = w.phases.facts if w.phases is not None else {}
    if not str(facts.get("device") or "").startswith("cuda"):
        return []
    idle = [
        d for d in devs if (st := w.stats.get((Resource.GPU_COMPUTE, d, "busy_fraction"))) and st.max < GPU_NO_KERNELS
    ]
    return idle if len(devs) - len(idle) == ranks_on_node(facts) else []


def ranks_on_node(facts: Mapping[str, Any]) -> int:
    """The job's ranks on this node (the hook's ``local_world_size``), one where it does not say."""
    local = facts.get("local_world_size")
    return local if isinstance(local, int) and not isinstance(local, bool) and local > 0 else 1


def _seen_in_process_lists(w: WindowStats, devs: list[str]) -> dict[str, float]:
    """GPU -> 1.0 where NVML's process list names one of the job's PIDs (the hook's ``pid`` facts),
    0.0 where it does not, for a window without the sampler's ``job_process`` readings (a trace
    written by other tools, or constructed): only where some GPU lists one of them, which shows the
    lists are in the job's PID namespace; else nothing (the job's absence is not shown)."""
    pids = job_pids(w)
    lists = {d: _listed(w, d) for d in devs}
    if not pids or not any(pids & listed.keys() for listed in lists.values()):
        return {}
    return {d: 1.0 if pids & listed.keys() else 0.0 for d, listed in lists.items()}


def never_idle(w: WindowStats, peaks: PeakTable | None) -> tuple[str, float] | None:
    """The least busy of the job's GPUs, when even it ran kernels GPU_NEVER_IDLE of the time or more
    (NVML's busy fraction): such GPUs never waited for the host, so host-side time (a thread spinning
    in a synchronisation, stack samples outside the phases) overlaps their work. None otherwise, and
    for a job on no GPU."""
    least = least_busy(w, peaks)
    return least if least is not None and least[1] >= GPU_NEVER_IDLE else None


def least_busy(w: WindowStats, peaks: PeakTable | None, over_steps: bool = False) -> tuple[str, float] | None:
    """The least busy of the job's GPUs and the share of the time it ran kernels (NVML's busy
    fraction, over the window, or with ``over_steps`` over the intervals its steps ran in:
    ``WindowStats.over_phases``); None for a job on no GPU or where a GPU of the job has no busy
    figure."""
    if not runs_on_gpu(w, peaks):
        return None
    jg = window_job_gpus(w, peaks)
    read = w.over_phases if over_steps else w.get
    busy = [(d, v) for d in jg.devices if (v := read(Resource.GPU_COMPUTE, d, "busy_fraction")) is not None]
    if not busy or len(busy) < len(jg.devices):
        return None
    return min(busy, key=lambda dv: dv[1])


def job_busiest(
    w: WindowStats, peaks: PeakTable | None, resource: str, metric: str = "utilization"
) -> tuple[str, float] | None:
    """The busiest of the job's GPUs by ``metric`` of ``resource`` (every GPU when they are not known;
    None for a job on no GPU)."""
    jg = window_job_gpus(w, peaks)
    vals = [(d, v) for d in jg.devices if (v := w.get(resource, d, metric)) is not None]
    return max(vals, key=lambda dv: dv[1]) if vals else None


def runs_on_gpu(w: WindowStats, peaks: PeakTable | None) -> bool:
    """The job trains on a GPU this node samples: the hook's device fact where it says (cuda, and a
    GPU is sampled here), else the job seen on one of the node's GPUs; a job NVML's process lists
    show on no GPU runs on none (a CPU job on a shared GPU node), and a job whose GPUs are unknown
    is taken to run on them (attach without process lists: every GPU considered)."""
    devs = w.devices(Resource.GPU_COMPUTE)
    if not devs:
        return False
    device = (w.phases.facts.get("device") if w.phases else None) or ""
    if device:
        return str(device).startswith("cuda")
    return not window_job_gpus(w, peaks).none
