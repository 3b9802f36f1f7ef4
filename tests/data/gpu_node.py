"""A fake GPU node for constructed traces: its /sys and /proc, its GPUs behind the fake NVML, and
the readings of every sampler in the form the real samplers emit them.

The GPU readings are the real ``GpuSampler``'s, reading ``tests/fake_nvml.py`` whose figures are set
each tick (GPM on Hopper, NVML's busy and memory-busy fractions, PCIe, NVLink counters, clocks,
clock-event reasons, process lists); a virtual clock turns the NVLink counters into rates, so the
trace does not depend on how fast it was written. The CPU, memory, storage and network samplers read
psutil and the real /proc of this machine, so their readings are written in tests/data/gpu_host.py
under the metric names, units and notes those samplers use. Only figures are invented; every
reading's shape is the samplers'.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bottleneckd.hardware import nvml as nv
from bottleneckd.hardware.detect import detect_machine
from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.model.sample import Reading
from bottleneckd.peaks.catalog import load_catalog
from bottleneckd.peaks.resolve import PeakTable, resolve_peaks
from bottleneckd.samplers.base import Rates
from bottleneckd.samplers.dcgm import DcgmSource, parse
from bottleneckd.samplers.gpu import GpuSampler
from tests.data.gpu_host import HostFigures, JobCpu, cpu_readings, memory_readings, network_readings, storage_readings
from tests.fake_hardware import fake_tree_at, write
from tests.fake_nvml import FakeGpu, FakeNvml

GB = 10**9
GIB = 2**30


@dataclass(frozen=True, kw_only=True)
class NodeSpec:
    hostname: str
    gpu_name: str  # as NVML names it
    gpus: int
    memory_total: int  # bytes per GPU (per unit for a MIG slice)
    gpm: bool  # Hopper and later
    nvlink_links: int
    cores: int  # the host's logical cores
    max_sm_clock: int
    pcie: tuple[int, int] = (5, 16)
    mig: tuple[float, float] | None = None  # (compute, memory) share of its GPU: one MIG slice per unit
    ib_ports: int = 0  # NDR 400 Gb/s ports mlx5_0 .. (one per GPU on an HGX node)
    host_memory: int = 2048 * GIB


@dataclass
class GpuFigures:
    """One GPU unit over one tick, as its counters would read (fractions 0..1, bytes/s)."""

    busy: float = 0.0  # NVML utilization.gpu: share of time a kernel ran
    mem_busy: float = 0.0  # NVML utilization.memory: share of time device memory was read or written
    sm: float = 0.0  # GPM (Hopper): SMs active
    occupancy: float = 0.0
    tensor: float = 0.0
    fp32: float = 0.0
    fp16: float = 0.0
    fp64: float = 0.0
    integer: float = 0.0
    dram: float = 0.0
    mem_used: float = 0.0  # share of the GPU's memory NVML counts used
    pcie_tx: float = 0.5e9  # device to host, B/s
    pcie_rx: float = 0.5e9  # host to device, B/s
    nvlink: float = 0.0  # B/s each direction
    power: float = 100.0
    clock_ratio: float = 1.0  # SM clock over its maximum
    reasons: int = 0  # NVML clock-event reasons bitmask
    job_pid: int | None = None  # the job's process on this GPU (None: not the job's)
    other_pid: int | None = None  # another tenant's process on it


@dataclass
class Tick:
    gpus: list[GpuFigures]
    job: JobCpu | None
    host: HostFigures = field(default_factory=HostFigures)
    #: a dcgm-exporter's profiling fields per GPU index (DCGM_FI_PROF_* name -> ratio); None: no exporter
    dcgm: dict[int, dict[str, float]] | None = None


def gpu_uuid(host: str, i: int, prefix: str = "GPU") -> str:
    return f"{prefix}-{uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f'{host}/{i}')}"


class _Members:
    """What GpuSampler needs of a process tree: the job's PIDs."""

    def __init__(self, pids: set[int]) -> None:
        self.pids = pids

    def members(self) -> list[Any]:
        return [type("P", (), {"pid": p})() for p in sorted(self.pids)]


class _PageSource(DcgmSource):
    """A dcgm-exporter whose page is this tick's (read through the real parser)."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9400/metrics")
        self.page = ""

    def read(self) -> dict:
        got = parse(self.page)
        self.why = "" if got else "no dcgm-exporter on this node (nothing listens on 127.0.0.1:9400)"
        return got


def dcgm_page(host: str, gpu_name: str, rows: dict[str, dict[str, float]]) -> str:
    """A dcgm-exporter /metrics page: one gauge per field, a row per GPU (UUID -> fields)."""
    names = sorted({f for fields in rows.values() for f in fields})
    out = []
    for name in names:
        out += [f"# HELP {name} {name} (DCGM).", f"# TYPE {name} gauge"]
        for i, (uuid, fields) in enumerate(rows.items()):
            if name in fields:
                labels = (
                    f'gpu="{i}",UUID="{uuid}",pci_bus_id="00000000:{0x18 + i:02X}:00.0",device="nvidia{i}",'
                    f'modelName="{gpu_name}",Hostname="{host}",DCGM_FI_DRIVER_VERSION="535.183.01"'
                )
                out.append(f"{name}{{{labels}}} {fields[name]:.6f}")
    return "\n".join(out) + "\n"


class _VirtualRates(Rates):
    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__()
        self._clock = clock

    def rate(self, key: str, counter: float | None, now: float | None = None) -> float | None:
        return super().rate(key, counter, self._clock())


class Node:
    """The fake node: machine, peaks, and one sample's readings per tick."""

    def __init__(self, spec: NodeSpec, tmp: Path, job_pids: set[int], other_pids: set[int] = frozenset()) -> None:
        self.spec = spec
        sys_root, proc_root = fake_tree_at(tmp)
        _shape_tree(Path(sys_root), Path(proc_root), spec)
        for pid in (*job_pids, *other_pids):  # PIDs NVML lists are visible in our PID namespace
            write(Path(proc_root), f"{pid}/stat", f"{pid} (python) S 1")
        self.fakes = [self._fake(i) for i in range(spec.gpus)]
        self.nvml = FakeNvml(self.fakes)
        machine = detect_machine(sys_root, proc_root, nvml=self.nvml)
        self.machine: Machine = replace(machine, hostname=spec.hostname)
        self.peaks: PeakTable = resolve_peaks(self.machine, load_catalog())
        self.t = 0.0
        self.dcgm = _PageSource()
        self.gpu = GpuSampler(
            self.peaks,
            self.nvml,
            tree=_Members(job_pids),  # type: ignore[arg-type]
            dcgm=self.dcgm,
            proc_root=proc_root,
        )
        self.gpu._rates = _VirtualRates(lambda: self.t)  # NVLink counters to rates over the virtual clock
        self.energy = [1.0e6] * spec.gpus

    def _fake(self, i: int) -> FakeGpu:
        s = self.spec
        mig = s.mig is not None
        return FakeGpu(
            name=s.gpu_name,
            memory_total=s.memory_total,
            pcie_max=(None, None) if mig else s.pcie,
            pcie_current=(None, None) if mig else s.pcie,
            nvlink_links=s.nvlink_links,
            gpm={} if s.gpm else None,
            max_clocks=(s.max_sm_clock, 2619),
            uuid=gpu_uuid(s.hostname, i, "MIG" if mig else "GPU"),
            label=f"gpu0.mig{i + 1}" if mig else None,
            mig=s.mig,
            mig_instance=(gpu_uuid(s.hostname, 100), i + 1) if mig else None,
        )

    def label(self, i: int) -> str:
        return self.nvml.label(i)

    def uuid(self, i: int) -> str:
        u = self.nvml.uuid(i)
        assert u is not None
        return u

    def readings(self, tick: Tick, interval: float = 1.0) -> list[Reading]:
        self.t += interval
        for i, (fake, g) in enumerate(zip(self.fakes, tick.gpus, strict=True)):
            self._set(i, fake, g, interval)
        rows = {self.uuid(i): fields for i, fields in (tick.dcgm or {}).items()}
        self.dcgm.page = dcgm_page(self.spec.hostname, self.spec.gpu_name, rows) if rows else ""
        out = self.gpu.sample()
        out += cpu_readings(self.spec.cores, tick.host, tick.job)
        out += memory_readings(self.spec.host_memory, tick.host, tick.job)
        out += storage_readings(self.peaks, tick.host, tick.job is not None)
        out += network_readings(self.peaks, self.machine, tick.host)
        return out

    def _set(self, i: int, fake: FakeGpu, g: GpuFigures, interval: float) -> None:
        pct = lambda x: max(0.0, min(100.0, x * 100))  # noqa: E731
        fake.util = (round(pct(g.busy)), round(pct(g.mem_busy)))  # NVML answers whole percents
        if fake.gpm is not None:
            fake.gpm = {
                nv.GPM_SM_UTIL: pct(g.sm),
                nv.GPM_SM_OCCUPANCY: pct(g.occupancy),
                nv.GPM_ANY_TENSOR_UTIL: pct(g.tensor),
                nv.GPM_FP32_UTIL: pct(g.fp32),
                nv.GPM_FP16_UTIL: pct(g.fp16),
                nv.GPM_FP64_UTIL: pct(g.fp64),
                nv.GPM_INTEGER_UTIL: pct(g.integer),
                nv.GPM_DRAM_BW_UTIL: pct(g.dram),
                nv.GPM_PCIE_TX_PER_SEC: g.pcie_tx / 1048576,
                nv.GPM_PCIE_RX_PER_SEC: g.pcie_rx / 1048576,
                nv.GPM_NVLINK_TOTAL_TX_PER_SEC: g.nvlink / 1048576,
                nv.GPM_NVLINK_TOTAL_RX_PER_SEC: g.nvlink / 1048576,
            }
        fake.memory_used = int(g.mem_used * fake.memory_total)
        fake.pcie_bytes = (g.pcie_tx, g.pcie_rx)
        fake.nvlink_kib_per_call = (int(g.nvlink * interval / 1024), int(g.nvlink * interval / 1024))
        fake.power = g.power
        self.energy[i] += g.power * interval
        fake.energy = self.energy[i]
        fake.clocks = (int(self.spec.max_sm_clock * g.clock_ratio), 2619)
        fake.reasons = g.reasons
        procs: dict[int, int] = {}
        if g.job_pid is not None:
            procs[g.job_pid] = int(g.mem_used * fake.memory_total * 0.98)
        if g.other_pid is not None:
            procs[g.other_pid] = int(g.mem_used * fake.memory_total * 0.98)
        fake.processes = procs


def _shape_tree(sys_root: Path, proc_root: Path, spec: NodeSpec) -> None:
    """The fake tree's host resized to a GPU node: its cores, its memory, its InfiniBand ports."""
    cpu = "".join(
        f"processor\t: {k}\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: {k * 2 // spec.cores}\n"
        f"core id\t: {k % (spec.cores // 2)}\nflags\t\t: fpu avx avx2 fma avx512f avx512_bf16 amx_bf16 amx_tile\n\n"
        for k in range(spec.cores)
    )
    write(proc_root, "cpuinfo", cpu)
    write(proc_root, "meminfo", f"MemTotal:       {spec.host_memory // 1024} kB\nMemFree:        1000 kB\n")
    for k in range(spec.ib_ports):
        base = f"class/infiniband/mlx5_{k}/ports/1"
        write(sys_root, f"{base}/rate", "400 Gb/sec (4X NDR)")
        write(sys_root, f"{base}/state", "4: ACTIVE")
        write(sys_root, f"{base}/counters/port_xmit_data", "0")
        write(sys_root, f"{base}/counters/port_rcv_data", "0")
    if not spec.ib_ports:
        import shutil

        shutil.rmtree(sys_root / "class" / "infiniband", ignore_errors=True)
