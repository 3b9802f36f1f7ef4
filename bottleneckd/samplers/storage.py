"""Storage bandwidth (bytes and operations per second, busy time, queue depth per block device)
and storage capacity (free space on the mounts the job uses)."""

from __future__ import annotations

from pathlib import Path

import psutil

from bottleneckd.hardware.detect.host import mount_of
from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.model.sample import Reading, utilization
from bottleneckd.samplers.base import Rates


def read_diskstats(proc_root: str) -> dict[str, tuple[int, int]]:
    """name -> (I/Os in flight, weighted ms doing I/O), from /proc/diskstats."""
    out = {}
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

    def __init__(self, peaks: PeakTable, machine: Machine, paths: tuple[str, ...] = (".",), proc_root: str = "/proc") -> None:
        self._peaks = peaks
        self._disks = [b.name for b in machine.block_devices]
        self._mounts = machine.mounts
        self._paths = paths
        self._proc = proc_root
        self._rates = Rates()

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
            busy = r(f"{d}.busy", float(getattr(c, "busy_time", 0.0)) / 1000.0)
            nbytes = None if rb is None or wb is None else rb + wb
            ops = None if ro is None or wo is None else ro + wo
            seq_peak = self._peaks.value("storage_bandwidth", d, "sequential_read")
            iops_peak = self._peaks.value("storage_bandwidth", d, "random_read_4k_iops")
            byte_util = nbytes / seq_peak if nbytes is not None and seq_peak else None
            op_util = ops / iops_peak if ops is not None and iops_peak else None
            known = [u for u in (byte_util, op_util) if u is not None]
            why = "first interval" if nbytes is None else "peak unknown; run 'bottleneckd calibrate'"
            out += [
                Reading("storage_bandwidth", d, "throughput", nbytes, "B/s"),
                Reading("storage_bandwidth", d, "read_bytes_per_second", rb, "B/s"),
                Reading("storage_bandwidth", d, "operations_per_second", ops, "IO/s"),
                Reading("storage_bandwidth", d, "read_operations_per_second", ro, "IO/s"),
                Reading("storage_bandwidth", d, "byte_utilization", byte_util, "ratio", "" if byte_util is not None else why),
                Reading("storage_bandwidth", d, "operation_utilization", op_util, "ratio", "" if op_util is not None else why),
                Reading("storage_bandwidth", d, "utilization", max(known) if known else None, "ratio", "" if known else why),
                Reading("storage_bandwidth", d, "busy", None if busy is None else min(1.0, busy), "ratio"),
                Reading("storage_bandwidth", d, "peak", seq_peak, "B/s"),
            ]
            if d in stats:
                inflight, weighted_ms = stats[d]
                q = r(f"{d}.weighted", weighted_ms / 1000.0)
                out.append(Reading("storage_bandwidth", d, "queue_depth", q, "requests"))
                out.append(Reading("storage_bandwidth", d, "in_flight", float(inflight), "requests"))
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
            out += utilization("storage_capacity", m.mountpoint, float(du.used), float(du.total), "B")
            out.append(Reading("storage_capacity", m.mountpoint, "free", float(du.free), "B"))
        return out
