"""A fake GPU node for constructed traces: its /sys and /proc, its GPUs behind the fake NVML, and
the readings of every sampler in the form the real samplers emit them.

The GPU readings are the real ``GpuSampler``'s, reading ``tests/fake_nvml.py`` whose figures are set
each tick (GPM on Hopper, NVML's busy and memory-busy fractions, PCIe, NVLink counters, clocks,
clock-event reasons, process lists); a virtual clock turns the NVLink counters into rates, so the
trace does not depend on how fast it was written. The CPU, memory, storage and network samplers read
psutil and the real /proc of this machine, so their readings are written here under the metric
names, units and notes those samplers use (samplers/cpu_compute.py, storage.py, inter_node.py,
cpu_memory.py). Only figures are invented; every reading's shape is the samplers'.
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
from bottleneckd.model.sample import Reading, utilization
from bottleneckd.peaks.catalog import load_catalog
from bottleneckd.peaks.resolve import PeakTable, resolve_peaks
from bottleneckd.samplers.base import Rates
from bottleneckd.samplers.dcgm import DcgmSource, parse
from bottleneckd.samplers.gpu import GpuSampler
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
class JobCpu:
    """The job's processes as the cpu_compute sampler sees them (cores)."""

    rank_busy: float
    workers: int
    worker_busy: float
    worker_max: float | None
    main: float  # the busiest rank's main thread
    launch: float  # its main thread + autograd device threads
    hottest: float
    usable: float
    ranks: int = 1
    waiting: float = 0.0  # run-queue wait, cores' worth
    d_threads: float = 0.0
    worker_hottest: float | None = None
    launcher: float = 0.0


@dataclass
class HostFigures:
    cpu_util: float = 0.1
    iowait: float = 0.0
    cpu_psi: float = 0.0
    io_psi: float = 0.0
    mem_used: float = 0.3
    disk_read: float = 20e6  # B/s
    disk_ops: float = 300.0
    disk_busy: float = 0.02
    disk_queue: float = 0.05
    job_reads: float = 0.0  # bytes/s the job's reads fetch from the block layer
    job_chars: float = 50e6  # bytes/s they ask for
    job_calls: float = 500.0
    job_writes: float = 1e6
    eth: float = 1e6  # B/s
    ib: float = 0.0  # B/s each port, busiest direction
    nfs: float = 0.0  # B/s over the network file system (/mnt/data)


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


def cpu_readings(cores: int, h: HostFigures, j: JobCpu | None) -> list[Reading]:
    """As CpuComputeSampler.sample: the host, then the job's processes by role."""
    out = [Reading("cpu_compute", "host", "utilization", h.cpu_util, "ratio")]
    out += [
        Reading("cpu_compute", "host", "busy_cores", h.cpu_util * cores, "cores"),
        Reading("cpu_compute", "host", "cores", float(cores), "cores"),
        Reading("cpu_compute", "host", "iowait", h.iowait, "ratio"),
        Reading("cpu_compute", "host", "pressure_some", h.cpu_psi, "ratio"),
    ]
    if j is None:
        return out
    no_workers = "" if j.workers else "no loader workers"
    return out + [
        Reading("cpu_compute", "job", "busy_cores", j.rank_busy + j.worker_busy, "cores"),
        Reading("cpu_compute", "job", "rank_busy_cores", j.rank_busy, "cores"),
        Reading("cpu_compute", "job", "worker_busy_cores", j.worker_busy, "cores"),
        Reading("cpu_compute", "job", "launcher_busy_cores", j.launcher, "cores"),
        Reading(
            "cpu_compute", "job", "worker_max_busy_cores", j.worker_max if j.workers else None, "cores", no_workers
        ),
        Reading("cpu_compute", "job", "main_busy_cores", j.main, "cores"),
        Reading("cpu_compute", "job", "launch_thread_cores", j.launch, "cores"),
        Reading("cpu_compute", "job", "rank_side_thread_cores", max(0.0, j.rank_busy - j.main * j.ranks), "cores"),
        Reading("cpu_compute", "job", "hottest_thread_busy", j.hottest, "cores"),
        Reading(
            "cpu_compute",
            "job",
            "worker_hottest_thread_busy",
            (j.worker_hottest if j.worker_hottest is not None else j.worker_max) if j.workers else None,
            "cores",
            no_workers,
        ),
        Reading("cpu_compute", "job", "main_thread_demand", min(1.0, j.main + j.waiting / 10), "cores"),
        Reading("cpu_compute", "job", "hottest_thread_demand", min(1.0, j.hottest + j.waiting / 10), "cores"),
        Reading(
            "cpu_compute",
            "job",
            "worker_max_demand",
            min(1.0, (j.worker_max or 0.0) + j.waiting / 10) if j.workers else None,
            "cores",
            no_workers,
        ),
        Reading("cpu_compute", "job", "runqueue_wait_cores", j.waiting, "cores"),
        Reading("cpu_compute", "job", "usable_cores", j.usable, "cores"),
        Reading("cpu_compute", "job", "processes", float(j.ranks + j.workers + 1), "count"),
        Reading("cpu_compute", "job", "ranks", float(j.ranks), "count"),
        Reading("cpu_compute", "job", "workers", float(j.workers), "count"),
        Reading("cpu_compute", "job", "processes_in_disk_wait", min(float(j.workers), j.d_threads), "count"),
        Reading("cpu_compute", "job", "threads_in_disk_wait", j.d_threads, "count"),
        Reading("cpu_compute", "job", "pressure_some", h.cpu_psi, "ratio"),
    ]


def memory_readings(total: int, h: HostFigures, j: JobCpu | None) -> list[Reading]:
    """As CpuMemorySampler.sample."""
    out = utilization("cpu_memory", "host", h.mem_used * total, float(total), "B")
    out += [
        Reading("cpu_memory", "host", "available", (1 - h.mem_used) * total, "B"),
        Reading("cpu_memory", "host", "swap_in_bytes_per_second", 0.0, "B/s"),
        Reading("cpu_memory", "host", "swap_out_bytes_per_second", 0.0, "B/s"),
        Reading("cpu_memory", "host", "pressure_some", 0.0, "ratio"),
        Reading("cpu_memory", "host", "pressure_full", 0.0, "ratio"),
    ]
    if j is not None:
        out.append(Reading("cpu_memory", "job", "resident_bytes", 40 * GIB + j.workers * 3 * GIB, "B"))
    why = "no memory-bandwidth counters: resctrl MBM is not mounted at /sys/fs/resctrl (a container without it)"
    out += [
        Reading("cpu_memory_bandwidth", "host", "throughput", None, "B/s", why),
        Reading("cpu_memory_bandwidth", "host", "utilization", None, "ratio", why),
    ]
    return out


def storage_readings(peaks: PeakTable, h: HostFigures, job: bool) -> list[Reading]:
    """As StorageSampler.sample: the local NVMe disk, host I/O pressure, the job's own reads, /."""
    d = "nvme0n1"
    seq = peaks.value("storage_bandwidth", d, "sequential_read")
    iops = peaks.value("storage_bandwidth", d, "random_read_4k_iops")
    bu = h.disk_read / seq if seq else None
    ou = h.disk_ops / iops if iops else None
    known = [u for u in (bu, ou) if u is not None]
    out = [
        Reading("storage_bandwidth", d, "throughput", h.disk_read + h.job_writes, "B/s"),
        Reading("storage_bandwidth", d, "read_bytes_per_second", h.disk_read, "B/s"),
        Reading("storage_bandwidth", d, "operations_per_second", h.disk_ops, "IO/s"),
        Reading("storage_bandwidth", d, "read_operations_per_second", h.disk_ops * 0.97, "IO/s"),
        Reading("storage_bandwidth", d, "byte_utilization", bu, "ratio"),
        Reading("storage_bandwidth", d, "operation_utilization", ou, "ratio"),
        Reading("storage_bandwidth", d, "utilization", max(known) if known else None, "ratio"),
        Reading("storage_bandwidth", d, "busy", min(1.0, h.disk_busy), "ratio"),
        Reading("storage_bandwidth", d, "peak", seq, "B/s"),
        Reading("storage_bandwidth", d, "queue_depth", h.disk_queue, "requests"),
        Reading("storage_bandwidth", d, "in_flight", round(h.disk_queue), "requests"),
        Reading("storage_bandwidth", "host", "pressure_some", h.io_psi, "ratio"),
        Reading("storage_bandwidth", "host", "pressure_full", h.io_psi * 0.6, "ratio"),
    ]
    if job:
        out += [
            Reading("storage_bandwidth", "job", "read_calls_per_second", h.job_calls, "1/s"),
            Reading("storage_bandwidth", "job", "read_chars_per_second", h.job_chars, "B/s"),
            Reading("storage_bandwidth", "job", "read_bytes_per_second", h.job_reads, "B/s"),
            Reading("storage_bandwidth", "job", "write_bytes_per_second", h.job_writes, "B/s"),
            Reading("storage_bandwidth", "job", "pressure_some", h.io_psi, "ratio"),
            Reading("storage_bandwidth", "job", "pressure_full", h.io_psi * 0.6, "ratio"),
        ]
    out += utilization("storage_capacity", "/", 0.41 * 3.5e12, 3.5e12, "B")
    out.append(Reading("storage_capacity", "/", "free", 0.59 * 3.5e12, "B"))
    return out


def network_readings(peaks: PeakTable, machine: Machine, h: HostFigures) -> list[Reading]:
    """As InterNodeSampler.sample: the Ethernet NIC, then each InfiniBand port."""
    out = utilization("inter_node_interconnect", "eth0", h.eth, peaks.value("inter_node_interconnect", "eth0"), "B/s")
    out += [
        Reading("inter_node_interconnect", "eth0", "tx_bytes_per_second", h.eth * 0.4, "B/s"),
        Reading("inter_node_interconnect", "eth0", "rx_bytes_per_second", h.eth, "B/s"),
    ]
    for p in machine.ib_ports:
        name = f"{p.device}/{p.port}"
        out += utilization("inter_node_interconnect", name, h.ib, peaks.value("inter_node_interconnect", name), "B/s")
    for m in machine.mounts:  # as StorageNetworkSampler.sample
        if m.network:
            peak = peaks.value("storage_network_bandwidth", m.mountpoint)
            out += utilization("storage_network_bandwidth", m.mountpoint, h.nfs, peak, "B/s")
    return out
