"""The host side of a constructed GPU node's samples: the job's CPU, host memory, the local NVMe
disk, the NICs and the network file system, written under the metric names, units and notes of
samplers/cpu_compute.py, cpu_memory.py, storage.py, inter_node.py and storage_network.py (those read
psutil and this machine's /proc, so they cannot run on a fake node)."""

from __future__ import annotations

from dataclasses import dataclass

from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.model.sample import Reading, utilization
from bottleneckd.peaks.resolve import PeakTable

GIB = 2**30


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
