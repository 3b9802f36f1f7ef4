"""GPU sampler: compute, memory, memory bandwidth, PCIe and NVLink, power and clocks (NVML).

One read per field per GPU per tick; the GPUs are read concurrently (one worker per GPU, up to
``MAX_WORKERS``), so a tick costs the slowest GPU's reads rather than their sum: without GPM or
the driver's PCIe byte counters each PCIe throughput read blocks for NVML's 20 ms window, twice
per GPU (160 ms of every tick on 4 GPUs read one after another, 320 ms on 8). The readings
themselves are built in ``gpu_fields.py``: activity from GPM (Hopper and later), else from a
dcgm-exporter's profiling fields (``dcgm.py``), else unknown with the reason. A lost GPU (also one
lost before the sampler started) is marked down, its series dropped, and the others go on.

Which GPUs are the job's: every tenth tick, with the process lists, whether a process of the job's
tree runs on each GPU; ``job_process`` repeats that answer on every tick (1: a job process is
listed there; 0: none is, and every PID NVML lists is one we can see, so the answer means what
it says; unknown when NVML lists PIDs of another PID namespace, where absence proves nothing).
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import Future, ThreadPoolExecutor

from bottleneckd.hardware import nvml as nv
from bottleneckd.hardware.detect.gpus import resolve_backend
from bottleneckd.model.identity import gpu_key
from bottleneckd.model.resources import Resource
from bottleneckd.model.sample import Reading, utilization
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.samplers import gpu_fields as f
from bottleneckd.samplers.base import Rates
from bottleneckd.samplers.dcgm import DcgmSource, Key
from bottleneckd.samplers.process_tree import ProcessTree

log = logging.getLogger(__name__)
MAX_WORKERS = 16  # GPUs read at once; a node has at most 8-16 GPUs (or 56 MIG slices, then in turns)
FOREIGN_PIDS = "NVML lists processes of another PID namespace: whether the job runs here is unknown"


class GpuSampler:
    name = "gpu"

    def __init__(
        self,
        peaks: PeakTable,
        backend: nv.NvmlBackend | None | str = "auto",
        process_every: int = 10,
        tree: ProcessTree | None = None,
        dcgm: DcgmSource | str | None = None,
        proc_root: str = "/proc",
    ) -> None:
        self._why: dict[str, str] = {}
        self._nv = resolve_backend(backend, self._why)
        self._peaks = peaks
        self._rates = Rates()
        self._down: set[int] = set()
        self._gpm: dict[int, bool] = {}
        self._keys: dict[int, Key | None] = {}
        n = self._nv.device_count() if self._nv else 0
        for i in range(n):
            try:
                self._gpm[i] = self._nv.gpm_supported(i)  # type: ignore[union-attr]
                self._keys[i] = self._dcgm_key(i)
            except nv.GpuLostError as e:  # lost before we started: down from the first tick
                log.error("%s; it is reported down", e)
                self._down.add(i)
        # a dcgm-exporter matters only for GPUs without GPM
        need = any(not self._gpm.get(i, True) for i in range(n))
        if isinstance(dcgm, DcgmSource):
            self._dcgm = dcgm
        elif need:
            self._dcgm = DcgmSource.configured(dcgm)
        else:
            self._dcgm = DcgmSource(None, "every GPU has GPM")
        self._tree = tree
        self._proc = proc_root
        self._job_gpu: dict[int, float | None] = {}  # unit -> 1/0/None (unknown): the last process-list read
        self._process_every = process_every
        self._tick = 0
        self._link: dict[int, tuple[int | None, int | None]] = {}
        self._pool = ThreadPoolExecutor(min(MAX_WORKERS, n), "bottleneckd-gpu") if n > 1 else None

    def _dcgm_key(self, i: int) -> Key | None:
        mig = self._nv.mig_instance(i)  # type: ignore[union-attr]
        if mig is not None:
            return gpu_key(mig[0]), mig[1]
        u = self._nv.uuid(i)  # type: ignore[union-attr]
        return (gpu_key(u), None) if u else None

    def available(self) -> tuple[bool, str]:
        if self._nv is None:
            return False, self._why.get("gpus", "NVML unavailable")
        if self._nv.device_count() == 0:
            return False, "NVML reports no GPU"
        return True, ""

    def sample(self) -> list[Reading]:
        if self._nv is None:
            return []
        self._tick += 1
        refresh = (self._tick - 1) % self._process_every == 0  # process lists and PCIe links: every 10th tick
        job = {p.pid for p in self._tree.members()} if self._tree is not None and refresh else None
        units = range(self._nv.device_count())
        dcgm: Future = Future()
        if self._dcgm.url is not None and self._pool is not None:
            dcgm = self._pool.submit(self._dcgm.read)  # read beside NVML, not after it
        else:
            dcgm.set_result(self._dcgm.read())
        if self._pool is None:
            results = [self._unit(i, refresh, job, dcgm) for i in units]
        else:
            results = list(self._pool.map(lambda i: self._unit(i, refresh, job, dcgm), units))
        return [r for part in results for r in part]

    def _unit(self, i: int, refresh: bool, job: set[int] | None, dcgm: Future) -> list[Reading]:
        dev = self._nv.label(i)  # type: ignore[union-attr]
        if i in self._down:
            return [Reading(Resource.GPU_COMPUTE, dev, "up", 0.0, "bool")]
        try:
            return self._one(i, dev, refresh, job, dcgm) + [Reading(Resource.GPU_COMPUTE, dev, "up", 1.0, "bool")]
        except nv.GpuLostError as e:
            log.error("%s; its series are dropped, sampling goes on", e)
            self._down.add(i)
            return [Reading(Resource.GPU_COMPUTE, dev, "up", 0.0, "bool")]

    def _one(self, i: int, dev: str, refresh: bool, job: set[int] | None, dcgm: Future) -> list[Reading]:
        """Every reading of unit ``i``; ``refresh``: read the process lists and the PCIe link too,
        ``job``: the job's PIDs, to say whether it runs on this unit."""
        n = self._nv
        assert n is not None
        util = n.utilization(i)
        gpm = n.gpm_metrics(i) if self._gpm.get(i) else None
        out = self._memory(i, dev, refresh, job) + self._links(i, dev, gpm, refresh)
        out += f.power_readings(
            dev, n.power_watts(i), n.energy_joules(i), n.clocks_mhz(i), n.max_clocks_mhz(i), n.clock_event_reasons(i)
        )
        no_gpm = (
            "GPM not supported on this GPU (Hopper or later needed)" if not self._gpm.get(i) else "first GPM interval"
        )
        key = self._keys.get(i)
        if self._gpm.get(i):  # a GPM GPU in its first interval: DCGM is not consulted for it
            act, source, why = f.activity(gpm, None, no_gpm, "")
            why = no_gpm if gpm is None else why
        else:
            rows = dcgm.result()
            no_dcgm = self._dcgm.why or ("this GPU is not on the dcgm-exporter's page" if key not in rows else "")
            act, source, why = f.activity(None, rows.get(key) if key else None, no_gpm, no_dcgm)
        out += f.compute_readings(dev, util, act, source, why)
        out += f.dram_readings(dev, act.get("dram_activity"), self._peaks, why)
        return out

    def _memory(self, i: int, dev: str, refresh: bool, job: set[int] | None) -> list[Reading]:
        """Memory in use, and (on ``refresh``) each process's memory and whether one of the job's
        processes runs here."""
        n = self._nv
        assert n is not None
        mem = n.memory(i)
        out = utilization(
            Resource.GPU_MEMORY,
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
                        out.append(Reading(Resource.GPU_MEMORY, dev, f"process_bytes:{pid}", float(b), "B"))
                if job is not None:
                    self._job_gpu[i] = self._job_here(job, set(procs))
        if i in self._job_gpu:
            v = self._job_gpu[i]
            out.append(
                Reading(Resource.GPU_COMPUTE, dev, "job_process", v, "bool", "" if v is not None else FOREIGN_PIDS)
            )
        return out

    def _job_here(self, job: set[int], listed: set[int]) -> float | None:
        """1: a job process is listed; 0: none is and every listed PID is visible to us; None: NVML
        lists PIDs we cannot see (another PID namespace), so the job's absence is not shown."""
        if job & listed:
            return 1.0
        if all(os.path.exists(os.path.join(self._proc, str(pid))) for pid in listed):
            return 0.0
        return None

    def _links(self, i: int, dev: str, gpm: dict[int, float | None] | None, refresh: bool) -> list[Reading]:
        """PCIe (throughput, and the link read on ``refresh``) and NVLink."""
        n, p = self._nv, self._peaks
        assert n is not None
        g = f.gpm_reader(gpm)
        # PCIe: GPM rates when present (no blocking), else the backend's counters or 20 ms window
        if gpm is not None and g(nv.GPM_PCIE_TX_PER_SEC) is not None:
            tx, rx = g(nv.GPM_PCIE_TX_PER_SEC) * 1048576, (g(nv.GPM_PCIE_RX_PER_SEC) or 0.0) * 1048576  # type: ignore[operator]
            pcie: tuple[float, float] | None = (tx, rx)
        else:
            pcie = n.pcie_throughput(i)
        out = f.pcie_readings(dev, pcie, p.value(Resource.CPU_GPU_INTERCONNECT, dev))
        if refresh or i not in self._link:  # the link changes rarely
            self._link[i] = n.pcie_current_link(i)
        out += f.link_readings(dev, *self._link[i])
        nvl = n.nvlink_data_bytes(i)
        if nvl is not None:
            out += f.nvlink_readings(
                dev, self._rates.rate(f"{i}.nvl.tx", nvl[0]), self._rates.rate(f"{i}.nvl.rx", nvl[1]), p
            )
        elif g(nv.GPM_NVLINK_TOTAL_TX_PER_SEC) is not None:
            tx_g = (g(nv.GPM_NVLINK_TOTAL_TX_PER_SEC) or 0.0) * 1048576
            rx_g = (g(nv.GPM_NVLINK_TOTAL_RX_PER_SEC) or 0.0) * 1048576
            out += f.nvlink_readings(dev, tx_g, rx_g, p)
        else:
            out += f.nvlink_readings(dev, None, None, p, "no active NVLink on this GPU")
        return out
