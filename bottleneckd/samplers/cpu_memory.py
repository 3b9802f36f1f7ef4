"""CPU memory: used and available, swap activity, the process tree's resident memory, PSI."""

from __future__ import annotations

from pathlib import Path

import psutil

from bottleneckd.model.resources import Resource
from bottleneckd.model.sample import Reading, utilization
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.samplers.base import Rates
from bottleneckd.samplers.pressure import Pressure
from bottleneckd.samplers.process_tree import LAUNCHER, RANK, WORKER, ProcessTree


class CpuMemorySampler:
    name = "cpu_memory"

    def __init__(self, peaks: PeakTable, tree: ProcessTree | None = None, proc_root: str = "/proc") -> None:
        self._tree = tree
        self._psi = Pressure(Path(proc_root) / "pressure" / "memory")
        self._rates = Rates()

    def available(self) -> tuple[bool, str]:
        return True, ""

    def sample(self) -> list[Reading]:
        vm = psutil.virtual_memory()
        used = float(vm.total - vm.available)
        out = utilization(Resource.CPU_MEMORY, "host", used, float(vm.total), "B")
        out.append(Reading(Resource.CPU_MEMORY, "host", "available", float(vm.available), "B"))
        sw = psutil.swap_memory()
        out.append(
            Reading(
                Resource.CPU_MEMORY, "host", "swap_in_bytes_per_second", self._rates.rate("sin", float(sw.sin)), "B/s"
            )
        )
        out.append(
            Reading(
                Resource.CPU_MEMORY,
                "host",
                "swap_out_bytes_per_second",
                self._rates.rate("sout", float(sw.sout)),
                "B/s",
            )
        )
        out.append(Reading(Resource.CPU_MEMORY, "host", "swap_in_bytes_total", float(sw.sin), "B"))
        out.append(Reading(Resource.CPU_MEMORY, "host", "swap_out_bytes_total", float(sw.sout), "B"))
        some, full, why = self._psi.read()
        out.append(Reading(Resource.CPU_MEMORY, "host", "pressure_some", some, "ratio", why))
        out.append(Reading(Resource.CPU_MEMORY, "host", "pressure_full", full, "ratio", why))
        if self._tree is not None:
            by_role = {RANK: 0.0, WORKER: 0.0, LAUNCHER: 0.0}
            for p in self._tree.members():
                try:
                    by_role[self._tree.role(p.pid)] += p.memory_info().rss
                except Exception:  # noqa: BLE001 - the process went away
                    continue
            # forked loader workers share pages with their rank: the sum over-counts shared pages
            out.append(Reading(Resource.CPU_MEMORY, "job", "resident_bytes", by_role[RANK] + by_role[WORKER], "B"))
            for role, v in by_role.items():
                out.append(Reading(Resource.CPU_MEMORY, "job", f"{role}_resident_bytes", v, "B"))
        return out
