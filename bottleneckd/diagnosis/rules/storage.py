"""Storage evidence: a disk's utilization where its peak is known, and (no peak needed) how strongly
the job waits on storage: its threads in disk wait, I/O pressure stalls, iowait, disk busy time and
the job's reads missing the page cache."""

from __future__ import annotations

from dataclasses import dataclass

from bottleneckd.diagnosis.rules.common import pct
from bottleneckd.diagnosis.thresholds import (
    BUSY,
    D_THREADS,
    DISK_BUSY_WITH_MISSES,
    FROM_DISK,
    IO_STALL,
    IOWAIT_HIGH,
    MISS_RATIO,
    MISS_READ_RATE,
    SMALL_READ,
)
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import Resource
from bottleneckd.model.units import fmt_value

# --- scores: chosen, not measured (they rank one piece of evidence against another) ---------------

DISK_BUSY_WEIGHT = 0.8
#: io_wait's scores: threads in D state score 0.5 plus half a point per thread; I/O stalls 0.4 plus
#: their share; iowait twice its share; a busy disk the job reads from 0.9 of its busy share; page-cache
#: misses on a busy disk 0.5 plus half its busy share
D_WAIT_BASE = 0.5
D_WAIT_PER_THREAD = 0.5
IO_STALL_BASE = 0.4
IOWAIT_WEIGHT = 2
BUSY_DISK_WEIGHT = 0.9
MISSES_BASE = 0.5
MISSES_PER_BUSY = 0.5


def storage_evidence(w: WindowStats) -> tuple[float, list[str], str | None]:
    """How busy the busiest local disk is, and whether by operations or bytes."""
    best = w.busiest(Resource.STORAGE_BANDWIDTH)
    if best is None:
        busy = w.get(Resource.STORAGE_BANDWIDTH, None, "busy")
        return (
            (busy or 0.0) * DISK_BUSY_WEIGHT,
            ([f"disk busy {pct(busy)} of the time (no peak known)"] if busy else []),
            None,
        )
    dev, util = best
    ops = w.get(Resource.STORAGE_BANDWIDTH, dev, "operation_utilization")
    byts = w.get(Resource.STORAGE_BANDWIDTH, dev, "byte_utilization")
    ev = [
        f"{dev}: {fmt_value(w.get(Resource.STORAGE_BANDWIDTH, dev, 'operations_per_second'), 'IO/s')} = {pct(ops)} "
        "of its 4 KiB-read IOPS peak, "
        f"{fmt_value(w.get(Resource.STORAGE_BANDWIDTH, dev, 'throughput'), 'B/s')} = {pct(byts)} of its byte bandwidth"
    ]
    kind = "operations" if (ops or 0) > (byts or 0) else "bytes"
    return util, ev, kind


@dataclass(frozen=True)
class StorageSigns:
    """The window's storage figures that need no peak."""

    d: float | None  # the job's threads (else processes) in uninterruptible (disk) wait
    psi: float | None  # I/O pressure stalls: the job's cgroup, else the host
    psi_of_job: bool
    reads: float | None  # bytes/s the job's reads fetch from the block device (page-cache misses)
    chars: float | None  # bytes/s the job's reads ask for
    calls: float | None  # read calls/s
    iowait: float | None
    busy_dev: tuple[str, float] | None  # the busiest disk by busy time
    queue: float | None  # its queue depth

    @property
    def job_reads_disk(self) -> bool:
        return self.reads is not None and self.reads > 0

    @property
    def misses(self) -> bool:
        """The job's reads miss the page cache: a good rate, mostly fetched from the device."""
        return bool(
            self.reads is not None
            and self.chars
            and self.reads >= MISS_READ_RATE
            and self.reads >= MISS_RATIO * self.chars
        )

    @property
    def busy_with_misses(self) -> bool:
        return self.busy_dev is not None and self.busy_dev[1] >= DISK_BUSY_WITH_MISSES


def storage_signs(w: WindowStats) -> StorageSigns:
    g = w.get
    d = g(Resource.CPU_COMPUTE, "job", "threads_in_disk_wait")
    if d is None:
        d = g(Resource.CPU_COMPUTE, "job", "processes_in_disk_wait")
    jpsi = g(Resource.STORAGE_BANDWIDTH, "job", "pressure_some")
    busy_dev = w.busiest(Resource.STORAGE_BANDWIDTH, "busy")
    return StorageSigns(
        d=d,
        psi=jpsi if jpsi is not None else g(Resource.STORAGE_BANDWIDTH, "host", "pressure_some"),
        psi_of_job=jpsi is not None,
        reads=g(Resource.STORAGE_BANDWIDTH, "job", "read_bytes_per_second"),
        chars=g(Resource.STORAGE_BANDWIDTH, "job", "read_chars_per_second"),
        calls=g(Resource.STORAGE_BANDWIDTH, "job", "read_calls_per_second"),
        iowait=g(Resource.CPU_COMPUTE, "host", "iowait"),
        busy_dev=busy_dev,
        queue=g(Resource.STORAGE_BANDWIDTH, busy_dev[0], "queue_depth") if busy_dev is not None else None,
    )


def _threads_in_disk_wait(s: StorageSigns) -> tuple[float, list[str]]:
    if s.d is not None and s.d >= D_THREADS:
        return min(1.0, D_WAIT_BASE + s.d * D_WAIT_PER_THREAD), [
            f"{s.d:.1f} of the job's threads in uninterruptible (disk) wait on average"
        ]
    return 0.0, []


def _io_stalls(s: StorageSigns) -> tuple[float, list[str]]:
    """I/O pressure stalls count when the job itself reads the disk or waits in D state."""
    if s.psi is not None and s.psi >= IO_STALL and (s.job_reads_disk or (s.d or 0) > 0):
        where = "" if s.psi_of_job else ", host"
        return min(1.0, IO_STALL_BASE + s.psi), [
            f"tasks stalled on I/O {pct(s.psi)} of the time (pressure stall information{where})"
        ]
    return 0.0, []


def _host_iowait(s: StorageSigns) -> tuple[float, list[str]]:
    if s.iowait is not None and s.iowait >= IOWAIT_HIGH:
        return min(1.0, s.iowait * IOWAIT_WEIGHT), [f"iowait {pct(s.iowait)}"]
    return 0.0, []


def _busy_disk(s: StorageSigns, score: float) -> float:
    """A disk busy most of the time counts when the job reads it or other signs already point at storage."""
    if s.busy_dev is not None and s.busy_dev[1] >= BUSY and (s.job_reads_disk or score):
        return s.busy_dev[1] * BUSY_DISK_WEIGHT
    return 0.0


def _cache_misses_on_busy_disk(s: StorageSigns) -> tuple[float, list[str]]:
    """The job's reads miss the page cache and reach a disk that is busy a good part of the time."""
    if not (s.misses and s.busy_with_misses):
        return 0.0, []
    assert s.busy_dev is not None
    dev, busy = s.busy_dev
    queued = f", {s.queue:.1f} requests queued on average" if s.queue is not None else ""
    return min(1.0, MISSES_BASE + busy * MISSES_PER_BUSY), [
        f"{dev} busy {pct(busy)} of the time{queued} (no peak needed)"
    ]


def _job_reads(s: StorageSigns) -> list[str]:
    """What the job reads from the block device, and whether its reads are small."""
    if s.reads is None:
        return []
    reads, chars, calls = s.reads, s.chars, s.calls
    # what the read calls returned and the block device did not: the page cache's, or a network
    # mount's (NFS, FUSE), whose reads never reach a local block device
    hit = f", {pct(max(0.0, 1 - reads / chars))} served without it (page cache or a network mount)" if chars else ""
    per = f" in {fmt_value(calls, 'reads/s')}" if calls else ""
    ev = [f"job reads {fmt_value(reads, 'B/s')} from the block device{per}{hit}"]
    size = (chars if chars else reads) / max(calls or 0.0, 1.0)  # bytes a read call asks for
    from_disk = not chars or reads >= FROM_DISK * chars  # most of them the block device's: its operations limit
    if calls and size < SMALL_READ and from_disk:
        ev.append(f"{fmt_value(size, 'B')} per read call: small reads, limited by operations per second")
    return ev


def io_wait(w: WindowStats) -> tuple[float, list[str]]:
    """How strongly the job waits on storage, from evidence that needs no peak: its threads in
    uninterruptible (D) state, I/O pressure stalls, iowait, disk busy time and queue depth, and the
    job's reads reaching the block device (read_bytes) rather than the page cache (read_chars).
    Returns (0..1, evidence): the strongest sign's score, the evidence of every sign seen."""
    s = storage_signs(w)
    score, ev = 0.0, list[str]()
    for sign in (_threads_in_disk_wait, _io_stalls, _host_iowait):
        found, found_ev = sign(s)
        score, ev = max(score, found), ev + found_ev
    score = max(score, _busy_disk(s, score))
    found, found_ev = _cache_misses_on_busy_disk(s)
    score, ev = max(score, found), ev + found_ev
    if not found_ev and score and s.busy_with_misses:
        assert s.busy_dev is not None
        ev.append(f"{s.busy_dev[0]} busy {pct(s.busy_dev[1])} of the time")
    if score:
        ev += _job_reads(s)
    return score, ev
