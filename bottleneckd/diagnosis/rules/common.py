"""Shared by the rule families: thresholds (sourced in FINDINGS.md) and formatting helpers.

Thresholds: input-bound at >=5% (moderate) and >=20% (high) of step time waiting for data
(TensorFlow's input-pipeline analyzer); SM activity >=0.8 for an efficient GPU job (DCGM); DRAM
activity ~0.8 is the practical maximum; communication >10% of step time (PyTorch profiler);
memory over 90% of capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.units import fmt_seconds, fmt_value

INPUT_MODERATE = 0.05
INPUT_HIGH = 0.20
COMM_HIGH = 0.10
SM_EFFICIENT = 0.80
DRAM_PRACTICAL_MAX = 0.80
CAPACITY_HIGH = 0.90
BUSY = 0.60
NEAR_PEAK_FLOOR = 0.04  # achieved rate below 4% of both peaks: overhead-bound, not roofline-bound


def pct(x: float | None) -> str:
    return "unknown" if x is None else f"{x * 100:.0f}%"


#: a removable stage's share is taken as at most this: a step entirely in it (a job that only
#: waits for data) would be without bound faster without it; the figure then says 100x, never
#: "no removable stage", which contradicts the evidence of the stage's share
SHARE_CAP = 0.99


def headroom(share: float | None, samples: int | None = None) -> float | None:
    """Step speed-up if a removable stage holding ``share`` of the step vanished (Figure 15's
    vertical line). ``samples``: the share was counted from that many stack samples (attach), so
    k of n samples in the stage is never taken as exactly all of the step: (k + 1/2) / (n + 1)
    (the Jeffreys estimate; 4 of 4 samples -> 90%, 10x; 40 of 40 -> 99%)."""
    if share is None:
        return None
    if samples:
        share = (share * samples + 0.5) / (samples + 1)
    return 1.0 / (1.0 - min(share, SHARE_CAP))


def stack_samples(w: WindowStats) -> int | None:
    """How many stack samples the window's phase shares were counted from (None: timed steps)."""
    p = w.phases
    return p.steps if p is not None and p.sampled else None


def storage_evidence(w: WindowStats) -> tuple[float, list[str], str | None]:
    """How busy the busiest local disk is, and whether by operations or bytes."""
    best = w.busiest("storage_bandwidth")
    if best is None:
        busy = w.get("storage_bandwidth", None, "busy")
        return (busy or 0.0) * 0.8, ([f"disk busy {pct(busy)} of the time (no peak known)"] if busy else []), None
    dev, util = best
    ops = w.get("storage_bandwidth", dev, "operation_utilization")
    byts = w.get("storage_bandwidth", dev, "byte_utilization")
    ev = [
        f"{dev}: {fmt_value(w.get('storage_bandwidth', dev, 'operations_per_second'), 'IO/s')} = {pct(ops)} of its 4 KiB-read IOPS peak, "
        f"{fmt_value(w.get('storage_bandwidth', dev, 'throughput'), 'B/s')} = {pct(byts)} of its byte bandwidth"
    ]
    kind = "operations" if (ops or 0) > (byts or 0) else "bytes"
    return util, ev, kind


def fmt_s(x: float | None) -> str:
    return fmt_seconds(x)


def compute_share(w: WindowStats) -> float | None:
    """forward+backward+optimizer+gpu_wait as a share of step time; None without phases."""
    p = w.phases
    if p is None:
        return None
    return sum(p.share(k) or 0.0 for k in ("forward", "backward", "optimizer", "gpu_wait"))


def runs_on_gpu(w: WindowStats) -> bool:
    """The job trains on a GPU this host samples (the device fact, else any GPU reading)."""
    facts = w.phases.facts if w.phases else {}
    return facts.get("device", "cuda" if w.devices("gpu_compute") else "cpu").startswith("cuda") and bool(
        w.devices("gpu_compute")
    )


# --- peak-free evidence -------------------------------------------------------------------

SATURATED = 0.80  # the job's processes at >= 80% of the cores they may use
ONE_CORE = 0.85  # one thread at >= 85% of a core: a serial step (Python under the GIL)
D_THREADS = 0.3  # job threads in uninterruptible (disk) wait, mean over the window
IO_STALL = 0.20
CPU_STALL = 0.20
#: a disk busy this much of the time while the job's own reads miss the page cache is its bottleneck
#: candidate; below it the disk has room and waits elsewhere dominate
#: cores busy outside the job at or above which its threads' run-queue wait is put on other
#: processes: a quarter of a core (psutil's host and per-process rates over the same ~1 s interval
#: differ by a few hundredths of a core on an idle host; this leaves a wide margin)
OUTSIDE_BUSY = 0.25
DISK_BUSY_WITH_MISSES = 0.3  # PSI cpu "some": runnable tasks waiting for a CPU >= 20% of the time  # PSI io "some": tasks stalled on I/O >= 20% of the time
#: achieved operand bytes per second per core the job ran on, below which it cannot be DRAM-bound
#: on any current machine: 4% (the near-peak floor) of one DDR4-3200 channel's 25.6 GB/s (JEDEC
#: JESD79-4). Per core, because on a shared machine bytes/s shrink with the CPU time the job gets
MIN_DRAM_BYTES = NEAR_PEAK_FLOOR * 25.6e9


@dataclass(frozen=True)
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
    #: cores busy on the host outside the job (host busy minus the job's ranks, workers and launcher)
    outside: float | None = None

    @property
    def demand(self) -> float | None:
        return None if self.busy is None else self.busy + (self.waiting or 0.0)

    @property
    def hot(self) -> float:
        """The busiest single thread, running or waiting to run (0..1)."""
        return max(self.main or 0.0, self.hottest or 0.0, self.main_demand or 0.0, self.hottest_demand or 0.0)

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
            return f"other processes share these cores ({self.outside:.2f} cores busy outside the job)"
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
        if self.waiting is not None and self.waiting >= 0.1:
            ev.append(
                f"the job's threads runnable but waiting for a CPU {self.waiting:.2f} cores' worth of time "
                f"(busiest thread running or waiting {self.hot:.2f} of the time): {self.who_waits()}"
            )
        if self.workers is not None and self.n_workers:
            ev.append(
                f"{self.n_workers:.0f} loader workers at {self.workers:.2f} cores (busiest {self.worker_hot:.2f} running or waiting)"
            )
        if self.pressure is not None and self.pressure >= CPU_STALL:
            ev.append(f"runnable tasks waiting for a CPU {pct(self.pressure)} of the time (CPU pressure stalls)")
        return ev


def cpu_state(w: WindowStats) -> CpuState:
    g = w.get
    usable = g("cpu_compute", "job", "usable_cores")
    cores = usable or g("cpu_compute", "host", "cores") or 1.0
    workers = g("cpu_compute", "job", "worker_busy_cores")
    n = g("cpu_compute", "job", "workers")
    if n is None and g("cpu_compute", "job", "processes") is not None:  # traces before roles: the root and its workers
        n = g("cpu_compute", "job", "processes") - 1.0
    if n is None:
        n = float((w.phases.facts.get("loader_workers") if w.phases else None) or 0)
    ranks = g("cpu_compute", "job", "ranks")
    psi = g("cpu_compute", "job", "pressure_some")
    host_busy, job_busy = g("cpu_compute", "host", "busy_cores"), g("cpu_compute", "job", "busy_cores")
    launcher = g("cpu_compute", "job", "launcher_busy_cores") or 0.0
    outside = max(0.0, host_busy - job_busy - launcher) if host_busy is not None and job_busy is not None else None
    return CpuState(
        cores,
        g("cpu_compute", "job", "busy_cores"),
        g("cpu_compute", "job", "main_busy_cores"),
        g("cpu_compute", "job", "hottest_thread_busy"),
        workers,
        g("cpu_compute", "job", "worker_max_busy_cores"),
        max(0.0, n),
        int(round(ranks)) if ranks is not None else 1,
        g("cpu_compute", "host", "utilization"),
        psi if psi is not None else g("cpu_compute", "host", "pressure_some"),
        g("cpu_compute", "job", "main_thread_demand"),
        g("cpu_compute", "job", "hottest_thread_demand"),
        g("cpu_compute", "job", "worker_max_demand"),
        g("cpu_compute", "job", "runqueue_wait_cores"),
        outside,
    )


def io_wait(w: WindowStats) -> tuple[float, list[str]]:
    """How strongly the job waits on storage, from evidence that needs no peak: its threads in
    uninterruptible (D) state, I/O pressure stalls, iowait, disk busy time and queue depth, and the
    job's reads reaching the block device (read_bytes) rather than the page cache (read_chars).
    Returns (0..1, evidence)."""
    g = w.get
    ev: list[str] = []
    score = 0.0
    d = g("cpu_compute", "job", "threads_in_disk_wait")
    if d is None:
        d = g("cpu_compute", "job", "processes_in_disk_wait")
    if d is not None and d >= D_THREADS:
        score = max(score, min(1.0, 0.5 + d / 2))
        ev.append(f"{d:.1f} of the job's threads in uninterruptible (disk) wait on average")
    jpsi = g("storage_bandwidth", "job", "pressure_some")
    hpsi = g("storage_bandwidth", "host", "pressure_some")
    reads = g("storage_bandwidth", "job", "read_bytes_per_second")
    chars = g("storage_bandwidth", "job", "read_chars_per_second")
    calls = g("storage_bandwidth", "job", "read_calls_per_second")
    job_reads_disk = reads is not None and reads > 0
    psi = jpsi if jpsi is not None else hpsi
    if psi is not None and psi >= IO_STALL and (job_reads_disk or (d or 0) > 0):
        score = max(score, min(1.0, 0.4 + psi))
        ev.append(
            f"tasks stalled on I/O {pct(psi)} of the time (pressure stall information{'' if jpsi is not None else ', host'})"
        )
    iowait = g("cpu_compute", "host", "iowait")
    if iowait is not None and iowait >= 0.3:
        score = max(score, min(1.0, iowait * 2))
        ev.append(f"iowait {pct(iowait)}")
    busy_dev = w.busiest("storage_bandwidth", "busy")
    if busy_dev is not None and busy_dev[1] >= BUSY and (job_reads_disk or score):
        score = max(score, busy_dev[1] * 0.9)
    # the job's reads miss the page cache and reach a disk that is busy a good part of the time
    misses = reads is not None and chars and reads >= 1e6 and reads >= 0.5 * chars
    if misses and busy_dev is not None and busy_dev[1] >= DISK_BUSY_WITH_MISSES:
        score = max(score, min(1.0, 0.5 + busy_dev[1] / 2))
        q = g("storage_bandwidth", busy_dev[0], "queue_depth")
        ev.append(
            f"{busy_dev[0]} busy {pct(busy_dev[1])} of the time"
            + (f", {q:.1f} requests queued on average" if q is not None else "")
            + " (no peak needed)"
        )
    elif score and busy_dev is not None and busy_dev[1] >= DISK_BUSY_WITH_MISSES:
        ev.append(f"{busy_dev[0]} busy {pct(busy_dev[1])} of the time")
    if score and reads is not None:
        hit = f", {pct(max(0.0, 1 - reads / chars))} served from the page cache" if chars else ""
        per = f" in {fmt_value(calls, 'reads/s')}" if calls else ""
        ev.append(f"job reads {fmt_value(reads, 'B/s')} from the block device{per}{hit}")
        if calls and reads / max(calls, 1.0) < 64 * 1024:
            ev.append(f"{fmt_value(reads / calls, 'B')} per read call: small reads, limited by operations per second")
    return score, ev


# --- communication that shares the compute's cores ------------------------------------------

#: gloo on a CPU job reduces gradients with the same cores backward computes on: communication
#: "overlapped" with backward there is not free, it takes cores the step needs. Counted as the
#: step's cost when the job's cores are full (saturated, or contended by the job's own threads)
CPU_BACKENDS = ("gloo", "mpi", "ucc")
#: all of a step's communication (exposed + overlapped on the same cores) above this share names
#: communication; below it compute is the larger cost and the comm is what it is
SHARED_COMM_HIGH = 0.35


@dataclass(frozen=True)
class CommCost:
    """One step's communication as the DDP hook timed it, and how much of it costs the step."""

    step: float  # seconds per step
    exposed: float  # seconds per step backward waited after its last gradient
    overlapped: float  # seconds per step in flight while backward still ran
    shares_cores: bool  # the overlapped part ran on the cores backward needed (gloo on CPU, cores full)
    why: str

    @property
    def cost(self) -> float:
        """Seconds per step the communication costs: the exposed part, plus the overlapped part
        where it shares the compute's cores."""
        return self.exposed + (self.overlapped if self.shares_cores else 0.0)

    @property
    def share(self) -> float:
        return min(1.0, self.cost / self.step) if self.step > 0 else 0.0

    @property
    def overlapped_share(self) -> float:
        return min(1.0, self.overlapped / self.step) if self.step > 0 and self.shares_cores else 0.0

    def describe(self) -> str:
        total = self.exposed + self.overlapped
        s = (
            f"all-reduce in flight {fmt_s(total)} per step: {fmt_s(self.exposed)} exposed (backward waits), "
            f"{fmt_s(self.overlapped)} overlapped with backward"
        )
        if self.shares_cores:
            return (
                s
                + f" on the same cores ({self.why}): with the exposed part, {pct(self.share)} of the {fmt_s(self.step)} step"
            )
        return s + (f" ({self.why})" if self.why else "")


def comm_cost(w: WindowStats) -> CommCost | None:
    """The step's timed communication (DDP comm hook facts), or None when not timed."""
    p = w.phases
    if p is None or not p.steps or p.wall_seconds <= 0:
        return None
    f = p.facts
    total, exposed = f.get("comm_seconds_per_step"), f.get("comm_exposed_seconds_per_step")
    if total is None or exposed is None:
        return None
    overlapped = f.get("comm_overlapped_seconds_per_step")
    overlapped = max(0.0, total - exposed) if overlapped is None else overlapped
    step = p.wall_seconds / p.steps
    backend = str(f.get("comm_backend") or "")
    on_cpu = not runs_on_gpu(w) and backend in CPU_BACKENDS
    cpu = cpu_state(w)
    full = cpu.saturated or cpu.contended
    if on_cpu and full:
        why = f"{backend} on CPU, the ranks' cores full"
    elif on_cpu:
        why = f"{backend} on CPU, but the ranks' cores have room: the overlap is free"
    elif not backend:
        why = "backend unknown: overlap taken as free"
    else:
        why = f"{backend}: on its own engine, overlap free"
    return CommCost(step, float(exposed), float(overlapped), on_cpu and full, why)
