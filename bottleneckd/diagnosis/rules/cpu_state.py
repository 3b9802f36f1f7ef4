"""What the job's CPUs are doing, with no peak needed: the job's processes against the cores they
may use, the hottest single thread (a GIL-bound or serial step saturates one core), the loader
workers, run-queue waits and CPU pressure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bottleneckd.diagnosis.rules.common import pct
from bottleneckd.diagnosis.thresholds import (
    CONFINED_SLACK,
    CPU_STALL,
    NO_WORKERS,
    ONE_CORE,
    OUTSIDE_BUSY,
    OUTSIDE_PROCESS_SHOWN,
    SATURATED,
    WAITING_SHOWN,
)
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.outside import OUTSIDE_METRIC, OUTSIDE_TOP, outside_cores
from bottleneckd.model.resources import Resource


@dataclass(frozen=True, kw_only=True)
class CpuState:
    """What the job's CPUs are doing, with no peak needed: the job's processes against the cores
    they may use, and the hottest single thread (a GIL-bound or serial step saturates one core)."""

    cores: float  # usable by the job (affinity, quota), else the host's
    busy: float | None  # cores the job's ranks and workers use; None when the job is not sampled
    main: float | None  # the busiest rank's main thread, cores (0..1)
    hottest: float | None  # the hottest thread of any rank
    workers: float | None  # cores the loader workers use
    worker_max: float | None  # the busiest single loader worker
    n_workers: float  # mean number of loader workers alive over the window
    ranks: int
    host: float | None
    pressure: float | None = None  # CPU pressure stalls (the job's cgroup, else the host)
    #: running + waiting on a run queue (schedstat): what the threads ask of the CPU when it is shared
    main_demand: float | None = None
    hottest_demand: float | None = None
    worker_max_demand: float | None = None
    waiting: float | None = None  # cores' worth of the job's threads runnable but not running
    #: cores busy on the host outside the job (host busy minus the job's ranks, workers and launcher,
    #: and the sidecar's own: itself and its py-spy)
    outside: float | None = None
    #: the busiest rank's main thread and autograd device threads together, cores (a GPU job's)
    launch: float | None = None
    #: the busiest processes outside the job ("name[pid]", cores over the window), at most OUTSIDE_TOP
    outside_named: tuple[tuple[str, float], ...] = ()
    #: the host's cores (None where not read): a job that may use fewer is confined to some of them
    host_cores: float | None = None

    @property
    def demand(self) -> float | None:
        return None if self.busy is None else self.busy + (self.waiting or 0.0)

    @property
    def hot(self) -> float:
        """The busiest single thread, running or waiting to run (0..1)."""
        return max(self.main or 0.0, self.hottest or 0.0, self.main_demand or 0.0, self.hottest_demand or 0.0)

    @property
    def side_thread_at_full_core(self) -> bool:
        """A thread of a rank other than its main one and its autograd device threads runs a full
        core while the main thread and every loader worker run less (the pin-memory thread of a
        DataLoader with pin_memory=True, a prefetching thread of the user's): a serial stage of its
        own, which more workers do not add to."""
        if self.hottest is None or self.main is None or self.hottest < ONE_CORE or self.main >= ONE_CORE:
            return False
        autograd = (self.launch - self.main) if self.launch is not None else 0.0
        return self.n_workers >= NO_WORKERS and autograd < ONE_CORE and (self.worker_max or 0.0) < ONE_CORE

    @property
    def worker_hot(self) -> float:
        return max(self.worker_max or 0.0, self.worker_max_demand or 0.0)

    @property
    def saturated(self) -> bool:
        """The job's own CPU use fills the cores it may use."""
        if self.busy is not None:
            return self.busy >= SATURATED * self.cores
        return (self.host or 0.0) >= SATURATED

    @property
    def contended(self) -> bool:
        """Running plus waiting to run fills the cores: other processes take the CPU the job wants."""
        return not self.saturated and self.demand is not None and self.demand >= SATURATED * self.cores

    @property
    def outside_said(self) -> tuple[str, ...]:
        """The processes outside the job as the evidence and the advice say them: "name[pid] at 0.72"."""
        return tuple(f"{who} at {c:.2f}" for who, c in self.outside_named)

    @property
    def waits_behind_others(self) -> bool:
        """The job's threads wait on a run queue (WAITING_SHOWN) while processes outside the job hold
        cores (OUTSIDE_BUSY), and the processes named hold that much between them: the wait the
        evidence puts on other processes (``who_waits``), held to what the advice can act on. Not
        for a job confined to fewer cores than the host's (an affinity set or a CPU quota: the cores
        busy outside the job may be others, and a quota's throttling is a run-queue wait too)."""
        confined = self.host_cores is not None and self.cores < self.host_cores - CONFINED_SLACK
        named = sum(c for _, c in self.outside_named)
        return (
            not confined
            and (self.waiting or 0.0) >= WAITING_SHOWN
            and (self.outside or 0.0) >= OUTSIDE_BUSY
            and named >= OUTSIDE_BUSY
        )

    @property
    def serial(self) -> bool:
        return self.hot >= ONE_CORE

    @property
    def busy_evidence(self) -> bool:
        return self.saturated or self.contended or self.serial

    def who_waits(self) -> str:
        """Whom the job's threads wait for a CPU behind: processes outside the job (measured as the
        host's busy cores less the job's), or its own threads (ranks, loader workers) wanting more
        than the cores; said only as far as the figures show it."""
        if self.outside is not None and self.outside >= OUTSIDE_BUSY:
            named = ", ".join(self.outside_said)
            return f"other processes share these cores ({self.outside:.2f} cores busy outside the job" + (
                f": {named})" if named else ")"
            )
        own = f"{self.ranks} ranks" if self.ranks > 1 else "the training process"
        if self.n_workers:
            own += f" and {self.n_workers:.0f} loader workers"
        if self.demand is not None and self.demand >= SATURATED * self.cores:
            return f"the job's own threads ({own}) want more than the {self.cores:g} cores and wait for each other"
        if self.outside is not None:
            return f"behind the job's own threads ({own}); {self.outside:.2f} cores busy outside the job"
        return "behind other threads (the host's busy cores outside the job unknown)"

    def describe(self) -> list[str]:
        ev = []
        if self.busy is not None:
            ev.append(
                f"job's processes at {self.busy:.2f} of the {self.cores:g} cores they may use"
                + (f" ({self.ranks} ranks)" if self.ranks > 1 else "")
            )
        elif self.host is not None:
            ev.append(f"host CPU {pct(self.host)} busy")
        hot = max(self.main or 0.0, self.hottest or 0.0)
        if self.main is not None or self.hottest is not None:
            ev.append(
                f"hottest training thread at {hot:.2f} of a core"
                + (" (main thread)" if (self.main or 0) >= hot else "")
            )
        if self.waiting is not None and self.waiting >= WAITING_SHOWN:
            ev.append(
                f"the job's threads runnable but waiting for a CPU {self.waiting:.2f} cores' worth of time "
                f"(busiest thread running or waiting {self.hot:.2f} of the time): {self.who_waits()}"
            )
        if self.workers is not None and self.n_workers:
            ev.append(
                f"{self.n_workers:.0f} loader workers at {self.workers:.2f} cores "
                f"(busiest {self.worker_hot:.2f} running or waiting)"
            )
        if self.pressure is not None and self.pressure >= CPU_STALL:
            ev.append(f"runnable tasks waiting for a CPU {pct(self.pressure)} of the time (CPU pressure stalls)")
        return ev


def loader_workers(counted: float | None, facts: Mapping[str, Any]) -> float | None:
    """The loader's worker processes: the DataLoader's own ``num_workers`` (the hook's fact) when
    known, else the processes counted over the window (a mean: 0.6 while the worker started within
    it, which the loader model read as 0.6 workers and predicted x3.32 for 1 -> 2 where x1.74 was
    measured)."""
    n = facts.get("loader_workers")
    if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
        return float(n)
    return counted


def cpu_state(w: WindowStats) -> CpuState:
    g = w.get
    usable = g(Resource.CPU_COMPUTE, "job", "usable_cores")
    cores = usable or g(Resource.CPU_COMPUTE, "host", "cores") or 1.0
    workers = g(Resource.CPU_COMPUTE, "job", "worker_busy_cores")
    n = g(Resource.CPU_COMPUTE, "job", "workers")
    processes = g(Resource.CPU_COMPUTE, "job", "processes")
    if n is None and processes is not None:  # traces before roles: the root and its workers
        n = processes - 1.0
    if n is None:
        n = float((w.phases.facts.get("loader_workers") if w.phases else None) or 0)
    ranks = g(Resource.CPU_COMPUTE, "job", "ranks")
    psi = g(Resource.CPU_COMPUTE, "job", "pressure_some")
    host_busy, job_busy = g(Resource.CPU_COMPUTE, "host", "busy_cores"), g(Resource.CPU_COMPUTE, "job", "busy_cores")
    launcher = g(Resource.CPU_COMPUTE, "job", "launcher_busy_cores")
    own = g(Resource.CPU_COMPUTE, "sidecar", "busy_cores")  # the tool's own (py-spy): not other processes
    outside = None if host_busy is None or job_busy is None else outside_cores(host_busy, job_busy, launcher, own)
    return CpuState(
        cores=cores,
        busy=g(Resource.CPU_COMPUTE, "job", "busy_cores"),
        main=g(Resource.CPU_COMPUTE, "job", "main_busy_cores"),
        hottest=g(Resource.CPU_COMPUTE, "job", "hottest_thread_busy"),
        workers=workers,
        worker_max=g(Resource.CPU_COMPUTE, "job", "worker_max_busy_cores"),
        n_workers=max(0.0, n),
        ranks=int(round(ranks)) if ranks is not None else 1,
        host=g(Resource.CPU_COMPUTE, "host", "utilization"),
        pressure=psi if psi is not None else g(Resource.CPU_COMPUTE, "host", "pressure_some"),
        main_demand=g(Resource.CPU_COMPUTE, "job", "main_thread_demand"),
        hottest_demand=g(Resource.CPU_COMPUTE, "job", "hottest_thread_demand"),
        worker_max_demand=g(Resource.CPU_COMPUTE, "job", "worker_max_demand"),
        waiting=g(Resource.CPU_COMPUTE, "job", "runqueue_wait_cores"),
        outside=outside,
        launch=g(Resource.CPU_COMPUTE, "job", "launch_thread_cores"),
        outside_named=outside_named(w),
        host_cores=g(Resource.CPU_COMPUTE, "host", "cores"),
    )


def outside_named(w: WindowStats) -> tuple[tuple[str, float], ...]:
    """The window's busiest processes outside the job, by name and pid: each one's cores averaged
    over the window's samples (a sample that did not name it counts as none), those at
    OUTSIDE_PROCESS_SHOWN or more, at most OUTSIDE_TOP of them."""
    n = max(1, w.samples)
    found = [
        (d, s.mean * min(s.count, n) / n)
        for (r, d, m), s in w.stats.items()
        if r == Resource.CPU_COMPUTE and m == OUTSIDE_METRIC
    ]
    found = [(d, c) for d, c in found if c >= OUTSIDE_PROCESS_SHOWN]
    return tuple(sorted(found, key=lambda x: -x[1])[:OUTSIDE_TOP])
