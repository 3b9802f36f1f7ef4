#!/usr/bin/env python3
"""Blind GPU/CPU traces, round 4: common patterns written from docs/trace-format.md alone.

Written without reading the diagnosis or advice code. Each scenario is a job an evaluator would
expect to meet (loaders, DDP, storage, memory bandwidth, stragglers, Lightning / HF Trainer jobs,
default threading, other processes on the machine), on GPU nodes and on CPU-only machines, recorded
under ``run`` (the hook's step phases) or under ``attach`` (no hook: py-spy stack samples only).

    python tests/data/construct_blind_gpu4.py OUT_DIR

writes OUT_DIR/<scenario>.jsonl, ~40 samples at 1 s each. Stdlib only, seeded.
LABELS at the bottom were written before the tool was run on these traces.
"""

from __future__ import annotations

import json
import os
import random
import sys

N = 40  # samples per trace

# --------------------------------------------------------------------------------------------
# hardware
# --------------------------------------------------------------------------------------------

H100_SXM = dict(
    name="NVIDIA H100 80GB HBM3",
    catalog="NVIDIA H100 SXM",
    mem=85520809984,
    max_clock=1980,
    tdp=700.0,
    idle_w=72.0,
    bf16=989e12,
    tf32=494.5e12,
    fp32=67e12,
    fp8=1979e12,
    dram=3.35e12,
    nvlink=900e9,
    nvlink_links=18,
    pcie_gen=5,
    pcie=63.015e9,
    gpm=True,
)
H100_PCIE = dict(
    H100_SXM,
    name="NVIDIA H100 PCIe",
    catalog="NVIDIA H100 PCIe",
    mem=85520809984,
    max_clock=1755,
    tdp=350.0,
    idle_w=48.0,
    bf16=756e12,
    tf32=378e12,
    fp32=51e12,
    fp8=1513e12,
    dram=2.0e12,
    nvlink=None,
    nvlink_links=0,
)
A100_SXM80 = dict(
    name="NVIDIA A100-SXM4-80GB",
    catalog="NVIDIA A100 80GB SXM",
    mem=85899345920,
    max_clock=1410,
    tdp=400.0,
    idle_w=62.0,
    bf16=312e12,
    tf32=156e12,
    fp32=19.5e12,
    fp8=None,
    dram=2.039e12,
    nvlink=600e9,
    nvlink_links=12,
    pcie_gen=4,
    pcie=31.508e9,
    gpm=False,
)
A10 = dict(
    name="NVIDIA A10",
    catalog="NVIDIA A10",
    mem=24146608128,
    max_clock=1695,
    tdp=150.0,
    idle_w=21.0,
    bf16=125e12,
    tf32=62.5e12,
    fp32=31.2e12,
    fp8=None,
    dram=600e9,
    nvlink=None,
    nvlink_links=0,
    pcie_gen=4,
    pcie=31.508e9,
    gpm=False,
)

THROTTLES = ("sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake")
NO_GPM = "GPM not supported on this GPU (Hopper or later needed)"
NO_DCGM = "no dcgm-exporter answered at http://127.0.0.1:9400/metrics"


def uuid_for(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class Host:
    """A machine: its header (machine + peaks) and what its readings need."""

    def __init__(
        self,
        rng: random.Random,
        hostname: str,
        cpu_model: str,
        logical: int,
        physical: int,
        sockets: int,
        max_mhz: float | None,
        flags: list[str],
        mem: int,
        cpu_peak: float,
        membw_peak: float,
        gpu: dict | None = None,
        n_gpus: int = 0,
        disks: list[tuple] = (),
        nics: list[tuple] = (),
        mounts: list[tuple] = (),
        membw_counters: bool = False,
    ) -> None:
        self.rng = rng
        self.hostname = hostname
        self.logical = logical
        self.mem = mem
        self.gpu = gpu
        self.n_gpus = n_gpus
        self.uuids = [uuid_for(rng) for _ in range(n_gpus)]
        self.disks = list(disks)  # (name, size, seq_read_peak, iops_peak, model)
        self.nics = list(nics)  # (name, mbps)
        self.mounts = list(mounts)  # (mountpoint, fstype, source, network, disk, total_bytes, link_peak)
        self.membw_peak = membw_peak
        self.membw_counters = membw_counters
        self.energy = {i: 3.1e8 + rng.uniform(0, 1e8) for i in range(n_gpus)}
        unknown = {}
        if max_mhz is None:
            unknown["cpu.max_mhz"] = "cpufreq not exposed (common in VMs and containers)"
        if not n_gpus:
            unknown["gpus"] = "NVML unavailable: NVML could not start: NVML Shared Library Not Found"
        self.machine = {
            "hostname": hostname,
            "cpu": {
                "model": cpu_model,
                "logical_cores": logical,
                "physical_cores": physical,
                "sockets": sockets,
                "max_mhz": max_mhz,
                "flags": flags,
            },
            "memory_total_bytes": mem,
            "gpus": [
                {
                    "index": i,
                    "name": gpu["name"],
                    "uuid": self.uuids[i],
                    "memory_total_bytes": gpu["mem"],
                    "pcie_max_generation": gpu["pcie_gen"],
                    "pcie_max_width": 16,
                    "nvlink_active_links": gpu["nvlink_links"],
                    "gpm_supported": gpu["gpm"],
                }
                for i in range(n_gpus)
            ],
            "block_devices": [
                {
                    "name": d[0],
                    "size_bytes": d[1],
                    "rotational": False,
                    "model": d[4],
                    "transport": "nvme",
                    "pcie_generation": 4,
                }
                for d in self.disks
            ],
            "nics": [{"name": n, "speed_mbps": s, "operstate": "up", "virtual": False} for n, s in self.nics],
            "ib_ports": [],
            "mounts": [{"mountpoint": m[0], "fstype": m[1], "source": m[2], "network": m[3]} for m in self.mounts],
            "unknown": unknown,
        }
        P = []

        def row(res, dev, metric, value, unit, origin, source, uuid=None, direction="", catalog=None):
            P.append(
                {
                    "resource": res,
                    "device": dev,
                    "metric": metric,
                    "value": value,
                    "unit": unit,
                    "origin": origin,
                    "source": source,
                    "catalog_value": catalog if catalog is not None else (value if origin == "catalog" else None),
                    "uuid": uuid,
                    "direction": direction,
                }
            )

        for i in range(n_gpus):
            g, dev, u = gpu, f"gpu{i}", self.uuids[i]
            src = f"catalog: {g['catalog']}"
            row("gpu_compute", dev, "fp16_bf16_tensor_dense", g["bf16"], "FLOP/s", "catalog", src, u)
            row("gpu_compute", dev, "tf32_tensor_dense", g["tf32"], "FLOP/s", "catalog", src, u)
            row("gpu_compute", dev, "fp32", g["fp32"], "FLOP/s", "catalog", src, u)
            if g["fp8"]:
                row("gpu_compute", dev, "fp8_tensor_dense", g["fp8"], "FLOP/s", "catalog", src, u)
            row("gpu_memory", dev, "capacity", float(g["mem"]), "B", "detected", "NVML memory info", u)
            row("gpu_memory_bandwidth", dev, "dram_bandwidth", g["dram"], "B/s", "catalog", src, u, "read+write")
            if g["nvlink"]:
                row("inter_gpu_interconnect", dev, "nvlink_total", g["nvlink"], "B/s", "catalog", src, u, "both")
            else:
                row("inter_gpu_interconnect", dev, "-", None, "B/s", "unknown", "no active NVLink on this GPU", u)
            row(
                "cpu_gpu_interconnect",
                dev,
                "pcie_x16",
                g["pcie"],
                "B/s",
                "catalog",
                f"PCIe gen{g['pcie_gen']} x16 link (NVML)",
                u,
                "per direction",
            )
        if not n_gpus:
            for r in (
                "gpu_compute",
                "gpu_memory",
                "gpu_memory_bandwidth",
                "inter_gpu_interconnect",
                "cpu_gpu_interconnect",
            ):
                unit = {"gpu_compute": "FLOP/s", "gpu_memory": "B"}.get(r, "B/s")
                row(r, "-", "-", None, unit, "unknown", unknown["gpus"])
        row(
            "cpu_compute",
            "cpu",
            "fp32_matmul",
            cpu_peak,
            "FLOP/s",
            "calibrated",
            "measured here: numpy fp32 matmul 2048x2048, best of 0.5 s",
        )
        row("cpu_memory", "host", "capacity", float(mem), "B", "detected", "/proc/meminfo MemTotal")
        row(
            "cpu_memory_bandwidth",
            "host",
            "dram_bandwidth",
            membw_peak,
            "B/s",
            "calibrated",
            "measured here: streaming copy, read+write bytes",
            direction="read+write",
        )
        for n, s in self.nics:
            row(
                "inter_node_interconnect",
                n,
                "ethernet",
                s * 1e6 / 8,
                "B/s",
                "detected",
                f"{n} link speed {s} Mb/s",
                direction="per direction",
            )
        for d in self.disks:
            row("storage_capacity", d[0], "capacity", float(d[1]), "B", "detected", f"/sys/block/{d[0]}/size")
            row(
                "storage_bandwidth",
                d[0],
                "sequential_read",
                d[2],
                "B/s",
                "catalog",
                "catalog: NVMe gen4 sequential read",
                direction="read",
            )
            row(
                "storage_bandwidth",
                d[0],
                "random_read_4k_iops",
                d[3],
                "IO/s",
                "catalog",
                "catalog: NVMe gen4 4k random read",
            )
        nfs = [m for m in self.mounts if m[3]]
        for m in nfs:
            row(
                "storage_network_bandwidth",
                m[0],
                "link",
                m[6],
                "B/s",
                "detected",
                f"{m[0]}: the NIC that reaches {m[2].split(':')[0]}",
            )
        if not nfs:
            row("storage_network_bandwidth", "-", "link", None, "B/s", "unknown", "no network file system is mounted")
        self.peaks = P

    # ---------------------------------------------------------------- readings
    def cpu(
        self,
        busy_total: float,
        job: dict | None,
        iowait: float = 0.002,
        psi: float = 0.01,
        outside: list[tuple[str, int, float]] = (),
        sidecar: float = 0.04,
    ) -> list:
        r = self.rng
        n = self.logical
        busy_total = max(0.0, min(float(n), busy_total))
        full = int(busy_total)
        vals = [min(1.0, r.uniform(0.96, 1.0)) for _ in range(full)]
        if full < n:
            vals.append(max(0.0, busy_total - sum(vals)))
        vals += [r.uniform(0.0, 0.03) for _ in range(n - len(vals))]
        r.shuffle(vals)
        out = [["cpu_compute", f"cpu{k}", "busy", round(v, 3), "ratio"] for k, v in enumerate(vals)]
        tot = sum(vals)
        out += [
            ["cpu_compute", "host", "utilization", tot / n, "ratio"],
            ["cpu_compute", "host", "busy_cores", tot, "cores"],
            ["cpu_compute", "host", "cores", float(n), "cores"],
            ["cpu_compute", "host", "iowait", iowait, "ratio"],
            ["cpu_compute", "host", "pressure_some", psi, "ratio"],
        ]
        if job is not None:
            j = dict(job)
            rank = j["rank_busy_cores"]
            worker = j.get("worker_busy_cores", 0.0)
            nw = j.get("workers", 0)
            nowk = "no loader workers"

            def w(key):
                return [j.get(key), "cores"] if nw else [None, "cores", nowk]

            out += [
                ["cpu_compute", "job", "busy_cores", rank + worker, "cores"],
                ["cpu_compute", "job", "rank_busy_cores", rank, "cores"],
                ["cpu_compute", "job", "worker_busy_cores", worker, "cores"],
                ["cpu_compute", "job", "launcher_busy_cores", j.get("launcher_busy_cores", 0.0), "cores"],
                ["cpu_compute", "job", "worker_max_busy_cores", *w("worker_max_busy_cores")],
                ["cpu_compute", "job", "main_busy_cores", j["main_busy_cores"], "cores"],
                [
                    "cpu_compute",
                    "job",
                    "launch_thread_cores",
                    j.get("launch_thread_cores", j["main_busy_cores"]),
                    "cores",
                ],
                [
                    "cpu_compute",
                    "job",
                    "rank_side_thread_cores",
                    j.get("rank_side_thread_cores", max(0.0, rank - j["main_busy_cores"])),
                    "cores",
                ],
                ["cpu_compute", "job", "comm_thread_cores", j.get("comm_thread_cores", 0.0), "cores"],
                [
                    "cpu_compute",
                    "job",
                    "hottest_thread_busy",
                    j.get("hottest_thread_busy", j["main_busy_cores"]),
                    "cores",
                ],
                ["cpu_compute", "job", "worker_hottest_thread_busy", *w("worker_hottest_thread_busy")],
                [
                    "cpu_compute",
                    "job",
                    "main_thread_demand",
                    j.get("main_thread_demand", j["main_busy_cores"]),
                    "cores",
                ],
                [
                    "cpu_compute",
                    "job",
                    "hottest_thread_demand",
                    j.get("hottest_thread_demand", j.get("main_thread_demand", j["main_busy_cores"])),
                    "cores",
                ],
                ["cpu_compute", "job", "worker_max_demand", *w("worker_max_demand")],
                ["cpu_compute", "job", "runqueue_wait_cores", j.get("runqueue_wait_cores", 0.0), "cores"],
                ["cpu_compute", "job", "usable_cores", float(j.get("usable_cores", n)), "cores"],
                ["cpu_compute", "job", "processes", float(j.get("processes", j.get("ranks", 1) + nw)), "count"],
                ["cpu_compute", "job", "ranks", float(j.get("ranks", 1)), "count"],
                ["cpu_compute", "job", "workers", float(nw), "count"],
                ["cpu_compute", "job", "processes_in_disk_wait", float(j.get("processes_in_disk_wait", 0)), "count"],
                ["cpu_compute", "job", "threads_in_disk_wait", float(j.get("threads_in_disk_wait", 0)), "count"],
                ["cpu_compute", "job", "pressure_some", j.get("pressure_some", psi), "ratio"],
                ["cpu_compute", "sidecar", "busy_cores", sidecar, "cores"],
            ]
        for name, pid, cores in outside:
            out.append(["cpu_compute", f"{name}[{pid}]", "outside_process_cores", cores, "cores"])
        out.append(
            [
                "cpu_compute",
                "package",
                "energy",
                None,
                "J",
                "RAPL energy_uj readable by root only (CVE-2020-8694)",
            ]
        )
        return out

    def memory(
        self,
        used: float,
        rank_rss: float,
        worker_rss: float = 0.0,
        launcher_rss: float = 0.0,
        swap_in: float = 0.0,
        swap_out: float = 0.0,
        swap_tot: tuple[float, float] = (0.0, 0.0),
        psi_some: float = 0.0,
        psi_full: float = 0.0,
        membw: float | None = None,
    ) -> list:
        out = [
            ["cpu_memory", "host", "used", used, "B"],
            ["cpu_memory", "host", "utilization", used / self.mem, "ratio"],
            ["cpu_memory", "host", "peak", float(self.mem), "B"],
            ["cpu_memory", "host", "available", float(self.mem - used), "B"],
            ["cpu_memory", "host", "swap_in_bytes_per_second", swap_in, "B/s"],
            ["cpu_memory", "host", "swap_out_bytes_per_second", swap_out, "B/s"],
            ["cpu_memory", "host", "swap_in_bytes_total", swap_tot[0], "B"],
            ["cpu_memory", "host", "swap_out_bytes_total", swap_tot[1], "B"],
            ["cpu_memory", "host", "pressure_some", psi_some, "ratio"],
            ["cpu_memory", "host", "pressure_full", psi_full, "ratio"],
            ["cpu_memory", "job", "resident_bytes", rank_rss + worker_rss, "B"],
            ["cpu_memory", "job", "rank_resident_bytes", rank_rss, "B"],
            ["cpu_memory", "job", "worker_resident_bytes", worker_rss, "B"],
            ["cpu_memory", "job", "launcher_resident_bytes", launcher_rss, "B"],
        ]
        if self.membw_counters and membw is not None:
            out += [
                ["cpu_memory_bandwidth", "host", "throughput", membw, "B/s"],
                ["cpu_memory_bandwidth", "host", "utilization", membw / self.membw_peak, "ratio"],
                ["cpu_memory_bandwidth", "host", "peak", self.membw_peak, "B/s"],
            ]
        else:
            why = (
                "no memory-bandwidth counters: resctrl MBM is not mounted at /sys/fs/resctrl "
                "(Intel RDT / AMD QoS needed; usually absent in VMs)"
            )
            out += [
                ["cpu_memory_bandwidth", "host", "throughput", None, "B/s", why],
                ["cpu_memory_bandwidth", "host", "utilization", None, "ratio", why],
                ["cpu_memory_bandwidth", "host", "peak", self.membw_peak, "B/s"],
            ]
        return out

    def storage(self, disks: dict, job_io: dict | None, host_psi=(0.0, 0.0), capacity: dict | None = None) -> list:
        """disks: name -> dict(read, write, rops, wops, busy, qd, inflight, totals...)."""
        out = []
        for name, _size, seq, iops, _model in self.disks:
            d = disks.get(name, {})
            rb, wb = d.get("read", 0.0), d.get("write", 0.0)
            ro, wo = d.get("rops", rb / 131072), d.get("wops", wb / 262144)
            bu, ou = (rb + wb) / seq, (ro + wo) / iops
            tot = d.setdefault("_tot", [1.9e13, 7.3e12, 2.1e8, 4.4e7, 3.6e5])
            tot[0] += rb
            tot[1] += wb
            tot[2] += ro
            tot[3] += wo
            tot[4] += d.get("busy", 0.0)
            out += [
                ["storage_bandwidth", name, "throughput", rb + wb, "B/s"],
                ["storage_bandwidth", name, "read_bytes_per_second", rb, "B/s"],
                ["storage_bandwidth", name, "operations_per_second", ro + wo, "IO/s"],
                ["storage_bandwidth", name, "read_operations_per_second", ro, "IO/s"],
                ["storage_bandwidth", name, "byte_utilization", bu, "ratio"],
                ["storage_bandwidth", name, "operation_utilization", ou, "ratio"],
                ["storage_bandwidth", name, "utilization", max(bu, ou), "ratio"],
                ["storage_bandwidth", name, "busy", min(1.0, d.get("busy", 0.0)), "ratio"],
                ["storage_bandwidth", name, "peak", seq, "B/s"],
                ["storage_bandwidth", name, "read_bytes_total", tot[0], "B"],
                ["storage_bandwidth", name, "written_bytes_total", tot[1], "B"],
                ["storage_bandwidth", name, "reads_completed_total", tot[2], "count"],
                ["storage_bandwidth", name, "writes_completed_total", tot[3], "count"],
                ["storage_bandwidth", name, "io_time_seconds_total", tot[4], "s"],
                ["storage_bandwidth", name, "queue_depth", d.get("qd", 0.01), "requests"],
                ["storage_bandwidth", name, "in_flight", float(d.get("inflight", 0)), "requests"],
            ]
        out += [
            ["storage_bandwidth", "host", "pressure_some", host_psi[0], "ratio"],
            ["storage_bandwidth", "host", "pressure_full", host_psi[1], "ratio"],
        ]
        if job_io is not None:
            j = job_io
            out += [
                ["storage_bandwidth", "job", "read_calls_per_second", j.get("calls", 50.0), "1/s"],
                ["storage_bandwidth", "job", "read_chars_per_second", j.get("chars", 0.0), "B/s"],
                ["storage_bandwidth", "job", "read_bytes_per_second", j.get("bytes", 0.0), "B/s"],
                ["storage_bandwidth", "job", "write_bytes_per_second", j.get("write", 0.0), "B/s"],
                ["storage_bandwidth", "job", "rank_bytes_per_second", j.get("rank", 0.0), "B/s"],
                ["storage_bandwidth", "job", "worker_bytes_per_second", j.get("worker", 0.0), "B/s"],
                ["storage_bandwidth", "job", "launcher_bytes_per_second", 0.0, "B/s"],
                ["storage_bandwidth", "job", "pressure_some", j.get("psi_some", host_psi[0]), "ratio"],
                ["storage_bandwidth", "job", "pressure_full", j.get("psi_full", host_psi[1]), "ratio"],
            ]
        capacity = capacity or {}
        for m in self.mounts:
            if m[3]:
                continue
            total = float(m[5])
            used = capacity.get(m[0], 0.3) * total
            out += [
                ["storage_capacity", m[0], "used", used, "B"],
                ["storage_capacity", m[0], "utilization", used / total, "ratio"],
                ["storage_capacity", m[0], "peak", total, "B"],
                ["storage_capacity", m[0], "free", total - used, "B"],
            ]
        return out

    def network(self, nic_rates: dict, nfs_rates: dict | None = None) -> list:
        out = []
        for n, s in self.nics:
            tx, rx = nic_rates.get(n, (2.0e5, 3.0e5))
            peak = s * 1e6 / 8
            tot = nic_rates.setdefault("_tot_" + n, [4.4e12, 9.1e12])
            tot[0] += tx
            tot[1] += rx
            out += [
                ["inter_node_interconnect", n, "throughput", max(tx, rx), "B/s"],
                ["inter_node_interconnect", n, "utilization", max(tx, rx) / peak, "ratio"],
                ["inter_node_interconnect", n, "peak", peak, "B/s"],
                ["inter_node_interconnect", n, "tx_bytes_per_second", tx, "B/s"],
                ["inter_node_interconnect", n, "rx_bytes_per_second", rx, "B/s"],
                ["inter_node_interconnect", n, "transmit_bytes_total", tot[0], "B"],
                ["inter_node_interconnect", n, "receive_bytes_total", tot[1], "B"],
            ]
        for m in self.mounts:
            if not m[3]:
                continue
            v = (nfs_rates or {}).get(m[0], 0.0)
            out += [
                ["storage_network_bandwidth", m[0], "throughput", v, "B/s"],
                ["storage_network_bandwidth", m[0], "utilization", v / m[6], "ratio"],
                ["storage_network_bandwidth", m[0], "peak", m[6], "B/s"],
            ]
        return out

    def gpu_readings(self, i: int, s: dict, tick: int) -> list:
        """One GPU's readings; s: sm, occ, tensor, fp32, fp16, dram, busy, membusy, mem_used,
        pcie_tx, pcie_rx, nvl (tx, rx), power, clock, throttle (set), job_process, procs, source."""
        g = self.gpu
        dev = f"gpu{i}"
        out = [
            ["gpu_memory", dev, "used", float(s["mem_used"]), "B"],
            ["gpu_memory", dev, "utilization", s["mem_used"] / g["mem"], "ratio"],
            ["gpu_memory", dev, "peak", float(g["mem"]), "B"],
        ]
        if tick % 10 == 0:
            for pid, b in s.get("procs", {}).items():
                out.append(["gpu_memory", dev, f"process_bytes:{pid}", float(b), "B"])
        if "job_process" in s:
            out.append(["gpu_compute", dev, "job_process", s["job_process"], "bool"])
        tx, rx = s.get("pcie_tx", 2e8), s.get("pcie_rx", 1e8)
        out += [
            ["cpu_gpu_interconnect", dev, "throughput", max(tx, rx), "B/s"],
            ["cpu_gpu_interconnect", dev, "utilization", max(tx, rx) / g["pcie"], "ratio"],
            ["cpu_gpu_interconnect", dev, "peak", g["pcie"], "B/s"],
            ["cpu_gpu_interconnect", dev, "tx_bytes_per_second", tx, "B/s"],
            ["cpu_gpu_interconnect", dev, "rx_bytes_per_second", rx, "B/s"],
            ["cpu_gpu_interconnect", dev, "link_generation", float(g["pcie_gen"]), "gen"],
            ["cpu_gpu_interconnect", dev, "link_width", 16.0, "lanes"],
        ]
        if g["nvlink"]:
            ntx, nrx = s.get("nvl", (1e8, 1e8))
            out += [
                ["inter_gpu_interconnect", dev, "throughput", ntx + nrx, "B/s"],
                ["inter_gpu_interconnect", dev, "utilization", (ntx + nrx) / g["nvlink"], "ratio"],
                ["inter_gpu_interconnect", dev, "peak", g["nvlink"], "B/s"],
                ["inter_gpu_interconnect", dev, "tx_bytes_per_second", ntx, "B/s"],
                ["inter_gpu_interconnect", dev, "rx_bytes_per_second", nrx, "B/s"],
            ]
        else:
            why = "no active NVLink on this GPU"
            out += [
                ["inter_gpu_interconnect", dev, "throughput", None, "B/s", why],
                ["inter_gpu_interconnect", dev, "utilization", None, "ratio", why],
                ["inter_gpu_interconnect", dev, "peak", None, "B/s", "unknown"],
            ]
        self.energy[i] += s["power"]
        out += [
            ["gpu_compute", dev, "power", s["power"], "W"],
            ["gpu_compute", dev, "energy", self.energy[i], "J"],
            ["gpu_compute", dev, "sm_clock", float(s["clock"]), "MHz"],
            ["gpu_compute", dev, "sm_clock_ratio", s["clock"] / g["max_clock"], "ratio"],
        ]
        for t in THROTTLES:
            out.append(["gpu_compute", dev, f"throttle:{t}", 1.0 if t in s.get("throttle", ()) else 0.0, "bool"])
        out += [
            ["gpu_compute", dev, "busy_fraction", s["busy"], "ratio"],
            ["gpu_memory_bandwidth", dev, "memory_busy_fraction", s["membusy"], "ratio"],
        ]
        source = s.get("source", "GPM" if g["gpm"] else None)
        acts = (
            "sm_activity",
            "sm_occupancy",
            "tensor_activity",
            "fp32_activity",
            "fp16_activity",
            "fp64_activity",
            "integer_activity",
        )
        if source:
            vals = {
                "sm_activity": s["sm"],
                "sm_occupancy": s.get("occ", s["sm"] * 0.45),
                "tensor_activity": s.get("tensor", 0.0),
                "fp32_activity": s.get("fp32", s["sm"] * 0.12),
                "fp16_activity": s.get("fp16", s["sm"] * 0.05),
                "fp64_activity": 0.0,
                "integer_activity": s.get("int", s["sm"] * 0.08),
            }
            for a in acts:
                out.append(["gpu_compute", dev, a, vals[a], "ratio"])
            out.append(["gpu_compute", dev, "utilization", s["sm"], "ratio"])
            out.append(["gpu_compute", dev, f"activity_source:{source}", 1.0, "bool"])
            out += [
                ["gpu_memory_bandwidth", dev, "utilization", s["dram"], "ratio"],
                ["gpu_memory_bandwidth", dev, "throughput", s["dram"] * g["dram"], "B/s"],
                ["gpu_memory_bandwidth", dev, "peak", g["dram"], "B/s"],
            ]
        else:
            why = f"{NO_GPM}; {NO_DCGM}"
            for a in acts:
                out.append(["gpu_compute", dev, a, None, "ratio", why])
            out.append(
                [
                    "gpu_compute",
                    dev,
                    "utilization",
                    None,
                    "ratio",
                    f"SM activity unknown ({why}); busy_fraction is a time fraction, not load",
                ]
            )
            out += [
                ["gpu_memory_bandwidth", dev, "throughput", None, "B/s", f"DRAM bandwidth unknown ({why})"],
                ["gpu_memory_bandwidth", dev, "utilization", None, "ratio", f"DRAM bandwidth unknown ({why})"],
                ["gpu_memory_bandwidth", dev, "peak", g["dram"], "B/s"],
            ]
        out.append(["gpu_compute", dev, "up", 1.0, "bool"])
        return out

    def samplers(self, extra: tuple = ()) -> dict:
        r = self.rng
        d = {
            "cpu_compute": [True, round(r.uniform(0.004, 0.012), 6), ""],
            "cpu_memory": [True, round(r.uniform(0.0002, 0.0005), 6), ""],
            "cpu_memory_bandwidth": [True, round(r.uniform(0.00002, 0.0001), 6), ""],
            "storage": [True, round(r.uniform(0.0005, 0.0012), 6), ""],
            "inter_node": [True, round(r.uniform(0.0001, 0.0003), 6), ""],
            "energy": [True, 6e-06, ""],
        }
        if self.n_gpus:
            d["gpu"] = [True, round(r.uniform(0.006, 0.02), 6), ""]
        if any(m[3] for m in self.mounts):
            d["storage_network"] = [True, round(r.uniform(0.0003, 0.0008), 6), ""]
        return d


# --------------------------------------------------------------------------------------------
# machines
# --------------------------------------------------------------------------------------------

SPR_FLAGS = ["avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"]
ICX_FLAGS = ["avx", "avx2", "fma", "avx512f", "avx512_vnni"]
ZEN3_FLAGS = ["avx", "avx2", "fma"]
TB = 1000**4
GB = 1000**3
GiB = 1024**3


def dgx_h100(rng: random.Random, nfs: bool = False) -> Host:
    mounts = [
        ("/", "ext4", "/dev/nvme0n1p2", False, "nvme0n1", 1.79 * TB, None),
        ("/raid", "ext4", "/dev/md0", False, "nvme1n1", 30.7 * TB, None),
    ]
    nics = [("eth0", 100000)]
    if nfs:
        mounts.append(("/mnt/datasets", "nfs4", "filer02:/export/datasets", True, None, None, 3.125e9))
        nics = [("eth0", 100000), ("ens2f0", 25000)]
    return Host(
        rng,
        "dgx-h100-07",
        "Intel(R) Xeon(R) Platinum 8480C",
        224,
        112,
        2,
        3800.0,
        SPR_FLAGS,
        2164 * GB,
        7.1e12,
        540e9,
        H100_SXM,
        8,
        disks=[
            ("nvme0n1", 1.92 * TB, 7.0e9, 1.0e6, "SAMSUNG MZ1L21T9HCLS"),
            ("nvme1n1", 3.84 * TB, 7.0e9, 1.0e6, "SAMSUNG MZQL23T8HCLS"),
        ],
        nics=nics,
        mounts=mounts,
    )


def one_gpu_box(rng: random.Random, gpu: dict, hostname: str, mem: int = 512 * GiB, disk_peak: float = 7.0e9) -> Host:
    return Host(
        rng,
        hostname,
        "AMD EPYC 7543 32-Core Processor",
        64,
        32,
        1,
        3700.0,
        ZEN3_FLAGS,
        mem,
        1.9e12,
        150e9,
        gpu,
        1,
        disks=[("nvme0n1", 3.84 * TB, disk_peak, 1.0e6, "Micron_7450_MTFDKCC3T8TFR")],
        nics=[("eth0", 25000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, "nvme0n1", 3.5 * TB, None)],
    )


# --------------------------------------------------------------------------------------------
# phases and stacks
# --------------------------------------------------------------------------------------------


class Steps:
    """Steps completed per 1 s interval at a given step time (carry keeps the rate exact)."""

    def __init__(self) -> None:
        self.carry = 0.0

    def take(self, interval: float, step: float) -> int:
        self.carry += interval / step
        n = int(self.carry)
        self.carry -= n
        return n


def phases(rng, n_steps, per_step: dict, facts: dict, examples_per_step=None, noise=0.04):
    ph = {}
    for k, v in per_step.items():
        ph[k] = round(max(0.0, v * n_steps * (1 + rng.gauss(0, noise))), 6)
    d = {"steps": n_steps, "wall_seconds": round(sum(ph.values()), 6), "phases": ph, "facts": dict(facts)}
    if examples_per_step is not None:
        d["examples"] = int(examples_per_step * n_steps)
    return d


def pick(rng, dist: dict) -> str:
    x = rng.random() * sum(dist.values())
    for k, v in dist.items():
        x -= v
        if x <= 0:
            return k
    return k


def stack_rows(rng, main_sites: dict, n_main: int, worker_sites: dict | None = None, n_worker: int = 0):
    """main_sites / worker_sites: phase -> list of (weight, function, file, line, text, draws_random, seeded).
    Draw n samples; return rows [phase, role, function, file, line, text, count, draws_random, seeded]."""
    counts: dict = {}
    for role, sites, n in (("main", main_sites, n_main), ("worker", worker_sites or {}, n_worker)):
        if not sites:
            continue
        flat = {}
        for phase, lst in sites.items():
            for entry in lst:
                flat[(phase,) + tuple(entry[1:])] = entry[0]
        for _ in range(n):
            key = pick(rng, flat)
            counts[(role,) + key] = counts.get((role,) + key, 0) + 1
    rows = []
    for (role, phase, fn, file, line, text, dr, sd), c in counts.items():
        rows.append([phase, role, fn, file, line, text, c, dr, sd])
    return rows


def attach_phases(rng, dist: dict, facts_extra: dict | None = None, rate: float = 2.0, interval: float = 1.0):
    """Attach mode: py-spy stack samples at ``rate`` Hz; steps counts the samples."""
    n = int(round(rate * interval))
    c: dict = {}
    for _ in range(n):
        k = pick(rng, dist)
        c[k] = c.get(k, 0) + 1
    each = 1.0 / rate
    facts = {"phase_source": "py-spy", "stack_samples": n}
    facts.update(facts_extra or {})
    return {"steps": n, "wall_seconds": n * each, "phases": {k: v * each for k, v in c.items()}, "facts": facts}, c


# --------------------------------------------------------------------------------------------
# trace writing
# --------------------------------------------------------------------------------------------


class Trace:
    def __init__(self, host: Host, t0: float, meta: dict) -> None:
        self.host = host
        self.t = t0
        self.lines = [
            {
                "type": "header",
                "format": "bottleneckd.trace",
                "version": 1,
                "created": t0,
                "interval": 1.0,
                "machine": host.machine,
                "peaks": host.peaks,
                "meta": meta,
            }
        ]

    def add(self, readings, phases=None, ranks=None, stacks=None) -> float:
        iv = round(1.0 + self.host.rng.uniform(-0.004, 0.008), 6)
        self.t += iv
        d = {
            "type": "sample",
            "t": round(self.t, 4),
            "interval": iv,
            "readings": readings,
            "phases": phases,
            "samplers": self.host.samplers(),
        }
        if ranks:
            d["ranks"] = ranks
        if stacks is not None:
            d["stacks"] = stacks
        self.lines.append(d)
        return iv

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            for line in self.lines:
                f.write(json.dumps(line, separators=(",", ":")) + "\n")


def j(rng, x, rel=0.03):
    return max(0.0, x * (1 + rng.gauss(0, rel)))


def ident(job: str, rank: int, world: int, host: Host, pid: int, gpu: str | None):
    d = {
        "job": job,
        "run": "r-7f3a",
        "restart": 0,
        "rank": rank,
        "local_rank": rank,
        "world_size": world,
        "local_world_size": world,
        "node": host.hostname,
        "host": host.hostname,
        "node_rank": 0,
        "pid": pid,
    }
    if gpu:
        d["gpu"] = gpu
    return d


# --------------------------------------------------------------------------------------------
# scenarios
# --------------------------------------------------------------------------------------------


def ddp8(name: str, rng: random.Random, t0: float, kind: str) -> Trace:
    """8-rank DDP on one DGX H100 node, NCCL over NVLink. kind: 'thermal' (rank 5's GPU throttled)
    or 'loader' (rank 3's loader workers pegged)."""
    h = dgx_h100(rng)
    base_pid = 51200
    tr = Trace(h, t0, {"pid": base_pid, "command": "torchrun --nproc_per_node 8 train_vit.py", "constructed": name})
    slow = 5 if kind == "thermal" else 3
    fast = dict(data_wait=0.002, transfer=0.001, forward=0.060, backward=0.120, optimizer=0.010, other=0.003)
    if kind == "thermal":
        slow_ph = dict(
            data_wait=0.002,
            transfer=0.001,
            forward=0.096,
            backward=0.193,
            optimizer=0.016,
            other=0.003,
            communication=0.009,
        )
    else:
        slow_ph = dict(
            data_wait=0.150,
            transfer=0.002,
            forward=0.060,
            backward=0.120,
            optimizer=0.010,
            other=0.003,
            communication=0.004,
        )
    wall = sum(slow_ph.values())
    fast["communication"] = wall - sum(fast.values())
    counters = [Steps() for _ in range(8)]
    disks: dict = {"nvme0n1": {}, "nvme1n1": {}}
    nics: dict = {}
    workers_per_rank = 6 if kind == "thermal" else 4
    for tick in range(N):
        step = j(rng, wall, 0.01)
        ranks = []
        tot_ph: dict = {}
        tot_steps = 0
        tot_wall = 0.0
        n = counters[0].take(1.0, step)
        for r in range(8):
            per = slow_ph if r == slow else fast
            facts = {
                "device": "cuda",
                "pid": base_pid + 1 + r,
                "cuda_uuids": [h.uuids[r]],
                "parameters": 304_000_000,
                "param_dtype": "float32",
                "autocast_dtype": "bfloat16",
                "compute_dtype": "bfloat16",
                "ddp": True,
                "world_size": 8,
                "local_world_size": 8,
                "comm_backend": "nccl",
                "ddp_comm_timing": "comm hook",
                "ddp_buckets": 47,
                "comm_seconds_per_step": j(rng, per["communication"] + 0.024, 0.02),
                "comm_exposed_seconds_per_step": j(rng, per["communication"], 0.02),
                "comm_overlapped_seconds_per_step": j(rng, 0.024, 0.02),
                "loader_workers": workers_per_rank,
                "pin_memory": True,
                "persistent_workers": True,
                "prefetch_factor": 2,
                "batch_size": 384,
                "optimizer_impl": "fused",
                "flops_per_step": 6.9e13,  # ViT-L/16, 384 images: ~180 GFLOP each (fwd+bwd)
                "operand_bytes_per_step": 3.1e11,
                "input_rank": 4,
                "tokens_per_example": None,
            }
            facts["comm_overlap_ratio"] = facts["comm_overlapped_seconds_per_step"] / facts["comm_seconds_per_step"]
            facts["achieved_flops"] = facts["flops_per_step"] / (per["forward"] + per["backward"])
            facts = {k: v for k, v in facts.items() if v is not None}
            p = phases(rng, n, per, facts, examples_per_step=384, noise=0.03)
            ranks.append({"identity": ident("vit-l-ddp", r, 8, h, base_pid + 1 + r, h.uuids[r]), "phases": p})
            tot_steps += p["steps"]
            tot_wall += p["wall_seconds"]
            for k, v in p["phases"].items():
                tot_ph[k] = tot_ph.get(k, 0.0) + v
        top = {
            "steps": tot_steps,
            "wall_seconds": round(tot_wall, 6),
            "phases": {k: round(v, 6) for k, v in tot_ph.items()},
            "facts": ranks[0]["phases"]["facts"],
            "examples": 384 * tot_steps,
        }
        # machine
        readings = []
        if kind == "thermal":
            worker_each = [j(rng, 0.22) for _ in range(8)]
            wmax = max(worker_each)
            wbusy = sum(w * workers_per_rank for w in worker_each)
        else:
            worker_each = [j(rng, 0.99, 0.005) if r == slow else j(rng, 0.45) for r in range(8)]
            worker_each[slow] = min(1.0, worker_each[slow])
            wmax = worker_each[slow]
            wbusy = sum(w * workers_per_rank for w in worker_each)
        rank_busy = 8 * j(rng, 1.35)
        job = dict(
            rank_busy_cores=rank_busy,
            worker_busy_cores=wbusy,
            launcher_busy_cores=0.01,
            workers=8 * workers_per_rank,
            worker_max_busy_cores=wmax,
            worker_hottest_thread_busy=wmax,
            worker_max_demand=min(1.0, wmax + 0.01),
            main_busy_cores=j(rng, 0.97, 0.01),
            launch_thread_cores=j(rng, 1.05, 0.02),
            rank_side_thread_cores=rank_busy - 8 * 0.92,
            comm_thread_cores=8 * 0.08,
            hottest_thread_busy=j(rng, 0.97, 0.01),
            main_thread_demand=j(rng, 0.98, 0.01),
            runqueue_wait_cores=j(rng, 0.08),
            usable_cores=224,
            ranks=8,
            processes=8 + 8 * workers_per_rank + 1,
            pressure_some=0.004,
        )
        readings += h.cpu(rank_busy + wbusy + 0.6, job)
        readings += h.memory(212 * GB + j(rng, 1e9), 8 * 9.5 * GB, 8 * workers_per_rank * 2.1 * GB, 0.25 * GB)
        disks["nvme1n1"].update(read=j(rng, 6.1e8), rops=j(rng, 4800.0), busy=0.18, qd=1.4, inflight=2)
        disks["nvme0n1"].update(read=j(rng, 2e5), write=j(rng, 1.2e6), busy=0.01, qd=0.01, inflight=0)
        readings += h.storage(
            disks,
            dict(calls=j(rng, 9800.0), chars=j(rng, 6.3e8), bytes=j(rng, 6.1e8), worker=j(rng, 6.1e8), rank=1e5),
            capacity={"/": 0.41, "/raid": 0.58},
        )
        readings += h.network(nics)
        for i in range(8):
            s_slow = i == slow and kind == "thermal"
            sm = j(rng, 0.93, 0.01) if s_slow else j(rng, 0.57, 0.03)
            s = dict(
                sm=min(0.99, sm),
                tensor=j(rng, 0.55 if s_slow else 0.33),
                dram=j(rng, 0.41 if s_slow else 0.27),
                busy=min(1.0, j(rng, 0.99, 0.005)),
                membusy=j(rng, 0.38 if s_slow else 0.25),
                mem_used=j(rng, 61.2e9, 0.002),
                pcie_tx=j(rng, 1.9e8),
                pcie_rx=j(rng, 4.5e7),
                nvl=(j(rng, 6.8e9), j(rng, 6.8e9)),
                power=j(rng, 455.0 if s_slow else 520.0, 0.02),
                clock=int(j(rng, 1245, 0.01)) if s_slow else 1980,
                throttle={"hw_slowdown", "hw_thermal"} if s_slow else set(),
                job_process=1.0,
                procs={base_pid + 1 + i: 61.2e9 - 0.6e9},
            )
            readings += h.gpu_readings(i, s, tick)
        tr.add(readings, top, ranks)
    return tr


def nvme_read_bound(name, rng, t0):
    """1x H100 PCIe, uncompressed video-frame shards (.npy, 20 TB set) streamed from the local NVMe."""
    h = one_gpu_box(rng, H100_PCIE, "ws-h100-02", disk_peak=7.0e9)
    pid = 8812
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd run -- python train_video.py", "constructed": name})
    per = dict(data_wait=0.118, transfer=0.006, forward=0.022, backward=0.043, optimizer=0.004, other=0.002)
    st = Steps()
    disks: dict = {"nvme0n1": {}}
    nics: dict = {}
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "parameters": 86_000_000,
        "param_dtype": "float32",
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "loader_workers": 12,
        "pin_memory": True,
        "persistent_workers": True,
        "prefetch_factor": 4,
        "batch_size": 32,
        "input_rank": 5,
        "optimizer_impl": "fused",
        "flops_per_step": 9.1e12,
        "operand_bytes_per_step": 4.2e10,
        "achieved_flops": 9.1e12 / 0.065,
    }
    wsites = {
        "data_wait": [
            (
                0.86,
                "FrameShards.__getitem__",
                "/home/ml/vidtrain/data.py",
                61,
                "arr = np.load(path, mmap_mode=None)",
                False,
                False,
            ),
            (
                0.14,
                "FrameShards.__getitem__",
                "/home/ml/vidtrain/data.py",
                64,
                "x = torch.from_numpy(arr).float().div_(255)",
                False,
                False,
            ),
        ]
    }
    msites = {
        "data_wait": [(1.0, "train", "/home/ml/vidtrain/train.py", 88, "for clip, y in loader:", False, False)],
        "forward": [
            (
                1.0,
                "train",
                "/home/ml/vidtrain/train.py",
                92,
                "loss = model(clip.cuda(non_blocking=True), y)",
                None,
                False,
            )
        ],
        "backward": [(1.0, "train", "/home/ml/vidtrain/train.py", 93, "loss.backward()", None, False)],
    }
    for tick in range(N):
        n = st.take(1.0, sum(per.values()))
        ph = phases(rng, n, per, facts, examples_per_step=32)
        rd = j(rng, 6.72e9, 0.012)
        wb = [j(rng, 0.31) for _ in range(12)]
        job = dict(
            rank_busy_cores=j(rng, 1.25),
            worker_busy_cores=sum(wb),
            workers=12,
            worker_max_busy_cores=max(wb),
            worker_hottest_thread_busy=max(wb),
            worker_max_demand=max(wb) + 0.01,
            main_busy_cores=j(rng, 0.62),
            launch_thread_cores=j(rng, 0.71),
            runqueue_wait_cores=0.02,
            processes_in_disk_wait=int(j(rng, 10, 0.1)),
            threads_in_disk_wait=int(j(rng, 11, 0.1)),
            usable_cores=64,
            pressure_some=0.01,
        )
        r = h.cpu(job["rank_busy_cores"] + job["worker_busy_cores"] + 0.3, job, iowait=j(rng, 0.09))
        r += h.memory(418 * GiB, 11 * GiB, 12 * 1.6 * GiB, 0.0)
        disks["nvme0n1"].update(
            read=rd,
            rops=rd / 131072,
            write=j(rng, 2e6),
            busy=1.0,
            qd=j(rng, 58.0, 0.05),
            inflight=int(j(rng, 62, 0.05)),
        )
        r += h.storage(
            disks,
            dict(
                calls=j(rng, 51000.0),
                chars=j(rng, 6.74e9, 0.012),
                bytes=rd * 0.998,
                worker=rd,
                rank=0.0,
                psi_some=0.71,
                psi_full=0.52,
            ),
            host_psi=(0.71, 0.52),
            capacity={"/": 0.86},
        )
        r += h.network(nics)
        s = dict(
            sm=j(rng, 0.33, 0.05),
            tensor=j(rng, 0.21),
            dram=j(rng, 0.14),
            busy=j(rng, 0.38),
            membusy=j(rng, 0.12),
            mem_used=j(rng, 38.5e9, 0.002),
            pcie_tx=j(rng, 1.6e9),
            pcie_rx=2e7,
            power=j(rng, 165.0),
            clock=1755,
            job_process=1.0,
            procs={pid: 38.0e9},
        )
        r += h.gpu_readings(0, s, tick)
        stacks = {"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(rng, msites, 2, wsites, 1)}
        tr.add(r, ph, stacks=stacks)
    return tr


def nfs_nic_bound(name, rng, t0):
    """8x H100 DDP, images read from an NFS export over a 25 GbE port (ens2f0) that carries nothing else."""
    h = dgx_h100(rng, nfs=True)
    base_pid = 30440
    tr = Trace(
        h,
        t0,
        {
            "pid": base_pid,
            "command": "torchrun --nproc_per_node 8 train_resnet.py --data /mnt/datasets/imagenet-raw",
            "constructed": name,
        },
    )
    per = dict(
        data_wait=0.105,
        transfer=0.003,
        forward=0.028,
        backward=0.056,
        optimizer=0.004,
        other=0.002,
        communication=0.006,
    )
    counters = Steps()
    disks: dict = {"nvme0n1": {}, "nvme1n1": {}}
    nics: dict = {}
    for tick in range(N):
        n = counters.take(1.0, sum(per.values()))
        ranks, tot, ts, tw = [], {}, 0, 0.0
        for r in range(8):
            facts = {
                "device": "cuda",
                "pid": base_pid + 1 + r,
                "cuda_uuids": [h.uuids[r]],
                "parameters": 25_600_000,
                "param_dtype": "float32",
                "autocast_dtype": "bfloat16",
                "compute_dtype": "bfloat16",
                "has_conv": True,
                "input_rank": 4,
                "ddp": True,
                "world_size": 8,
                "local_world_size": 8,
                "comm_backend": "nccl",
                "ddp_comm_timing": "comm hook",
                "loader_workers": 8,
                "pin_memory": True,
                "persistent_workers": True,
                "prefetch_factor": 4,
                "batch_size": 256,
                "optimizer_impl": "foreach",
                "flops_per_step": 6.3e12,
                "operand_bytes_per_step": 9.0e10,
                "achieved_flops": 6.3e12 / 0.084,
            }
            mine = dict(per)
            mine["data_wait"] = per["data_wait"] + rng.uniform(-0.01, 0.01)
            p = phases(rng, n, mine, facts, examples_per_step=256)
            ranks.append({"identity": ident("resnet50-nfs", r, 8, h, base_pid + 1 + r, h.uuids[r]), "phases": p})
            ts += p["steps"]
            tw += p["wall_seconds"]
            for k, v in p["phases"].items():
                tot[k] = tot.get(k, 0.0) + v
        top = {
            "steps": ts,
            "wall_seconds": round(tw, 6),
            "phases": tot,
            "facts": ranks[0]["phases"]["facts"],
            "examples": 256 * ts,
        }
        nfs = j(rng, 2.98e9, 0.01)
        wb = [j(rng, 0.34) for _ in range(64)]
        job = dict(
            rank_busy_cores=8 * j(rng, 0.9),
            worker_busy_cores=sum(wb),
            workers=64,
            worker_max_busy_cores=max(wb),
            worker_hottest_thread_busy=max(wb),
            worker_max_demand=max(wb) + 0.01,
            main_busy_cores=j(rng, 0.55),
            launch_thread_cores=j(rng, 0.66),
            comm_thread_cores=0.4,
            ranks=8,
            processes=8 + 64 + 1,
            usable_cores=224,
            threads_in_disk_wait=int(j(rng, 41, 0.1)),
            processes_in_disk_wait=int(j(rng, 38, 0.1)),
            runqueue_wait_cores=0.05,
        )
        rr = h.cpu(job["rank_busy_cores"] + job["worker_busy_cores"] + 1.2, job, iowait=j(rng, 0.07))
        rr += h.memory(260 * GB, 8 * 7 * GB, 64 * 1.1 * GB, 0.25 * GB)
        disks["nvme0n1"].update(read=j(rng, 2e5), write=j(rng, 1e6), busy=0.01)
        disks["nvme1n1"].update(read=0.0, write=j(rng, 3e5), busy=0.0)
        rr += h.storage(
            disks,
            dict(calls=j(rng, 23000.0), chars=nfs, bytes=0.0, worker=0.0, rank=0.0),
            capacity={"/": 0.40, "/raid": 0.22},
        )
        nics["ens2f0"] = (j(rng, 6.1e7), nfs * 1.02)
        nics["eth0"] = (j(rng, 3e5), j(rng, 4e5))
        rr += h.network(nics, {"/mnt/datasets": nfs})
        for i in range(8):
            s = dict(
                sm=j(rng, 0.29, 0.06),
                tensor=j(rng, 0.17),
                dram=j(rng, 0.16),
                busy=j(rng, 0.46),
                membusy=j(rng, 0.14),
                mem_used=j(rng, 27e9, 0.003),
                pcie_tx=j(rng, 4.4e8),
                pcie_rx=3e7,
                nvl=(j(rng, 1.1e9), j(rng, 1.1e9)),
                power=j(rng, 250.0),
                clock=1980,
                job_process=1.0,
                procs={base_pid + 1 + i: 26.5e9},
            )
            rr += h.gpu_readings(i, s, tick)
        tr.add(rr, top, ranks)
    return tr


def attach_gpu_sm99(name, rng, t0):
    """attach to a 1x H100 LLM fine-tune (bf16, batch 16 x 2048): GPU saturated."""
    h = dgx_h100(rng)
    pid = 72011
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd attach --pid 72011", "constructed": name})
    dist = dict(forward=0.30, backward=0.46, optimizer=0.07, gpu_wait=0.10, data_wait=0.02, other=0.05)
    sites = {
        "forward": [
            (1.0, "Trainer.step", "/srv/ft/loop.py", 140, "logits = model(input_ids, attention_mask=mask)", None, False)
        ],
        "backward": [(1.0, "Trainer.step", "/srv/ft/loop.py", 143, "loss.backward()", None, False)],
        "optimizer": [(1.0, "Trainer.step", "/srv/ft/loop.py", 146, "opt.step()", None, False)],
        "gpu_wait": [(1.0, "Trainer.log", "/srv/ft/loop.py", 171, "torch.cuda.synchronize()", None, False)],
        "data_wait": [(1.0, "Trainer.run", "/srv/ft/loop.py", 120, "batch = next(it)", False, False)],
        "other": [(1.0, "Trainer.log", "/srv/ft/loop.py", 174, "self.meter.update(loss.detach())", None, False)],
    }
    disks: dict = {"nvme0n1": {}, "nvme1n1": {}}
    nics: dict = {}
    for tick in range(N):
        ph, c = attach_phases(rng, dist, {"low_intensity_op_share": 0.12})
        rows = []
        for phase, k in c.items():
            s0 = sites[phase][0]
            rows.append([phase, "main", s0[1], s0[2], s0[3], s0[4], k, s0[5], s0[6]])
        job = dict(
            rank_busy_cores=j(rng, 1.15),
            worker_busy_cores=j(rng, 0.5),
            workers=4,
            worker_max_busy_cores=j(rng, 0.14),
            worker_hottest_thread_busy=j(rng, 0.14),
            worker_max_demand=0.15,
            main_busy_cores=j(rng, 0.83),
            launch_thread_cores=j(rng, 0.96, 0.01),
            usable_cores=224,
        )
        r = h.cpu(3.1 + job["rank_busy_cores"] + job["worker_busy_cores"], job, sidecar=0.06)
        r += h.memory(155 * GB, 21 * GB, 4 * 2.2 * GB)
        disks["nvme1n1"].update(read=j(rng, 6e6), busy=0.01)
        r += h.storage(
            disks,
            dict(calls=900.0, chars=j(rng, 6e6), bytes=j(rng, 6e6), worker=j(rng, 6e6)),
            capacity={"/": 0.42, "/raid": 0.51},
        )
        r += h.network(nics)
        for i in range(8):
            if i == 0:
                s = dict(
                    sm=min(0.995, j(rng, 0.99, 0.004)),
                    occ=j(rng, 0.41),
                    tensor=j(rng, 0.62, 0.03),
                    dram=j(rng, 0.46),
                    busy=1.0,
                    membusy=j(rng, 0.44),
                    mem_used=j(rng, 74.1e9, 0.001),
                    pcie_tx=j(rng, 1.2e8),
                    power=j(rng, 688.0, 0.01),
                    clock=int(j(rng, 1860, 0.01)),
                    throttle={"sw_power_cap"} if rng.random() < 0.6 else set(),
                    job_process=1.0,
                    procs={pid: 73.6e9},
                )
            else:
                s = dict(
                    sm=0.0,
                    tensor=0.0,
                    dram=0.0,
                    busy=0.0,
                    membusy=0.0,
                    mem_used=0.53e9,
                    pcie_tx=0.0,
                    pcie_rx=0.0,
                    nvl=(0.0, 0.0),
                    power=j(rng, 71.0),
                    clock=345,
                    job_process=0.0,
                    procs={},
                )
            r += h.gpu_readings(i, s, tick)
        tr.add(r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": rows})
    return tr


def attach_gpu_idle_core_pegged(name, rng, t0):
    """attach to a 1x H100 detection job whose DataLoader has num_workers=0: decode + random
    augmentation in the main process, one core pegged, GPU mostly idle."""
    h = one_gpu_box(rng, H100_PCIE, "ws-h100-05")
    pid = 40118
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd attach --pid 40118", "constructed": name})
    dist = dict(data_wait=0.86, forward=0.05, backward=0.06, optimizer=0.01, other=0.02)
    sites = {
        "data_wait": [
            (
                0.55,
                "CocoAug.__call__",
                "/home/ana/det/transforms.py",
                77,
                "img = self.jitter(self.random_resized_crop(img))",
                True,
                False,
            ),
            (
                0.45,
                "CocoDet.__getitem__",
                "/home/ana/det/data.py",
                40,
                "img = Image.open(path).convert('RGB')",
                False,
                False,
            ),
        ],
        "forward": [
            (1.0, "train_one_epoch", "/home/ana/det/engine.py", 31, "loss_dict = model(images, targets)", None, False)
        ],
        "backward": [(1.0, "train_one_epoch", "/home/ana/det/engine.py", 36, "losses.backward()", None, False)],
        "optimizer": [(1.0, "train_one_epoch", "/home/ana/det/engine.py", 37, "optimizer.step()", None, False)],
        "other": [
            (
                1.0,
                "train_one_epoch",
                "/home/ana/det/engine.py",
                40,
                "metric_logger.update(loss=losses_reduced)",
                None,
                False,
            )
        ],
    }
    disks: dict = {"nvme0n1": {}}
    nics: dict = {}
    for tick in range(N):
        ph, c = attach_phases(rng, dist)
        rows = []
        for phase, k in c.items():
            for _ in range(k):
                s0 = sites[phase][0] if len(sites[phase]) == 1 or rng.random() < sites[phase][0][0] else sites[phase][1]
                rows.append([phase, "main", s0[1], s0[2], s0[3], s0[4], 1, s0[5], s0[6]])
        main = min(1.0, j(rng, 0.99, 0.005))
        job = dict(
            rank_busy_cores=main + j(rng, 0.08),
            worker_busy_cores=0.0,
            workers=0,
            main_busy_cores=main,
            launch_thread_cores=main + 0.02,
            hottest_thread_busy=main,
            main_thread_demand=min(1.0, main + 0.005),
            runqueue_wait_cores=0.005,
            usable_cores=64,
        )
        r = h.cpu(job["rank_busy_cores"] + 0.4, job, sidecar=0.05)
        r += h.memory(41 * GiB, 9.8 * GiB)
        disks["nvme0n1"].update(read=j(rng, 3.1e7), rops=j(rng, 260.0), busy=0.03)
        r += h.storage(
            disks,
            dict(calls=j(rng, 1900.0), chars=j(rng, 3.3e7), bytes=j(rng, 3.1e7), rank=j(rng, 3.1e7)),
            capacity={"/": 0.44},
        )
        r += h.network(nics)
        s = dict(
            sm=j(rng, 0.09, 0.1),
            tensor=j(rng, 0.03),
            dram=j(rng, 0.04),
            busy=j(rng, 0.14, 0.1),
            membusy=j(rng, 0.03),
            mem_used=j(rng, 21.4e9, 0.003),
            pcie_tx=j(rng, 2.1e8),
            power=j(rng, 92.0),
            clock=1755,
            job_process=1.0,
            procs={pid: 20.9e9},
        )
        r += h.gpu_readings(0, s, tick)
        tr.add(r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": rows})
    return tr


def cpu_box(
    rng, hostname, model, logical, physical, sockets, mem, cpu_peak, membw, membw_counters=False, flags=ICX_FLAGS
):
    return Host(
        rng,
        hostname,
        model,
        logical,
        physical,
        sockets,
        None if logical <= 4 else 3500.0,
        flags,
        mem,
        cpu_peak,
        membw,
        None,
        0,
        disks=[("nvme0n1", 1.0 * TB, 3.5e9, 5.0e5, "Amazon EC2 NVMe Instance Storage")],
        nics=[("eth0", 25000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p1", False, "nvme0n1", 0.98 * TB, None)],
        membw_counters=membw_counters,
    )


def attach_cpu_allcores(name, rng, t0):
    """attach to a CPU-only job (32 vCPU Ice Lake) training a transformer encoder with torch's
    default 16 intra-op threads + inter-op pool: every core busy in the ops."""
    h = cpu_box(rng, "c6i-8xl-3", "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", 32, 16, 1, 64 * GiB, 1.45e12, 95e9)
    pid = 2290
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd attach --pid 2290", "constructed": name})
    dist = dict(forward=0.36, backward=0.50, optimizer=0.08, data_wait=0.03, other=0.03)
    sites = {
        "forward": [
            (1.0, "Encoder.forward", "/opt/job/model.py", 52, "h = self.ff(self.norm(x + self.attn(x)))", None, False)
        ],
        "backward": [(1.0, "main", "/opt/job/train.py", 77, "loss.backward()", None, False)],
        "optimizer": [(1.0, "main", "/opt/job/train.py", 78, "opt.step()", None, False)],
        "data_wait": [(1.0, "main", "/opt/job/train.py", 70, "for xb, yb in loader:", False, False)],
        "other": [(1.0, "main", "/opt/job/train.py", 81, "running += loss.item()", None, False)],
    }
    disks: dict = {"nvme0n1": {}}
    nics: dict = {}
    for _tick in range(N):
        ph, c = attach_phases(rng, dist, {"low_intensity_op_share": 0.31})
        rows = [
            [
                p,
                "main",
                sites[p][0][1],
                sites[p][0][2],
                sites[p][0][3],
                sites[p][0][4],
                k,
                sites[p][0][5],
                sites[p][0][6],
            ]
            for p, k in c.items()
        ]
        rb = j(rng, 30.6, 0.01)
        job = dict(
            rank_busy_cores=rb,
            worker_busy_cores=j(rng, 0.35),
            workers=2,
            worker_max_busy_cores=j(rng, 0.19),
            worker_hottest_thread_busy=j(rng, 0.19),
            worker_max_demand=0.22,
            main_busy_cores=j(rng, 0.98, 0.01),
            hottest_thread_busy=j(rng, 0.98, 0.01),
            main_thread_demand=1.0,
            runqueue_wait_cores=j(rng, 0.9),
            usable_cores=32,
        )
        r = h.cpu(min(32.0, rb + 0.35 + 0.4), job, psi=j(rng, 0.08), sidecar=0.05)
        r += h.memory(23 * GiB, 14.2 * GiB, 2 * 1.1 * GiB)
        disks["nvme0n1"].update(read=j(rng, 2e6), busy=0.01)
        r += h.storage(disks, dict(calls=300.0, chars=j(rng, 2e6), bytes=0.0), capacity={"/": 0.37})
        r += h.network(nics)
        tr.add(r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": rows})
    return tr


def a100_optimizer(name, rng, t0):
    """1x A100 80GB: full fine-tune of a 2.1B-parameter model at micro-batch 1 x 512 tokens,
    fp32 master weights, torch.optim.AdamW (foreach, not fused); DCGM exporter on the node."""
    h = Host(
        rng,
        "a100-node-14",
        "AMD EPYC 7763 64-Core Processor",
        256,
        128,
        2,
        3529.0,
        ZEN3_FLAGS,
        1024 * GiB,
        3.9e12,
        330e9,
        A100_SXM80,
        8,
        disks=[("nvme0n1", 3.84 * TB, 7.0e9, 1.0e6, "SAMSUNG MZWLJ3T8HBLS")],
        nics=[("eth0", 100000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, "nvme0n1", 3.5 * TB, None)],
    )
    pid = 19004
    tr = Trace(
        h, t0, {"pid": pid, "command": "bottleneckd run -- python finetune.py --model 2b --bs 1", "constructed": name}
    )
    per = dict(data_wait=0.001, transfer=0.001, forward=0.016, backward=0.033, optimizer=0.071, other=0.004)
    flops = 6 * 2.1e9 * 512
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "parameters": 2_100_000_000,
        "param_dtype": "float32",
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "optimizer_impl": "foreach",
        "loader_workers": 2,
        "pin_memory": True,
        "batch_size": 1,
        "input_rank": 2,
        "tokens_per_example": 512.0,
        "flops_per_step": flops,
        "operand_bytes_per_step": 1.38e11,
        "arithmetic_intensity": flops / 1.38e11,
        "weight_byte_share": 0.93,
        "achieved_flops": flops / 0.049,
        "achieved_bytes_per_second": 3.6e10 / 0.049,
        "cuda_memory_total_bytes": 85899345920,
        "cuda_memory_reserved_bytes": 52_400_000_000,
        "cuda_memory_allocated_bytes": 43_900_000_000,
        "cuda_memory_peak_allocated_bytes": 49_100_000_000,
    }
    st = Steps()
    disks: dict = {"nvme0n1": {}}
    nics: dict = {}
    msites = {
        "optimizer": [(1.0, "train", "/work/ft/finetune.py", 133, "optimizer.step()", None, False)],
        "backward": [(1.0, "train", "/work/ft/finetune.py", 131, "loss.backward()", None, False)],
        "forward": [(1.0, "train", "/work/ft/finetune.py", 129, "loss = model(**batch).loss", None, False)],
    }
    for tick in range(N):
        n = st.take(1.0, sum(per.values()))
        ph = phases(rng, n, per, facts, examples_per_step=1)
        job = dict(
            rank_busy_cores=j(rng, 1.3),
            worker_busy_cores=j(rng, 0.06),
            workers=2,
            worker_max_busy_cores=0.03,
            worker_hottest_thread_busy=0.03,
            worker_max_demand=0.04,
            main_busy_cores=j(rng, 0.78),
            launch_thread_cores=j(rng, 0.88),
            usable_cores=256,
        )
        r = h.cpu(job["rank_busy_cores"] + 4.0, job)
        r += h.memory(88 * GiB, 14 * GiB, 2 * 1.3 * GiB)
        disks["nvme0n1"].update(read=j(rng, 1e5), busy=0.0)
        r += h.storage(disks, dict(calls=40.0, chars=j(rng, 2e5)), capacity={"/": 0.52})
        r += h.network(nics)
        for i in range(8):
            if i == 0:
                s = dict(
                    source="dcgm-exporter",
                    sm=j(rng, 0.47, 0.03),
                    occ=j(rng, 0.30),
                    tensor=j(rng, 0.19),
                    fp32=j(rng, 0.21),
                    dram=j(rng, 0.63, 0.02),
                    busy=j(rng, 0.97, 0.01),
                    membusy=j(rng, 0.61, 0.02),
                    mem_used=j(rng, 53.1e9, 0.001),
                    pcie_tx=j(rng, 3e6),
                    power=j(rng, 338.0),
                    clock=1410,
                    job_process=1.0,
                    procs={pid: 52.6e9},
                )
            else:
                s = dict(
                    source="dcgm-exporter",
                    sm=0.0,
                    tensor=0.0,
                    fp32=0.0,
                    dram=0.0,
                    busy=0.0,
                    membusy=0.0,
                    mem_used=0.0,
                    pcie_tx=0.0,
                    pcie_rx=0.0,
                    nvl=(0.0, 0.0),
                    power=j(rng, 60.0),
                    clock=210,
                    job_process=0.0,
                    procs={},
                )
            r += h.gpu_readings(i, s, tick)
        tr.add(r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(rng, msites, 2)})
    return tr


def host_swapping(name, rng, t0):
    """1x A10 workstation, 64 GiB RAM: a dataset held as Python lists in each of 8 loader workers
    (copy-on-access duplicates it) pushes the host into swap; workers fault pages in from swap."""
    h = Host(
        rng,
        "ws-a10-11",
        "Intel(R) Core(TM) i9-12900K",
        24,
        16,
        1,
        5200.0,
        ["avx", "avx2", "fma"],
        64 * GiB,
        0.95e12,
        62e9,
        A10,
        1,
        disks=[("nvme0n1", 2.0 * TB, 7.0e9, 1.0e6, "Samsung SSD 980 PRO 2TB")],
        nics=[("eth0", 2500)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, "nvme0n1", 1.8 * TB, None)],
    )
    pid = 3370
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd run -- python train_cls.py", "constructed": name})
    per = dict(data_wait=0.64, transfer=0.012, forward=0.055, backward=0.110, optimizer=0.010, other=0.006)
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "parameters": 88_000_000,
        "param_dtype": "float32",
        "autocast_dtype": "float16",
        "compute_dtype": "float16",
        "loader_workers": 8,
        "pin_memory": True,
        "persistent_workers": True,
        "prefetch_factor": 2,
        "batch_size": 64,
        "input_rank": 4,
        "has_conv": True,
        "cores": 24,
    }
    wsites = {
        "data_wait": [
            (0.7, "RecordSet.__getitem__", "/home/kim/cls/data.py", 33, "rec = self.records[idx]", False, False),
            (0.3, "RecordSet.__getitem__", "/home/kim/cls/data.py", 35, "x = decode(rec['jpeg'])", False, False),
        ]
    }
    msites = {"data_wait": [(1.0, "main", "/home/kim/cls/train_cls.py", 101, "for x, y in loader:", False, False)]}
    st = Steps()
    disks: dict = {"nvme0n1": {}}
    nics: dict = {}
    swt = [4.1e11, 4.6e11]
    for tick in range(N):
        n = st.take(1.0, sum(per.values()))
        ph = phases(rng, n, per, facts, examples_per_step=64, noise=0.1)
        sin, sout = j(rng, 3.4e8, 0.08), j(rng, 2.7e8, 0.08)
        swt[0] += sin
        swt[1] += sout
        wb = [j(rng, 0.16, 0.15) for _ in range(8)]
        job = dict(
            rank_busy_cores=j(rng, 0.42),
            worker_busy_cores=sum(wb),
            workers=8,
            worker_max_busy_cores=max(wb),
            worker_hottest_thread_busy=max(wb),
            worker_max_demand=max(wb) + 0.02,
            main_busy_cores=j(rng, 0.31),
            launch_thread_cores=j(rng, 0.34),
            processes_in_disk_wait=int(j(rng, 6, 0.15)),
            threads_in_disk_wait=int(j(rng, 7, 0.15)),
            runqueue_wait_cores=0.03,
            usable_cores=24,
            pressure_some=0.05,
        )
        r = h.cpu(job["rank_busy_cores"] + job["worker_busy_cores"] + 0.9, job, iowait=j(rng, 0.21), psi=0.05)
        r += h.memory(
            63.1 * GiB,
            9.4 * GiB,
            8 * 6.6 * GiB,
            0.0,
            swap_in=sin,
            swap_out=sout,
            swap_tot=tuple(swt),
            psi_some=j(rng, 0.68, 0.05),
            psi_full=j(rng, 0.46, 0.06),
        )
        disks["nvme0n1"].update(
            read=sin + j(rng, 1e7),
            write=sout + j(rng, 2e6),
            rops=(sin + 1e7) / 4096 * 0.25,
            wops=sout / 65536,
            busy=j(rng, 0.74, 0.05),
            qd=j(rng, 5.8),
            inflight=6,
        )
        r += h.storage(
            disks,
            dict(
                calls=j(rng, 700.0),
                chars=j(rng, 9e6),
                bytes=j(rng, 8e6),
                worker=j(rng, 8e6),
                psi_some=0.55,
                psi_full=0.41,
            ),
            host_psi=(0.55, 0.41),
            capacity={"/": 0.61},
        )
        r += h.network(nics)
        s = dict(
            busy=j(rng, 0.22, 0.1),
            membusy=j(rng, 0.07),
            sm=0.0,
            dram=0.0,
            mem_used=j(rng, 14.2e9, 0.002),
            pcie_tx=j(rng, 6e7),
            power=j(rng, 68.0),
            clock=1695,
            job_process=1.0,
            procs={pid: 13.8e9},
        )
        r += h.gpu_readings(0, s, tick)
        tr.add(r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(rng, msites, 2, wsites, 1)})
    return tr


def gpu_cotenant(name, rng, t0):
    """1x H100 SXM shared (no MIG, no MPS): the job and another user's training process time-slice
    the SMs; the other process holds about half of them."""
    h = dgx_h100(rng)
    pid, other = 60210, 58811
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd run -- python train_unet.py", "constructed": name})
    per = dict(data_wait=0.004, transfer=0.002, forward=0.118, backward=0.236, optimizer=0.012, other=0.004)
    flops = 1.28e14
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[2]],
        "parameters": 860_000_000,
        "param_dtype": "float32",
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "has_conv": True,
        "input_rank": 4,
        "loader_workers": 8,
        "pin_memory": True,
        "batch_size": 32,
        "optimizer_impl": "fused",
        "flops_per_step": flops,
        "operand_bytes_per_step": 2.4e11,
        "achieved_flops": flops / 0.354,
        "conv_flop_share": 0.58,
    }
    st = Steps()
    disks: dict = {"nvme0n1": {}, "nvme1n1": {}}
    nics: dict = {}
    for tick in range(N):
        n = st.take(1.0, sum(per.values()))
        ph = phases(rng, n, per, facts, examples_per_step=32)
        job = dict(
            rank_busy_cores=j(rng, 1.2),
            worker_busy_cores=j(rng, 1.4),
            workers=8,
            worker_max_busy_cores=j(rng, 0.2),
            worker_hottest_thread_busy=j(rng, 0.2),
            worker_max_demand=0.22,
            main_busy_cores=j(rng, 0.74),
            launch_thread_cores=j(rng, 0.81),
            usable_cores=224,
        )
        r = h.cpu(job["rank_busy_cores"] + job["worker_busy_cores"] + 2.3, job)
        r += h.memory(190 * GB, 18 * GB, 8 * 1.5 * GB)
        disks["nvme1n1"].update(read=j(rng, 4e7), busy=0.04)
        r += h.storage(
            disks,
            dict(calls=2200.0, chars=j(rng, 4e7), bytes=j(rng, 4e7), worker=j(rng, 4e7)),
            capacity={"/": 0.44, "/raid": 0.61},
        )
        r += h.network(nics)
        for i in range(8):
            if i == 2:
                s = dict(
                    sm=min(0.99, j(rng, 0.97, 0.01)),
                    occ=j(rng, 0.52),
                    tensor=j(rng, 0.58),
                    dram=j(rng, 0.49),
                    busy=1.0,
                    membusy=j(rng, 0.47),
                    mem_used=j(rng, 71.9e9, 0.001),
                    pcie_tx=j(rng, 2.2e8),
                    power=j(rng, 671.0, 0.015),
                    clock=int(j(rng, 1830, 0.01)),
                    throttle={"sw_power_cap"} if rng.random() < 0.5 else set(),
                    job_process=1.0,
                    procs={pid: 38.6e9, other: 32.4e9},
                )
            elif i in (0, 1):
                s = dict(
                    sm=j(rng, 0.9),
                    tensor=j(rng, 0.6),
                    dram=j(rng, 0.4),
                    busy=1.0,
                    membusy=j(rng, 0.4),
                    mem_used=j(rng, 66e9, 0.001),
                    nvl=(0.0, 0.0),
                    power=j(rng, 640.0),
                    clock=1905,
                    job_process=0.0,
                    procs={44000 + i: 65.4e9},
                )
            else:
                s = dict(
                    sm=0.0,
                    tensor=0.0,
                    dram=0.0,
                    busy=0.0,
                    membusy=0.0,
                    mem_used=0.53e9,
                    pcie_tx=0.0,
                    pcie_rx=0.0,
                    nvl=(0.0, 0.0),
                    power=j(rng, 71.0),
                    clock=345,
                    job_process=0.0,
                    procs={},
                )
            r += h.gpu_readings(i, s, tick)
        tr.add(r, ph)
    return tr


def cpu2_workers2(name, rng, t0):
    """2-vCPU VM, CPU-only: a small CNN on CIFAR-style JPEGs, DataLoader num_workers=2 (decode +
    random crop/flip/colour jitter) beside the training process: three busy processes on 2 cores."""
    h = cpu_box(
        rng,
        "vm-2c",
        "AMD EPYC",
        2,
        2,
        1,
        8 * GiB,
        1.9e11,
        2.9e10,
        flags=["avx", "avx2", "fma", "avx512f", "avx512_bf16"],
    )
    pid = 1201
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd run -- python train_cnn.py", "constructed": name})
    per = dict(data_wait=0.071, transfer=0.0, forward=0.014, backward=0.026, optimizer=0.003, other=0.002)
    facts = {
        "device": "cpu",
        "pid": pid,
        "parameters": 1_200_000,
        "param_dtype": "float32",
        "compute_dtype": "float32",
        "has_conv": True,
        "input_rank": 4,
        "loader_workers": 2,
        "pin_memory": False,
        "persistent_workers": False,
        "prefetch_factor": 2,
        "batch_size": 64,
        "cores": 2,
        "loader_workers_saturate_cores": True,
        "flops_per_step": 2.2e9,
        "operand_bytes_per_step": 4.1e8,
        "achieved_flops": 2.2e9 / 0.040,
    }
    wsites = {
        "data_wait": [
            (
                0.58,
                "TrainAug.__call__",
                "/home/u/cnn/aug.py",
                19,
                "img = self.jitter(self.crop(self.flip(img)))",
                True,
                False,
            ),
            (
                0.42,
                "JpegFolder.__getitem__",
                "/home/u/cnn/data.py",
                27,
                "img = Image.open(p).convert('RGB')",
                False,
                False,
            ),
        ]
    }
    msites = {
        "data_wait": [(1.0, "main", "/home/u/cnn/train_cnn.py", 55, "for x, y in loader:", False, False)],
        "forward": [(1.0, "main", "/home/u/cnn/train_cnn.py", 57, "out = net(x)", None, False)],
        "backward": [(1.0, "main", "/home/u/cnn/train_cnn.py", 59, "loss.backward()", None, False)],
    }
    st = Steps()
    disks: dict = {"nvme0n1": {}}
    nics: dict = {}
    for tick in range(N):
        n = st.take(1.0, sum(per.values()))
        ph = phases(
            rng,
            n,
            per,
            dict(facts, thread_cpu_seconds=11.0 + 0.62 * tick, runqueue_wait_seconds=4.0 + 0.3 * tick),
            examples_per_step=64,
        )
        w1, w2 = j(rng, 0.66, 0.02), j(rng, 0.66, 0.02)
        main = j(rng, 0.63, 0.02)
        job = dict(
            rank_busy_cores=main + 0.02,
            worker_busy_cores=w1 + w2,
            workers=2,
            worker_max_busy_cores=max(w1, w2),
            worker_hottest_thread_busy=max(w1, w2),
            worker_max_demand=min(1.0, max(w1, w2) + 0.31),
            main_busy_cores=main,
            main_thread_demand=min(1.0, main + 0.3),
            hottest_thread_demand=min(1.0, main + 0.3),
            runqueue_wait_cores=j(rng, 0.92),
            usable_cores=2,
            pressure_some=j(rng, 0.61),
        )
        r = h.cpu(min(2.0, main + w1 + w2 + 0.06), job, psi=job["pressure_some"], sidecar=0.04)
        r += h.memory(3.1 * GiB, 0.9 * GiB, 2 * 0.4 * GiB)
        disks["nvme0n1"].update(read=j(rng, 1.1e6), busy=0.01)
        r += h.storage(
            disks,
            dict(calls=j(rng, 1800.0), chars=j(rng, 1.2e7), bytes=j(rng, 1e6), worker=j(rng, 1e6)),
            capacity={"/": 0.21},
        )
        r += h.network(nics)
        tr.add(r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(rng, msites, 2, wsites, 1)})
    return tr


def ckpt_disk_nearly_full(name, rng, t0):
    """1x H100 SXM, GPU-bound ViT training; /raid (checkpoints) 97% full; one 14 GB checkpoint
    (torch.save, model + optimizer) written in the window, ~6 s of 40."""
    h = dgx_h100(rng)
    pid = 77102
    tr = Trace(
        h,
        t0,
        {
            "pid": pid,
            "command": "bottleneckd run -- python train_vit.py --ckpt-dir /raid/ckpt --save-every 300",
            "constructed": name,
        },
    )
    per = dict(data_wait=0.003, transfer=0.002, forward=0.088, backward=0.178, optimizer=0.011, other=0.004)
    flops = 2.2e14
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "parameters": 632_000_000,
        "param_dtype": "float32",
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "input_rank": 4,
        "loader_workers": 10,
        "pin_memory": True,
        "persistent_workers": True,
        "batch_size": 256,
        "optimizer_impl": "fused",
        "flops_per_step": flops,
        "operand_bytes_per_step": 3.0e11,
        "achieved_flops": flops / 0.266,
    }
    msites_ckpt = {
        "other": [(1.0, "save_checkpoint", "/home/ml/vit/ckpt.py", 22, "torch.save(state, tmp)", None, False)]
    }
    msites = {
        "forward": [(1.0, "train", "/home/ml/vit/train_vit.py", 140, "loss = crit(model(x), y)", None, False)],
        "backward": [(1.0, "train", "/home/ml/vit/train_vit.py", 142, "scaler.scale(loss).backward()", None, False)],
    }
    st = Steps()
    disks: dict = {"nvme0n1": {}, "nvme1n1": {}}
    nics: dict = {}
    ck0, ck1 = 17, 23  # checkpoint in intervals 17..22, the step holding it ends in 23
    cap = 0.968
    for tick in range(N):
        in_ckpt = ck0 <= tick < ck1
        if in_ckpt:
            ph = None
            if tick == ck0:  # the steps before the checkpoint began
                n = st.take(0.35, sum(per.values()))
                ph = phases(rng, n, per, facts, examples_per_step=256)
            stacks = {"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(rng, msites_ckpt, 2)}
        elif tick == ck1:
            n = st.take(0.7, sum(per.values()))
            ph = phases(rng, n, per, facts, examples_per_step=256)
            ph["steps"] += 1
            ph["phases"]["other"] += 6.05
            for k, v in per.items():
                ph["phases"][k] += v if k != "other" else 0.0
            ph["wall_seconds"] = round(sum(ph["phases"].values()), 6)
            ph["examples"] += 256
            stacks = {
                "source": "py-spy",
                "rate_hz": 2.0,
                "rows": stack_rows(rng, msites_ckpt, 1) + stack_rows(rng, msites, 1),
            }
        else:
            n = st.take(1.0, sum(per.values()))
            ph = phases(rng, n, per, facts, examples_per_step=256)
            stacks = {"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(rng, msites, 2)}
        writing = in_ckpt and tick > ck0 - 1
        if writing:
            cap += 14e9 / 6 / (30.7 * TB)
        job = dict(
            rank_busy_cores=j(rng, 1.05 if writing else 1.3),
            worker_busy_cores=0.1 if writing else j(rng, 2.9),
            workers=10,
            worker_max_busy_cores=0.02 if writing else j(rng, 0.33),
            worker_hottest_thread_busy=0.02 if writing else j(rng, 0.33),
            worker_max_demand=0.03 if writing else 0.35,
            main_busy_cores=j(rng, 0.97 if writing else 0.72, 0.02),
            launch_thread_cores=j(rng, 0.97 if writing else 0.8, 0.02),
            threads_in_disk_wait=1 if writing else 0,
            processes_in_disk_wait=1 if writing else 0,
            usable_cores=224,
        )
        r = h.cpu(job["rank_busy_cores"] + job["worker_busy_cores"] + 1.0, job, iowait=0.01 if writing else 0.002)
        r += h.memory(240 * GB + (14e9 if writing else 0), 22 * GB, 10 * 1.4 * GB)
        disks["nvme0n1"].update(read=j(rng, 1e5), write=j(rng, 8e5), busy=0.01, qd=0.01)
        if writing:
            disks["nvme1n1"].update(
                read=j(rng, 2e6),
                write=j(rng, 2.35e9, 0.05),
                wops=j(rng, 2.35e9 / 1048576),
                rops=20,
                busy=j(rng, 0.93, 0.03),
                qd=j(rng, 11.0),
                inflight=12,
            )
        else:
            disks["nvme1n1"].update(
                read=j(rng, 1.1e8),
                write=j(rng, 1e5),
                rops=j(rng, 860.0),
                wops=5,
                busy=j(rng, 0.05),
                qd=0.08,
                inflight=0,
            )
        r += h.storage(
            disks,
            dict(
                calls=j(rng, 5200.0),
                chars=j(rng, 1.1e8) if not writing else 1e6,
                bytes=j(rng, 1.1e8) if not writing else 1e6,
                write=2.35e9 if writing else 0.0,
                worker=0.0 if writing else j(rng, 1.1e8),
                rank=2.35e9 if writing else 0.0,
            ),
            capacity={"/": 0.39, "/raid": cap},
        )
        r += h.network(nics)
        for i in range(8):
            if i == 0:
                s = dict(
                    sm=j(rng, 0.07 if writing else 0.94, 0.02),
                    tensor=j(rng, 0.0 if writing else 0.61),
                    dram=j(rng, 0.01 if writing else 0.44),
                    busy=j(rng, 0.04 if writing else 1.0, 0.01),
                    membusy=j(rng, 0.01 if writing else 0.42),
                    mem_used=j(rng, 58.3e9, 0.001),
                    pcie_rx=j(rng, 2.3e9 if writing else 1e7),
                    pcie_tx=j(rng, 1e6 if writing else 3.1e8),
                    power=j(rng, 118.0 if writing else 662.0, 0.02),
                    clock=1980 if writing else int(j(rng, 1850, 0.01)),
                    throttle=set() if writing else ({"sw_power_cap"} if rng.random() < 0.5 else set()),
                    job_process=1.0,
                    procs={pid: 57.8e9},
                )
            else:
                s = dict(
                    sm=0.0,
                    tensor=0.0,
                    dram=0.0,
                    busy=0.0,
                    membusy=0.0,
                    mem_used=0.53e9,
                    pcie_tx=0.0,
                    pcie_rx=0.0,
                    nvl=(0.0, 0.0),
                    power=j(rng, 71.0),
                    clock=345,
                    job_process=0.0,
                    procs={},
                )
            r += h.gpu_readings(i, s, tick)
        tr.add(r, ph, stacks=stacks)
    return tr


def lightning_val(name, rng, t0):
    """1x H100 SXM, a Lightning script run under `bottleneckd run` (no callback): val_check_interval=50
    over a 12k-sample validation set; each validation pass (~9 s) lands in the step that spans it,
    as 'other' (between an optimizer step and the next batch request)."""
    h = dgx_h100(rng)
    pid = 91330
    tr = Trace(
        h,
        t0,
        {
            "pid": pid,
            "command": "bottleneckd run -- python lit_train.py trainer.val_check_interval=50",
            "constructed": name,
        },
    )
    per = dict(data_wait=0.003, transfer=0.002, forward=0.046, backward=0.092, optimizer=0.006, other=0.003)
    step = sum(per.values())
    flops = 1.1e14
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "parameters": 310_000_000,
        "param_dtype": "float32",
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "input_rank": 4,
        "loader_workers": 8,
        "pin_memory": True,
        "batch_size": 128,
        "optimizer_impl": "fused",
        "flops_per_step": flops,
        "operand_bytes_per_step": 2.2e11,
        "achieved_flops": flops / 0.138,
    }
    val_sites = {
        "other": [
            (0.8, "LitModel.validation_step", "/home/ml/lit/model.py", 88, "logits = self(x)", None, False),
            (
                0.2,
                "LitModel.validation_step",
                "/home/ml/lit/model.py",
                90,
                "self.val_acc.update(logits, y)",
                None,
                False,
            ),
        ]
    }
    train_sites = {
        "forward": [(1.0, "LitModel.training_step", "/home/ml/lit/model.py", 71, "logits = self(x)", None, False)],
        "backward": [
            (1.0, "LitModel.training_step", "/home/ml/lit/model.py", 73, "return self.loss(logits, y)", None, False)
        ],
    }
    val_len = 9.0
    train_len = 50 * step  # 7.6 s
    disks: dict = {"nvme0n1": {}, "nvme1n1": {}}
    nics: dict = {}
    # timeline: train 7.6 s, val 9.0 s, repeat; start 3 s into a training block
    clock = 3.0
    cycle = train_len + val_len
    st = Steps()
    for tick in range(N):
        a, b = clock % cycle, (clock + 1.0) % cycle
        # seconds of this interval spent training vs validating
        train_s = 0.0
        for k in range(100):
            x = (clock + (k + 0.5) / 100) % cycle
            train_s += 0.01 if x < train_len else 0.0
        val_s = 1.0 - train_s
        ends_val = a >= train_len and (b < a or b < train_len)  # validation ends in this interval
        n = st.take(train_s, step) if train_s > 0 else 0
        ph = phases(rng, n, per, facts, examples_per_step=128) if n else None
        if ends_val:
            if ph is None:
                ph = phases(rng, 0, per, facts, examples_per_step=128)
            ph["steps"] += 1
            for k, v in per.items():
                ph["phases"][k] += v
            ph["phases"]["other"] += val_len
            ph["wall_seconds"] = round(sum(ph["phases"].values()), 6)
            ph["examples"] = ph.get("examples", 0) + 128
        if ph is not None and ph["steps"] == 0:
            ph = None
        mrows = stack_rows(rng, val_sites, int(round(2 * val_s))) if val_s > 0.25 else []
        mrows += (
            stack_rows(rng, train_sites, 2 - len([1 for _ in range(sum(r[6] for r in mrows))]))
            if train_s > 0.25
            else []
        )
        stacks = {"source": "py-spy", "rate_hz": 2.0, "rows": mrows}
        job = dict(
            rank_busy_cores=j(rng, 1.25),
            worker_busy_cores=j(rng, 2.6 * train_s + 1.1 * val_s),
            workers=8,
            worker_max_busy_cores=j(rng, 0.34),
            worker_hottest_thread_busy=j(rng, 0.34),
            worker_max_demand=0.36,
            main_busy_cores=j(rng, 0.76),
            launch_thread_cores=j(rng, 0.83),
            usable_cores=224,
        )
        r = h.cpu(job["rank_busy_cores"] + job["worker_busy_cores"] + 1.0, job)
        r += h.memory(180 * GB, 17 * GB, 8 * 1.5 * GB)
        disks["nvme1n1"].update(read=j(rng, 3.5e8), rops=j(rng, 2700.0), busy=0.12)
        r += h.storage(
            disks,
            dict(calls=j(rng, 8000.0), chars=j(rng, 3.5e8), bytes=j(rng, 3.5e8), worker=j(rng, 3.5e8)),
            capacity={"/": 0.41, "/raid": 0.63},
        )
        r += h.network(nics)
        for i in range(8):
            if i == 0:
                s = dict(
                    sm=j(rng, 0.93 * train_s + 0.82 * val_s, 0.02),
                    tensor=j(rng, 0.6 * train_s + 0.41 * val_s),
                    dram=j(rng, 0.42),
                    busy=1.0,
                    membusy=j(rng, 0.4),
                    mem_used=j(rng, 49.5e9, 0.001),
                    pcie_tx=j(rng, 6e8),
                    power=j(rng, 640.0 * train_s + 520.0 * val_s),
                    clock=int(j(rng, 1880, 0.01)),
                    job_process=1.0,
                    procs={pid: 49.0e9},
                )
            else:
                s = dict(
                    sm=0.0,
                    tensor=0.0,
                    dram=0.0,
                    busy=0.0,
                    membusy=0.0,
                    mem_used=0.53e9,
                    pcie_tx=0.0,
                    pcie_rx=0.0,
                    nvl=(0.0, 0.0),
                    power=j(rng, 71.0),
                    clock=345,
                    job_process=0.0,
                    procs={},
                )
            r += h.gpu_readings(i, s, tick)
        tr.add(r, ph, stacks=stacks)
        clock += 1.0
    return tr


def hf_grad_accum(name, rng, t0):
    """1x H100 SXM, Hugging Face Trainer (callback): GPT-2 small (124M), per_device_train_batch_size=2,
    gradient_accumulation_steps=32, seq 256, bf16: thousands of tiny kernels per optimizer step."""
    h = dgx_h100(rng)
    pid = 45012
    tr = Trace(
        h,
        t0,
        {
            "pid": pid,
            "command": "python run_clm.py --per_device_train_batch_size 2 --gradient_accumulation_steps 32",
            "constructed": name,
        },
    )
    per = dict(data_wait=0.0095, transfer=0.0035, forward=0.071, backward=0.094, optimizer=0.0085, other=0.003)
    flops = 6 * 124e6 * 512 * 32
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "framework": "transformers",
        "parameters": 124_000_000,
        "param_dtype": "float32",
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "input_rank": 2,
        "tokens_per_example": 256.0,
        "loader_workers": 0,
        "pin_memory": True,
        "batch_size": 2,
        "optimizer_impl": "fused",
        "flops_per_step": flops,
        "operand_bytes_per_step": 4.8e10,
        "arithmetic_intensity": flops / 4.8e10,
        "weight_byte_share": 0.71,
        "achieved_flops": flops / 0.165,
        "achieved_bytes_per_second": 4.8e10 / 0.165,
    }
    st = Steps()
    disks: dict = {"nvme0n1": {}, "nvme1n1": {}}
    nics: dict = {}
    for tick in range(N):
        n = st.take(1.0, sum(per.values()))
        ph = phases(rng, n, per, facts, examples_per_step=64)
        main = min(1.0, j(rng, 0.985, 0.005))
        job = dict(
            rank_busy_cores=main + j(rng, 0.33),
            worker_busy_cores=0.0,
            workers=0,
            main_busy_cores=main,
            launch_thread_cores=min(1.0, main + 0.01),
            hottest_thread_busy=main,
            main_thread_demand=min(1.0, main + 0.01),
            runqueue_wait_cores=0.01,
            usable_cores=224,
        )
        r = h.cpu(job["rank_busy_cores"] + 1.5, job)
        r += h.memory(120 * GB, 6.2 * GB)
        disks["nvme1n1"].update(read=j(rng, 2e5), busy=0.0)
        r += h.storage(disks, dict(calls=60.0, chars=j(rng, 2.5e5)), capacity={"/": 0.4, "/raid": 0.5})
        r += h.network(nics)
        for i in range(8):
            if i == 0:
                s = dict(
                    sm=j(rng, 0.23, 0.05),
                    occ=j(rng, 0.08),
                    tensor=j(rng, 0.06),
                    dram=j(rng, 0.09),
                    busy=j(rng, 0.93, 0.02),
                    membusy=j(rng, 0.08),
                    mem_used=j(rng, 9.8e9, 0.002),
                    pcie_tx=j(rng, 3e6),
                    power=j(rng, 205.0),
                    clock=1980,
                    job_process=1.0,
                    procs={pid: 9.3e9},
                )
            else:
                s = dict(
                    sm=0.0,
                    tensor=0.0,
                    dram=0.0,
                    busy=0.0,
                    membusy=0.0,
                    mem_used=0.53e9,
                    pcie_tx=0.0,
                    pcie_rx=0.0,
                    nvl=(0.0, 0.0),
                    power=j(rng, 71.0),
                    clock=345,
                    job_process=0.0,
                    procs={},
                )
            r += h.gpu_readings(i, s, tick)
        tr.add(r, ph)
    return tr


def cpu_other_processes(name, rng, t0):
    """CPU-only 48-thread server: the job (torch, 24 intra-op threads) shares the host with two
    ffmpeg transcodes of another user that take ~38 cores."""
    h = cpu_box(rng, "build-07", "Intel(R) Xeon(R) Gold 6342 CPU @ 2.80GHz", 48, 24, 1, 256 * GiB, 2.6e12, 140e9)
    pid = 61500
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd run -- python train_tabular.py", "constructed": name})
    per = dict(data_wait=0.004, transfer=0.0, forward=0.115, backward=0.205, optimizer=0.018, other=0.005)
    facts = {
        "device": "cpu",
        "pid": pid,
        "parameters": 41_000_000,
        "param_dtype": "float32",
        "compute_dtype": "float32",
        "loader_workers": 2,
        "batch_size": 1024,
        "input_rank": 2,
        "cores": 48,
        "flops_per_step": 2.6e11,
        "operand_bytes_per_step": 2.2e10,
        "achieved_flops": 2.6e11 / 0.32,
    }
    st = Steps()
    disks: dict = {"nvme0n1": {}}
    nics: dict = {}
    for tick in range(N):
        n = st.take(1.0, sum(per.values()))
        ph = phases(
            rng,
            n,
            per,
            dict(facts, thread_cpu_seconds=30 + 0.45 * tick, runqueue_wait_seconds=12 + 0.52 * tick),
            examples_per_step=1024,
        )
        o1, o2 = j(rng, 22.5, 0.03), j(rng, 15.8, 0.03)
        rb = j(rng, 9.6, 0.04)
        job = dict(
            rank_busy_cores=rb,
            worker_busy_cores=j(rng, 0.12),
            workers=2,
            worker_max_busy_cores=0.07,
            worker_hottest_thread_busy=0.07,
            worker_max_demand=0.09,
            main_busy_cores=j(rng, 0.46),
            main_thread_demand=j(rng, 0.98, 0.01),
            hottest_thread_demand=j(rng, 0.98, 0.01),
            runqueue_wait_cores=j(rng, 13.5, 0.05),
            usable_cores=48,
            pressure_some=j(rng, 0.82),
        )
        r = h.cpu(
            min(48.0, rb + o1 + o2 + 0.2),
            job,
            psi=job["pressure_some"],
            outside=[("ffmpeg", 90211, o1), ("ffmpeg", 90388, o2)],
        )
        r += h.memory(61 * GiB, 7.5 * GiB, 2 * 0.6 * GiB)
        disks["nvme0n1"].update(read=j(rng, 1.5e7), write=j(rng, 1.2e7), busy=0.06)
        r += h.storage(disks, dict(calls=200.0, chars=j(rng, 1e6)), capacity={"/": 0.55})
        r += h.network(nics)
        tr.add(r, ph)
    return tr


def cpu_cgroup_threads(name, rng, t0):
    """CPU-only pod limited to 8 CPUs (cgroup cpu.max 800000/100000) on a 128-thread EPYC host:
    torch sees 64 physical cores and runs 64 intra-op threads (the default) in an 8-core quota."""
    h = cpu_box(
        rng, "k8s-cpu-22", "AMD EPYC 7763 64-Core Processor", 128, 64, 1, 512 * GiB, 3.1e12, 190e9, flags=ZEN3_FLAGS
    )
    pid = 14
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd run -- python train.py", "constructed": name})
    per = dict(data_wait=0.006, transfer=0.0, forward=0.180, backward=0.350, optimizer=0.030, other=0.006)
    facts = {
        "device": "cpu",
        "pid": pid,
        "parameters": 22_000_000,
        "param_dtype": "float32",
        "compute_dtype": "float32",
        "loader_workers": 2,
        "batch_size": 256,
        "input_rank": 4,
        "has_conv": True,
        "cores": 128,
        "flops_per_step": 1.4e11,
        "operand_bytes_per_step": 3.4e10,
        "achieved_flops": 1.4e11 / 0.53,
    }
    st = Steps()
    disks: dict = {"nvme0n1": {}}
    nics: dict = {}
    for tick in range(N):
        n = st.take(1.0, sum(per.values()))
        ph = phases(
            rng,
            n,
            per,
            dict(facts, thread_cpu_seconds=40 + 0.31 * tick, runqueue_wait_seconds=25 + 0.55 * tick),
            examples_per_step=256,
        )
        rb = j(rng, 7.75, 0.01)
        job = dict(
            rank_busy_cores=rb,
            worker_busy_cores=j(rng, 0.2),
            workers=2,
            worker_max_busy_cores=0.11,
            worker_hottest_thread_busy=0.11,
            worker_max_demand=0.4,
            main_busy_cores=j(rng, 0.31),
            main_thread_demand=j(rng, 0.86),
            hottest_thread_demand=j(rng, 0.86),
            runqueue_wait_cores=j(rng, 43.0, 0.04),
            usable_cores=8,
            pressure_some=j(rng, 0.97, 0.01),
        )
        r = h.cpu(rb + 0.2 + j(rng, 46.0), job, psi=j(rng, 0.12))
        r += h.memory(230 * GiB, 5.1 * GiB, 2 * 0.8 * GiB)
        disks["nvme0n1"].update(read=j(rng, 2e6), busy=0.01)
        r += h.storage(disks, dict(calls=300.0, chars=j(rng, 2e6)), capacity={"/": 0.48})
        r += h.network(nics)
        tr.add(r, ph)
    return tr


def cpu_membw_embeddings(name, rng, t0):
    """2-socket Xeon 8380 (bare metal, resctrl MBM mounted), CPU-only DLRM-style training: large
    embedding-bag lookups and sparse updates streaming DRAM at its calibrated peak."""
    h = cpu_box(
        rng,
        "xeon-8380-02",
        "Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz",
        160,
        80,
        2,
        1024 * GiB,
        5.1e12,
        305e9,
        membw_counters=True,
    )
    pid = 22871
    tr = Trace(
        h,
        t0,
        {
            "pid": pid,
            "command": "bottleneckd run -- python dlrm_s_pytorch.py --arch-sparse-feature-size 128",
            "constructed": name,
        },
    )
    per = dict(data_wait=0.009, transfer=0.0, forward=0.092, backward=0.168, optimizer=0.041, other=0.004)
    flops = 9.5e10
    facts = {
        "device": "cpu",
        "pid": pid,
        "parameters": 24_000_000_000,
        "param_dtype": "float32",
        "compute_dtype": "float32",
        "loader_workers": 4,
        "batch_size": 16384,
        "input_rank": 2,
        "cores": 160,
        "flops_per_step": flops,
        "operand_bytes_per_step": 7.4e10,
        "arithmetic_intensity": flops / 7.4e10,
        "achieved_flops": flops / 0.26,
        "achieved_bytes_per_second": 7.4e10 / 0.26,
        "weight_byte_share": 0.12,
    }
    st = Steps()
    disks: dict = {"nvme0n1": {}}
    nics: dict = {}
    for _tick in range(N):
        n = st.take(1.0, sum(per.values()))
        ph = phases(rng, n, per, facts, examples_per_step=16384)
        rb = j(rng, 79.0, 0.01)
        job = dict(
            rank_busy_cores=rb,
            worker_busy_cores=j(rng, 1.2),
            workers=4,
            worker_max_busy_cores=j(rng, 0.31),
            worker_hottest_thread_busy=j(rng, 0.31),
            worker_max_demand=0.33,
            main_busy_cores=j(rng, 0.99, 0.005),
            main_thread_demand=1.0,
            runqueue_wait_cores=j(rng, 0.3),
            usable_cores=160,
        )
        r = h.cpu(rb + 1.2 + 0.5, job, psi=0.01)
        r += h.memory(720 * GiB, 640 * GiB, 4 * 2 * GiB, membw=j(rng, 2.86e11, 0.015))
        disks["nvme0n1"].update(read=j(rng, 4.1e7), busy=0.03)
        r += h.storage(
            disks,
            dict(calls=900.0, chars=j(rng, 4.1e7), bytes=j(rng, 4.0e7), worker=j(rng, 4.0e7)),
            capacity={"/": 0.33},
        )
        r += h.network(nics)
        tr.add(r, ph)
    return tr


SCENARIOS = {
    "ddp8_thermal_straggler": lambda n, r, t: ddp8(n, r, t, "thermal"),
    "ddp8_slow_loader_rank": lambda n, r, t: ddp8(n, r, t, "loader"),
    "nvme_read_bound": nvme_read_bound,
    "nfs_nic_saturated": nfs_nic_bound,
    "attach_gpu_sm99": attach_gpu_sm99,
    "attach_gpu_idle_core_pegged": attach_gpu_idle_core_pegged,
    "attach_cpu_allcores": attach_cpu_allcores,
    "a100_optimizer_foreach_adam": a100_optimizer,
    "host_swapping": host_swapping,
    "gpu_cotenant_half_sm": gpu_cotenant,
    "cpu2_workers2_full": cpu2_workers2,
    "ckpt_disk_nearly_full": ckpt_disk_nearly_full,
    "lightning_val_every_50": lightning_val,
    "hf_grad_accum_tiny_micro": hf_grad_accum,
    "cpu_other_processes": cpu_other_processes,
    "cpu_cgroup_default_threads": cpu_cgroup_threads,
    "cpu_membw_embeddings": cpu_membw_embeddings,
}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: construct_blind_gpu4.py OUT_DIR", file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    for k, (name, fn) in enumerate(SCENARIOS.items()):
        rng = random.Random(4000 + k)
        tr = fn(name, rng, 1796200000.0 + 3600.0 * k)
        tr.write(os.path.join(out, name + ".jsonl"))
    print(f"wrote {len(SCENARIOS)} traces to {out}")
    return 0


# Labels, written before running bottleneckd on these traces: (resource, stage) that an engineer's
# intervention would prove limits the job.
LABELS = {
    # 8-rank DDP, rank 5's H100 at 1245 MHz with hw_thermal set: its fwd/bwd 1.6x the others', who wait in
    # the all-reduce; fixing the GPU's cooling (or excluding it) restores the step -> the straggler's GPU compute.
    "ddp8_thermal_straggler": ("gpu_compute", "compute"),
    # 8-rank DDP, rank 3's 4 loader workers pegged at a full core each (its shard decodes slower) while 200
    # cores idle; rank 3 waits 150 ms for data, others wait for it in the all-reduce -> more workers on it.
    "ddp8_slow_loader_rank": ("cpu_compute", "data"),
    # 1x H100 PCIe, data_wait 61% of the step, nvme0n1 reading 6.7 GB/s of its 7.0 GB/s, busy 100%, QD ~60,
    # workers at 0.3 core each: faster/more local storage (or caching in RAM) is what would help.
    "nvme_read_bound": ("storage_bandwidth", "data"),
    # 8x H100 DDP reading raw JPEGs from NFS over a 25 GbE port at ~3.0 of 3.125 GB/s; data_wait ~52%,
    # workers at 0.34 core, many threads in D state: the network path to storage limits.
    "nfs_nic_saturated": ("storage_network_bandwidth", "data"),
    # attach, 1x H100 at 99% SM, tensor pipes 62%, main thread in forward/backward/sync: GPU compute bound.
    "attach_gpu_sm99": ("gpu_compute", "compute"),
    # attach, 1x H100 at 9% SM, main thread pegged at 1 core, 86% of stacks in the DataLoader (num_workers=0,
    # PIL decode + random augmentation): the loader's CPU; workers > 0 would fix it.
    "attach_gpu_idle_core_pegged": ("cpu_compute", "data"),
    # attach, CPU-only 32 vCPU, ~31 cores busy in the job's forward/backward: CPU compute bound.
    "attach_cpu_allcores": ("cpu_compute", "compute"),
    # 1x A100, 2.1B params at micro-batch 1: optimizer 57% of the step, foreach AdamW streaming ~28+ B/param,
    # DCGM DRAM activity 63%; fused Adam (fewer passes) or grad accumulation would cut it -> memory bandwidth.
    "a100_optimizer_foreach_adam": ("gpu_memory_bandwidth", "optimizer"),
    # 1x A10, host RAM 99% used, swap in 340 MB/s / out 270 MB/s, PSI memory full 46%, workers in D state,
    # data_wait 77%: host memory capacity (workers duplicating the dataset) -> fewer workers / shared arrays.
    "host_swapping": ("cpu_memory", "data"),
    # 1x H100 shared with another user's process (32 GB, ~half the SMs by time slicing): SM 97% but the job's
    # own FLOP/s is ~half; moving the other process off doubles the step -> GPU compute (contended).
    "gpu_cotenant_half_sm": ("gpu_compute", "compute"),
    # 2-vCPU VM, 2 workers + main = 3 busy processes on 2 cores, data_wait 61%, runqueue wait ~0.9 core:
    # the CPU (decode + augmentation) limits; more workers can't help, cheaper/cached preprocessing can.
    "cpu2_workers2_full": ("cpu_compute", "data"),
    # 1x H100 GPU-bound (SM 94%) outside one 6 s checkpoint in 40 s; /raid 97% full but a nearly full disk
    # does not slow anything yet: the step is GPU compute bound; capacity is a risk, not the bottleneck.
    "ckpt_disk_nearly_full": ("gpu_compute", "compute"),
    # Lightning, val every 50 steps (7.6 s) taking 9 s each: 'other' ~54% of the wall; validating less often
    # is the intervention; the validation itself runs on the GPU (SM ~82%).
    "lightning_val_every_50": ("gpu_compute", "other"),
    # HF Trainer, GPT-2 small, micro-batch 2 x 32 accumulation: SM 23% with busy_fraction 93%, main thread
    # pegged launching tiny kernels: host launch-bound; larger micro-batch / CUDA graphs would fix it.
    "hf_grad_accum_tiny_micro": ("cpu_compute", "compute"),
    # CPU-only, two ffmpeg processes of another user take ~38 of 48 threads; the job's threads wait
    # 13.5 cores on run queues: stopping/capping them gives the job its cores back.
    "cpu_other_processes": ("cpu_compute", "compute"),
    # CPU pod with an 8-CPU cgroup quota on a 128-thread host, torch's default 64 intra-op threads:
    # throttled, runqueue wait 43 cores; set_num_threads(8) would help -> CPU compute (oversubscribed).
    "cpu_cgroup_default_threads": ("cpu_compute", "compute"),
    # 2-socket 8380, DLRM-style embedding bags: MBM reads 286 of 305 GB/s calibrated, intensity 1.3 FLOP/B,
    # 4% of FLOP peak: CPU memory bandwidth in the compute phases.
    "cpu_membw_embeddings": ("cpu_memory_bandwidth", "compute"),
}

if __name__ == "__main__":
    sys.exit(main(sys.argv))
