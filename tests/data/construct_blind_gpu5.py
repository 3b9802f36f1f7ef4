#!/usr/bin/env python3
"""Blind GPU traces, round 5: patterns earlier rounds did not cover, written from
docs/trace-format.md and the samplers alone (not the diagnosis, advice or rules).

Each scenario is a job a performance engineer meets: fp32 without TF32, V100 nodes whose CPUs
cannot decode JPEGs fast enough, launch-bound small batches, pageable host-to-device copies on a
PCIe gen3 server, a pipeline-parallel bubble, activation checkpointing forced by full GPU memory,
mixed GPU models in one DDP job, NCCL over TCP between nodes, checkpoints written to NFS over a
slow link, a bare `record` on an old GPU with most counters missing, a well-tuned compute-bound
job, eager attention at long context, NCCL with PCIe P2P disabled, attach-mode variants, and a
storage-bound job sampled at an irregular cadence with its storage peak unknown.

    python tests/data/construct_blind_gpu5.py OUT_DIR

writes OUT_DIR/<scenario>.jsonl (a multi-node scenario: OUT_DIR/<scenario>.node<k>.jsonl, to be
analysed together). Stdlib only, seeded, deterministic.

LABELS at the bottom were written before bottleneckd was run on these traces. After the first run,
three traces' roofline facts were corrected because they were physically impossible (labels left as
they were): l4_small_batch_launch_bound's operand bytes (180% of the L4's DRAM bandwidth),
sata_ssd_irregular_cadence's (167% of the 4090's) and ckpt_to_nfs_10gbe's step (76% MFU and 83%
of the A100's bandwidth at once; now ~50% MFU, the step 0.6 s, a save every ~30 s).
"""

from __future__ import annotations

import json
import os
import random
import sys

TB = 1000**4
GB = 1000**3
MB = 1000**2
GiB = 1024**3

# --------------------------------------------------------------------------------------------
# hardware: NVML names, datasheet peaks (as data/peaks.json has them)
# --------------------------------------------------------------------------------------------


def gpu(**kw) -> dict:
    d = dict(fp64=None, fp64_tensor=None, tf32=None, bf16=None, fp16_tensor=None, fp8=None, nvlink=None, links=0)
    d.update(kw)
    return d


H100_SXM = gpu(
    name="NVIDIA H100 80GB HBM3",
    catalog="NVIDIA H100 SXM",
    mem=85520809984,
    max_clock=1980,
    tdp=700.0,
    idle_w=70.0,
    bf16=989e12,
    tf32=494.5e12,
    fp32=67e12,
    fp64=34e12,
    fp64_tensor=67e12,
    fp8=1979e12,
    dram=3.35e12,
    nvlink=900e9,
    links=18,
    pcie_gen=5,
    gpm=True,
)
H200_SXM = dict(H100_SXM, name="NVIDIA H200", catalog="NVIDIA H200 SXM", mem=150754820096, dram=4.8e12, idle_w=76.0)
A100_SXM40 = gpu(
    name="NVIDIA A100-SXM4-40GB",
    catalog="NVIDIA A100 40GB SXM",
    mem=42949672960,
    max_clock=1410,
    tdp=400.0,
    idle_w=55.0,
    bf16=312e12,
    tf32=156e12,
    fp32=19.5e12,
    fp64=9.7e12,
    fp64_tensor=19.5e12,
    dram=1.555e12,
    nvlink=600e9,
    links=12,
    pcie_gen=4,
    gpm=False,
)
A100_SXM80 = dict(
    A100_SXM40, name="NVIDIA A100-SXM4-80GB", catalog="NVIDIA A100 80GB SXM", mem=85899345920, dram=2.039e12
)
A100_PCIE40 = dict(
    A100_SXM40,
    name="NVIDIA A100-PCIE-40GB",
    catalog="NVIDIA A100 40GB PCIe",
    mem=42505273344,
    tdp=250.0,
    idle_w=35.0,
    links=0,
)
V100_SXM2 = gpu(
    name="Tesla V100-SXM2-32GB",
    catalog="NVIDIA V100 SXM2",
    mem=34089730048,
    max_clock=1530,
    tdp=300.0,
    idle_w=42.0,
    fp16_tensor=125e12,
    fp32=15.7e12,
    fp64=7.8e12,
    dram=900e9,
    nvlink=300e9,
    links=6,
    pcie_gen=3,
    gpm=False,
)
L4 = gpu(
    name="NVIDIA L4",
    catalog="NVIDIA L4",
    mem=24152899584,
    max_clock=2040,
    tdp=72.0,
    idle_w=16.0,
    bf16=121e12,
    tf32=60e12,
    fp32=30.3e12,
    fp8=242.5e12,
    dram=300e9,
    pcie_gen=4,
    gpm=False,
)
L40S = gpu(
    name="NVIDIA L40S",
    catalog="NVIDIA L40S",
    mem=48305799168,
    max_clock=2520,
    tdp=350.0,
    idle_w=34.0,
    bf16=362e12,
    tf32=183e12,
    fp32=91.6e12,
    fp8=733e12,
    dram=864e9,
    pcie_gen=4,
    gpm=False,
)
A10 = gpu(
    name="NVIDIA A10",
    catalog="NVIDIA A10",
    mem=24146608128,
    max_clock=1695,
    tdp=150.0,
    idle_w=21.0,
    bf16=125e12,
    tf32=62.5e12,
    fp32=31.2e12,
    dram=600e9,
    pcie_gen=4,
    gpm=False,
)
T4 = gpu(
    name="Tesla T4",
    catalog="NVIDIA T4",
    mem=16106127360,
    max_clock=1590,
    tdp=70.0,
    idle_w=10.0,
    fp16_tensor=65e12,
    fp32=8.1e12,
    dram=320e9,
    pcie_gen=3,
    gpm=False,
)
RTX4090 = gpu(
    name="NVIDIA GeForce RTX 4090",
    catalog="NVIDIA GeForce RTX 4090",
    mem=25757220864,
    max_clock=2520,
    tdp=450.0,
    idle_w=22.0,
    bf16=165.2e12,
    fp32=82.6e12,
    dram=1008e9,
    pcie_gen=4,
    gpm=False,
)

PCIE_X16 = {3: 15.754e9, 4: 31.508e9, 5: 63.015e9}
THROTTLES = ("sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake")
NO_GPM = "GPM not supported on this GPU (Hopper or later needed)"
NO_DCGM = "no dcgm-exporter answered at http://127.0.0.1:9400/metrics"
DCGM_NO_INT = "not in the dcgm-exporter's page (its counters file leaves it out)"
NO_MBM = (
    "no memory-bandwidth counters: resctrl MBM is not mounted at /sys/fs/resctrl "
    "(Intel RDT / AMD QoS needed; usually absent in VMs)"
)
FLOPS_PER_CYCLE = (("avx512f", 64), ("avx2", 32), ("avx", 16))


def uuid_for(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def j(rng, x, rel=0.03):
    return max(0.0, x * (1 + rng.gauss(0, rel)))


def clip(x, lo=0.0, hi=1.0):
    return max(lo, min(hi, x))


class Host:
    """A machine: its header (machine + peaks, as peaks/resolve.py writes them) and its readings.

    gpus: one spec per GPU (mixed models allowed). disks: (name, size, transport, pcie_gen, model).
    nics: (name, mbps). ib: (device, port, gbps). mounts: (mountpoint, fstype, source, network, size).
    """

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
        gpus: list[dict] = (),
        disks: list[tuple] = (),
        nics: list[tuple] = (),
        ib: list[tuple] = (),
        mounts: list[tuple] = (),
        dcgm: bool = False,
        membw_calibrated: float | None = None,
    ) -> None:
        self.rng = rng
        self.hostname = hostname
        self.logical = logical
        self.mem = mem
        self.gpus = list(gpus)
        self.uuids = [uuid_for(rng) for _ in self.gpus]
        self.disks = list(disks)
        self.nics = list(nics)
        self.ib = list(ib)
        self.mounts = list(mounts)
        self.dcgm = dcgm
        self.membw_peak = membw_calibrated
        self.energy = {i: 2.2e8 + rng.uniform(0, 1e8) for i in range(len(self.gpus))}
        self.disk_tot: dict = {}
        self.net_tot: dict = {}
        unknown = {}
        if max_mhz is None:
            unknown["cpu.max_mhz"] = "cpufreq not exposed (common in VMs and containers)"
        if not self.gpus:
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
                    "name": g["name"],
                    "uuid": self.uuids[i],
                    "memory_total_bytes": g["mem"],
                    "pcie_max_generation": g["pcie_gen"],
                    "pcie_max_width": 16,
                    "nvlink_active_links": g["links"],
                    "gpm_supported": g["gpm"],
                }
                for i, g in enumerate(self.gpus)
            ],
            "block_devices": [
                {
                    "name": d[0],
                    "size_bytes": d[1],
                    "rotational": False,
                    "model": d[4],
                    "transport": d[2],
                    "pcie_generation": d[3],
                }
                for d in self.disks
            ],
            "nics": [{"name": n, "speed_mbps": s, "operstate": "up", "virtual": False} for n, s in self.nics],
            "ib_ports": [{"device": d, "port": p, "rate_gbps": float(g), "state": "ACTIVE"} for d, p, g in self.ib],
            "mounts": [{"mountpoint": m[0], "fstype": m[1], "source": m[2], "network": m[3]} for m in self.mounts],
            "unknown": unknown,
        }
        self.peaks = self._peaks(cpu_model, physical, max_mhz, flags)

    # ---------------------------------------------------------------- header peaks
    def _peaks(self, cpu_model, physical, max_mhz, flags) -> list:
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

        multi = len(self.gpus) > 1
        self.pcie_peak = {}
        self.peer_peak = {}
        for i, g in enumerate(self.gpus):
            dev, u = f"gpu{i}", self.uuids[i]
            src = f"{g['catalog']}: {g['catalog']} datasheet"
            for metric, key in (
                ("fp16_bf16_tensor_dense", "bf16"),
                ("fp16_tensor_dense", "fp16_tensor"),
                ("tf32_tensor_dense", "tf32"),
                ("fp32", "fp32"),
                ("fp64", "fp64"),
                ("fp64_tensor_dense", "fp64_tensor"),
                ("fp8_tensor_dense", "fp8"),
            ):
                if g.get(key):
                    row("gpu_compute", dev, metric, g[key], "FLOP/s", "catalog", src, u)
                elif metric == "fp16_bf16_tensor_dense" and not g.get("fp16_tensor"):
                    row(
                        "gpu_compute",
                        dev,
                        metric,
                        None,
                        "FLOP/s",
                        "unknown",
                        f"{g['catalog']} has no {metric} figure",
                        u,
                    )
            row("gpu_memory", dev, "capacity", float(g["mem"]), "B", "detected", "NVML memory info (total)", u)
            row("gpu_memory_bandwidth", dev, "dram_bandwidth", g["dram"], "B/s", "catalog", src, u, "read+write")
            pcie = PCIE_X16[g["pcie_gen"]]
            self.pcie_peak[i] = pcie
            row(
                "cpu_gpu_interconnect",
                dev,
                "pcie_per_direction",
                pcie,
                "B/s",
                "detected",
                f"max link gen {g['pcie_gen']} x16 (NVML) with PCI-SIG PCI Express Base Specification",
                u,
                catalog=pcie,
            )
            if g["links"] and g["nvlink"]:
                row(
                    "inter_gpu_interconnect",
                    dev,
                    "nvlink_total",
                    g["nvlink"],
                    "B/s",
                    "detected",
                    f"{g['links']} active NVLink links (NVML) x per-link figure of {g['catalog']}",
                    u,
                    "both",
                    g["nvlink"],
                )
                self.peer_peak[i] = (g["nvlink"], "both")
            elif not multi:
                row(
                    "inter_gpu_interconnect",
                    dev,
                    "nvlink_total",
                    None,
                    "B/s",
                    "unknown",
                    "only one GPU: no inter-GPU traffic on this machine",
                    u,
                )
                self.peer_peak[i] = (None, "")
            else:
                row(
                    "inter_gpu_interconnect",
                    dev,
                    "pcie_peer",
                    pcie,
                    "B/s",
                    "detected",
                    f"no active NVLink: peer traffic crosses PCIe; max link gen {g['pcie_gen']} x16 (NVML)",
                    u,
                    "per direction",
                )
                self.peer_peak[i] = (pcie, "per direction")
        if not self.gpus:
            why = self.machine["unknown"]["gpus"]
            for r in (
                "gpu_compute",
                "gpu_memory",
                "gpu_memory_bandwidth",
                "inter_gpu_interconnect",
                "cpu_gpu_interconnect",
            ):
                unit = {"gpu_compute": "FLOP/s", "gpu_memory": "B"}.get(r, "B/s")
                row(r, "-", "-", None, unit, "unknown", why)
        per_cycle = next((n for f, n in FLOPS_PER_CYCLE if f in flags), None)
        if max_mhz and per_cycle:
            row(
                "cpu_compute",
                "cpu",
                "fp32_fma",
                physical * max_mhz * 1e6 * per_cycle,
                "FLOP/s",
                "detected",
                f"estimate: {physical} cores x {max_mhz:.0f} MHz x {per_cycle} FLOP/cycle (two FMA units assumed)",
            )
        else:
            row(
                "cpu_compute",
                "cpu",
                "fp32_fma",
                None,
                "FLOP/s",
                "unknown",
                "CPU model not in the catalog and the maximum clock is not exposed; run 'bottleneckd calibrate'",
            )
        row("cpu_memory", "host", "capacity", float(self.mem), "B", "detected", "/proc/meminfo MemTotal")
        if self.membw_peak:
            row(
                "cpu_memory_bandwidth",
                "host",
                "dram_bandwidth",
                self.membw_peak,
                "B/s",
                "calibrated",
                "measured here: streaming copy, read+write bytes",
                direction="read+write",
            )
        else:
            row(
                "cpu_memory_bandwidth",
                "host",
                "dram_bandwidth",
                None,
                "B/s",
                "unknown",
                "DIMM speed and channel count are not readable here (SMBIOS); run 'bottleneckd calibrate'",
            )
        for name, size, transport, gen, _model in self.disks:
            row("storage_capacity", name, "capacity", float(size), "B", "detected", f"/sys/block/{name}/size")
            if transport == "nvme" and gen in (4, 5):
                seq, iops = (7.0e9, 1.0e6) if gen == 4 else (12.4e9, 1.5e6)
                row(
                    "storage_bandwidth",
                    name,
                    "sequential_read",
                    seq,
                    "B/s",
                    "catalog",
                    f"NVMe on a PCIe gen {gen} link: product sheet",
                )
                row(
                    "storage_bandwidth",
                    name,
                    "random_read_4k_iops",
                    iops,
                    "IO/s",
                    "catalog",
                    f"NVMe on a PCIe gen {gen} link: product sheet",
                )
            else:
                for metric, unit in (("sequential_read", "B/s"), ("random_read_4k_iops", "IO/s")):
                    row(
                        "storage_bandwidth",
                        name,
                        metric,
                        None,
                        unit,
                        "unknown",
                        f"no catalog figure for a {transport} device; run 'bottleneckd calibrate'",
                    )
        fastest = None
        for n, s in self.nics:
            v = s * 1e6 / 8
            fastest = max(fastest or 0.0, v)
            row(
                "inter_node_interconnect",
                n,
                "ethernet_per_direction",
                v,
                "B/s",
                "detected",
                f"/sys/class/net/{n}/speed = {s} Mb/s; line rate / 8",
            )
        for d, p, g in self.ib:
            v = g * 1e9 / 8
            fastest = max(fastest or 0.0, v)
            row(
                "inter_node_interconnect",
                f"{d}/{p}",
                "infiniband_per_direction",
                v,
                "B/s",
                "detected",
                f"/sys/class/infiniband/{d}/ports/{p}/rate = {g:g} Gb/s",
            )
        self.nfs_peak = fastest
        net = [m for m in self.mounts if m[3]]
        for m in net:
            row(
                "storage_network_bandwidth",
                m[0],
                "link",
                fastest,
                "B/s",
                "detected",
                f"{m[1]} mount from {m[2]}: bounded by the fastest local link",
            )
        if not net:
            row("storage_network_bandwidth", "-", "link", None, "B/s", "unknown", "no network file system is mounted")
        return P

    # ---------------------------------------------------------------- readings
    def cpu(self, busy_total: float, job: dict | None, iowait=0.002, psi=0.01, outside=(), sidecar=0.04) -> list:
        r = self.rng
        n = self.logical
        busy_total = max(0.0, min(float(n), busy_total))
        full = int(busy_total)
        vals = [r.uniform(0.96, 1.0) for _ in range(full)]
        if full < n:
            vals.append(max(0.0, busy_total - sum(vals)))
        vals += [r.uniform(0.0, 0.02) for _ in range(n - len(vals))]
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
            jb = job
            rank = jb["rank_busy_cores"]
            worker = jb.get("worker_busy_cores", 0.0)
            nw = jb.get("workers", 0)
            main = jb["main_busy_cores"]

            def w(key, default=None):
                return [jb.get(key, default), "cores"] if nw else [None, "cores", "no loader workers"]

            out += [
                ["cpu_compute", "job", "busy_cores", rank + worker, "cores"],
                ["cpu_compute", "job", "rank_busy_cores", rank, "cores"],
                ["cpu_compute", "job", "worker_busy_cores", worker, "cores"],
                ["cpu_compute", "job", "launcher_busy_cores", jb.get("launcher_busy_cores", 0.0), "cores"],
                ["cpu_compute", "job", "worker_max_busy_cores", *w("worker_max_busy_cores")],
                ["cpu_compute", "job", "main_busy_cores", main, "cores"],
                ["cpu_compute", "job", "launch_thread_cores", jb.get("launch_thread_cores", main), "cores"],
                [
                    "cpu_compute",
                    "job",
                    "rank_side_thread_cores",
                    jb.get("rank_side_thread_cores", max(0.0, rank - main * jb.get("ranks", 1))),
                    "cores",
                ],
                ["cpu_compute", "job", "comm_thread_cores", jb.get("comm_thread_cores", 0.0), "cores"],
                ["cpu_compute", "job", "hottest_thread_busy", jb.get("hottest_thread_busy", main), "cores"],
                [
                    "cpu_compute",
                    "job",
                    "worker_hottest_thread_busy",
                    *w("worker_hottest_thread_busy", jb.get("worker_max_busy_cores")),
                ],
                ["cpu_compute", "job", "main_thread_demand", jb.get("main_thread_demand", main), "cores"],
                [
                    "cpu_compute",
                    "job",
                    "hottest_thread_demand",
                    jb.get("hottest_thread_demand", jb.get("main_thread_demand", main)),
                    "cores",
                ],
                ["cpu_compute", "job", "worker_max_demand", *w("worker_max_demand", jb.get("worker_max_busy_cores"))],
                ["cpu_compute", "job", "runqueue_wait_cores", jb.get("runqueue_wait_cores", 0.01), "cores"],
                ["cpu_compute", "job", "usable_cores", float(jb.get("usable_cores", n)), "cores"],
                [
                    "cpu_compute",
                    "job",
                    "processes",
                    float(jb.get("processes", jb.get("ranks", 1) + nw + (1 if jb.get("ranks", 1) > 1 else 0))),
                    "count",
                ],
                ["cpu_compute", "job", "ranks", float(jb.get("ranks", 1)), "count"],
                ["cpu_compute", "job", "workers", float(nw), "count"],
                ["cpu_compute", "job", "processes_in_disk_wait", float(jb.get("processes_in_disk_wait", 0)), "count"],
                ["cpu_compute", "job", "threads_in_disk_wait", float(jb.get("threads_in_disk_wait", 0)), "count"],
                ["cpu_compute", "job", "pressure_some", jb.get("pressure_some", psi), "ratio"],
                ["cpu_compute", "sidecar", "busy_cores", sidecar, "cores"],
            ]
        for name, pid, cores in outside:
            out.append(["cpu_compute", f"{name}[{pid}]", "outside_process_cores", cores, "cores"])
        out.append(
            ["cpu_compute", "package", "energy", None, "J", "RAPL energy_uj readable by root only (CVE-2020-8694)"]
        )
        return out

    def memory(self, used, rank_rss, worker_rss=0.0, launcher_rss=0.0, psi_some=0.0, membw=None, job=True) -> list:
        out = [
            ["cpu_memory", "host", "used", used, "B"],
            ["cpu_memory", "host", "utilization", used / self.mem, "ratio"],
            ["cpu_memory", "host", "peak", float(self.mem), "B"],
            ["cpu_memory", "host", "available", float(self.mem - used), "B"],
            ["cpu_memory", "host", "swap_in_bytes_per_second", 0.0, "B/s"],
            ["cpu_memory", "host", "swap_out_bytes_per_second", 0.0, "B/s"],
            ["cpu_memory", "host", "swap_in_bytes_total", 0.0, "B"],
            ["cpu_memory", "host", "swap_out_bytes_total", 0.0, "B"],
            ["cpu_memory", "host", "pressure_some", psi_some, "ratio"],
            ["cpu_memory", "host", "pressure_full", psi_some / 3, "ratio"],
        ]
        if job:
            out += [
                ["cpu_memory", "job", "resident_bytes", rank_rss + worker_rss, "B"],
                ["cpu_memory", "job", "rank_resident_bytes", rank_rss, "B"],
                ["cpu_memory", "job", "worker_resident_bytes", worker_rss, "B"],
                ["cpu_memory", "job", "launcher_resident_bytes", launcher_rss, "B"],
            ]
        if self.membw_peak and membw is not None:
            out += [
                ["cpu_memory_bandwidth", "host", "throughput", membw, "B/s"],
                ["cpu_memory_bandwidth", "host", "utilization", membw / self.membw_peak, "ratio"],
                ["cpu_memory_bandwidth", "host", "peak", self.membw_peak, "B/s"],
            ]
        else:
            out += [
                ["cpu_memory_bandwidth", "host", "throughput", None, "B/s", NO_MBM],
                ["cpu_memory_bandwidth", "host", "utilization", None, "ratio", NO_MBM],
                ["cpu_memory_bandwidth", "host", "peak", self.membw_peak, "B/s", "" if self.membw_peak else "unknown"],
            ]
        return out

    def storage(self, disks: dict, job_io: dict | None, host_psi=(0.0, 0.0), capacity: dict | None = None) -> list:
        """disks: name -> dict(read, write, rops, wops, busy, qd, inflight)."""
        out = []
        for name, _size, transport, gen, _model in self.disks:
            d = disks.get(name, {})
            rb, wb = d.get("read", 1.0e4), d.get("write", 2.0e5)
            ro, wo = d.get("rops", rb / 131072), d.get("wops", wb / 65536)
            if transport == "nvme" and gen in (4, 5):
                seq, iops = (7.0e9, 1.0e6) if gen == 4 else (12.4e9, 1.5e6)
                bu, ou = (rb + wb) / seq, (ro + wo) / iops
                util = [max(bu, ou), "ratio"]
                bu_r, ou_r = [bu, "ratio"], [ou, "ratio"]
            else:
                seq = None
                why = "peak unknown; run 'bottleneckd calibrate'"
                util = [None, "ratio", why]
                bu_r, ou_r = [None, "ratio", why], [None, "ratio", why]
            tot = self.disk_tot.setdefault(name, [3.1e12, 9.4e11, 4.1e7, 1.3e7, 2.2e4])
            tot[0] += rb
            tot[1] += wb
            tot[2] += ro
            tot[3] += wo
            tot[4] += d.get("busy", 0.002)
            out += [
                ["storage_bandwidth", name, "throughput", rb + wb, "B/s"],
                ["storage_bandwidth", name, "read_bytes_per_second", rb, "B/s"],
                ["storage_bandwidth", name, "operations_per_second", ro + wo, "IO/s"],
                ["storage_bandwidth", name, "read_operations_per_second", ro, "IO/s"],
                ["storage_bandwidth", name, "byte_utilization", *bu_r],
                ["storage_bandwidth", name, "operation_utilization", *ou_r],
                ["storage_bandwidth", name, "utilization", *util],
                ["storage_bandwidth", name, "busy", min(1.0, d.get("busy", 0.002)), "ratio"],
                ["storage_bandwidth", name, "peak", seq, "B/s", *([] if seq else ["unknown"])],
                ["storage_bandwidth", name, "read_bytes_total", tot[0], "B"],
                ["storage_bandwidth", name, "written_bytes_total", tot[1], "B"],
                ["storage_bandwidth", name, "reads_completed_total", tot[2], "count"],
                ["storage_bandwidth", name, "writes_completed_total", tot[3], "count"],
                ["storage_bandwidth", name, "io_time_seconds_total", tot[4], "s"],
                ["storage_bandwidth", name, "queue_depth", d.get("qd", 0.004), "requests"],
                ["storage_bandwidth", name, "in_flight", float(d.get("inflight", 0)), "requests"],
            ]
        out += [
            ["storage_bandwidth", "host", "pressure_some", host_psi[0], "ratio"],
            ["storage_bandwidth", "host", "pressure_full", host_psi[1], "ratio"],
        ]
        if job_io is not None:
            jb = job_io
            out += [
                ["storage_bandwidth", "job", "read_calls_per_second", jb.get("calls", 40.0), "1/s"],
                ["storage_bandwidth", "job", "read_chars_per_second", jb.get("chars", 2.0e5), "B/s"],
                ["storage_bandwidth", "job", "read_bytes_per_second", jb.get("bytes", 0.0), "B/s"],
                ["storage_bandwidth", "job", "write_bytes_per_second", jb.get("write", 0.0), "B/s"],
                ["storage_bandwidth", "job", "rank_bytes_per_second", jb.get("rank", 0.0), "B/s"],
                ["storage_bandwidth", "job", "worker_bytes_per_second", jb.get("worker", 0.0), "B/s"],
                ["storage_bandwidth", "job", "launcher_bytes_per_second", 0.0, "B/s"],
                ["storage_bandwidth", "job", "pressure_some", jb.get("psi_some", host_psi[0]), "ratio"],
                ["storage_bandwidth", "job", "pressure_full", jb.get("psi_full", host_psi[1]), "ratio"],
            ]
        capacity = capacity or {}
        for m in self.mounts:
            if m[3] or m[0] not in capacity:
                continue
            total = float(m[4])
            used = capacity[m[0]] * total
            out += [
                ["storage_capacity", m[0], "used", used, "B"],
                ["storage_capacity", m[0], "utilization", used / total, "ratio"],
                ["storage_capacity", m[0], "peak", total, "B"],
                ["storage_capacity", m[0], "free", total - used, "B"],
            ]
        return out

    def network(
        self, nic_rates: dict | None = None, ib_rates: dict | None = None, nfs_rates: dict | None = None, iv=1.0
    ):
        out = []
        nic_rates = nic_rates or {}
        ib_rates = ib_rates or {}
        for n, s in self.nics:
            tx, rx = nic_rates.get(n, (j(self.rng, 1.5e5, 0.2), j(self.rng, 2.4e5, 0.2)))
            peak = s * 1e6 / 8
            tot = self.net_tot.setdefault(n, [7.7e11, 1.9e12])
            tot[0] += tx * iv
            tot[1] += rx * iv
            out += [
                ["inter_node_interconnect", n, "throughput", max(tx, rx), "B/s"],
                ["inter_node_interconnect", n, "utilization", max(tx, rx) / peak, "ratio"],
                ["inter_node_interconnect", n, "peak", peak, "B/s"],
                ["inter_node_interconnect", n, "tx_bytes_per_second", tx, "B/s"],
                ["inter_node_interconnect", n, "rx_bytes_per_second", rx, "B/s"],
                ["inter_node_interconnect", n, "transmit_bytes_total", tot[0], "B"],
                ["inter_node_interconnect", n, "receive_bytes_total", tot[1], "B"],
            ]
        for d, p, g in self.ib:
            name = f"{d}/{p}"
            tx, rx = ib_rates.get(name, (j(self.rng, 2.0e3, 0.3), j(self.rng, 2.0e3, 0.3)))
            peak = g * 1e9 / 8
            tot = self.net_tot.setdefault(name, [5.5e12, 5.5e12])
            tot[0] += tx * iv
            tot[1] += rx * iv
            out += [
                ["inter_node_interconnect", name, "throughput", max(tx, rx), "B/s"],
                ["inter_node_interconnect", name, "utilization", max(tx, rx) / peak, "ratio"],
                ["inter_node_interconnect", name, "peak", peak, "B/s"],
                ["inter_node_interconnect", name, "transmit_bytes_total", tot[0], "B"],
                ["inter_node_interconnect", name, "receive_bytes_total", tot[1], "B"],
            ]
        for m in self.mounts:
            if not m[3]:
                continue
            v = (nfs_rates or {}).get(m[0], 0.0)
            out += [
                ["storage_network_bandwidth", m[0], "throughput", v, "B/s"],
                ["storage_network_bandwidth", m[0], "utilization", v / self.nfs_peak, "ratio"],
                ["storage_network_bandwidth", m[0], "peak", self.nfs_peak, "B/s"],
            ]
        return out

    def gpu_readings(self, i: int, s: dict, tick: int) -> list:
        """s: sm, occ, tensor, fp32, fp16, fp64, int, dram, busy, membusy, mem_used, pcie_tx, pcie_rx,
        nvl (tx, rx), power, clock, throttle (set), job_process, procs, link_gen."""
        g = self.gpus[i]
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
        pcie = self.pcie_peak[i]
        tx, rx = s.get("pcie_tx", 1.5e8), s.get("pcie_rx", 9e7)
        out += [
            ["cpu_gpu_interconnect", dev, "throughput", max(tx, rx), "B/s"],
            ["cpu_gpu_interconnect", dev, "utilization", max(tx, rx) / pcie, "ratio"],
            ["cpu_gpu_interconnect", dev, "peak", pcie, "B/s"],
            ["cpu_gpu_interconnect", dev, "tx_bytes_per_second", tx, "B/s"],
            ["cpu_gpu_interconnect", dev, "rx_bytes_per_second", rx, "B/s"],
            ["cpu_gpu_interconnect", dev, "link_generation", float(s.get("link_gen", g["pcie_gen"])), "gen"],
            ["cpu_gpu_interconnect", dev, "link_width", 16.0, "lanes"],
        ]
        peer, direction = self.peer_peak[i]
        if g["links"] and g["nvlink"]:
            ntx, nrx = s.get("nvl", (j(self.rng, 4e7), j(self.rng, 4e7)))
            out += [
                ["inter_gpu_interconnect", dev, "throughput", ntx + nrx, "B/s"],
                ["inter_gpu_interconnect", dev, "utilization", (ntx + nrx) / peer, "ratio"],
                ["inter_gpu_interconnect", dev, "peak", peer, "B/s"],
                ["inter_gpu_interconnect", dev, "tx_bytes_per_second", ntx, "B/s"],
                ["inter_gpu_interconnect", dev, "rx_bytes_per_second", nrx, "B/s"],
            ]
        else:
            why = "no active NVLink on this GPU"
            out += [
                ["inter_gpu_interconnect", dev, "throughput", None, "B/s", why],
                ["inter_gpu_interconnect", dev, "utilization", None, "ratio", why],
                ["inter_gpu_interconnect", dev, "peak", peer, "B/s", *([] if peer else ["unknown"])],
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
        source = "GPM" if g["gpm"] else ("dcgm-exporter" if self.dcgm else None)
        acts = ("sm_activity", "sm_occupancy", "tensor_activity", "fp32_activity", "fp16_activity", "fp64_activity")
        if source:
            vals = {
                "sm_activity": s["sm"],
                "sm_occupancy": s.get("occ", s["sm"] * 0.42),
                "tensor_activity": s.get("tensor", 0.0),
                "fp32_activity": s.get("fp32", s["sm"] * 0.10),
                "fp16_activity": s.get("fp16", s["sm"] * 0.04),
                "fp64_activity": s.get("fp64", 0.0),
            }
            for a in acts:
                out.append(["gpu_compute", dev, a, round(vals[a], 4), "ratio"])
            if source == "GPM":
                out.append(["gpu_compute", dev, "integer_activity", round(s.get("int", s["sm"] * 0.07), 4), "ratio"])
            else:
                out.append(["gpu_compute", dev, "integer_activity", None, "ratio", DCGM_NO_INT])
            out.append(["gpu_compute", dev, "utilization", round(s["sm"], 4), "ratio"])
            out.append(["gpu_compute", dev, f"activity_source:{source}", 1.0, "bool"])
            out += [
                ["gpu_memory_bandwidth", dev, "utilization", s["dram"], "ratio"],
                ["gpu_memory_bandwidth", dev, "throughput", s["dram"] * g["dram"], "B/s"],
                ["gpu_memory_bandwidth", dev, "peak", g["dram"], "B/s"],
            ]
        else:
            why = f"{NO_GPM}; {NO_DCGM}"
            for a in acts + ("integer_activity",):
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

    def idle_gpu(self, i: int, tick: int, job_process=0.0) -> list:
        g = self.gpus[i]
        s = dict(
            sm=0.0,
            tensor=0.0,
            fp32=0.0,
            fp16=0.0,
            int=0.0,
            dram=0.0,
            busy=0.0,
            membusy=0.0,
            mem_used=0.53e9,
            pcie_tx=j(self.rng, 2e5),
            pcie_rx=j(self.rng, 1e5),
            nvl=(0.0, 0.0),
            power=j(self.rng, g["idle_w"]),
            clock=210,
            link_gen=1,
            procs={},
        )
        if job_process is not None:
            s["job_process"] = job_process
        return self.gpu_readings(i, s, tick)

    def samplers(self, slow: float = 1.0) -> dict:
        r = self.rng
        d = {
            "cpu_compute": [True, round(r.uniform(0.004, 0.014) * slow, 6), ""],
            "cpu_memory": [True, round(r.uniform(0.0002, 0.0005) * slow, 6), ""],
            "cpu_memory_bandwidth": [True, round(r.uniform(0.00002, 0.0001), 6), ""],
            "storage": [True, round(r.uniform(0.0005, 0.0012) * slow, 6), ""],
            "inter_node": [True, round(r.uniform(0.0001, 0.0003), 6), ""],
            "energy": [True, 6e-06, ""],
        }
        if self.gpus:
            d["gpu"] = [True, round(r.uniform(0.006, 0.02) * (1 + 0.01 * len(self.gpus)), 6), ""]
        if any(m[3] for m in self.mounts):
            d["storage_network"] = [True, round(r.uniform(0.0003, 0.0008), 6), ""]
        return d


# --------------------------------------------------------------------------------------------
# steps: a job whose ranks finish synchronous steps; each interval reports the steps that ended in it
# --------------------------------------------------------------------------------------------


class StepJob:
    """step_fn(k) -> list over ranks of {phase: seconds} for step k (a synchronous step ends at the
    same time on every rank: its wall is the longest rank's). Steps that end inside an interval are
    reported in it, whole (a step longer than an interval appears only where it ends)."""

    def __init__(self, t0: float, step_fn, facts_fn, ident_fn, examples_per_step=None) -> None:
        self.step_fn = step_fn
        self.facts_fn = facts_fn
        self.ident_fn = ident_fn
        self.examples = examples_per_step
        self.k = 0
        self.pending = step_fn(0)
        self.end = t0 + self._wall(self.pending)
        self.history = [(t0, self.end, 0)]  # (start, end, k) of every step generated

    @staticmethod
    def _wall(step) -> float:
        return max(sum(p.values()) for p in step)

    def collect(self, t: float) -> list:
        done = []
        while self.end <= t:
            done.append(self.pending)
            self.k += 1
            self.pending = self.step_fn(self.k)
            start = self.end
            self.end += self._wall(self.pending)
            self.history.append((start, self.end, self.k))
        return done

    def report(self, done: list):
        """(top-level phases, ranks) for the steps in ``done``; (None, None) when none ended."""
        if not done:
            return None, None
        n_ranks = len(done[0])
        ranks = []
        top_ph: dict = {}
        top_steps = 0
        top_wall = 0.0
        top_ex = 0
        for r in range(n_ranks):
            ph: dict = {}
            wall = 0.0
            for step in done:
                for k, v in step[r].items():
                    ph[k] = ph.get(k, 0.0) + v
                wall += sum(step[r].values())
            p = {
                "steps": len(done),
                "wall_seconds": round(wall, 6),
                "phases": {k: round(v, 6) for k, v in ph.items()},
                "facts": self.facts_fn(r),
            }
            if self.examples is not None:
                p["examples"] = int(self.examples * len(done))
                top_ex += p["examples"]
            ranks.append({"identity": self.ident_fn(r), "phases": p})
            top_steps += p["steps"]
            top_wall += p["wall_seconds"]
            for k, v in p["phases"].items():
                top_ph[k] = top_ph.get(k, 0.0) + v
        top = {
            "steps": top_steps,
            "wall_seconds": round(top_wall, 6),
            "phases": {k: round(v, 6) for k, v in top_ph.items()},
            "facts": ranks[0]["phases"]["facts"],
        }
        if self.examples is not None:
            top["examples"] = top_ex
        return top, ranks


def noisy(rng, per: dict, rel=0.04) -> dict:
    return {k: max(0.0, v * (1 + rng.gauss(0, rel))) for k, v in per.items() if v > 0}


def pick(rng, dist: dict) -> str:
    x = rng.random() * sum(dist.values())
    for k, v in dist.items():
        x -= v
        if x <= 0:
            return k
    return k


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


def stack_rows(counts: dict, sites: dict, role="main") -> list:
    """counts: phase -> samples; sites: phase -> (function, file, line, text, draws_random, seeded)."""
    rows = []
    for phase, k in counts.items():
        fn, file, line, text, dr, sd = sites[phase]
        rows.append([phase, role, fn, file, line, text, k, dr, sd])
    return rows


def run_stacks(rng, done: list, sites: dict, rank: int = 0, rate: float = 2.0, iv: float = 1.0):
    """Stack samples of rank ``rank``'s main thread over an interval, spread by its phase shares."""
    ph: dict = {}
    for step in done:
        for k, v in step[rank].items():
            ph[k] = ph.get(k, 0.0) + v
    if not ph:
        return None
    n = int(round(rate * iv))
    c: dict = {}
    for _ in range(n):
        k = pick(rng, ph)
        if k in sites:
            c[k] = c.get(k, 0) + 1
    return {"source": "py-spy", "rate_hz": rate, "rows": stack_rows(c, sites)}


class Trace:
    def __init__(self, host: Host, t0: float, meta: dict, interval: float = 1.0) -> None:
        self.host = host
        self.t = t0
        self.lines = [
            {
                "type": "header",
                "format": "bottleneckd.trace",
                "version": 1,
                "created": t0,
                "interval": interval,
                "machine": host.machine,
                "peaks": host.peaks,
                "meta": meta,
            }
        ]

    def add(self, t: float, iv: float, readings, phases=None, ranks=None, stacks=None, slow=1.0) -> None:
        d = {
            "type": "sample",
            "t": round(t, 4),
            "interval": round(iv, 6),
            "readings": readings,
            "phases": phases,
            "samplers": self.host.samplers(slow),
        }
        if ranks:
            d["ranks"] = ranks
        if stacks is not None:
            d["stacks"] = stacks
        self.lines.append(d)

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            for line in self.lines:
                f.write(json.dumps(line, separators=(",", ":")) + "\n")


def ident(job: str, rank: int, world: int, local_world: int, host: Host, pid: int, gpu_uuid: str, node_rank=0):
    return {
        "job": job,
        "run": "",
        "restart": 0,
        "rank": rank,
        "local_rank": rank % local_world,
        "world_size": world,
        "local_world_size": local_world,
        "node": host.hostname,
        "node_rank": node_rank,
        "gpu": gpu_uuid,
        "pid": pid,
    }


def ticks(rng, n: int, t0: float, base: float = 1.0, irregular: dict | None = None):
    """(tick, t, interval) for n samples: base +- jitter, or the gaps given in ``irregular``."""
    t = t0
    for k in range(n):
        iv = (irregular or {}).get(k, base * (1 + rng.uniform(-0.004, 0.008)))
        t += iv
        yield k, t, iv


# --------------------------------------------------------------------------------------------
# machines
# --------------------------------------------------------------------------------------------

SPR = ["avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"]
CLX = ["avx", "avx2", "fma", "avx512f", "avx512_vnni"]
SKX = ["avx", "avx2", "fma", "avx512f"]
BDW = ["avx", "avx2", "fma"]
ZEN = ["avx", "avx2", "fma"]
ZEN4 = ["avx", "avx2", "fma", "avx512f", "avx512_bf16"]


def hgx_h100(rng, hostname="hgx-h100-031", gpu_spec=H100_SXM, cpu="Intel(R) Xeon(R) Platinum 8480C", logical=224):
    return Host(
        rng,
        hostname,
        cpu,
        logical,
        logical // 2,
        2,
        3800.0,
        SPR,
        2015 * GiB,
        [gpu_spec] * 8,
        disks=[
            ("nvme0n1", 1.92 * TB, "nvme", 4, "SAMSUNG MZ1L21T9HCLS"),
            ("nvme1n1", 3.84 * TB, "nvme", 4, "SAMSUNG MZQL23T8HCLS"),
        ],
        nics=[("eno1", 25000)],
        ib=[(f"mlx5_{k}", 1, 400) for k in range(8)],
        mounts=[
            ("/", "ext4", "/dev/nvme0n1p2", False, 1.79 * TB),
            ("/raid", "ext4", "/dev/nvme1n1", False, 3.5 * TB),
        ],
    )


# --------------------------------------------------------------------------------------------
# scenarios
# --------------------------------------------------------------------------------------------


def a100_fp32_no_tf32(name, rng, t0):
    """GCP a2-highgpu-1g (1x A100 40GB, 12 vCPU): BERT-large SQuAD fine-tune in plain fp32, with
    torch.backends.cuda.matmul.allow_tf32 at PyTorch's default (False): the matmuls run on the FP32
    pipes at ~80% of 19.5 TFLOP/s; tensor cores idle. dcgm-exporter runs on the node."""
    h = Host(
        rng,
        "a2-bert-ft-1",
        "Intel(R) Xeon(R) CPU @ 2.20GHz",
        12,
        6,
        1,
        None,
        CLX,
        85 * GiB,
        [A100_SXM40],
        disks=[("nvme0n1", 375 * GB, "nvme", 4, "nvme_card"), ("sda", 200 * GB, "scsi", None, "PersistentDisk")],
        nics=[("ens4", 24000)],
        mounts=[("/", "ext4", "/dev/sda1", False, 196 * GB)],
        dcgm=True,
    )
    pid = 4121
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd run -- python run_qa.py --fp32", "constructed": name})
    per = dict(data_wait=0.004, transfer=0.003, forward=0.575, backward=1.155, optimizer=0.012, other=0.011)
    flops = 2.72e13
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "parameters": 335_141_888,
        "param_dtype": "float32",
        "compute_dtype": "float32",
        "allow_tf32": False,
        "cudnn_allow_tf32": True,
        "has_conv": False,
        "input_rank": 2,
        "compiled": False,
        "optimizer_impl": "foreach",
        "loader_workers": 4,
        "pin_memory": True,
        "persistent_workers": False,
        "prefetch_factor": 2,
        "batch_size": 32,
        "cores": 12,
        "intra_op_threads": 6,
        "flops_per_step": flops,
        "operand_bytes_per_step": 2.35e11,
        "arithmetic_intensity": flops / 2.35e11,
        "weight_byte_share": 0.21,
        "achieved_flops": flops / (0.575 + 1.155),
        "achieved_bytes_per_second": 2.35e11 / (0.575 + 1.155),
        "tokens_per_example": 384.0,
        "cuda_memory_total_bytes": A100_SXM40["mem"],
        "cuda_memory_reserved_bytes": 31_400_000_000,
        "cuda_memory_allocated_bytes": 9_800_000_000,
        "cuda_memory_peak_allocated_bytes": 29_100_000_000,
        "cuda_alloc_retries": 0,
    }
    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.015)],
        lambda r: dict(facts),
        lambda r: ident("local", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=32,
    )
    for tick, t, iv in ticks(rng, 50, t0):
        ph, ranks = job.report(job.collect(t))
        jb = dict(
            rank_busy_cores=j(rng, 1.08),
            main_busy_cores=j(rng, 0.97, 0.01),
            launch_thread_cores=j(rng, 1.0, 0.01),
            hottest_thread_busy=j(rng, 0.97, 0.01),
            worker_busy_cores=j(rng, 0.11),
            workers=4,
            worker_max_busy_cores=j(rng, 0.035),
            usable_cores=12,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.15, jb)
        r += h.memory(21 * GB + j(rng, 2e8), 6.1 * GB, 4 * 1.4 * GB)
        r += h.storage({}, dict(chars=j(rng, 3.2e5)), capacity={"/": 0.47})
        r += h.network()
        s = dict(
            sm=clip(j(rng, 0.965, 0.008), 0, 0.995),
            occ=j(rng, 0.49),
            tensor=0.0,
            fp32=j(rng, 0.79, 0.02),
            fp16=0.0,
            dram=j(rng, 0.21),
            busy=clip(j(rng, 0.995, 0.003)),
            membusy=j(rng, 0.19),
            mem_used=31.9e9 + j(rng, 1e7),
            pcie_tx=j(rng, 4e6),
            pcie_rx=j(rng, 1.1e7),
            power=j(rng, 338.0, 0.02),
            clock=1410,
            job_process=1.0,
            procs={pid: 31.4e9},
        )
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def v100_dgx1_jpeg_decode(name, rng, t0):
    """DGX-1 (8x V100 SXM2, 2x E5-2698 v4: 80 logical CPUs): ResNet-50 AMP (fp16) DDP, 256
    images per GPU, torchvision PIL decode + RandomResizedCrop in 10 workers per rank: 80 workers
    on 80 logical CPUs, every core busy, the GPUs wait for batches ~45% of the step. ImageNet is in
    the page cache (512 GB RAM): the SSDs idle."""
    h = Host(
        rng,
        "dgx1-v100-04",
        "Intel(R) Xeon(R) CPU E5-2698 v4 @ 2.20GHz",
        80,
        40,
        2,
        3600.0,
        BDW,
        512 * GiB,
        [V100_SXM2] * 8,
        disks=[("sda", 480 * GB, "sata", None, "SAMSUNG MZ7KM480")]
        + [(f"sd{c}", 1.92 * TB, "sata", None, "SAMSUNG MZ7LM1T9") for c in "bcde"],
        nics=[("enp1s0f0", 10000), ("enp1s0f1", 10000)],
        ib=[(f"mlx5_{k}", 1, 100) for k in range(4)],
        mounts=[("/", "ext4", "/dev/sda2", False, 440 * GB), ("/raid", "ext4", "/dev/md0", False, 7.0 * TB)],
        dcgm=True,
    )
    base = 30500
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 8 main_amp.py", "constructed": name},
    )
    per = dict(
        data_wait=0.188,
        transfer=0.006,
        forward=0.071,
        backward=0.142,
        optimizer=0.007,
        communication=0.009,
        other=0.004,
    )

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 25_557_032,
            "param_dtype": "float32",
            "autocast_dtype": "float16",
            "compute_dtype": "float16",
            "has_conv": True,
            "conv_flop_share": 0.97,
            "input_rank": 4,
            "ddp": True,
            "world_size": 8,
            "local_world_size": 8,
            "comm_backend": "nccl",
            "ddp_comm_timing": "comm hook",
            "ddp_buckets": 5,
            "comm_seconds_per_step": j(rng, 0.05),
            "comm_exposed_seconds_per_step": j(rng, 0.009),
            "comm_overlapped_seconds_per_step": j(rng, 0.041),
            "comm_overlap_ratio": 0.82,
            "loader_workers": 10,
            "pin_memory": True,
            "persistent_workers": True,
            "prefetch_factor": 2,
            "batch_size": 256,
            "cores": 80,
            "loader_workers_saturate_cores": False,
            "optimizer_impl": "foreach",
            "flops_per_step": 256 * 12.3e9,
            "operand_bytes_per_step": 1.9e11,
            "achieved_flops": 256 * 12.3e9 / 0.213,
            "achieved_bytes_per_second": 1.9e11 / 0.213,
        }

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.03) for _ in range(8)],
        facts,
        lambda r: ident("8121", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=256,
    )
    wsites = {
        "data_wait": (
            "ImageFolder.__getitem__",
            "/opt/conda/lib/python3.10/site-packages/torchvision/datasets/folder.py",
            229,
            "sample = self.loader(path)",
            False,
            False,
        ),
    }
    for tick, t, iv in ticks(rng, 50, t0):
        done = job.collect(t)
        ph, ranks = job.report(done)
        wk = [clip(j(rng, 0.86, 0.03)) for _ in range(80)]
        wbusy = sum(wk)
        rank_busy = 8 * j(rng, 0.93)
        jb = dict(
            ranks=8,
            rank_busy_cores=rank_busy,
            worker_busy_cores=wbusy,
            workers=80,
            worker_max_busy_cores=max(wk),
            worker_hottest_thread_busy=max(wk),
            worker_max_demand=1.0,
            main_busy_cores=j(rng, 0.71),
            launch_thread_cores=j(rng, 0.84),
            main_thread_demand=j(rng, 0.97, 0.01),
            hottest_thread_busy=j(rng, 0.74),
            comm_thread_cores=8 * 0.03,
            runqueue_wait_cores=j(rng, 17.5, 0.05),
            usable_cores=80,
            launcher_busy_cores=0.02,
            pressure_some=j(rng, 0.62, 0.03),
        )
        r = h.cpu(80.0, jb, psi=j(rng, 0.64, 0.03), sidecar=0.09)
        r += h.memory(352 * GB + j(rng, 5e8), 8 * 6.8 * GB, 80 * 1.3 * GB, 0.2 * GB, membw=None)
        r += h.storage(
            {},
            dict(calls=j(rng, 28000.0), chars=j(rng, 1.21e9), bytes=j(rng, 2.1e6), worker=2.1e6),
            capacity={"/": 0.38, "/raid": 0.41},
        )
        r += h.network()
        for i in range(8):
            s = dict(
                sm=j(rng, 0.47, 0.05),
                occ=j(rng, 0.22),
                tensor=j(rng, 0.21, 0.05),
                fp16=j(rng, 0.09),
                fp32=j(rng, 0.05),
                dram=j(rng, 0.24, 0.05),
                busy=clip(j(rng, 0.56, 0.05)),
                membusy=j(rng, 0.23),
                mem_used=j(rng, 22.4e9, 0.002),
                pcie_tx=j(rng, 2.1e7),
                pcie_rx=j(rng, 1.45e9, 0.04),
                nvl=(j(rng, 5.6e8), j(rng, 5.6e8)),
                power=j(rng, 168.0, 0.05),
                clock=1530,
                job_process=1.0,
                procs={base + 1 + i: 21.9e9},
            )
            r += h.gpu_readings(i, s, tick)
        wc = {"data_wait": 2}
        stacks = {"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(wc, wsites, role="worker")}
        stacks["rows"].append(
            [
                "data_wait",
                "worker",
                "RandomResizedCrop.forward",
                "/opt/conda/lib/python3.10/site-packages/torchvision/transforms/transforms.py",
                973,
                "i, j, h, w = self.get_params(img, self.scale, self.ratio)",
                1,
                True,
                False,
            ]
        )
        tr.add(t, iv, r, ph, ranks, stacks=stacks)
    return tr


def l4_small_batch_launch_bound(name, rng, t0):
    """GCP g2-standard-8 (1x L4, 8 vCPU): a 6-layer 256-wide text classifier, batch 16 x 128
    tokens, bf16 autocast, eager (not compiled): ~1,500 small kernels a step, each ~2-4 us of GPU
    work and ~8 us of launch on the host. The launching threads run a full core, the GPU runs a
    kernel a third of the time."""
    h = Host(
        rng,
        "g2-cls-train",
        "Intel(R) Xeon(R) CPU @ 2.20GHz",
        8,
        4,
        1,
        None,
        CLX,
        32 * GiB,
        [L4],
        disks=[("sda", 100 * GB, "scsi", None, "PersistentDisk")],
        nics=[("ens4", 16000)],
        mounts=[("/", "ext4", "/dev/sda1", False, 97 * GB)],
        dcgm=True,
    )
    pid = 2210
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd run -- python train_cls.py --bs 16", "constructed": name})
    per = dict(data_wait=0.0008, transfer=0.0003, forward=0.0052, backward=0.0061, optimizer=0.0011, other=0.0009)
    flops = 2.1e11
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "parameters": 14_900_000,
        "param_dtype": "float32",
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "has_conv": False,
        "input_rank": 2,
        "compiled": False,
        "optimizer_impl": "fused",
        "loader_workers": 2,
        "pin_memory": True,
        "persistent_workers": True,
        "prefetch_factor": 2,
        "batch_size": 16,
        "cores": 8,
        "intra_op_threads": 4,
        "flops_per_step": flops,
        "operand_bytes_per_step": 6.1e8,
        "arithmetic_intensity": flops / 6.1e8,
        "achieved_flops": flops / 0.0113,
        "achieved_bytes_per_second": 6.1e8 / 0.0113,
        "tokens_per_example": 128.0,
    }
    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.05)],
        lambda r: dict(facts),
        lambda r: ident("local", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=16,
    )
    for tick, t, iv in ticks(rng, 50, t0):
        ph, ranks = job.report(job.collect(t))
        main = j(rng, 0.63, 0.02)
        autograd = j(rng, 0.36, 0.02)
        jb = dict(
            rank_busy_cores=main + autograd + j(rng, 0.06),
            main_busy_cores=main,
            launch_thread_cores=clip(main + autograd, 0, 1.0),
            hottest_thread_busy=main,
            main_thread_demand=main + 0.01,
            worker_busy_cores=j(rng, 0.16),
            workers=2,
            worker_max_busy_cores=j(rng, 0.085),
            usable_cores=8,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.12, jb)
        r += h.memory(7.9 * GB + j(rng, 5e7), 3.4 * GB, 2 * 0.9 * GB)
        r += h.storage({}, dict(chars=j(rng, 1.4e6)), capacity={"/": 0.31})
        r += h.network()
        s = dict(
            sm=j(rng, 0.13, 0.06),
            occ=j(rng, 0.06),
            tensor=j(rng, 0.035, 0.1),
            fp32=j(rng, 0.03),
            fp16=j(rng, 0.01),
            dram=j(rng, 0.06, 0.06),
            busy=clip(j(rng, 0.34, 0.05)),
            membusy=j(rng, 0.07),
            mem_used=3.05e9 + j(rng, 1e6),
            pcie_tx=j(rng, 1.2e6),
            pcie_rx=j(rng, 2.9e6),
            power=j(rng, 36.0, 0.04),
            clock=2040,
            job_process=1.0,
            procs={pid: 2.7e9},
        )
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def pageable_h2d_pcie_gen3(name, rng, t0):
    """A100 PCIe 40GB in a 2017 Skylake server (PCIe gen3 x16, 15.75 GB/s a direction): 3D U-Net,
    batch 4 x 4 x 160^3 float32 volumes + int64 labels (393 MB a step) from pageable memory
    (pin_memory=False): each copy stages through a bounce buffer at ~5.6 GB/s, 36% of the link,
    and blocks the step. The transfer is ~40% of it."""
    h = Host(
        rng,
        "sky-med-02",
        "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz",
        80,
        40,
        2,
        3700.0,
        SKX,
        384 * GiB,
        [dict(A100_PCIE40, pcie_gen=3)],
        disks=[
            ("nvme0n1", 3.2 * TB, "nvme", 4, "INTEL SSDPE2KE032T8"),
            ("sda", 480 * GB, "sata", None, "INTEL SSDSC2KB48"),
        ],
        nics=[("eno1", 10000)],
        mounts=[("/", "ext4", "/dev/sda2", False, 440 * GB), ("/data", "xfs", "/dev/nvme0n1", False, 3.2 * TB)],
    )
    pid = 18833
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd run -- python train_unet3d.py", "constructed": name})
    per = dict(data_wait=0.004, transfer=0.070, forward=0.032, backward=0.063, optimizer=0.004, other=0.003)
    step = sum(per.values())
    flops = 4.1e12
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "parameters": 19_070_000,
        "param_dtype": "float32",
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "has_conv": True,
        "conv_flop_share": 0.96,
        "input_rank": 5,
        "compiled": False,
        "optimizer_impl": "fused",
        "loader_workers": 8,
        "pin_memory": False,
        "persistent_workers": True,
        "prefetch_factor": 4,
        "batch_size": 4,
        "cores": 80,
        "flops_per_step": flops,
        "operand_bytes_per_step": 1.2e11,
        "achieved_flops": flops / 0.095,
        "achieved_bytes_per_second": 1.2e11 / 0.095,
    }
    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.03)],
        lambda r: dict(facts),
        lambda r: ident("local", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=4,
    )
    sites = {
        "transfer": (
            "train_one_epoch",
            "/home/mlab/unet3d/train.py",
            88,
            "x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)",
            None,
            False,
        ),
        "forward": ("train_one_epoch", "/home/mlab/unet3d/train.py", 91, "logits = model(x)", None, False),
        "backward": ("train_one_epoch", "/home/mlab/unet3d/train.py", 94, "scaler.scale(loss).backward()", None, False),
    }
    for tick, t, iv in ticks(rng, 50, t0):
        done = job.collect(t)
        ph, ranks = job.report(done)
        h2d = 393e6 / step
        jb = dict(
            rank_busy_cores=j(rng, 1.12),
            main_busy_cores=j(rng, 0.86, 0.02),
            launch_thread_cores=j(rng, 0.93, 0.02),
            hottest_thread_busy=j(rng, 0.86, 0.02),
            worker_busy_cores=j(rng, 2.3),
            workers=8,
            worker_max_busy_cores=j(rng, 0.31),
            usable_cores=80,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.3, jb)
        r += h.memory(97 * GB + j(rng, 3e8), 11.2 * GB, 8 * 3.1 * GB)
        r += h.storage(
            {"nvme0n1": dict(read=j(rng, 3.1e8), rops=j(rng, 2400.0), busy=0.09, qd=0.3, inflight=1)},
            dict(calls=j(rng, 2400.0), chars=j(rng, 3.1e8), bytes=j(rng, 3.1e8), worker=3.1e8),
            capacity={"/": 0.22, "/data": 0.61},
        )
        r += h.network()
        s = dict(
            sm=j(rng, 0.52, 0.03),
            occ=j(rng, 0.31),
            tensor=j(rng, 0.24),
            dram=j(rng, 0.21),
            busy=clip(j(rng, 0.58, 0.03)),
            membusy=j(rng, 0.22),
            mem_used=26.8e9 + j(rng, 1e7),
            pcie_tx=j(rng, 3e6),
            pcie_rx=j(rng, h2d, 0.03),
            power=j(rng, 171.0, 0.04),
            clock=1410,
            job_process=1.0,
            procs={pid: 26.3e9},
        )
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, ph, ranks, stacks=run_stacks(rng, done, sites, iv=iv))
    return tr


def pipeline_bubble_pp4(name, rng, t0):
    """HGX H100: a 13B GPT with pipeline parallelism 4 x data parallelism 2 (torch.distributed.
    pipelining, 1F1B), only 4 micro-batches a step: the bubble (p-1)/(m+p-1) = 3/7 of the step is
    spent waiting on P2P receives from the neighbouring stage. NVLink carries ~3% of its peak; the
    NCCL receive kernels spin, so NVML's busy fraction stays high while the SMs idle."""
    h = hgx_h100(rng, "hgx-h100-112")
    base = 60110
    tr = Trace(
        h,
        t0,
        {
            "pid": base,
            "command": "bottleneckd run -- torchrun --nproc_per_node 8 pretrain_pp.py --pp 4 --microbatches 4",
            "constructed": name,
        },
    )
    compute = dict(forward=0.120, backward=0.240)

    def step(k):
        out = []
        for r in range(8):
            stage = r % 4
            p = dict(
                data_wait=0.002 if stage == 0 else 0.0,
                transfer=0.001 if stage == 0 else 0.0,
                forward=compute["forward"] * (1.06 if stage == 3 else 1.0),
                backward=compute["backward"] * (1.05 if stage == 3 else 1.0),
                communication=0.292 - (0.025 if stage == 3 else 0.0),
                optimizer=0.011,
                other=0.006,
            )
            out.append(noisy(rng, p, 0.02))
        return out

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 3_290_000_000,
            "param_dtype": "float32",
            "autocast_dtype": "bfloat16",
            "compute_dtype": "bfloat16",
            "has_conv": False,
            "input_rank": 2,
            "ddp": True,
            "world_size": 8,
            "local_world_size": 8,
            "comm_backend": "nccl",
            "ddp_comm_timing": "off: the model is not DistributedDataParallel",
            "loader_workers": 2,
            "pin_memory": True,
            "batch_size": 2,
            "optimizer_impl": "fused",
            "flops_per_step": 1.72e14,
            "operand_bytes_per_step": 9.4e11,
            "achieved_flops": 1.72e14 / 0.36,
            "achieved_bytes_per_second": 9.4e11 / 0.36,
            "tokens_per_example": 4096.0,
            "cuda_memory_total_bytes": H100_SXM["mem"],
            "cuda_memory_reserved_bytes": 71_200_000_000,
            "cuda_memory_peak_allocated_bytes": 66_900_000_000,
        }

    job = StepJob(t0, step, facts, lambda r: ident("pp-13b", r, 8, 8, h, base + 1 + r, h.uuids[r]), examples_per_step=8)
    for tick, t, iv in ticks(rng, 50, t0):
        ph, ranks = job.report(job.collect(t))
        jb = dict(
            ranks=8,
            rank_busy_cores=8 * j(rng, 1.12),
            main_busy_cores=j(rng, 0.98, 0.01),
            launch_thread_cores=j(rng, 1.02, 0.01),
            hottest_thread_busy=j(rng, 0.98, 0.01),
            comm_thread_cores=8 * 0.09,
            worker_busy_cores=j(rng, 0.3),
            workers=4,
            worker_max_busy_cores=j(rng, 0.08),
            usable_cores=224,
            launcher_busy_cores=0.01,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.8, jb)
        r += h.memory(231 * GB + j(rng, 4e8), 8 * 14.2 * GB, 4 * 1.1 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 2.2e5)), capacity={"/": 0.33, "/raid": 0.52})
        r += h.network()
        for i in range(8):
            s = dict(
                sm=j(rng, 0.56, 0.03),
                occ=j(rng, 0.27),
                tensor=j(rng, 0.34, 0.03),
                dram=j(rng, 0.22),
                busy=clip(j(rng, 0.97, 0.01)),
                membusy=j(rng, 0.2),
                mem_used=j(rng, 72.6e9, 0.001),
                pcie_tx=j(rng, 3e7),
                pcie_rx=j(rng, 2e7),
                nvl=(j(rng, 1.25e10, 0.05), j(rng, 1.25e10, 0.05)),
                power=j(rng, 455.0, 0.03),
                clock=1980,
                job_process=1.0,
                procs={base + 1 + i: 72.1e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def fsdp_act_ckpt_mem_full(name, rng, t0):
    """HGX H100: Llama-2-13B full fine-tune, FSDP FULL_SHARD over 8 GPUs, bf16 mixed precision,
    4096-token sequences, micro-batch 1, activation checkpointing on every block because without it
    the activations (~110 GB) do not fit: GPU memory 98% full, the recompute is ~25% of the step's
    GPU time, batch size pinned at 1."""
    h = hgx_h100(rng, "hgx-h100-207")
    base = 44210
    tr = Trace(
        h,
        t0,
        {
            "pid": base,
            "command": "bottleneckd run -- torchrun --nproc_per_node 8 finetune_fsdp.py --activation-checkpointing",
            "constructed": name,
        },
    )
    per = dict(
        data_wait=0.002,
        transfer=0.001,
        forward=0.224,
        backward=0.618,
        optimizer=0.031,
        communication=0.041,
        other=0.011,
    )
    flops = 4.55e14

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 13_015_864_320,
            "param_dtype": "float32",
            "autocast_dtype": "bfloat16",
            "compute_dtype": "bfloat16",
            "has_conv": False,
            "input_rank": 2,
            "ddp": True,
            "fsdp": True,
            "sharded": True,
            "activation_checkpointing": True,
            "world_size": 8,
            "local_world_size": 8,
            "comm_backend": "nccl",
            "comm_seconds_per_step": j(rng, 0.52),
            "comm_exposed_seconds_per_step": j(rng, 0.041),
            "comm_overlapped_seconds_per_step": j(rng, 0.48),
            "comm_overlap_ratio": 0.92,
            "loader_workers": 2,
            "pin_memory": True,
            "batch_size": 1,
            "optimizer_impl": "fused",
            "flops_per_step": flops,
            "operand_bytes_per_step": 1.62e12,
            "achieved_flops": flops / 0.842,
            "achieved_bytes_per_second": 1.62e12 / 0.842,
            "tokens_per_example": 4096.0,
            "cuda_memory_total_bytes": H100_SXM["mem"],
            "cuda_memory_reserved_bytes": 83_050_000_000,
            "cuda_memory_allocated_bytes": 27_300_000_000,
            "cuda_memory_peak_allocated_bytes": 80_400_000_000,
            "cuda_alloc_retries": 0,
            "cuda_alloc_retries_per_step": 0.0,
            "cuda_expandable_segments": True,
        }

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.015) for _ in range(8)],
        facts,
        lambda r: ident("ft-13b", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=1,
    )
    for tick, t, iv in ticks(rng, 55, t0):
        ph, ranks = job.report(job.collect(t))
        jb = dict(
            ranks=8,
            rank_busy_cores=8 * j(rng, 1.18),
            main_busy_cores=j(rng, 0.92, 0.01),
            launch_thread_cores=j(rng, 1.01, 0.01),
            hottest_thread_busy=j(rng, 0.92, 0.01),
            comm_thread_cores=8 * 0.12,
            worker_busy_cores=j(rng, 0.25),
            workers=16,
            worker_max_busy_cores=j(rng, 0.03),
            usable_cores=224,
            launcher_busy_cores=0.01,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.7, jb)
        r += h.memory(318 * GB + j(rng, 4e8), 8 * 19.5 * GB, 16 * 0.8 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 1.2e5)), capacity={"/": 0.36, "/raid": 0.44})
        r += h.network()
        for i in range(8):
            s = dict(
                sm=clip(j(rng, 0.91, 0.01), 0, 0.99),
                occ=j(rng, 0.36),
                tensor=j(rng, 0.53, 0.02),
                dram=j(rng, 0.36),
                busy=clip(j(rng, 0.995, 0.003)),
                membusy=j(rng, 0.33),
                mem_used=84.05e9 + j(rng, 3e7, 0.3),
                pcie_tx=j(rng, 2e7),
                pcie_rx=j(rng, 1.5e7),
                nvl=(j(rng, 2.2e10, 0.04), j(rng, 2.2e10, 0.04)),
                power=j(rng, 640.0, 0.03),
                clock=int(j(rng, 1905, 0.02)),
                throttle={"sw_power_cap"} if rng.random() < 0.35 else set(),
                job_process=1.0,
                procs={base + 1 + i: 83.5e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def hetero_l40s_a10_ddp(name, rng, t0):
    """A 4-GPU PCIe server with two L40S and two A10 (what the lab had), DDP ViT-B/16 bf16, the
    same 128 images per rank: the A10s need ~2.9x longer per step and the L40S ranks wait ~60% of
    the step in the all-reduce for them. No NVLink: peer traffic crosses PCIe gen4."""
    h = Host(
        rng,
        "lab-gpu-03",
        "AMD EPYC 7313 16-Core Processor",
        32,
        16,
        1,
        3729.0,
        ZEN,
        256 * GiB,
        [L40S, L40S, A10, A10],
        disks=[("nvme0n1", 3.84 * TB, "nvme", 4, "Micron_7450_MTFDKCC3T8TFR")],
        nics=[("enp65s0f0", 10000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 3.5 * TB)],
        dcgm=True,
    )
    base = 9100
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 4 train_vit.py", "constructed": name},
    )
    slow = dict(
        data_wait=0.003,
        transfer=0.002,
        forward=0.040,
        backward=0.081,
        optimizer=0.004,
        communication=0.006,
        other=0.003,
    )
    fast = dict(
        data_wait=0.003,
        transfer=0.002,
        forward=0.014,
        backward=0.028,
        optimizer=0.003,
        communication=0.086,
        other=0.003,
    )

    def facts(r):
        per = slow if r >= 2 else fast
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 86_567_656,
            "param_dtype": "float32",
            "autocast_dtype": "bfloat16",
            "compute_dtype": "bfloat16",
            "has_conv": True,
            "conv_flop_share": 0.02,
            "input_rank": 4,
            "ddp": True,
            "world_size": 4,
            "local_world_size": 4,
            "comm_backend": "nccl",
            "ddp_comm_timing": "comm hook",
            "ddp_buckets": 14,
            "comm_seconds_per_step": j(rng, per["communication"] + 0.028),
            "comm_exposed_seconds_per_step": j(rng, per["communication"]),
            "comm_overlapped_seconds_per_step": j(rng, 0.028),
            "comm_overlap_ratio": 0.028 / (per["communication"] + 0.028),
            "loader_workers": 6,
            "pin_memory": True,
            "persistent_workers": True,
            "prefetch_factor": 2,
            "batch_size": 128,
            "optimizer_impl": "fused",
            "flops_per_step": 128 * 52.8e9,
            "operand_bytes_per_step": 2.3e11,
            "achieved_flops": 128 * 52.8e9 / (per["forward"] + per["backward"]),
            "achieved_bytes_per_second": 2.3e11 / (per["forward"] + per["backward"]),
        }

    def step(k):
        s = [noisy(rng, slow, 0.02) for _ in range(2)]
        wall = max(sum(p.values()) for p in s)
        f = []
        for _ in range(2):
            p = noisy(rng, fast, 0.02)
            p["communication"] += wall - sum(p.values())
            f.append(p)
        return f + s

    job = StepJob(t0, step, facts, lambda r: ident("vitb", r, 4, 4, h, base + 1 + r, h.uuids[r]), examples_per_step=128)
    for tick, t, iv in ticks(rng, 50, t0):
        ph, ranks = job.report(job.collect(t))
        wk = [clip(j(rng, 0.42)) for _ in range(24)]
        jb = dict(
            ranks=4,
            rank_busy_cores=4 * j(rng, 1.05),
            main_busy_cores=j(rng, 0.88, 0.02),
            launch_thread_cores=j(rng, 0.95, 0.02),
            hottest_thread_busy=j(rng, 0.88, 0.02),
            comm_thread_cores=4 * 0.05,
            worker_busy_cores=sum(wk),
            workers=24,
            worker_max_busy_cores=max(wk),
            usable_cores=32,
            launcher_busy_cores=0.01,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.3, jb, psi=0.03)
        r += h.memory(61 * GB + j(rng, 3e8), 4 * 5.2 * GB, 24 * 1.2 * GB, 0.2 * GB)
        r += h.storage(
            {"nvme0n1": dict(read=j(rng, 1.1e8), rops=j(rng, 1100.0), busy=0.05, qd=0.1)},
            dict(calls=j(rng, 3700.0), chars=j(rng, 1.1e8), bytes=j(rng, 1.1e8), worker=1.1e8),
            capacity={"/": 0.57},
        )
        r += h.network()
        for i in range(4):
            pcie = j(rng, 3.7e9, 0.04)
            if i < 2:
                s = dict(
                    sm=j(rng, 0.31, 0.04),
                    occ=j(rng, 0.13),
                    tensor=j(rng, 0.13, 0.05),
                    dram=j(rng, 0.12),
                    busy=clip(j(rng, 0.93, 0.01)),
                    membusy=j(rng, 0.11),
                    mem_used=j(rng, 21.3e9, 0.002),
                    pcie_tx=pcie,
                    pcie_rx=j(rng, pcie + 0.11e9, 0.01),
                    power=j(rng, 148.0, 0.04),
                    clock=2520,
                    job_process=1.0,
                    procs={base + 1 + i: 20.8e9},
                )
            else:
                s = dict(
                    sm=clip(j(rng, 0.89, 0.02)),
                    occ=j(rng, 0.41),
                    tensor=j(rng, 0.44, 0.03),
                    dram=j(rng, 0.38),
                    busy=clip(j(rng, 0.99, 0.005)),
                    membusy=j(rng, 0.36),
                    mem_used=j(rng, 21.4e9, 0.002),
                    pcie_tx=pcie,
                    pcie_rx=j(rng, pcie + 0.11e9, 0.01),
                    power=j(rng, 147.0, 0.02),
                    clock=int(j(rng, 1650, 0.01)),
                    throttle={"sw_power_cap"} if rng.random() < 0.7 else set(),
                    job_process=1.0,
                    procs={base + 1 + i: 20.9e9},
                )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def ethernet_2node_allreduce(name, rng, t0):
    """Two GCP a2-highgpu-8g nodes (8x A100 40GB each, 100 Gb/s gVNIC, no RDMA): a 1.3B GPT in
    DDP with fp32 gradients (5.2 GB a step) and NCCL over TCP sockets. The all-reduce crosses the
    nodes at ~9 GB/s and only half of it hides behind backward: ~35% of the step waits for it, the
    NIC runs at ~75% of line rate while it does. Returns two traces (one per node)."""
    hosts = []
    traces = []
    base = [71000, 52000]
    for node in range(2):
        h = Host(
            rng,
            f"a2-gpt-{node}",
            "Intel(R) Xeon(R) CPU @ 2.20GHz",
            96,
            48,
            2,
            None,
            CLX,
            680 * GiB,
            [A100_SXM40] * 8,
            disks=[("sda", 500 * GB, "scsi", None, "PersistentDisk")]
            + [(f"nvme0n{k}", 375 * GB, "nvme", 4, "nvme_card") for k in range(1, 5)],
            nics=[("ens12", 100000)],
            mounts=[("/", "ext4", "/dev/sda1", False, 496 * GB), ("/scratch", "ext4", "/dev/md0", False, 1.5 * TB)],
            dcgm=True,
        )
        hosts.append(h)
        traces.append(
            Trace(
                h,
                t0 + node * 0.37,
                {
                    "pid": base[node],
                    "command": "bottleneckd run -- torchrun --nnodes 2 --nproc_per_node 8 train_gpt.py",
                    "constructed": f"{name}.node{node}",
                },
            )
        )
    per = dict(
        data_wait=0.002,
        transfer=0.001,
        forward=0.305,
        backward=0.610,
        optimizer=0.021,
        communication=0.497,
        other=0.009,
    )
    step_s = sum(per.values())

    def make_facts(node):
        h = hosts[node]

        def facts(r):
            return {
                "device": "cuda",
                "pid": base[node] + 1 + r,
                "cuda_uuids": [h.uuids[r]],
                "parameters": 1_313_000_000,
                "param_dtype": "float32",
                "autocast_dtype": "bfloat16",
                "compute_dtype": "bfloat16",
                "has_conv": False,
                "input_rank": 2,
                "ddp": True,
                "world_size": 16,
                "local_world_size": 8,
                "comm_backend": "nccl",
                "ddp_comm_timing": "comm hook",
                "ddp_buckets": 209,
                "comm_seconds_per_step": j(rng, 1.08, 0.02),
                "comm_exposed_seconds_per_step": j(rng, 0.497, 0.02),
                "comm_overlapped_seconds_per_step": j(rng, 0.583, 0.02),
                "comm_overlap_ratio": 0.54,
                "loader_workers": 2,
                "pin_memory": True,
                "batch_size": 8,
                "optimizer_impl": "fused",
                "flops_per_step": 1.29e14,
                "operand_bytes_per_step": 7.7e11,
                "achieved_flops": 1.29e14 / 0.915,
                "achieved_bytes_per_second": 7.7e11 / 0.915,
                "tokens_per_example": 2048.0,
            }

        return facts

    def make_ident(node):
        h = hosts[node]
        return lambda r: ident("gpt13-2n", node * 8 + r, 16, 8, h, base[node] + 1 + r, h.uuids[r], node_rank=node)

    jobs = [
        StepJob(
            t0 + node * 0.37,
            lambda k: [noisy(rng, per, 0.02) for _ in range(8)],
            make_facts(node),
            make_ident(node),
            examples_per_step=8,
        )
        for node in range(2)
    ]
    nic_bytes = 2 * (15 / 16) * 5.2e9  # per direction per step
    for node in range(2):
        h, tr, job = hosts[node], traces[node], jobs[node]
        for tick, t, iv in ticks(rng, 50, t0 + node * 0.37):
            ph, ranks = job.report(job.collect(t))
            jb = dict(
                ranks=8,
                rank_busy_cores=8 * j(rng, 1.45),
                main_busy_cores=j(rng, 0.81, 0.02),
                launch_thread_cores=j(rng, 0.9, 0.02),
                hottest_thread_busy=j(rng, 0.95, 0.02),
                comm_thread_cores=8 * j(rng, 0.42),
                worker_busy_cores=j(rng, 0.4),
                workers=16,
                worker_max_busy_cores=j(rng, 0.04),
                usable_cores=96,
                launcher_busy_cores=0.02,
            )
            r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 2.9, jb, psi=0.02)
            r += h.memory(188 * GB + j(rng, 5e8), 8 * 11.5 * GB, 16 * 0.7 * GB, 0.2 * GB)
            r += h.storage({}, dict(chars=j(rng, 1.2e6)), capacity={"/": 0.41})
            rate = j(rng, nic_bytes / step_s, 0.04)
            r += h.network({"ens12": (rate, j(rng, rate, 0.01))}, iv=iv)
            for i in range(8):
                s = dict(
                    sm=j(rng, 0.6, 0.03),
                    occ=j(rng, 0.27),
                    tensor=j(rng, 0.36, 0.03),
                    fp32=j(rng, 0.05),
                    fp16=j(rng, 0.04),
                    dram=j(rng, 0.24),
                    busy=clip(j(rng, 0.97, 0.01)),
                    membusy=j(rng, 0.22),
                    mem_used=j(rng, 36.9e9, 0.002),
                    pcie_tx=j(rng, rate / 8, 0.05),
                    pcie_rx=j(rng, rate / 8, 0.05),
                    nvl=(j(rng, 3.9e9, 0.05), j(rng, 3.9e9, 0.05)),
                    power=j(rng, 265.0, 0.04),
                    clock=1410,
                    job_process=1.0,
                    procs={base[node] + 1 + i: 36.4e9},
                )
                r += h.gpu_readings(i, s, tick)
            tr.add(t, iv, r, ph, ranks)
    return traces


def ckpt_to_nfs_10gbe(name, rng, t0):
    """DGX A100 (8x A100 80GB): a 1.7B model in DDP saves a full checkpoint (weights + Adam state,
    20.4 GB) from rank 0 every 50 steps (~30 s) to /mnt/ckpt, an NFS mount reached over the 10 GbE
    management port (the storage network was never cabled). Each save takes ~18.5 s at ~1.1 GB/s,
    the wire's limit; the other ranks wait in their next all-reduce. The NFS mount's peak in the
    header is the fastest local link (HDR InfiniBand), not the 10 GbE it really crosses."""
    h = Host(
        rng,
        "dgxa100-17",
        "AMD EPYC 7742 64-Core Processor",
        256,
        128,
        2,
        2250.0,
        ZEN,
        2015 * GiB,
        [A100_SXM80] * 8,
        disks=[
            ("nvme0n1", 1.92 * TB, "nvme", 4, "SAMSUNG MZ1LB1T9HALS"),
            ("nvme2n1", 3.84 * TB, "nvme", 4, "SAMSUNG MZWLJ3T8HBLS"),
        ],
        nics=[("enp226s0", 10000)],
        ib=[(f"mlx5_{k}", 1, 200) for k in range(4)],
        mounts=[
            ("/", "ext4", "/dev/nvme0n1p2", False, 1.75 * TB),
            ("/raid", "ext4", "/dev/md0", False, 3.5 * TB),
            ("/mnt/ckpt", "nfs4", "nas01:/export/ckpt", True, None),
        ],
    )
    base = 33800
    tr = Trace(
        h,
        t0,
        {
            "pid": base,
            "command": "bottleneckd run -- torchrun --nproc_per_node 8 train.py --save-every 50 --ckpt-dir /mnt/ckpt",
            "constructed": name,
        },
    )
    per = dict(
        data_wait=0.003,
        transfer=0.002,
        forward=0.180,
        backward=0.360,
        optimizer=0.018,
        communication=0.035,
        other=0.008,
    )
    save_s = 18.5
    start_k = 20  # the trace starts 20 steps after a save
    save_d: dict = {}  # step -> seconds its save took (at the step's end)

    def step(k):
        out = [noisy(rng, per, 0.02) for _ in range(8)]
        if (k + start_k) % 50 == 49:
            d = j(rng, save_s, 0.03)
            save_d[k] = d
            out[0]["other"] += d
            for r in range(1, 8):
                out[r]["communication"] += d
        return out

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 1_708_000_000,
            "param_dtype": "float32",
            "autocast_dtype": "bfloat16",
            "compute_dtype": "bfloat16",
            "has_conv": False,
            "input_rank": 2,
            "ddp": True,
            "world_size": 8,
            "local_world_size": 8,
            "comm_backend": "nccl",
            "ddp_comm_timing": "comm hook",
            "ddp_buckets": 273,
            "loader_workers": 4,
            "pin_memory": True,
            "batch_size": 4,
            "optimizer_impl": "fused",
            "flops_per_step": 8.4e13,
            "operand_bytes_per_step": 2.6e11,
            "achieved_flops": 8.4e13 / 0.54,
            "achieved_bytes_per_second": 2.6e11 / 0.54,
            "tokens_per_example": 2048.0,
        }

    job = StepJob(t0, step, facts, lambda r: ident("ckpt17", r, 8, 8, h, base + 1 + r, h.uuids[r]), examples_per_step=4)
    sites = {
        "other": (
            "Trainer.save_checkpoint",
            "/workspace/train.py",
            212,
            "torch.save(state, os.path.join(args.ckpt_dir, f'step{step:07d}.pt'))",
            None,
            False,
        ),
        "forward": (
            "Trainer.train_step",
            "/workspace/train.py",
            160,
            "loss = self.model(input_ids, labels=labels).loss",
            None,
            False,
        ),
        "backward": ("Trainer.train_step", "/workspace/train.py", 163, "loss.backward()", None, False),
    }
    for tick, t, iv in ticks(rng, 55, t0):
        done = job.collect(t)
        ph, ranks = job.report(done)
        lo = t - iv
        saves = [(e - save_d[k], e) for _s, e, k in job.history if k in save_d]  # known: generated before t
        f = sum(max(0.0, min(t, b) - max(lo, a)) for a, b in saves) / iv  # share of the interval saving
        nfs = j(rng, 1.11e9, 0.02) * f
        nic_tx = nfs * 1.035 + j(rng, 2e5)
        jb = dict(
            ranks=8,
            rank_busy_cores=8 * (1.25 * (1 - f) + 0.55 * f) + 0.6 * f,
            main_busy_cores=j(rng, 0.96 * (1 - f) + 0.58 * f, 0.02),
            launch_thread_cores=j(rng, 1.02 * (1 - f) + 0.58 * f, 0.02),
            hottest_thread_busy=j(rng, 0.96 * (1 - f) + 0.6 * f, 0.02),
            comm_thread_cores=8 * 0.1,
            worker_busy_cores=j(rng, 0.9 * (1 - f) + 0.05),
            workers=32,
            worker_max_busy_cores=j(rng, 0.06),
            usable_cores=256,
            threads_in_disk_wait=1 if f > 0.5 else 0,
            processes_in_disk_wait=1 if f > 0.5 else 0,
            launcher_busy_cores=0.01,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.1 + 0.4 * f, jb, iowait=0.002 + 0.004 * f)
        r += h.memory((243 + 21 * f) * GB + j(rng, 3e8), 8 * 12.8 * GB + 20.4 * GB * f, 32 * 0.9 * GB, 0.2 * GB)
        r += h.storage(
            {
                "nvme2n1": dict(
                    read=j(rng, 4.1e7 * (1 - f) + 1e4), rops=j(rng, 330.0 * (1 - f) + 1), busy=0.02 * (1 - f)
                )
            },
            dict(
                calls=j(rng, 600.0 * (1 - f) + 5),
                chars=j(rng, 4.1e7 * (1 - f) + 1e4),
                bytes=j(rng, 4.1e7 * (1 - f) + 1e4),
                worker=4.1e7 * (1 - f),
                psi_some=0.9 * f,
                psi_full=0.1 * f,
            ),
            host_psi=(0.11 * f, 0.01 * f),
            capacity={"/": 0.29, "/raid": 0.63},
        )
        r += h.network({"enp226s0": (nic_tx, j(rng, 2.1e7 * f + 2e5))}, nfs_rates={"/mnt/ckpt": nfs}, iv=iv)
        for i in range(8):
            if i == 0:
                sm, busy, tensor = 0.78 * (1 - f), 0.99 * (1 - f) + 0.02 * f, 0.41 * (1 - f)
            else:  # NCCL kernels spin waiting for rank 0 during the save
                sm, busy, tensor = 0.78 * (1 - f) + 0.012 * f, 0.99, 0.41 * (1 - f)
            s = dict(
                sm=j(rng, sm, 0.02),
                occ=j(rng, sm * 0.4),
                tensor=j(rng, tensor, 0.03),
                dram=j(rng, 0.29 * (1 - f) + 0.002),
                busy=clip(j(rng, busy, 0.005)),
                membusy=j(rng, 0.27 * (1 - f) + 0.002),
                mem_used=j(rng, 61.1e9, 0.002),
                pcie_tx=j(rng, 3e7 + (2.2e9 * f if i == 0 and f > 0 else 0.0)),
                pcie_rx=j(rng, 1.6e7),
                nvl=(j(rng, 2.1e10 * (1 - f) + 1e6, 0.04), j(rng, 2.1e10 * (1 - f) + 1e6, 0.04)),
                power=j(rng, 355.0 * (1 - f) + 92.0 * f, 0.03),
                clock=1410,
                job_process=1.0,
                procs={base + 1 + i: 60.6e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks, stacks=run_stacks(rng, done, sites, iv=iv))
    return tr


def t4_record_no_counters(name, rng, t0):
    """`bottleneckd record --interval 2` on a GCP n1-standard-8 with one T4, no job followed (no
    pid, no hook): no step phases, no job rows, no GPM (Turing), no dcgm-exporter, no resctrl, no
    RAPL. NVML says a kernel runs ~97% of the time and the card sits at its 70 W power cap; nothing
    says whether the SMs or the memory are the limit, or what the step waits in."""
    h = Host(
        rng,
        "n1-t4-train",
        "Intel(R) Xeon(R) CPU @ 2.30GHz",
        8,
        4,
        1,
        None,
        ["avx", "avx2", "fma"],
        30 * GiB,
        [T4],
        disks=[("sda", 200 * GB, "scsi", None, "PersistentDisk")],
        nics=[("ens4", 16000)],
        mounts=[("/", "ext4", "/dev/sda1", False, 196 * GB)],
    )
    tr = Trace(
        h,
        t0,
        {"pid": 1733, "command": "bottleneckd record -o t4.jsonl --interval 2", "constructed": name},
        interval=2.0,
    )
    for tick, t, iv in ticks(rng, 45, t0, base=2.0):
        r = h.cpu(j(rng, 2.4, 0.05), None, psi=0.02)
        r += h.memory(17.2 * GB + j(rng, 1e8), 0.0, job=False)
        r += h.storage(
            {"sda": dict(read=j(rng, 9e6), rops=j(rng, 120.0), busy=0.03, qd=0.05)}, None, capacity={"/": 0.52}
        )
        r += h.network()
        clock = int(j(rng, 1245, 0.05))
        s = dict(
            sm=None,
            busy=clip(j(rng, 0.97, 0.01)),
            membusy=j(rng, 0.54, 0.04),
            mem_used=13.6e9 + j(rng, 2e6),
            pcie_tx=j(rng, 4e7),
            pcie_rx=j(rng, 6.1e8, 0.05),
            power=min(70.0, j(rng, 69.3, 0.01)),
            clock=clock,
            throttle={"sw_power_cap"} if rng.random() < 0.85 else set(),
            procs={2301: 13.1e9},
        )
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, None)
    return tr


def h100_gpt_high_mfu(name, rng, t0):
    """HGX H100: a 1.3B GPT pretraining in DDP, torch.compile'd, bf16 autocast, flash attention,
    fused AdamW, 16 x 2048 tokens per GPU; gradients all-reduce over NVLink behind backward (2%
    exposed). ~55% MFU: the SMs are busy 97% of the time, tensor pipes ~70%. A well-tuned job."""
    h = hgx_h100(rng, "hgx-h100-058")
    base = 81200
    tr = Trace(
        h,
        t0,
        {
            "pid": base,
            "command": "bottleneckd run -- torchrun --nproc_per_node 8 train_gpt.py --compile",
            "constructed": name,
        },
    )
    per = dict(
        data_wait=0.001,
        transfer=0.001,
        forward=0.181,
        backward=0.363,
        optimizer=0.012,
        communication=0.010,
        other=0.006,
    )
    flops = 2.96e14

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 1_314_000_000,
            "param_dtype": "float32",
            "autocast_dtype": "bfloat16",
            "compute_dtype": "bfloat16",
            "fp8_flop_share": 0.0,
            "has_conv": False,
            "input_rank": 2,
            "compiled": True,
            "ddp": True,
            "world_size": 8,
            "local_world_size": 8,
            "comm_backend": "nccl",
            "ddp_comm_timing": "comm hook",
            "ddp_buckets": 209,
            "comm_seconds_per_step": j(rng, 0.21),
            "comm_exposed_seconds_per_step": j(rng, 0.010),
            "comm_overlapped_seconds_per_step": j(rng, 0.2),
            "comm_overlap_ratio": 0.95,
            "loader_workers": 4,
            "pin_memory": True,
            "persistent_workers": True,
            "batch_size": 16,
            "optimizer_impl": "fused",
            "flops_per_step": flops,
            "operand_bytes_per_step": 1.1e12,
            "arithmetic_intensity": flops / 1.1e12,
            "achieved_flops": flops / 0.544,
            "achieved_bytes_per_second": 1.1e12 / 0.544,
            "tokens_per_example": 2048.0,
            "cuda_memory_total_bytes": H100_SXM["mem"],
            "cuda_memory_reserved_bytes": 66_000_000_000,
            "cuda_memory_peak_allocated_bytes": 61_700_000_000,
        }

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.01) for _ in range(8)],
        facts,
        lambda r: ident("gpt13", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=16,
    )
    for tick, t, iv in ticks(rng, 50, t0):
        ph, ranks = job.report(job.collect(t))
        jb = dict(
            ranks=8,
            rank_busy_cores=8 * j(rng, 1.1),
            main_busy_cores=j(rng, 0.55, 0.03),
            launch_thread_cores=j(rng, 0.62, 0.03),
            hottest_thread_busy=j(rng, 0.55, 0.03),
            comm_thread_cores=8 * 0.1,
            worker_busy_cores=j(rng, 0.6),
            workers=32,
            worker_max_busy_cores=j(rng, 0.03),
            usable_cores=224,
            launcher_busy_cores=0.01,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.7, jb)
        r += h.memory(266 * GB + j(rng, 3e8), 8 * 13.9 * GB, 32 * 0.6 * GB, 0.2 * GB)
        r += h.storage(
            {"nvme1n1": dict(read=j(rng, 2.4e6), rops=40.0, busy=0.004)},
            dict(chars=j(rng, 2.4e6), bytes=2.4e6, worker=2.4e6),
            capacity={"/": 0.31, "/raid": 0.72},
        )
        r += h.network()
        for i in range(8):
            s = dict(
                sm=clip(j(rng, 0.97, 0.006), 0, 0.995),
                occ=j(rng, 0.33),
                tensor=j(rng, 0.71, 0.02),
                fp32=j(rng, 0.05),
                fp16=j(rng, 0.04),
                dram=j(rng, 0.39),
                busy=1.0,
                membusy=j(rng, 0.37),
                mem_used=j(rng, 67.1e9, 0.001),
                pcie_tx=j(rng, 1.1e7),
                pcie_rx=j(rng, 2.6e7),
                nvl=(j(rng, 1.61e10, 0.03), j(rng, 1.61e10, 0.03)),
                power=j(rng, 688.0, 0.01),
                clock=int(j(rng, 1890, 0.02)),
                throttle={"sw_power_cap"} if rng.random() < 0.55 else set(),
                job_process=1.0,
                procs={base + 1 + i: 66.5e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def h200_eager_attention_membw(name, rng, t0):
    """1x H200 (of 8, the others idle), a 1.3B model at 4096-token context with
    attn_implementation="eager": the 32 x 4096 x 4096 score matrices go through scale, mask,
    softmax (fp32 upcast), dropout and their backward as separate elementwise kernels, ~0.95 TB of
    DRAM traffic a step. DRAM runs at ~70% of 4.8 TB/s, the tensor pipes ~15%."""
    h = hgx_h100(rng, "hgx-h200-009", gpu_spec=H200_SXM, cpu="Intel(R) Xeon(R) Platinum 8468", logical=192)
    pid = 15550
    tr = Trace(
        h,
        t0,
        {"pid": pid, "command": "bottleneckd run -- python sft.py --seq-len 4096 --attn eager", "constructed": name},
    )
    per = dict(data_wait=0.002, transfer=0.001, forward=0.096, backward=0.192, optimizer=0.008, other=0.004)
    flops = 4.2e13
    bytes_ = 0.95e12
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "parameters": 1_345_000_000,
        "param_dtype": "float32",
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "has_conv": False,
        "input_rank": 2,
        "compiled": False,
        "optimizer_impl": "fused",
        "loader_workers": 4,
        "pin_memory": True,
        "persistent_workers": True,
        "batch_size": 1,
        "cores": 192,
        "flops_per_step": flops,
        "operand_bytes_per_step": bytes_,
        "arithmetic_intensity": flops / bytes_,
        "weight_byte_share": 0.05,
        "achieved_flops": flops / 0.288,
        "achieved_bytes_per_second": bytes_ / 0.288,
        "tokens_per_example": 4096.0,
        "cuda_memory_total_bytes": H200_SXM["mem"],
        "cuda_memory_reserved_bytes": 101_000_000_000,
        "cuda_memory_peak_allocated_bytes": 96_300_000_000,
    }
    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.02)],
        lambda r: dict(facts),
        lambda r: ident("local", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=1,
    )
    for tick, t, iv in ticks(rng, 50, t0):
        ph, ranks = job.report(job.collect(t))
        jb = dict(
            rank_busy_cores=j(rng, 1.1),
            main_busy_cores=j(rng, 0.74, 0.02),
            launch_thread_cores=j(rng, 0.88, 0.02),
            hottest_thread_busy=j(rng, 0.74, 0.02),
            worker_busy_cores=j(rng, 0.12),
            workers=4,
            worker_max_busy_cores=j(rng, 0.04),
            usable_cores=192,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.5, jb)
        r += h.memory(64 * GB + j(rng, 2e8), 14.1 * GB, 4 * 0.9 * GB)
        r += h.storage({}, dict(chars=j(rng, 3e5)), capacity={"/": 0.27, "/raid": 0.35})
        r += h.network()
        for i in range(8):
            if i == 0:
                s = dict(
                    sm=clip(j(rng, 0.83, 0.015)),
                    occ=j(rng, 0.61),
                    tensor=j(rng, 0.15, 0.04),
                    fp32=j(rng, 0.21),
                    fp16=j(rng, 0.09),
                    int=j(rng, 0.17),
                    dram=clip(j(rng, 0.71, 0.02)),
                    busy=clip(j(rng, 0.995, 0.003)),
                    membusy=j(rng, 0.69, 0.02),
                    mem_used=101.6e9 + j(rng, 1e7),
                    pcie_tx=j(rng, 4e6),
                    pcie_rx=j(rng, 9e6),
                    nvl=(0.0, 0.0),
                    power=j(rng, 566.0, 0.02),
                    clock=1980,
                    job_process=1.0,
                    procs={pid: 101.1e9},
                )
                r += h.gpu_readings(i, s, tick)
            else:
                r += h.idle_gpu(i, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def a100pcie_p2p_disabled(name, rng, t0):
    """A KVM guest with 4x A100 PCIe 40GB passed through (no NVLink bridges; the IOMMU/ACS setup
    blocks peer-to-peer, so NCCL runs its SHM transport through host memory). BERT-large DDP with
    fp32 gradients (1.34 GB a step): the all-reduce moves at ~5 GB/s, half hidden behind backward;
    ~36% of the step waits for it. PCIe itself runs at ~17-25% of its gen4 peak."""
    h = Host(
        rng,
        "kvm-a100x4-2",
        "Intel Xeon Processor (Icelake)",
        64,
        32,
        2,
        None,
        CLX,
        480 * GiB,
        [A100_PCIE40] * 4,
        disks=[("vda", 1.0 * TB, "virtio", None, None)],
        nics=[("eth0", 25000)],
        mounts=[("/", "ext4", "/dev/vda1", False, 0.98 * TB)],
        dcgm=True,
    )
    base = 11900
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 4 run_mlm.py", "constructed": name},
    )
    per = dict(
        data_wait=0.002,
        transfer=0.002,
        forward=0.078,
        backward=0.157,
        optimizer=0.006,
        communication=0.140,
        other=0.004,
    )
    step_s = sum(per.values())

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 335_141_888,
            "param_dtype": "float32",
            "autocast_dtype": "bfloat16",
            "compute_dtype": "bfloat16",
            "has_conv": False,
            "input_rank": 2,
            "ddp": True,
            "world_size": 4,
            "local_world_size": 4,
            "comm_backend": "nccl",
            "ddp_comm_timing": "comm hook",
            "ddp_buckets": 54,
            "comm_seconds_per_step": j(rng, 0.27),
            "comm_exposed_seconds_per_step": j(rng, 0.14),
            "comm_overlapped_seconds_per_step": j(rng, 0.13),
            "comm_overlap_ratio": 0.48,
            "loader_workers": 4,
            "pin_memory": True,
            "persistent_workers": True,
            "batch_size": 32,
            "optimizer_impl": "fused",
            "flops_per_step": 3.3e13,
            "operand_bytes_per_step": 2.6e11,
            "achieved_flops": 3.3e13 / 0.235,
            "achieved_bytes_per_second": 2.6e11 / 0.235,
            "tokens_per_example": 512.0,
        }

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.02) for _ in range(4)],
        facts,
        lambda r: ident("mlm", r, 4, 4, h, base + 1 + r, h.uuids[r]),
        examples_per_step=32,
    )
    for tick, t, iv in ticks(rng, 50, t0):
        ph, ranks = job.report(job.collect(t))
        jb = dict(
            ranks=4,
            rank_busy_cores=4 * j(rng, 1.6),
            main_busy_cores=j(rng, 0.82, 0.02),
            launch_thread_cores=j(rng, 0.9, 0.02),
            hottest_thread_busy=j(rng, 0.96, 0.02),
            comm_thread_cores=4 * j(rng, 0.55),
            worker_busy_cores=j(rng, 0.8),
            workers=16,
            worker_max_busy_cores=j(rng, 0.07),
            usable_cores=64,
            launcher_busy_cores=0.02,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.4, jb, psi=0.02)
        r += h.memory(92 * GB + j(rng, 3e8), 4 * 7.9 * GB, 16 * 0.8 * GB, 0.2 * GB)
        r += h.storage(
            {"vda": dict(read=j(rng, 6e6), rops=60.0, busy=0.01)},
            dict(chars=j(rng, 6e6), bytes=6e6, worker=6e6),
            capacity={"/": 0.48},
        )
        r += h.network()
        for i in range(4):
            pc = j(rng, 2 * 0.75 * 1.34e9 / step_s, 0.04)
            s = dict(
                sm=j(rng, 0.52, 0.03),
                occ=j(rng, 0.24),
                tensor=j(rng, 0.31, 0.03),
                dram=j(rng, 0.2),
                busy=clip(j(rng, 0.96, 0.01)),
                membusy=j(rng, 0.19),
                mem_used=j(rng, 27.2e9, 0.002),
                pcie_tx=pc,
                pcie_rx=j(rng, pc, 0.02),
                power=j(rng, 184.0, 0.04),
                clock=1410,
                job_process=1.0,
                procs={base + 1 + i: 26.7e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def attach_h100_fp32_no_tf32(name, rng, t0):
    """`bottleneckd attach` to a single-GPU job on an HGX H100: a DLRM-style MLP stack trained in
    plain fp32 without TF32 (no hook, so no dtype facts). GPM shows SMs busy 97%, FP32 pipes ~80%,
    tensor pipes at 0, DRAM ~25%."""
    h = hgx_h100(rng, "hgx-h100-140")
    pid = 90210
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd attach --pid 90210", "constructed": name})
    dist = dict(forward=0.33, backward=0.49, optimizer=0.05, gpu_wait=0.09, data_wait=0.01, other=0.03)
    sites = {
        "forward": ("train", "/home/rec/dlrm_train.py", 301, "out = model(dense, sparse)", None, False),
        "backward": ("train", "/home/rec/dlrm_train.py", 304, "loss.backward()", None, False),
        "optimizer": ("train", "/home/rec/dlrm_train.py", 306, "optimizer.step()", None, False),
        "gpu_wait": ("train", "/home/rec/dlrm_train.py", 312, "running += loss.item()", None, False),
        "data_wait": ("train", "/home/rec/dlrm_train.py", 297, "for dense, sparse, y in loader:", False, False),
        "other": ("train", "/home/rec/dlrm_train.py", 309, "scheduler.step()", None, False),
    }
    for tick, t, iv in ticks(rng, 50, t0):
        ph, c = attach_phases(rng, dist, {"low_intensity_op_share": 0.06}, interval=iv)
        jb = dict(
            rank_busy_cores=j(rng, 1.12),
            main_busy_cores=j(rng, 0.9, 0.02),
            launch_thread_cores=j(rng, 0.98, 0.01),
            hottest_thread_busy=j(rng, 0.9, 0.02),
            worker_busy_cores=j(rng, 0.45),
            workers=6,
            worker_max_busy_cores=j(rng, 0.09),
            usable_cores=224,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 2.2, jb, sidecar=0.07)
        r += h.memory(141 * GB + j(rng, 2e8), 18 * GB, 6 * 1.6 * GB)
        r += h.storage({}, dict(chars=j(rng, 4e7), bytes=j(rng, 1e6)), capacity={"/": 0.39, "/raid": 0.47})
        r += h.network()
        for i in range(8):
            if i == 0:
                s = dict(
                    sm=clip(j(rng, 0.972, 0.006), 0, 0.995),
                    occ=j(rng, 0.52),
                    tensor=0.0,
                    fp32=j(rng, 0.79, 0.02),
                    fp16=0.0,
                    int=j(rng, 0.12),
                    dram=j(rng, 0.25),
                    busy=1.0,
                    membusy=j(rng, 0.23),
                    mem_used=44.8e9 + j(rng, 1e7),
                    pcie_tx=j(rng, 2e6),
                    pcie_rx=j(rng, 1.8e8),
                    nvl=(0.0, 0.0),
                    power=j(rng, 515.0, 0.02),
                    clock=1980,
                    job_process=1.0,
                    procs={pid: 44.3e9},
                )
                r += h.gpu_readings(i, s, tick)
            else:
                r += h.idle_gpu(i, tick)
        tr.add(t, iv, r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(c, sites)})
    return tr


def attach_4090_launch_bound(name, rng, t0):
    """`bottleneckd attach` on a Ryzen 7950X workstation with an RTX 4090 (no dcgm-exporter: SM
    activity unknown): a small GNN (3 layers, 128 wide) on mini-batches of 32 graphs in eager
    PyTorch; thousands of tiny kernels a second. The launching thread runs a full core, the GPU runs
    a kernel ~30% of the time and waits for the host otherwise."""
    h = Host(
        rng,
        "ws-7950x",
        "AMD Ryzen 9 7950X 16-Core Processor",
        32,
        16,
        1,
        5881.0,
        ZEN4,
        64 * GiB,
        [RTX4090],
        disks=[("nvme0n1", 2.0 * TB, "nvme", 4, "Samsung SSD 990 PRO 2TB")],
        nics=[("enp14s0", 2500)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 1.95 * TB)],
    )
    pid = 48810
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd attach --pid 48810", "constructed": name})
    dist = dict(forward=0.43, backward=0.34, optimizer=0.11, data_wait=0.05, other=0.07)
    sites = {
        "forward": ("GIN.forward", "/home/ana/gnn/model.py", 58, "x = self.convs[i](x, edge_index)", None, False),
        "backward": ("train_epoch", "/home/ana/gnn/train.py", 77, "loss.backward()", None, False),
        "optimizer": ("train_epoch", "/home/ana/gnn/train.py", 78, "opt.step()", None, False),
        "data_wait": ("train_epoch", "/home/ana/gnn/train.py", 70, "for batch in loader:", False, False),
        "other": ("train_epoch", "/home/ana/gnn/train.py", 80, "total += float(loss) * batch.num_graphs", None, False),
    }
    for tick, t, iv in ticks(rng, 50, t0):
        ph, c = attach_phases(rng, dist, interval=iv)
        main = j(rng, 0.66, 0.02)
        autograd = j(rng, 0.33, 0.02)
        jb = dict(
            rank_busy_cores=main + autograd + j(rng, 0.05),
            main_busy_cores=main,
            launch_thread_cores=clip(main + autograd),
            hottest_thread_busy=main,
            main_thread_demand=main + 0.01,
            worker_busy_cores=0.0,
            workers=0,
            usable_cores=32,
        )
        r = h.cpu(jb["rank_busy_cores"] + 0.6, jb, sidecar=0.08)
        r += h.memory(14.3 * GB + j(rng, 5e7), 4.9 * GB)
        r += h.storage({}, dict(chars=j(rng, 1e5)), capacity={"/": 0.44})
        r += h.network()
        s = dict(
            sm=None,
            busy=clip(j(rng, 0.29, 0.05)),
            membusy=j(rng, 0.08),
            mem_used=2.9e9 + j(rng, 1e6),
            pcie_tx=j(rng, 2e6),
            pcie_rx=j(rng, 3.5e6),
            power=j(rng, 96.0, 0.05),
            clock=int(j(rng, 2730, 0.01)),
            job_process=1.0,
            procs={pid: 2.4e9},
        )
        g = h.gpus[0]
        s["clock"] = min(s["clock"], g["max_clock"])
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(c, sites)})
    return tr


def sata_ssd_irregular_cadence(name, rng, t0):
    """RTX 4090 workstation, EfficientNet-B0 at 512x512 in bf16: 900 GB of pre-cropped uint8 .npy
    samples (786 KB each) read at random from a SATA SSD (870 EVO, no catalog peak and no
    calibration: its utilization is unknown) by 8 workers: the disk is busy 99% at ~515 MB/s with
    ~7 requests queued, the workers sit in D state and the step waits ~40% of its time for data.
    The sidecar is itself starved now and then, so the samples come at an irregular cadence."""
    h = Host(
        rng,
        "ws-4090-b",
        "AMD Ryzen 9 7950X 16-Core Processor",
        32,
        16,
        1,
        5881.0,
        ZEN4,
        64 * GiB,
        [RTX4090],
        disks=[
            ("nvme0n1", 1.0 * TB, "nvme", 4, "WD_BLACK SN850X 1000GB"),
            ("sda", 4.0 * TB, "sata", None, "Samsung SSD 870 EVO 4TB"),
        ],
        nics=[("enp14s0", 2500)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 0.98 * TB), ("/data", "ext4", "/dev/sda1", False, 3.9 * TB)],
    )
    pid = 5120
    tr = Trace(
        h,
        t0,
        {"pid": pid, "command": "bottleneckd run -- python train_effnet.py --data /data/crops512", "constructed": name},
    )
    per = dict(data_wait=0.041, transfer=0.002, forward=0.019, backward=0.038, optimizer=0.002, other=0.001)
    flops = 64 * 3 * 0.39e9 * (512 / 224) ** 2
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "parameters": 5_288_548,
        "param_dtype": "float32",
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "has_conv": True,
        "conv_flop_share": 0.95,
        "input_rank": 4,
        "compiled": False,
        "optimizer_impl": "fused",
        "loader_workers": 8,
        "pin_memory": True,
        "persistent_workers": True,
        "prefetch_factor": 2,
        "batch_size": 64,
        "cores": 32,
        "flops_per_step": flops,
        "operand_bytes_per_step": 3.2e10,
        "achieved_flops": flops / 0.057,
        "achieved_bytes_per_second": 3.2e10 / 0.057,
    }
    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.08)],
        lambda r: dict(facts),
        lambda r: ident("local", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=64,
    )
    gaps = {3: 1.71, 9: 2.43, 14: 1.38, 17: 3.32, 23: 1.64, 28: 7.08, 31: 2.11, 36: 1.52, 41: 2.87, 47: 1.93, 52: 1.46}
    for tick, t, iv in ticks(rng, 56, t0, irregular=gaps):
        done = job.collect(t)
        ph, ranks = job.report(done)
        wk = [clip(j(rng, 0.11, 0.1)) for _ in range(8)]
        jb = dict(
            rank_busy_cores=j(rng, 0.62),
            main_busy_cores=j(rng, 0.48, 0.03),
            launch_thread_cores=j(rng, 0.55, 0.03),
            hottest_thread_busy=j(rng, 0.48, 0.03),
            worker_busy_cores=sum(wk),
            workers=8,
            worker_max_busy_cores=max(wk),
            worker_max_demand=max(wk) + 0.01,
            usable_cores=32,
            processes_in_disk_wait=rng.choice([5, 6, 6, 7, 7, 8]),
            threads_in_disk_wait=rng.choice([6, 7, 7, 8]),
            pressure_some=0.01,
        )
        r = h.cpu(
            jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.5,
            jb,
            iowait=j(rng, 0.115, 0.05),
            psi=0.01,
            sidecar=0.05,
        )
        r += h.memory(61.5 * GB + j(rng, 2e8), 5.1 * GB, 8 * 0.9 * GB, psi_some=j(rng, 0.04))
        rb = j(rng, 5.15e8, 0.02)
        r += h.storage(
            {
                "sda": dict(
                    read=rb,
                    rops=rb / 196608,
                    busy=clip(j(rng, 0.992, 0.003)),
                    qd=j(rng, 7.4, 0.05),
                    inflight=rng.choice([6, 7, 8]),
                )
            },
            dict(
                calls=j(rng, 2650.0),
                chars=rb,
                bytes=rb,
                worker=rb,
                psi_some=j(rng, 0.71, 0.03),
                psi_full=j(rng, 0.38, 0.05),
            ),
            host_psi=(j(rng, 0.69, 0.03), j(rng, 0.36, 0.05)),
            capacity={"/": 0.52},
        )
        r += h.network(iv=iv)
        s = dict(
            sm=None,
            busy=clip(j(rng, 0.57, 0.04)),
            membusy=j(rng, 0.31),
            mem_used=11.9e9 + j(rng, 1e6),
            pcie_tx=j(rng, 4e6),
            pcie_rx=j(rng, 8.9e8, 0.03),
            power=j(rng, 251.0, 0.06),
            clock=int(min(2520, j(rng, 2640, 0.02))),
            job_process=1.0,
            procs={pid: 11.4e9},
        )
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, ph, ranks, slow=8.0 if iv > 1.3 else 1.0)
    return tr


SCENARIOS = {
    "a100_fp32_no_tf32": a100_fp32_no_tf32,
    "v100_dgx1_jpeg_decode": v100_dgx1_jpeg_decode,
    "l4_small_batch_launch_bound": l4_small_batch_launch_bound,
    "pageable_h2d_pcie_gen3": pageable_h2d_pcie_gen3,
    "pipeline_bubble_pp4": pipeline_bubble_pp4,
    "fsdp_act_ckpt_mem_full": fsdp_act_ckpt_mem_full,
    "hetero_l40s_a10_ddp": hetero_l40s_a10_ddp,
    "ethernet_2node_allreduce": ethernet_2node_allreduce,
    "ckpt_to_nfs_10gbe": ckpt_to_nfs_10gbe,
    "t4_record_no_counters": t4_record_no_counters,
    "h100_gpt_high_mfu": h100_gpt_high_mfu,
    "h200_eager_attention_membw": h200_eager_attention_membw,
    "a100pcie_p2p_disabled": a100pcie_p2p_disabled,
    "attach_h100_fp32_no_tf32": attach_h100_fp32_no_tf32,
    "attach_4090_launch_bound": attach_4090_launch_bound,
    "sata_ssd_irregular_cadence": sata_ssd_irregular_cadence,
}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: construct_blind_gpu5.py OUT_DIR", file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for k, (name, fn) in enumerate(SCENARIOS.items()):
        rng = random.Random(5000 + k)
        tr = fn(name, rng, 1797000000.0 + 3600.0 * k)
        if isinstance(tr, list):
            for node, t in enumerate(tr):
                t.write(os.path.join(out, f"{name}.node{node}.jsonl"))
                n += 1
        else:
            tr.write(os.path.join(out, name + ".jsonl"))
            n += 1
    print(f"wrote {n} trace files ({len(SCENARIOS)} scenarios) to {out}")
    return 0


# Labels, written before running bottleneckd on these traces: (resource, stage) that an engineer's
# intervention would prove limits the job (remove it and the step gets faster), with the first
# recommendation an engineer would make.
LABELS = {
    # fp32 matmuls on the FP32 pipes (tensor 0%, SMs 96%, ~80% of the 19.5 TFLOP/s fp32 peak): faster math is
    # the only lever; first: allow TF32 (torch.backends.cuda.matmul.allow_tf32) or bf16 autocast.
    "a100_fp32_no_tf32": ("gpu_compute", "compute"),
    # 80 decode/augment workers on 80 logical CPUs, all pegged, GPUs idle ~45% waiting for batches; first: move
    # JPEG decode/augmentation to the GPU (DALI / nvJPEG) or pre-resize the dataset (more workers cannot help).
    "v100_dgx1_jpeg_decode": ("cpu_compute", "data"),
    # host-side launch overhead: launching threads at a full core, GPU busy a third of the time, SMs ~13%; first:
    # CUDA graphs / torch.compile(mode="reduce-overhead") (or a larger batch).
    "l4_small_batch_launch_bound": ("cpu_compute", "compute"),
    # pageable H2D copies are 40% of the step at ~36% of the gen3 link; first: pin_memory=True with non_blocking
    # copies (and send the int64 labels as uint8).
    # after the run (label kept): the tool said gpu_memory_bandwidth/compute, flipping with this label (32 s vs 18 s);
    # the trace's roofline (1.26 TB/s = 81% of bandwidth in a serial 56% compute stage) makes that defensible.
    "pageable_h2d_pcie_gen3": ("cpu_gpu_interconnect", "transfer"),
    # 1F1B bubble with 4 micro-batches over 4 stages: ~43% of the step waits on P2P with NVLink ~3% busy; no
    # resource is saturated; first: more micro-batches per step (or an interleaved / zero-bubble schedule).
    "pipeline_bubble_pp4": ("undetermined", "communication"),
    # memory 98% full forces full activation checkpointing (~25% recompute) and micro-batch 1; first: free memory
    # (8-bit/offloaded optimizer state, more sharding) to use selective checkpointing or a larger micro-batch.
    # after the run (label kept): the tool said gpu_compute/compute with gpu_memory secondary (0.95): defensible.
    "fsdp_act_ckpt_mem_full": ("gpu_memory", "compute"),
    # the two A10 ranks compute ~2.9x longer than the L40S ranks, which wait ~60% of the step in the all-reduce;
    # first: give each rank a batch proportional to its GPU's speed (or run the two models as separate jobs).
    "hetero_l40s_a10_ddp": ("gpu_compute", "compute"),
    # NCCL over TCP on 100 GbE, fp32 gradients of 5.2 GB, ~35% of the step exposed, NIC ~75% busy while it runs;
    # first: fewer/lighter all-reduces: gradient accumulation or bf16 gradient compression (then RDMA networking).
    "ethernet_2node_allreduce": ("inter_node_interconnect", "communication"),
    # 20 GB checkpoint to NFS over 10 GbE every ~21 s takes ~18.5 s (~40% of the time), link ~93% busy during it
    # (after the roofline fix: every ~30 s, ~35% of the trace's time);
    # first: asynchronous checkpointing to local NVMe (copy out in the background) or saving less often.
    "ckpt_to_nfs_10gbe": ("storage_network_bandwidth", "other"),
    # no phases, no SM/DRAM activity, no job rows: NVML busy 97% and the 70 W cap say the GPU works, not whether
    # SMs or memory limit; first: record under `bottleneckd run` (or with a dcgm-exporter) to find out.
    "t4_record_no_counters": ("undetermined", "compute"),
    # well-tuned: SMs 97%, tensor 71%, ~55% MFU, comm hidden; first: FP8 (Transformer Engine) is the remaining
    # lever, otherwise nothing much to do.
    "h100_gpt_high_mfu": ("gpu_compute", "compute"),
    # eager attention's elementwise kernels on 4096^2 score matrices: DRAM ~71% of 4.8 TB/s, intensity ~44
    # FLOP/B, tensor 15%; first: fused attention (SDPA / FlashAttention, attn_implementation="sdpa").
    "h200_eager_attention_membw": ("gpu_memory_bandwidth", "compute"),
    # P2P disabled: the all-reduce goes through host memory at ~5 GB/s, ~36% of the step exposed; first: enable
    # PCIe peer-to-peer (ACS/IOMMU settings), else bf16 gradient compression or gradient accumulation.
    "a100pcie_p2p_disabled": ("inter_gpu_interconnect", "communication"),
    # attach variant of fp32-without-TF32 on an H100 (FP32 pipes 79%, tensor 0): first: TF32 or bf16 autocast.
    "attach_h100_fp32_no_tf32": ("gpu_compute", "compute"),
    # attach variant of launch-bound: launching threads at a full core, GPU busy ~29%; first: CUDA graphs /
    # torch.compile (or larger mini-batches).
    "attach_4090_launch_bound": ("cpu_compute", "compute"),
    # SATA SSD busy 99% at ~515 MB/s with a queue of 7, workers in D state, ~40% data wait (peak unknown); first:
    # move/cache the data on the NVMe (or store compressed JPEG and decode on the 16 idle cores).
    "sata_ssd_irregular_cadence": ("storage_bandwidth", "data"),
}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
