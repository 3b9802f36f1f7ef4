"""CPU memory: used and available, swap activity, the process tree's resident memory, PSI."""

from __future__ import annotations

from pathlib import Path

import psutil

from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.model.sample import Reading, utilization
from bottleneckd.samplers.base import Rates
from bottleneckd.samplers.cpu_compute import read_psi
from bottleneckd.samplers.process_tree import ProcessTree


class CpuMemorySampler:
    name = "cpu_memory"

    def __init__(self, peaks: PeakTable, tree: ProcessTree | None = None, proc_root: str = "/proc") -> None:
        self._tree = tree
        self._psi = Path(proc_root) / "pressure" / "memory"
        self._rates = Rates()

    def available(self) -> tuple[bool, str]:
        return True, ""

    def sample(self) -> list[Reading]:
        vm = psutil.virtual_memory()
        used = float(vm.total - vm.available)
        out = utilization("cpu_memory", "host", used, float(vm.total), "B")
        out.append(Reading("cpu_memory", "host", "available", float(vm.available), "B"))
        sw = psutil.swap_memory()
        out.append(Reading("cpu_memory", "host", "swap_in_bytes_per_second", self._rates.rate("sin", float(sw.sin)), "B/s"))
        out.append(Reading("cpu_memory", "host", "swap_out_bytes_per_second", self._rates.rate("sout", float(sw.sout)), "B/s"))
        psi = read_psi(self._psi)
        out.append(Reading("cpu_memory", "host", "pressure_some", psi.get("some_avg10"), "ratio",
                           "" if psi else "pressure stall information not available"))
        if self._tree is not None:
            rss = 0.0
            for p in self._tree.members():
                try:
                    rss += p.memory_info().rss
                except Exception:  # noqa: BLE001
                    continue
            out.append(Reading("cpu_memory", "job", "resident_bytes", rss, "B"))
        return out
