"""Attach's view of a data-parallel step's communication, with no hook to time it.

DDP runs its all-reduce inside backward, so stack samples alone put it in backward. Three things
attach does see tell it apart (measured on ddp_spawn, 2 gloo ranks, 33.6 M parameters, load
average 10-13 on 2 cores, rank 0's main thread at 4 Hz for 20 s): the main thread *waiting*
(py-spy marks it idle: a futex in the reducer's wait for its buckets) in 23% of its backward
samples with the all-reduce and in none of 48 under ``no_sync()``; the backend's threads by name
(gloo's ``pt_gloo_runloop`` and ``gloo_tcp_loop``, where it reduces and sends) at 0.06 cores
against the main thread's 0.13 (a third of the rank's CPU) and at 0.00 under ``no_sync()``; and
the stacks inside collectives (``torch/distributed`` frames). On a CPU job whose cores are full
the backend threads' CPU is taken from backward (the overlap is not free, as under ``run``'s comm
hook timing, common.CommCost); with cores to spare, or on a GPU, it is not counted.

Native frames (``py-spy dump --native``: the reducer's and gloo's C++ frames) would name the wait
directly, but py-spy reads native stacks only with the target paused: one such dump took 2.5-7.4 s
at load 17-23 and stalled a training loop for up to 3.4 s (its longest gap between iterations, 0.3 s
without dumps). Attach never pauses a job; the idle flag and the threads' names say the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneckd.diagnosis.rules.common import pct, runs_on_gpu
from bottleneckd.diagnosis.rules.cpu_state import cpu_state
from bottleneckd.diagnosis.thresholds import COMM_THREADS_ACTIVE
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import Phase, Resource

COMPUTE = (Phase.FORWARD, Phase.BACKWARD)


@dataclass(frozen=True)
class StackComm:
    """Shares of the step (from stack samples and thread CPU) that communication takes."""

    frames: float  # samples inside collectives called from Python
    waiting: float  # samples in which the main thread waited inside forward/backward (the reducer's all-reduce)
    threads: float  # share of the ranks' CPU in the backend's threads
    compute: float  # samples in forward/backward
    shares_cores: bool  # the job's cores are full: the backend threads' CPU is backward's loss

    @property
    def overlapped(self) -> float:
        """Share of the step the backend threads' CPU took from backward on full cores."""
        return self.threads * max(0.0, self.compute - self.waiting) if self.shares_cores else 0.0

    @property
    def exposed(self) -> float:
        return self.frames + self.waiting

    @property
    def share(self) -> float:
        return min(1.0, self.exposed + self.overlapped)

    @property
    def taken_from_compute(self) -> float:
        """The part of the forward/backward samples that is communication's."""
        return min(self.compute, self.waiting + self.overlapped)

    def describe(self) -> list[str]:
        ev = [
            f"main thread waiting inside forward/backward in {pct(self.waiting / self.compute if self.compute else 0)} "
            f"of those stack samples ({pct(self.waiting)} of all): DDP's reducer waiting for its all-reduce",
        ]
        if self.frames:
            ev.append(f"inside collectives in {pct(self.frames)} of the stack samples")
        ev.append(
            f"the backend's threads (gloo, NCCL) at {pct(self.threads)} of the ranks' CPU"
            + (
                f", taken from backward on full cores: {pct(self.overlapped)} of the step"
                if self.shares_cores
                else " (cores to spare: not counted)"
            )
        )
        return ev


def stack_comm(w: WindowStats) -> StackComm | None:
    """The communication of a DDP job on CPU seen from stack samples (attach), or None: timed
    phases (the hook), neither a data-parallel wrapper on the stacks nor the backend's threads at
    work (COMM_THREADS_ACTIVE), a GPU job (its backward runs in autograd's
    device threads, so a waiting main thread says nothing), or too few samples yet."""
    p = w.phases
    if p is None or not p.sampled or runs_on_gpu(w):
        return None
    comm = w.get(Resource.CPU_COMPUTE, "job", "comm_thread_cores")
    # the wrapper's frame runs only in forward (a few percent of a DDP step: often never sampled in a
    # short attach); the backend's threads at work say as much, since only collectives busy them
    if not (p.facts.get("ddp") or (comm or 0.0) >= COMM_THREADS_ACTIVE):
        return None
    waiting_of_compute = p.facts.get("compute_idle_share")
    rank_busy = w.get(Resource.CPU_COMPUTE, "job", "rank_busy_cores")
    if waiting_of_compute is None:
        return None
    compute = sum(p.share(k) or 0.0 for k in COMPUTE)
    cpu = cpu_state(w)
    threads = min(1.0, comm / rank_busy) if comm is not None and rank_busy else 0.0
    return StackComm(
        p.share(Phase.COMMUNICATION) or 0.0,
        waiting_of_compute * compute,
        threads,
        compute,
        cpu.saturated or cpu.contended,
    )
