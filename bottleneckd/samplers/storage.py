"""Storage bandwidth (bytes and operations per second, busy time, queue depth per block device;
I/O pressure stalls; the job's own read calls and bytes) and storage capacity (free space on the
mounts the job uses). Busy time, queue depth, stalls and the job's reads need no peak."""

from __future__ import annotations

from pathlib import Path

import psutil

from bottleneckd.hardware.detect.host import mount_of
from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.model.resources import Resource
from bottleneckd.model.sample import Reading, utilization
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.samplers.base import Rates
from bottleneckd.samplers.pressure import Pressure, cgroup_dir
from bottleneckd.samplers.process_tree import LAUNCHER, RANK, WORKER, ProcessTree


def read_diskstats(proc_root: str) -> dict[str, tuple[int, int]]:
    """name -> (I/Os in flight, weighted ms doing I/O), from /proc/diskstats."""
    out: dict[str, tuple[int, int]] = {}
    try:
        text = (Path(proc_root) / "diskstats").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 14:
            out[f[2]] = (int(f[11]), int(f[13]))
    return out


class StorageSampler:
    name = "storage"

    def __init__(
        self,
        peaks: PeakTable,
        machine: Machine,
        paths: tuple[str, ...] = (".",),
        proc_root: str = "/proc",
        tree: ProcessTree | None = None,
        cgroup_root: str = "/sys/fs/cgroup",
    ) -> None:
        self._peaks = peaks
        self._disks = [b.name for b in machine.block_devices]
        self._mounts = machine.mounts
        self._paths = paths
        self._proc = proc_root
        self._rates = Rates()
        self._tree = tree
        self._cgroot = cgroup_root
        self._host_psi = Pressure(Path(proc_root) / "pressure" / "io")
        self._job_psi: Pressure | None = None

    def available(self) -> tuple[bool, str]:
        return (True, "") if self._disks else (False, "no block device detected")

    def sample(self) -> list[Reading]:
        out: list[Reading] = []
        counters = psutil.disk_io_counters(perdisk=True, nowrap=True) or {}
        stats = read_diskstats(self._proc)
        for d in self._disks:
            c = counters.get(d)
            if c is None:
                continue
            r = self._rates.rate
            rb, wb = r(f"{d}.rb", float(c.read_bytes)), r(f"{d}.wb", float(c.write_bytes))
            ro, wo = r(f"{d}.ro", float(c.read_count)), r(f"{d}.wo", float(c.write_count))
            busy_ms = getattr(c, "busy_time", None)  # not on every platform: unknown, never 0% busy
            busy = r(f"{d}.busy", float(busy_ms) / 1000.0) if busy_ms is not None else None
            nbytes = None if rb is None or wb is None else rb + wb
            ops = None if ro is None or wo is None else ro + wo
            seq_peak = self._peaks.value(Resource.STORAGE_BANDWIDTH, d, "sequential_read")
            iops_peak = self._peaks.value(Resource.STORAGE_BANDWIDTH, d, "random_read_4k_iops")
            byte_util = nbytes / seq_peak if nbytes is not None and seq_peak else None
            op_util = ops / iops_peak if ops is not None and iops_peak else None
            known = [u for u in (byte_util, op_util) if u is not None]
            why = "first interval" if nbytes is None else "peak unknown; run 'bottleneckd calibrate'"
            out += [
                Reading(Resource.STORAGE_BANDWIDTH, d, "throughput", nbytes, "B/s"),
                Reading(Resource.STORAGE_BANDWIDTH, d, "read_bytes_per_second", rb, "B/s"),
                Reading(Resource.STORAGE_BANDWIDTH, d, "operations_per_second", ops, "IO/s"),
                Reading(Resource.STORAGE_BANDWIDTH, d, "read_operations_per_second", ro, "IO/s"),
                Reading(
                    Resource.STORAGE_BANDWIDTH,
                    d,
                    "byte_utilization",
                    byte_util,
                    "ratio",
                    "" if byte_util is not None else why,
                ),
                Reading(
                    Resource.STORAGE_BANDWIDTH,
                    d,
                    "operation_utilization",
                    op_util,
                    "ratio",
                    "" if op_util is not None else why,
                ),
                Reading(
                    Resource.STORAGE_BANDWIDTH,
                    d,
                    "utilization",
                    max(known) if known else None,
                    "ratio",
                    "" if known else why,
                ),
                Reading(Resource.STORAGE_BANDWIDTH, d, "busy", None if busy is None else min(1.0, busy), "ratio"),
                Reading(Resource.STORAGE_BANDWIDTH, d, "peak", seq_peak, "B/s"),
                # the kernel's counters themselves, for Prometheus's rate() (outputs/metric_names.py)
                Reading(Resource.STORAGE_BANDWIDTH, d, "read_bytes_total", float(c.read_bytes), "B"),
                Reading(Resource.STORAGE_BANDWIDTH, d, "written_bytes_total", float(c.write_bytes), "B"),
                Reading(Resource.STORAGE_BANDWIDTH, d, "reads_completed_total", float(c.read_count), "count"),
                Reading(Resource.STORAGE_BANDWIDTH, d, "writes_completed_total", float(c.write_count), "count"),
            ]
            if busy_ms is not None:
                out.append(
                    Reading(Resource.STORAGE_BANDWIDTH, d, "io_time_seconds_total", float(busy_ms) / 1000.0, "s")
                )
            if d in stats:
                inflight, weighted_ms = stats[d]
                q = r(f"{d}.weighted", weighted_ms / 1000.0)
                out.append(Reading(Resource.STORAGE_BANDWIDTH, d, "queue_depth", q, "requests"))
                out.append(Reading(Resource.STORAGE_BANDWIDTH, d, "in_flight", float(inflight), "requests"))
        some, full, why = self._host_psi.read()
        out.append(Reading(Resource.STORAGE_BANDWIDTH, "host", "pressure_some", some, "ratio", why))
        out.append(Reading(Resource.STORAGE_BANDWIDTH, "host", "pressure_full", full, "ratio", why))
        if self._tree is not None:
            out += self._job_io()
        seen: set[str] = set()
        for path in self._paths:
            m = mount_of(path, self._mounts)
            if m is None or m.network or m.mountpoint in seen:
                continue  # statvfs on a dead network mount can hang: never on the sampling thread
            seen.add(m.mountpoint)
            try:
                du = psutil.disk_usage(m.mountpoint)
            except OSError:
                continue
            out += utilization(Resource.STORAGE_CAPACITY, m.mountpoint, float(du.used), float(du.total), "B")
            out.append(Reading(Resource.STORAGE_CAPACITY, m.mountpoint, "free", float(du.free), "B"))
        return out

    def _job_io(self) -> list[Reading]:
        """The job's own reads (ranks and loader workers, not the launcher), from /proc/PID/io:
        read calls, bytes asked for (read_chars, page cache hits included) and bytes the block
        layer fetched for it (read_bytes). Summed counters of processes that exit drop out, so the
        rate is over the processes alive at both reads."""
        tree = self._tree
        assert tree is not None
        calls = chars = fetched = written = 0.0
        readable = 0
        chars_known = True
        by_role: dict[str, float] = {RANK: 0.0, WORKER: 0.0, LAUNCHER: 0.0}
        for p in tree.members():
            role = tree.role(p.pid)
            try:
                io = p.io_counters()
            except Exception:  # noqa: BLE001 - gone, or /proc/PID/io not readable
                continue
            by_role[role] += io.read_bytes + io.write_bytes
            if role == LAUNCHER:
                continue
            readable += 1
            calls += io.read_count
            rc = getattr(io, "read_chars", None)  # Linux only: unknown, never 0 characters
            chars_known = chars_known and rc is not None
            chars += rc or 0
            fetched += io.read_bytes
            written += io.write_bytes
        if not readable:
            why = "/proc/PID/io of the job not readable"
            return [
                Reading(Resource.STORAGE_BANDWIDTH, "job", m, None, u, why)
                for m, u in (
                    ("read_calls_per_second", "1/s"),
                    ("read_chars_per_second", "B/s"),
                    ("read_bytes_per_second", "B/s"),
                )
            ]
        key = f"{readable}"  # a change in the set of processes resets the rates
        r = self._rates.rate
        cps = r(f"job.calls.{key}", calls)
        cs = r(f"job.chars.{key}", chars) if chars_known else None
        bs = r(f"job.bytes.{key}", fetched)
        ws = r(f"job.writes.{key}", written)
        cg = cgroup_dir(tree.pid, self._proc, self._cgroot)
        path = cg / "io.pressure" if cg else None
        if self._job_psi is None or self._job_psi.path != path:
            self._job_psi = Pressure(path)
        jsome, jfull, jwhy = self._job_psi.read()
        return [
            Reading(
                Resource.STORAGE_BANDWIDTH,
                "job",
                "read_calls_per_second",
                cps,
                "1/s",
                "first interval" if cps is None else "",
            ),
            Reading(
                Resource.STORAGE_BANDWIDTH,
                "job",
                "read_chars_per_second",
                cs,
                "B/s",
                ""
                if cs is not None
                else "first interval"
                if chars_known
                else "read_chars not reported on this platform",
            ),
            Reading(
                Resource.STORAGE_BANDWIDTH,
                "job",
                "read_bytes_per_second",
                bs,
                "B/s",
                "first interval" if bs is None else "",
            ),
            Reading(
                Resource.STORAGE_BANDWIDTH,
                "job",
                "write_bytes_per_second",
                ws,
                "B/s",
                "first interval" if ws is None else "",
            ),
            *(
                Reading(Resource.STORAGE_BANDWIDTH, "job", f"{role}_bytes_per_second", r(f"job.{role}.{key}", v), "B/s")
                for role, v in by_role.items()
            ),
            Reading(Resource.STORAGE_BANDWIDTH, "job", "pressure_some", jsome, "ratio", jwhy),
            Reading(Resource.STORAGE_BANDWIDTH, "job", "pressure_full", jfull, "ratio", jwhy),
        ]
