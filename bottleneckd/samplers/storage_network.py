"""Storage network bandwidth: network file systems among the mounts, NFS bytes from mountstats.

Lustre, GPFS, CephFS and FUSE mounts have no generic byte counter: they are listed with their
throughput unknown, and the reason."""

from __future__ import annotations

from pathlib import Path

from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.model.resources import Resource
from bottleneckd.model.sample import Reading, utilization
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.samplers.base import Rates


def read_nfs_bytes(proc_root: str) -> dict[str, float]:
    """mountpoint -> bytes read + written over the wire (serverread + serverwrite)."""
    out: dict[str, float] = {}
    try:
        text = (Path(proc_root) / "self" / "mountstats").read_text()
    except OSError:
        return out
    mp = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("device "):
            parts = s.split()
            mp = parts[4] if len(parts) > 7 and parts[7].startswith("nfs") else None
        elif mp and s.startswith("bytes:"):
            f = [int(x) for x in s.split()[1:]]
            if len(f) >= 6:
                out[mp] = float(f[4] + f[5])
    return out


class StorageNetworkSampler:
    name = "storage_network"

    def __init__(self, peaks: PeakTable, machine: Machine, proc_root: str = "/proc") -> None:
        self._mounts = [m for m in machine.mounts if m.network]
        self._peaks = peaks
        self._proc = proc_root
        self._rates = Rates()

    def available(self) -> tuple[bool, str]:
        return (True, "") if self._mounts else (False, "no network file system is mounted")

    def sample(self) -> list[Reading]:
        nfs = read_nfs_bytes(self._proc)
        out: list[Reading] = []
        for m in self._mounts:
            peak = self._peaks.value(Resource.STORAGE_NETWORK_BANDWIDTH, m.mountpoint)
            if m.mountpoint in nfs:
                out += utilization(
                    Resource.STORAGE_NETWORK_BANDWIDTH,
                    m.mountpoint,
                    self._rates.rate(m.mountpoint, nfs[m.mountpoint]),
                    peak,
                    "B/s",
                    "first interval",
                )
            else:
                out += utilization(
                    Resource.STORAGE_NETWORK_BANDWIDTH,
                    m.mountpoint,
                    None,
                    peak,
                    "B/s",
                    f"{m.fstype}: no generic byte counter (NFS mountstats only)",
                )
        return out
