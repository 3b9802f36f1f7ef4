"""CPU memory bandwidth from hardware counters: resctrl MBM where the machine exposes it.

Most VMs and containers expose no memory-bandwidth counter; then the figure is unknown, with the
reason, and the sampler says so once instead of reporting 0.
"""

from __future__ import annotations

from pathlib import Path

from bottleneckd.model.resources import Resource
from bottleneckd.model.sample import Reading, utilization
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.samplers.base import Rates


class CpuMemoryBandwidthSampler:
    name = "cpu_memory_bandwidth"

    def __init__(self, peaks: PeakTable, sys_root: str = "/sys") -> None:
        self._mon = Path(sys_root) / "fs" / "resctrl" / "mon_data"
        self._peak = peaks.value(Resource.CPU_MEMORY_BANDWIDTH, "host")
        self._rates = Rates()

    def _domains(self) -> list[Path]:
        try:
            return sorted(d for d in self._mon.iterdir() if (d / "mbm_total_bytes").exists())
        except OSError:
            return []

    def available(self) -> tuple[bool, str]:
        if self._domains():
            return True, ""
        return (
            False,
            "no memory-bandwidth counters: resctrl MBM is not mounted at /sys/fs/resctrl "
            "(Intel RDT / AMD QoS needed; usually absent in VMs)",
        )

    def sample(self) -> list[Reading]:
        total = 0.0
        domains = self._domains()
        if not domains:
            ok, why = self.available()
            return utilization(Resource.CPU_MEMORY_BANDWIDTH, "host", None, self._peak, "B/s", why)
        for d in domains:
            try:
                total += float((d / "mbm_total_bytes").read_text().strip())
            except (OSError, ValueError):
                return utilization(
                    Resource.CPU_MEMORY_BANDWIDTH, "host", None, self._peak, "B/s", f"{d}/mbm_total_bytes unreadable"
                )
        return utilization(
            Resource.CPU_MEMORY_BANDWIDTH, "host", self._rates.rate("mbm", total), self._peak, "B/s", "first interval"
        )
