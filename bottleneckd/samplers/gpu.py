"""GPU sampler: compute, memory, memory bandwidth, PCIe and NVLink, power and clocks (NVML).

One read per field per GPU per tick. On GPUs with GPM (Hopper and later) SM activity, tensor
activity, the non-tensor FP32/FP16/FP64/integer pipes and DRAM bandwidth utilization come from
GPM; elsewhere they are unknown (the NVML "GPU utilization" is a busy-time fraction and is
reported under its own name). GPM's DRAM figure is a percentage of the *theoretical* peak
(nvml.h), so bytes/s are that times the catalog figure, not a calibrated one. A lost GPU (also
one lost before the sampler started) is marked down, its series dropped, and the others go on.

Which GPUs are the job's: every tenth tick, with the process lists, whether a process of the job's
tree runs on each GPU; ``job_process`` (1 or 0) repeats that answer on every tick, so every
window has it, and the rules decide on the job's GPUs only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from bottleneckd.hardware import nvml as nv
from bottleneckd.hardware.detect.gpus import resolve_backend
from bottleneckd.model.sample import Reading, utilization
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.samplers.base import Rates
from bottleneckd.samplers.process_tree import ProcessTree

log = logging.getLogger(__name__)


class GpuSampler:
    name = "gpu"

    def __init__(
        self,
        peaks: PeakTable,
        backend: nv.NvmlBackend | None | str = "auto",
        process_every: int = 10,
        tree: ProcessTree | None = None,
    ) -> None:
        self._why: dict[str, str] = {}
        self._nv = resolve_backend(backend, self._why)
        self._peaks = peaks
        self._rates = Rates()
        self._down: set[int] = set()
        self._gpm: dict[int, bool] = {}
        for i in range(self._nv.device_count() if self._nv else 0):
            try:
                self._gpm[i] = self._nv.gpm_supported(i)  # type: ignore[union-attr]
            except nv.GpuLostError as e:  # lost before we started: down from the first tick
                log.error("%s; it is reported down", e)
                self._down.add(i)
        self._tree = tree
        self._job_gpu: dict[int, bool] = {}  # unit -> a job process runs there (last process-list read)
        self._process_every = process_every
        self._tick = 0
        self._link: dict[int, tuple[int | None, int | None]] = {}

    def available(self) -> tuple[bool, str]:
        if self._nv is None:
            return False, self._why.get("gpus", "NVML unavailable")
        if self._nv.device_count() == 0:
            return False, "NVML reports no GPU"
        return True, ""

    def sample(self) -> list[Reading]:
        if self._nv is None:
            return []
        out: list[Reading] = []
        self._tick += 1
        refresh = (self._tick - 1) % self._process_every == 0  # process lists and PCIe links: every 10th tick
        job = {p.pid for p in self._tree.members()} if self._tree is not None and refresh else None
        for i in range(self._nv.device_count()):
            dev = self._nv.label(i)
            if i in self._down:
                out.append(Reading("gpu_compute", dev, "up", 0.0, "bool"))
                continue
            try:
                out += self._one(i, dev, refresh, job)
                out.append(Reading("gpu_compute", dev, "up", 1.0, "bool"))
            except nv.GpuLostError as e:
                log.error("%s; its series are dropped, sampling goes on", e)
                self._down.add(i)
                out = [r for r in out if r.device != dev]
                out.append(Reading("gpu_compute", dev, "up", 0.0, "bool"))
        return out

    def _one(self, i: int, dev: str, refresh: bool, job: set[int] | None) -> list[Reading]:
        """Every reading of unit ``i``; ``refresh``: read the process lists and the PCIe link too,
        ``job``: the job's PIDs, to say whether it runs on this unit."""
        gpm = self._nv.gpm_metrics(i) if self._gpm.get(i) else None  # type: ignore[union-attr]
        no_gpm = (
            "GPM not supported on this GPU (Hopper or later needed)" if not self._gpm.get(i) else "first GPM interval"
        )
        return (
            self._compute(i, dev, gpm, no_gpm)
            + self._memory(i, dev, gpm, no_gpm, refresh, job)
            + self._links(i, dev, gpm, refresh)
            + self._power_clocks(i, dev)
        )

    def _compute(self, i: int, dev: str, gpm: dict[int, float | None] | None, no_gpm: str) -> list[Reading]:
        n = self._nv
        assert n is not None
        out: list[Reading] = []
        util = n.utilization(i)
        out.append(
            Reading(
                "gpu_compute",
                dev,
                "busy_fraction",
                None if util is None else util[0] / 100,
                "ratio",
                "" if util else "NVML utilization not supported",
            )
        )
        g = _gpm_reader(gpm)
        for metric, gid in (
            ("sm_activity", nv.GPM_SM_UTIL),
            ("sm_occupancy", nv.GPM_SM_OCCUPANCY),
            ("tensor_activity", nv.GPM_ANY_TENSOR_UTIL),
            ("fp32_activity", nv.GPM_FP32_UTIL),
            ("fp16_activity", nv.GPM_FP16_UTIL),
            ("fp64_activity", nv.GPM_FP64_UTIL),
            ("integer_activity", nv.GPM_INTEGER_UTIL),
        ):
            v = g(gid)
            out.append(
                Reading(
                    "gpu_compute", dev, metric, None if v is None else v / 100, "ratio", "" if v is not None else no_gpm
                )
            )
        sm = g(nv.GPM_SM_UTIL)
        out.append(
            Reading(
                "gpu_compute",
                dev,
                "utilization",
                None if sm is None else sm / 100,
                "ratio",
                "" if sm is not None else f"SM activity unknown ({no_gpm}); busy_fraction is a time fraction, not load",
            )
        )
        return out

    def _memory(
        self, i: int, dev: str, gpm: dict[int, float | None] | None, no_gpm: str, refresh: bool, job: set[int] | None
    ) -> list[Reading]:
        """DRAM bandwidth (GPM), memory in use, and (on ``refresh``) each process's memory and
        whether one of the job's processes runs here."""
        n = self._nv
        assert n is not None
        out: list[Reading] = []
        dram = _gpm_reader(gpm)(nv.GPM_DRAM_BW_UTIL)
        bw = self._peaks.get("gpu_memory_bandwidth", dev)
        theoretical = None if bw is None else (bw.catalog_value if bw.origin == "calibrated" else bw.value)
        if dram is None:
            out += utilization(
                "gpu_memory_bandwidth",
                dev,
                None,
                bw.value if bw else None,
                "B/s",
                f"DRAM bandwidth needs GPM ({no_gpm})",
            )
        else:  # GPM's percentage is of the theoretical peak: that is the utilization, and bytes are relative to it
            out.append(Reading("gpu_memory_bandwidth", dev, "utilization", dram / 100, "ratio"))
            out.append(
                Reading(
                    "gpu_memory_bandwidth",
                    dev,
                    "throughput",
                    None if theoretical is None else dram / 100 * theoretical,
                    "B/s",
                    "" if theoretical is not None else "no theoretical DRAM bandwidth for this GPU in the catalog",
                )
            )
            out.append(
                Reading("gpu_memory_bandwidth", dev, "peak", theoretical, "B/s", "" if theoretical else "unknown")
            )

        mem = n.memory(i)
        out += utilization(
            "gpu_memory",
            dev,
            None if mem is None else float(mem[1]),
            None if mem is None else float(mem[0]),
            "B",
            "NVML memory info not supported",
        )
        if refresh:
            procs = n.process_memory(i)
            if procs is not None:
                for pid, b in procs.items():
                    if b is not None:
                        out.append(Reading("gpu_memory", dev, f"process_bytes:{pid}", float(b), "B"))
                if job is not None:
                    self._job_gpu[i] = bool(job & set(procs))
        if i in self._job_gpu:
            out.append(Reading("gpu_compute", dev, "job_process", 1.0 if self._job_gpu[i] else 0.0, "bool"))
        return out

    def _links(self, i: int, dev: str, gpm: dict[int, float | None] | None, refresh: bool) -> list[Reading]:
        """PCIe (throughput, and the link read on ``refresh``) and NVLink."""
        n, p = self._nv, self._peaks
        assert n is not None
        out: list[Reading] = []
        g = _gpm_reader(gpm)
        # PCIe: GPM rates when present (no blocking), else the 20 ms-window NVML counter
        if gpm is not None and g(nv.GPM_PCIE_TX_PER_SEC) is not None:
            tx, rx = g(nv.GPM_PCIE_TX_PER_SEC) * 1048576, (g(nv.GPM_PCIE_RX_PER_SEC) or 0.0) * 1048576  # type: ignore[operator]
            pcie: tuple[float, float] | None = (tx, rx)
        else:
            pcie = n.pcie_throughput(i)
        pcie_peak = p.value("cpu_gpu_interconnect", dev)
        out += utilization(
            "cpu_gpu_interconnect",
            dev,
            None if pcie is None else max(pcie),
            pcie_peak,
            "B/s",
            "PCIe throughput not supported",
        )
        if pcie is not None:
            out += [
                Reading("cpu_gpu_interconnect", dev, "tx_bytes_per_second", pcie[0], "B/s"),
                Reading("cpu_gpu_interconnect", dev, "rx_bytes_per_second", pcie[1], "B/s"),
            ]
        if refresh or i not in self._link:  # the link changes rarely
            self._link[i] = n.pcie_current_link(i)
        gen, width = self._link[i]
        no_link = "not reported for this device (a MIG slice, or not supported)"
        out += [
            Reading(
                "cpu_gpu_interconnect",
                dev,
                "link_generation",
                None if gen is None else float(gen),
                "gen",
                "" if gen is not None else no_link,
            ),
            Reading(
                "cpu_gpu_interconnect",
                dev,
                "link_width",
                None if width is None else float(width),
                "lanes",
                "" if width is not None else no_link,
            ),
        ]

        nvl = n.nvlink_data_bytes(i)
        nvl_peak = p.value("inter_gpu_interconnect", dev)
        if nvl is not None:
            tx_r, rx_r = self._rates.rate(f"{i}.nvl.tx", nvl[0]), self._rates.rate(f"{i}.nvl.rx", nvl[1])
            total = None if tx_r is None or rx_r is None else tx_r + rx_r
            out += utilization("inter_gpu_interconnect", dev, total, nvl_peak, "B/s", "first interval")
        elif g(nv.GPM_NVLINK_TOTAL_TX_PER_SEC) is not None:
            total = ((g(nv.GPM_NVLINK_TOTAL_TX_PER_SEC) or 0) + (g(nv.GPM_NVLINK_TOTAL_RX_PER_SEC) or 0)) * 1048576
            out += utilization("inter_gpu_interconnect", dev, total, nvl_peak, "B/s")
        else:
            out += utilization("inter_gpu_interconnect", dev, None, nvl_peak, "B/s", "no active NVLink on this GPU")
        return out

    def _power_clocks(self, i: int, dev: str) -> list[Reading]:
        n = self._nv
        assert n is not None
        out: list[Reading] = []
        power = n.power_watts(i)
        out.append(Reading("gpu_compute", dev, "power", power, "W", "" if power is not None else "not supported"))
        energy = n.energy_joules(i)
        if energy is not None:
            out.append(Reading("gpu_compute", dev, "energy", energy, "J"))
        clocks, maxc = n.clocks_mhz(i), n.max_clocks_mhz(i)
        if clocks is not None:
            out.append(Reading("gpu_compute", dev, "sm_clock", float(clocks[0]), "MHz"))
            if maxc:
                out.append(Reading("gpu_compute", dev, "sm_clock_ratio", clocks[0] / maxc[0], "ratio"))
        reasons = n.clock_event_reasons(i)
        if reasons is not None:
            for bit, label in nv.CLOCK_EVENT_REASONS.items():
                out.append(Reading("gpu_compute", dev, f"throttle:{label}", 1.0 if reasons & bit else 0.0, "bool"))
        return out


def _gpm_reader(gpm: dict[int, float | None] | None) -> Callable[[int], float | None]:
    """A GPM metric by id from this tick's sample: None when there is no sample or no such metric."""
    return lambda metric: None if gpm is None else gpm.get(metric)
