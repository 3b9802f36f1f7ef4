"""A step spent mostly outside data, forward, backward, optimizer and communication ("other":
Python code between the phases, checkpoint writes, logging, evaluation). Explained from what the
samplers see: the job writing to storage (or stalled on I/O), one thread at a full core (Python
code), the job's processes at their cores; undetermined with the reason otherwise. A GPU job whose
GPUs never idle (diagnosis/job_gpus.py ``never_idle``) spends that time waiting on them (a
``.item()`` spinning in a CUDA synchronisation reads as a thread at a full core): the GPU rules judge
it (gpu_compute.py), not this one.

A GPU job timed by the hook's CUDA events whose GPUs idle (GPU_WAITS_FOR_HOST of the time or more) is
the other way round: the compute stage is the GPU's own timeline, and the other stage is the host's
work while the GPU waits for it (per-step ``.item()``, logging, metrics on the host). There the other
stage is judged as the data stage is: from INPUT_HIGH of the step, at full strength there, and
weighed against the host's stages only (data, transfer, communication): a GPU idle for its host is
as starved as a GPU waiting on its loader (a blind trace: host work 41-46% of the step beside the
GPU's 52-59% read "balanced", no advice; at 51% it read cpu_compute/other; two more: per-step
``.tolist()`` at 26-31% of the step, the GPU idle as long, read gpu_compute/compute). The GPU waits
there where it idles GPU_WAITS_FOR_HOST of the time, or about as long as the stage lasts
(IDLE_COVERS_OTHER)."""

from __future__ import annotations

from dataclasses import replace

from bottleneckd.diagnosis.job_gpus import least_busy, never_idle
from bottleneckd.diagnosis.rules.common import (
    cuda_timed,
    gpu_idles_through,
    headroom,
    offloaded,
    other_share,
    pct,
    stack_samples,
    stage_share,
)
from bottleneckd.diagnosis.rules.cpu_state import CpuState, cpu_state
from bottleneckd.diagnosis.rules.input import HIGH_WEIGHT, LOADER_AT_FULL_CORE
from bottleneckd.diagnosis.rules.network_storage import network_storage
from bottleneckd.diagnosis.rules.storage import io_wait
from bottleneckd.diagnosis.thresholds import (
    BUSY,
    GPU_WAITS_FOR_HOST,
    INPUT_HIGH,
    OTHER_HIGH,
    OTHER_IDLE,
    OTHER_LARGEST,
    WRITES,
)
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED, Resource, Stage
from bottleneckd.model.units import fmt_value
from bottleneckd.peaks.resolve import PeakTable

# --- scores: chosen, not measured -----------------------------------------------------------------

#: the stage's strength: its share of the step, full at 80%
FULL_SHARE = 0.8
#: of that strength: writes or I/O waits 0.85, the job's CPU 0.8, a wait on nothing measured 0.7
STORAGE_WEIGHT = 0.85
CPU_WEIGHT = 0.8
UNDETERMINED_WEIGHT = 0.7
#: where the GPU waits for its host there, the job's CPU (a thread at its core, or its processes at
#: theirs) weighs as a loader's does in the data stage (rules/input.py: the stage's HIGH_WEIGHT, a
#: thread at a full core LOADER_AT_FULL_CORE): the same starved GPU, the same evidence
HOST_WAIT_CPU_WEIGHT = HIGH_WEIGHT * LOADER_AT_FULL_CORE


def other(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """The family: the step mostly outside the phases, explained by the first decision that holds."""
    share = other_share(w)
    if share is None or never_idle(w, peaks) is not None:
        return []
    waiting = _gpu_waits_for_host(w, peaks)
    if not (share >= OTHER_HIGH or _largest_stage(w, share, host_only=waiting is not None)):
        return []
    src = "stack samples" if w.phases and w.phases.facts.get("phase_source") == "py-spy" else "step time"
    ev = [f"{pct(share)} of {src} outside data loading, forward, backward, optimizer and communication"]
    if waiting is not None:
        ev.append(
            f"{waiting[0]}, the job's least busy GPU, ran kernels {pct(waiting[1])} of the time: it waits for the host "
            "there (the phases are its CUDA-event timeline)"
        )
    head = headroom(share, stack_samples(w))
    strength = min(1.0, share / (INPUT_HIGH if waiting is not None else FULL_SHARE))
    cpu = cpu_state(w)
    cpu_weight = CPU_WEIGHT if waiting is None else HOST_WAIT_CPU_WEIGHT
    found = (
        _writes_or_io_waits(w, ev, strength)
        or _thread_waits(w, cpu, ev, strength)
        or _cpu_busy(cpu, ev, cpu_weight * strength)
        or _thread_runs(w, cpu, share, ev, cpu_weight * strength)
    )
    if found is None:
        why = (
            "the job neither computes (no thread near a full core) nor writes nor waits on storage there: a sleep, a "
            "lock or another process"
        )
        found = _other(UNDETERMINED, UNDETERMINED_WEIGHT * strength, ev + cpu.describe() + [why])
    return [replace(found, headroom=head)]


def _gpu_waits_for_host(w: WindowStats, peaks: PeakTable) -> tuple[str, float] | None:
    """The job's least busy GPU and its busy fraction over the intervals the steps ran in
    (``WindowStats.over_phases``), where the hook's CUDA events timed the step and that GPU idled
    GPU_WAITS_FOR_HOST of the time or more, or idles through the other stage beyond the data and
    transfer stages (rules/common.py ``gpu_idles_through``): the other stage is then host work the
    GPU waits for. None otherwise (no CUDA events, a GPU busy enough to have run the other stage's
    time)."""
    least = least_busy(w, peaks, over_steps=True) if cuda_timed(w) else None
    if least is None:
        return None
    if 1.0 - least[1] >= GPU_WAITS_FOR_HOST:
        return least
    return gpu_idles_through(w, peaks, Stage.OTHER, besides=(Stage.DATA, Stage.TRANSFER))


def _largest_stage(w: WindowStats, share: float, host_only: bool = False) -> bool:
    """Below OTHER_HIGH, the stage still limits the step where it is at least OTHER_LARGEST of it
    and more than any other stage (a per-step metric at 47-52% of the step beside a serial loader's
    33%: removing the metric measured x2.30, the loader's share allows x1.49). ``host_only``: the
    GPU waits for the host in the other stage, as it waits for a loader: the stage counts from
    INPUT_HIGH, as the data stage does, and the GPU's own stages (compute, optimizer) are not
    weighed against it; the GPU rules judge them."""
    if share < (INPUT_HIGH if host_only else OTHER_LARGEST):
        return False
    # the GPU's own stages; an optimizer offloaded to the CPU (CPU Adam) is the host's
    gpu_own = (Stage.COMPUTE,) + (() if offloaded(w) else (Stage.OPTIMIZER,)) if host_only else ()
    rest = (stage_share(w, s) for s in Stage if s != Stage.OTHER and s not in gpu_own)
    return all(r is None or r < share for r in rest)


def _other(resource: Resource, score: float, ev: list[str]) -> Finding:
    return Finding(resource=resource, stage=Stage.OTHER, score=score, evidence=tuple(ev))


def _writes_or_io_waits(w: WindowStats, ev: list[str], strength: float) -> Finding | None:
    """The job writing (checkpoints, logs) or stalled on I/O there: storage; a network file system's
    when one is busy sending (rules/network_storage.py)."""
    writes = w.get(Resource.STORAGE_BANDWIDTH, "job", "write_bytes_per_second")
    io, io_ev = io_wait(w)
    nfs = network_storage(w)
    # the job's own writes measured as none: another process's (a co-tenant's checkpoint)
    if nfs is not None and nfs.writes and nfs.utilization >= BUSY and (writes is None or writes >= WRITES):
        return _other(Resource.STORAGE_NETWORK_BANDWIDTH, STORAGE_WEIGHT * strength, [*ev, nfs.said(), *io_ev])
    if not ((writes is not None and writes >= WRITES) or io):
        return None
    extra = [f"job writing {fmt_value(writes, 'B/s')} (checkpoints or logs)"] if writes else []
    return _other(Resource.STORAGE_BANDWIDTH, STORAGE_WEIGHT * strength, ev + extra + io_ev)


def _thread_waits(w: WindowStats, cpu: CpuState, ev: list[str], strength: float) -> Finding | None:
    """The stacks saw the thread wait there: whatever the CPU figures, not its compute."""
    idle = w.phases.facts.get("other_idle_share") if w.phases else None
    if idle is None or not idle >= OTHER_IDLE:
        return None
    why = (
        f"the sampled thread was waiting (sleep, lock, child process, socket) in {pct(idle)} of its recent stack "
        "samples outside the phases: a sleep, a lock or another process, not this thread's compute"
    )
    return _other(UNDETERMINED, UNDETERMINED_WEIGHT * strength, ev + cpu.describe() + [why])


def _cpu_busy(cpu: CpuState, ev: list[str], score: float) -> Finding | None:
    """One thread at a full core (Python between the phases) or the job's processes at their cores."""
    if not cpu.busy_evidence:
        return None
    what = (
        "one thread at a full core: Python code between the phases (logging, metrics, host-side bookkeeping)"
        if cpu.serial and not cpu.saturated
        else "the job's processes at their cores outside the timed phases"
    )
    return _other(Resource.CPU_COMPUTE, score, ev + cpu.describe() + [what])


def _thread_runs(w: WindowStats, cpu: CpuState, share: float, ev: list[str], score: float) -> Finding | None:
    """The stacks saw the thread run there (waiting in less than OTHER_IDLE of its recent stack
    samples outside the phases) and the training thread's busy time covers the stage (at ``share``
    of a core or more): Python between the phases, its core averaged down by the phases in which it
    waits (a GPU job's host thread, idle while the GPU runs the step's kernels, at 0.75 of a core
    with the stage at 46% of the step: a blind trace read it as "a sleep, a lock or another
    process")."""
    idle = w.phases.facts.get("other_idle_share") if w.phases else None
    thread = cpu.main if cpu.main is not None else cpu.hottest
    if not isinstance(idle, (int, float)) or idle >= OTHER_IDLE or thread is None or thread < share:
        return None
    why = (
        f"the sampled thread ran (did not wait) in {pct(1.0 - idle)} of its recent stack samples outside the phases, "
        f"and the training thread's {thread:.2f} of a core covers the stage's {pct(share)} of the step: Python code "
        "between the phases (logging, metrics, host-side bookkeeping)"
    )
    return _other(Resource.CPU_COMPUTE, score, ev + cpu.describe() + [why])
