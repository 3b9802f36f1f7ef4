"""Every rank's stacks in turn (attach): the per-rank view the hook gives ``run``, from py-spy.

In synchronous data parallelism the ranks wait for the slowest at each collective, so the rank
attach follows (rank 0) may spend most of its time waiting for another. With no hook to time the
ranks, their stack samples tell them apart: a rank's main thread waiting inside forward or
backward (DDP's reducer waiting for its all-reduce: py-spy marks the thread idle) or inside a
collective is waiting; any other phase is busy. Up to ``PER_TICK`` ranks are sampled per tick, in
turn (all of them on a node of up to that many), so every rank is sampled at the same rate and
each of its samples stands for the same wall time: the sampling interval x ranks / ``PER_TICK``.
Its main thread's CPU time and run-queue wait (schedstat, as the hook reports them) go with it,
so a rank behind from contention is told from one doing more work by the same code
(diagnosis/straggler.py).

Only ranks on a CPU are sampled so: a rank that has loaded the CUDA driver (``libcuda`` in its
memory map) queues its kernels and returns, so its main thread waits where it synchronises, not
in the collective; its wait says nothing of which rank is slow (the GPU rules name that).
"""

from __future__ import annotations

import socket
import threading
from collections import Counter

import psutil

from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.resources import Phase
from bottleneckd.model.sample import RankPhases, StepPhases
from bottleneckd.samplers.threads import schedstat

#: ranks dumped per tick at most (each dump costs py-spy ~10-30 ms of a core; the rank attach
#: follows is counted from its own dump): on a node of more ranks they take turns
PER_TICK = 4
#: phases a rank's sample counts as waiting for the others (its collectives' wait)
WAITING = Phase.COMMUNICATION
COMPUTE = (Phase.FORWARD, Phase.BACKWARD)


def classify_rank_sample(phase: str, idle: bool) -> str:
    """A rank's stack sample as a phase: waiting inside forward/backward is the all-reduce's wait."""
    return WAITING if phase in COMPUTE and idle else phase


def uses_cuda(pid: int) -> bool:
    """Whether the process has loaded the CUDA driver (its memory map names libcuda)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return any("libcuda.so" in line for line in f)
    except OSError:
        return False


def rank_numbers(procs: list[psutil.Process]) -> dict[int, int]:
    """pid -> rank: RANK (or LOCAL_RANK) from each process's environment where every one has it,
    else their start order (``torch.multiprocessing.spawn`` starts rank 0 first)."""
    found: dict[int, int] = {}
    for p in procs:
        try:
            env = p.environ()
        except psutil.Error:
            env = {}
        v = env.get("RANK", env.get("LOCAL_RANK"))
        if v is not None and v.isdigit():
            found[p.pid] = int(v)
    if len(found) == len(procs) and len(set(found.values())) == len(procs):
        return found

    def started(p: psutil.Process) -> tuple[float, int]:
        try:
            return p.create_time(), p.pid
        except psutil.Error:
            return float("inf"), p.pid

    return {p.pid: i for i, p in enumerate(sorted(procs, key=started))}


class RankStacks:
    """Per-rank stack-sample counts since the last drain (thread-safe: the sampler's thread adds,
    the sidecar's loop drains)."""

    def __init__(self, interval: float, host: str | None = None) -> None:
        self.interval = interval
        self.host = host or socket.gethostname()
        self._lock = threading.Lock()
        self._counts: dict[int, Counter[str]] = {}
        self._wall: dict[int, float] = {}
        self._n: dict[int, int] = {}
        self._ident: dict[int, RankIdentity] = {}
        self._sched: dict[int, tuple[float, float]] = {}
        self._pids: list[int] = []
        self._next = 0
        self._gpu: dict[int, bool] = {}

    def set_ranks(self, procs: list[psutil.Process], world: int | None = None) -> None:
        """The job's rank processes (two or more on a CPU, else none is sampled)."""
        for p in procs:
            if p.pid not in self._gpu:
                self._gpu[p.pid] = uses_cuda(p.pid)
        cpu = [p for p in procs if not self._gpu.get(p.pid)]
        if len(cpu) < 2 or len(cpu) < len(procs):
            self._pids = []
            return
        numbers = rank_numbers(cpu)
        size = max(world or 0, len(cpu))
        for p in cpu:
            old = self._ident.get(p.pid)
            if old is None or old.rank != numbers[p.pid]:
                self._ident[p.pid] = RankIdentity(
                    job=f"attach/{min(q.pid for q in cpu)}",
                    run="",
                    restart=0,
                    rank=numbers[p.pid],
                    local_rank=numbers[p.pid],
                    world_size=size,
                    local_world_size=size,
                    node=self.host,
                    node_rank=0,
                    pid=p.pid,
                )
        self._pids = sorted((p.pid for p in cpu), key=lambda pid: self._ident[pid].rank)

    def turn(self) -> list[int]:
        """The rank processes to sample this tick (none: fewer than two CPU ranks)."""
        n = len(self._pids)
        k = min(n, PER_TICK)
        out = [self._pids[(self._next + i) % n] for i in range(k)] if n else []
        self._next += k
        return out

    @property
    def period(self) -> float:
        """The wall time each rank's sample stands for: every rank is sampled once in it."""
        n = len(self._pids)
        return self.interval * max(1.0, n / PER_TICK)

    def add(self, pid: int, phase: str) -> None:
        """One stack sample of rank ``pid``'s main thread, classified (``classify_rank_sample``)."""
        ident = self._ident.get(pid)
        if ident is None or not self._pids:
            return
        sched = schedstat(pid)
        with self._lock:
            self._counts.setdefault(pid, Counter())[phase] += 1
            self._wall[pid] = self._wall.get(pid, 0.0) + self.period
            self._n[pid] = self._n.get(pid, 0) + 1
            if sched is not None:
                self._sched[pid] = sched

    def drain(self) -> tuple[RankPhases, ...]:
        """Each rank's samples since the last drain as sampled step phases (``steps`` counts its
        samples; ``wall_seconds`` the wall time they stand for), with its main thread's cumulative
        CPU and run-queue wait."""
        with self._lock:
            counts, wall, n = self._counts, self._wall, self._n
            sched = dict(self._sched)
            self._counts, self._wall, self._n = {}, {}, {}
        out = []
        for pid, c in counts.items():
            if not n.get(pid):
                continue
            per = wall[pid] / n[pid]
            facts: dict[str, object] = {"phase_source": "py-spy", "stack_samples": n[pid]}
            if pid in sched:
                facts["thread_cpu_seconds"], facts["runqueue_wait_seconds"] = sched[pid]
            out.append(
                RankPhases(
                    self._ident[pid],
                    StepPhases(n[pid], wall[pid], {k: v * per for k, v in c.items()}, facts),
                )
            )
        return tuple(sorted(out, key=lambda r: r.identity.rank))
