#!/usr/bin/env python3
"""Blind GPU traces, round 6: patterns the earlier rounds did not cover, written from
docs/trace-format.md, the samplers and data/peaks.json alone (not the diagnosis, advice or rules).

Each scenario is a job a performance engineer meets: a GH200 whose NVLink-C2C host link carries
activation offload while FP8 matmuls bound the step, a 2-of-8-GPU job on an HGX B200 seen by
`attach`, gradient accumulation with DDP's no_sync (an all-reduce every 8th micro-batch), FSDP's
parameter all-gathers over PCIe on 8 L40S, a 34B model streamed to one L40S from pinned host
memory (ZeRO-3 parameter offload), torch.compile's max-autotune warm-up, an EBS volume read at
its provisioned cap in epoch 1 and the page cache in epoch 2, millions of small files on NVMe, a
per-step `.cpu()` of predictions for metrics seen by `attach`, a GPU with 16 of its 18 NVLinks
down, a power brake on every GPU, two nodes whose traces have a 20 s gap, an InfiniBand counter
reset and a duplicated sample, a COCO evaluation on rank 0 every minute, DALI decoding on the GPU,
a balanced DDP job at ~45% MFU, and FP8 DDP on an HGX B200.

    python tests/data/construct_blind_gpu6.py OUT_DIR

writes OUT_DIR/<scenario>.jsonl (a multi-node scenario: OUT_DIR/<scenario>.node<k>.jsonl, to be
analysed together) and OUT_DIR/labels.json. Stdlib only, seeded, deterministic.

LABELS at the bottom were written before bottleneckd was run on these traces; no trace was
rejected and none was corrected after the run (every utilization <= 1, roofline figures checked
against the catalog peaks before the first run).
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
            if g.get("c2c"):  # GH200: the host link is NVLink-C2C (catalog), not PCIe
                pcie = g["c2c"]
                self.pcie_peak[i] = pcie
                row(
                    "cpu_gpu_interconnect",
                    dev,
                    "nvlink_c2c_per_direction",
                    pcie,
                    "B/s",
                    "catalog",
                    f"{g['catalog']}: NVIDIA GH200 Grace Hopper Superchip datasheet (2024): NVLink-C2C 900 GB/s "
                    "between Grace and Hopper (both directions); 450 GB/s per direction",
                    u,
                    "per direction",
                )
            else:
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
        self,
        nic_rates: dict | None = None,
        ib_rates: dict | None = None,
        nfs_rates: dict | None = None,
        iv=1.0,
        reset=(),
    ):
        out = []
        nic_rates = nic_rates or {}
        ib_rates = ib_rates or {}
        for n, s in self.nics:
            tx, rx = nic_rates.get(n, (j(self.rng, 1.5e5, 0.2), j(self.rng, 2.4e5, 0.2)))
            peak = s * 1e6 / 8
            tot = self.net_tot.setdefault(n, [7.7e11, 1.9e12])
            if n in reset:
                tot[0], tot[1] = tx * iv, rx * iv
                out += [
                    ["inter_node_interconnect", n, "throughput", None, "B/s", "first interval"],
                    ["inter_node_interconnect", n, "utilization", None, "ratio", "first interval"],
                    ["inter_node_interconnect", n, "peak", peak, "B/s"],
                    ["inter_node_interconnect", n, "tx_bytes_per_second", None, "B/s"],
                    ["inter_node_interconnect", n, "rx_bytes_per_second", None, "B/s"],
                    ["inter_node_interconnect", n, "transmit_bytes_total", tot[0], "B"],
                    ["inter_node_interconnect", n, "receive_bytes_total", tot[1], "B"],
                ]
                continue
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
            if name in reset:  # counters cleared (driver reload, perfquery -R): the rate is unknown once
                tot[0], tot[1] = tx * iv, rx * iv
                out += [
                    ["inter_node_interconnect", name, "transmit_bytes_total", tot[0], "B"],
                    ["inter_node_interconnect", name, "receive_bytes_total", tot[1], "B"],
                    ["inter_node_interconnect", name, "throughput", None, "B/s", "first interval"],
                    ["inter_node_interconnect", name, "utilization", None, "ratio", "first interval"],
                    ["inter_node_interconnect", name, "peak", peak, "B/s"],
                ]
                continue
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
# round 6: parts the earlier rounds did not use (figures as data/peaks.json has them)
# --------------------------------------------------------------------------------------------

GH200_144 = gpu(
    name="NVIDIA GH200 144G HBM3e",
    catalog="NVIDIA GH200 144G HBM3e",
    mem=150754820096,
    max_clock=1980,
    tdp=700.0,
    idle_w=90.0,
    bf16=989e12,
    tf32=494.5e12,
    fp32=67e12,
    fp64=34e12,
    fp64_tensor=67e12,
    fp8=1979e12,
    dram=4.9e12,
    pcie_gen=5,
    gpm=True,
    c2c=450e9,
)
B200 = gpu(
    name="NVIDIA B200",
    catalog="NVIDIA B200 (HGX)",
    mem=192265846784,
    max_clock=1965,
    tdp=1000.0,
    idle_w=140.0,
    bf16=2250e12,
    tf32=1100e12,
    fp32=75e12,
    fp64=37e12,
    fp64_tensor=37e12,
    fp8=4500e12,
    dram=7.7e12,
    nvlink=1800e9,
    links=18,
    pcie_gen=5,
    gpm=True,
)
ARM = ["fp", "asimd", "evtstrm", "aes", "sha2", "crc32", "atomics", "sve", "sve2", "bf16", "i8mm"]
EMR = ["avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"]


def gs(rng, sm, tensor, dram, busy, mem, power, clock, pcie=(3e6, 6e6), nvl=None, rel=0.03, spec=None, **kw):
    """One GPU's state for an interval, jittered: means in, NVML/GPM-like figures out."""
    s = dict(
        sm=clip(j(rng, sm, rel), 0, 0.995),
        occ=clip(j(rng, sm * 0.45, rel)),
        tensor=clip(j(rng, tensor, rel)),
        fp32=clip(j(rng, sm * 0.08, 0.05)),
        fp16=clip(j(rng, sm * 0.03, 0.05)),
        int=clip(j(rng, sm * 0.06, 0.05)),
        dram=clip(j(rng, dram, rel)),
        busy=clip(j(rng, busy, rel / 3)),
        membusy=clip(j(rng, dram * 0.92, rel)),
        mem_used=j(rng, mem, 0.002),
        pcie_tx=j(rng, pcie[0], 0.05),
        pcie_rx=j(rng, pcie[1], 0.05),
        power=j(rng, power, 0.03) if spec is None else min(spec["tdp"], j(rng, power, 0.03)),
        clock=clock,
    )
    if nvl is not None:
        s["nvl"] = (j(rng, nvl[0], 0.05), j(rng, nvl[1], 0.05))
    s.update(kw)
    return s


def jobcpu(rng, ranks=1, rank_each=1.1, main=0.9, workers=0, worker_each=0.0, usable=8, **extra):
    """The `job` cpu rows' figures: ranks' and loader workers' busy cores."""
    wk = [clip(j(rng, worker_each, 0.1)) for _ in range(workers)]
    m = clip(j(rng, main, 0.02))
    d = dict(
        ranks=ranks,
        rank_busy_cores=ranks * j(rng, rank_each, 0.03),
        main_busy_cores=m,
        launch_thread_cores=clip(m + 0.06),
        hottest_thread_busy=m,
        main_thread_demand=clip(m + 0.02, 0, 1.2),
        worker_busy_cores=sum(wk),
        workers=workers,
        usable_cores=usable,
    )
    if wk:
        d["worker_max_busy_cores"] = max(wk)
    if ranks > 1:
        d["launcher_busy_cores"] = 0.02
    d.update(extra)
    return d


def hgx_b200(rng, hostname="hgx-b200-012"):
    return Host(
        rng,
        hostname,
        "INTEL(R) XEON(R) PLATINUM 8570",
        224,
        112,
        2,
        4000.0,
        EMR,
        2015 * GiB,
        [B200] * 8,
        disks=[
            ("nvme0n1", 1.92 * TB, "nvme", 5, "SAMSUNG MZWLO1T9HCJR"),
            ("nvme1n1", 7.68 * TB, "nvme", 5, "SAMSUNG MZWLO7T6HBLA"),
        ],
        nics=[("eno1", 25000)],
        ib=[(f"mlx5_{k}", 1, 400) for k in range(8)],
        mounts=[
            ("/", "ext4", "/dev/nvme0n1p2", False, 1.79 * TB),
            ("/raid", "ext4", "/dev/nvme1n1", False, 7.0 * TB),
        ],
    )


def dgx_a100(rng, hostname, spec=A100_SXM80, mounts=()):
    return Host(
        rng,
        hostname,
        "AMD EPYC 7742 64-Core Processor",
        256,
        128,
        2,
        3400.0,
        ZEN,
        1031 * GiB if spec is A100_SXM40 else 2063 * GiB,
        [spec] * 8,
        disks=[("nvme0n1", 1.92 * TB, "nvme", 4, "SAMSUNG MZ1LB1T9HALS")]
        + [(f"nvme{k}n1", 3.84 * TB, "nvme", 4, "SAMSUNG MZWLJ3T8HBLS") for k in range(2, 6)],
        nics=[("enp226s0", 100000)],
        ib=[(f"mlx5_{k}", 1, 200) for k in range(8)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 1.79 * TB)]
        + (list(mounts) or [("/raid", "ext4", "/dev/md1", False, 14 * TB)]),
        dcgm=True,
    )


def segments_in(history: list, seg_fn, t0: float, t1: float) -> dict:
    """Seconds of each mode in [t0, t1): seg_fn(k, start, end) -> [(a, b, mode)] of step k."""
    out: dict = {}
    for s, e, k in history:
        if e <= t0 or s >= t1:
            continue
        for a, b, mode in seg_fn(k, s, e):
            lo, hi = max(a, t0), min(b, t1)
            if hi > lo:
                out[mode] = out.get(mode, 0.0) + hi - lo
    return out


def mix(states: dict, weights: dict) -> dict:
    """The interval's counters as the time-weighted mean of the modes' states."""
    tot = sum(weights.values()) or 1.0
    keys = next(iter(states.values())).keys()
    out = {}
    for k in keys:
        vals = [(states[m][k], w) for m, w in weights.items() if m in states]
        first = vals[0][0] if vals else next(iter(states.values()))[k]
        if isinstance(first, (int, float)) and not isinstance(first, bool):
            out[k] = sum(v * w for v, w in vals) / tot
        elif isinstance(first, tuple):
            out[k] = tuple(sum(v[i] * w for v, w in vals) / tot for i in range(len(first)))
        else:
            out[k] = first
    return out


# --------------------------------------------------------------------------------------------
# scenarios
# --------------------------------------------------------------------------------------------


def gh200_fp8_c2c_offload(name, rng, t0):
    """A GH200 144G node (72 Neoverse-V2 cores, 480 GB LPDDR5X): a 3B decoder pre-trained with
    Transformer Engine FP8 (80% of the FLOPs in FP8 GEMMs, attention and norms in bf16), micro-batch
    8 x 4096 tokens, with activation offload to Grace memory over NVLink-C2C (~90 GB each way per
    step, ~100 GB/s average, 22% of the 450 GB/s per direction; in forward up to ~70%). SMs ~95%,
    tensor pipes ~66%: the FP8/bf16 tensor math bounds the step; the host link is busy, not limiting."""
    h = Host(
        rng,
        "gh200-07",
        "Neoverse-V2",
        72,
        72,
        1,
        3483.0,
        ARM,
        480 * GB,
        [GH200_144],
        disks=[("nvme0n1", 3.84 * TB, "nvme", 5, "SAMSUNG MZWLO3T8HCLS")],
        nics=[("enP5p9s0", 100000)],
        ib=[("mlx5_0", 1, 400)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 3.5 * TB)],
    )
    pid = 8120
    tr = Trace(
        h, t0, {"pid": pid, "command": "bottleneckd run -- python pretrain.py --fp8 hybrid", "constructed": name}
    )
    per = dict(data_wait=0.003, transfer=0.0015, forward=0.29, backward=0.57, optimizer=0.028, other=0.006)
    flops = 7.1e14
    step_s = sum(per.values())
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "parameters": 3_210_000_000,
        "param_dtype": "float32",
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "fp8_flop_share": 0.80,
        "has_conv": False,
        "input_rank": 2,
        "compiled": False,
        "optimizer_impl": "fused",
        "loader_workers": 4,
        "pin_memory": True,
        "persistent_workers": True,
        "prefetch_factor": 2,
        "batch_size": 8,
        "cores": 72,
        "flops_per_step": flops,
        "operand_bytes_per_step": 1.05e12,
        "arithmetic_intensity": flops / 1.05e12,
        "achieved_flops": flops / 0.86,
        "achieved_bytes_per_second": 1.05e12 / 0.86,
        "tokens_per_example": 4096.0,
        "cuda_memory_total_bytes": GH200_144["mem"],
        "cuda_memory_reserved_bytes": 127_000_000_000,
        "cuda_memory_allocated_bytes": 88_000_000_000,
        "cuda_memory_peak_allocated_bytes": 121_000_000_000,
        "cuda_alloc_retries": 0,
    }
    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.012)],
        lambda r: dict(facts),
        lambda r: ident("local", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=8,
    )
    c2c = 90e9 / step_s
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(rng, rank_each=1.45, main=0.93, workers=4, worker_each=0.06, usable=72)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.6, jb)
        r += h.memory(214 * GB + j(rng, 3e8), 96 * GB, 4 * 1.1 * GB)
        r += h.storage({}, dict(chars=j(rng, 2.1e6)), capacity={"/": 0.33})
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.955,
            0.66,
            0.31,
            0.996,
            128.5e9,
            612.0,
            1980,
            pcie=(c2c, c2c * 1.01),
            rel=0.01,
            spec=GH200_144,
            job_process=1.0,
            procs={pid: 127.6e9},
            fp16=0.05,
        )
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def attach_b200_two_of_eight(name, rng, t0):
    """`bottleneckd attach --pid` to a 2-rank torchrun job (CUDA_VISIBLE_DEVICES=2,3) on an HGX
    B200 whose other six GPUs are idle and belong to no one (no process on them). A 1.3B model in
    bf16 autocast, DDP: on GPUs 2 and 3 SMs ~91%, tensor pipes ~54%, DRAM ~33%, NVLink ~3%.
    Attach has no hook: no dtype or roofline facts, phases from py-spy stack samples."""
    h = hgx_b200(rng, "hgx-b200-012")
    base = 220400
    tr = Trace(h, t0, {"pid": base, "command": "bottleneckd attach --pid 220400", "constructed": name})
    dist = dict(forward=0.31, backward=0.50, optimizer=0.05, gpu_wait=0.07, data_wait=0.02, other=0.05)
    sites = {
        "forward": ("train_step", "/home/lm/train_ddp.py", 112, "loss = model(ids, labels=ids).loss", None, False),
        "backward": ("train_step", "/home/lm/train_ddp.py", 113, "loss.backward()", None, False),
        "optimizer": ("train_step", "/home/lm/train_ddp.py", 115, "opt.step()", None, False),
        "gpu_wait": ("main", "/home/lm/train_ddp.py", 171, "if step % 50 == 0: log(loss.item())", None, False),
        "data_wait": ("main", "/home/lm/train_ddp.py", 160, "ids = next(it).cuda(non_blocking=True)", False, False),
        "other": ("main", "/home/lm/train_ddp.py", 168, "sched.step()", None, False),
    }
    used = (2, 3)
    for tick, t, iv in ticks(rng, 60, t0):
        ph, c = attach_phases(rng, dist, interval=iv)
        jb = jobcpu(rng, ranks=2, rank_each=1.15, main=0.94, workers=12, worker_each=0.11, usable=224)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 2.1, jb, sidecar=0.08)
        r += h.memory(118 * GB + j(rng, 3e8), 2 * 14 * GB, 12 * 1.2 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 3.1e6)), capacity={"/": 0.41, "/raid": 0.37})
        r += h.network(iv=iv)
        for i in range(8):
            if i in used:
                s = gs(
                    rng,
                    0.91,
                    0.54,
                    0.33,
                    0.992,
                    61.2e9,
                    835.0,
                    1965,
                    pcie=(4e6, 2.2e7),
                    nvl=(2.4e10, 2.4e10),
                    spec=B200,
                    job_process=1.0,
                    procs={base + 1 + used.index(i): 60.6e9},
                )
                r += h.gpu_readings(i, s, tick)
            else:
                r += h.idle_gpu(i, tick, job_process=0.0)
        tr.add(t, iv, r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(c, sites)})
    return tr


def ddp_grad_accum_nosync(name, rng, t0):
    """DGX A100 80GB: a 1.3B GPT in DDP, bf16 autocast, micro-batch 4 x 2048, gradient accumulation
    8 with `no_sync()` on the first 7 micro-batches: the fp32 gradients (5.2 GB) are all-reduced
    once per optimizer step (every ~3.3 s, ~45 ms, 15 ms exposed). The hook's step is the optimizer
    step: 8 forwards and backwards; a step spans 3-4 intervals, so most intervals have no phases.
    NVLink bursts ~3% in the interval holding the all-reduce, ~0 otherwise. ~55% MFU."""
    h = dgx_a100(rng, "dgx-a100-17")
    base = 41000
    tr = Trace(
        h,
        t0,
        {
            "pid": base,
            "command": "bottleneckd run -- torchrun --nproc_per_node 8 train_gpt.py --accum 8",
            "constructed": name,
        },
    )
    micro = dict(data_wait=0.002, transfer=0.001, forward=0.135, backward=0.27)
    tail = dict(optimizer=0.024, communication=0.015, other=0.008)
    flops = 8 * 7.0e13

    def step(k):
        out = []
        for _ in range(8):
            ph = {}
            for _m in range(8):
                for key, v in noisy(rng, micro, 0.02).items():
                    ph[key] = ph.get(key, 0.0) + v
            for key, v in noisy(rng, tail, 0.05).items():
                ph[key] = v
            out.append(ph)
        return out

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 1_313_000_000,
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
            "ddp_buckets": 210,
            "comm_seconds_per_step": j(rng, 0.045, 0.03),
            "comm_exposed_seconds_per_step": j(rng, 0.015, 0.05),
            "comm_overlapped_seconds_per_step": j(rng, 0.030, 0.03),
            "comm_overlap_ratio": 0.67,
            "loader_workers": 2,
            "pin_memory": True,
            "persistent_workers": True,
            "batch_size": 4,
            "optimizer_impl": "fused",
            "flops_per_step": flops,
            "operand_bytes_per_step": 1.28e12,
            "achieved_flops": flops / 3.24,
            "achieved_bytes_per_second": 1.28e12 / 3.24,
            "tokens_per_example": 2048.0,
        }

    job = StepJob(
        t0, step, facts, lambda r: ident("gpt13-acc", r, 8, 8, h, base + 1 + r, h.uuids[r]), examples_per_step=32
    )
    for tick, t, iv in ticks(rng, 80, t0):
        done = job.collect(t)
        ph, ranks = job.report(done)
        jb = jobcpu(
            rng, ranks=8, rank_each=1.2, main=0.86, workers=16, worker_each=0.05, usable=256, comm_thread_cores=8 * 0.05
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.6, jb)
        r += h.memory(210 * GB + j(rng, 5e8), 8 * 12 * GB, 16 * 0.8 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 1.1e6)), capacity={"/": 0.37, "/raid": 0.52})
        r += h.network(iv=iv)
        burst = 9.1e9 if done else j(rng, 3e7)
        for i in range(8):
            s = gs(
                rng,
                0.9,
                0.5,
                0.28,
                0.99,
                58.4e9,
                335.0,
                1410,
                pcie=(3e6, 1.2e7),
                nvl=(burst, burst),
                spec=A100_SXM80,
                job_process=1.0,
                procs={base + 1 + i: 57.9e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def fsdp_pcie_allgather_l40s(name, rng, t0):
    """8x L40S on PCIe gen4 (no NVLink, four GPUs per socket, P2P across the sockets through
    host memory): a 7B decoder under FSDP FULL_SHARD, bf16 mixed precision, micro-batch 1 x 4096.
    Per step and rank ~37 GB cross PCIe (all-gather in forward, again in backward, reduce-scatter):
    NCCL's ring runs at ~12 GB/s bus bandwidth, 3.06 s of communication against 0.95 s of
    compute: 2.65 s exposed, inside forward/backward where the compute stream waits. SMs ~33% (NCCL
    kernels resident, so NVML busy ~97%), tensor ~16%, PCIe ~32% per direction on every GPU."""
    h = Host(
        rng,
        "l40s-8x-03",
        "INTEL(R) XEON(R) GOLD 6548Y+",
        128,
        64,
        2,
        4100.0,
        EMR,
        1007 * GiB,
        [L40S] * 8,
        disks=[("nvme0n1", 1.92 * TB, "nvme", 4, "MZ1L21T9HCLS"), ("nvme1n1", 7.68 * TB, "nvme", 4, "MZQL27T6HBLA")],
        nics=[("ens1f0np0", 100000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 1.79 * TB), ("/data", "xfs", "/dev/nvme1n1", False, 7.0 * TB)],
        dcgm=True,
    )
    base = 63000
    tr = Trace(
        h,
        t0,
        {
            "pid": base,
            "command": "bottleneckd run -- torchrun --nproc_per_node 8 fsdp_train.py --model 7b",
            "constructed": name,
        },
    )
    per = dict(data_wait=0.004, transfer=0.002, forward=1.20, backward=2.40, optimizer=0.021, other=0.009)
    flops = 1.9e14

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 6_740_000_000,
            "param_dtype": "float32",
            "autocast_dtype": "bfloat16",
            "compute_dtype": "bfloat16",
            "has_conv": False,
            "input_rank": 2,
            "fsdp": True,
            "sharded": True,
            "world_size": 8,
            "local_world_size": 8,
            "comm_backend": "nccl",
            "comm_seconds_per_step": j(rng, 3.06, 0.02),
            "comm_exposed_seconds_per_step": j(rng, 2.65, 0.02),
            "comm_overlapped_seconds_per_step": j(rng, 0.41, 0.04),
            "comm_overlap_ratio": 0.134,
            "loader_workers": 2,
            "pin_memory": True,
            "batch_size": 1,
            "optimizer_impl": "foreach",
            "flops_per_step": flops,
            "operand_bytes_per_step": 4.2e11,
            "achieved_flops": flops / 3.6,
            "achieved_bytes_per_second": 4.2e11 / 3.6,
            "tokens_per_example": 4096.0,
        }

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.02) for _ in range(8)],
        facts,
        lambda r: ident("fsdp7b", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=1,
    )
    pc = 36.75e9 / sum(per.values())
    for tick, t, iv in ticks(rng, 70, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(
            rng,
            ranks=8,
            rank_each=1.25,
            main=0.74,
            workers=16,
            worker_each=0.04,
            usable=128,
            comm_thread_cores=8 * 0.22,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.3, jb)
        r += h.memory(160 * GB + j(rng, 5e8), 8 * 11 * GB, 16 * 0.6 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 4e5)), capacity={"/": 0.29})
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.33,
                0.16,
                0.17,
                0.97,
                41.3e9,
                205.0,
                2520,
                pcie=(pc, pc),
                spec=L40S,
                job_process=1.0,
                procs={base + 1 + i: 40.8e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def zero3_param_offload_l40s(name, rng, t0):
    """One L40S (48 GB) in a 32-core EPYC server: LoRA fine-tuning of a 34B model whose frozen
    bf16 weights (68 GB) live in pinned host memory (DeepSpeed ZeRO-3 offload_param): every
    forward and every backward stream all the layers' weights in, ~136 GB a step at ~24 GB/s
    (74% of PCIe gen4 x16 per direction), while the GPU computes for 0.65 s of a 5.8 s step: SMs
    ~10%, NVML busy ~16% (copies run on the copy engines)."""
    h = Host(
        rng,
        "ft-l40s-1",
        "AMD EPYC 9354 32-Core Processor",
        64,
        32,
        1,
        3800.0,
        ZEN4,
        384 * GiB,
        [L40S],
        disks=[("nvme0n1", 3.84 * TB, "nvme", 4, "SAMSUNG MZQL23T8HCLS")],
        nics=[("eno1np0", 25000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 3.5 * TB)],
        dcgm=True,
    )
    pid = 30120
    tr = Trace(
        h,
        t0,
        {"pid": pid, "command": "bottleneckd run -- deepspeed --num_gpus 1 lora_34b.py --zero 3", "constructed": name},
    )
    per = dict(data_wait=0.005, transfer=0.002, forward=2.91, backward=2.86, optimizer=0.018, other=0.012)
    flops = 1.4e14
    step_s = sum(per.values())
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "parameters": 33_740_000_000,
        "param_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "has_conv": False,
        "input_rank": 2,
        "sharded": True,
        "offloading": True,
        "world_size": 1,
        "loader_workers": 2,
        "pin_memory": True,
        "batch_size": 1,
        "flops_per_step": flops,
        "operand_bytes_per_step": 1.5e11,
        "achieved_flops": flops / 5.77,
        "achieved_bytes_per_second": 1.5e11 / 5.77,
        "tokens_per_example": 1024.0,
        "cuda_memory_total_bytes": L40S["mem"],
        "cuda_memory_reserved_bytes": 44_100_000_000,
        "cuda_memory_allocated_bytes": 39_800_000_000,
        "cuda_memory_peak_allocated_bytes": 43_200_000_000,
    }
    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.02)],
        lambda r: dict(facts),
        lambda r: ident("local", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=1,
    )
    rx = 136e9 / step_s
    for tick, t, iv in ticks(rng, 70, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(rng, rank_each=1.6, main=0.62, workers=2, worker_each=0.03, usable=64)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.4, jb)
        r += h.memory(112 * GB + j(rng, 2e8), 81 * GB, 2 * 0.9 * GB)
        r += h.storage({}, dict(chars=j(rng, 2e5)), capacity={"/": 0.46})
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.10,
            0.062,
            0.055,
            0.16,
            44.6e9,
            142.0,
            2520,
            pcie=(3.5e8, rx),
            spec=L40S,
            job_process=1.0,
            procs={pid: 44.1e9},
        )
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def compile_warmup_h100(name, rng, t0):
    """A 1x H100 SXM cloud VM (26 vCPU): a 1.5B GPT under torch.compile(mode="max-autotune").
    The first step takes ~72 s: Inductor compiles and autotunes in a pool of ~18 compile workers
    (the CPUs ~75% busy, the GPU idle but for short benchmark kernels); it is reported whole when it
    ends. Then 90 s of steady state: SMs ~94%, tensor ~58%, ~56% MFU: compute-bound."""
    h = Host(
        rng,
        "h100-1x-vm",
        "Intel(R) Xeon(R) Platinum 8480+",
        26,
        26,
        1,
        None,
        SPR,
        221 * GiB,
        [H100_SXM],
        disks=[("vda", 1.1 * TB, "virtio", None, "")],
        nics=[("eth0", 100000)],
        mounts=[("/", "ext4", "/dev/vda1", False, 1.07 * TB)],
    )
    pid = 3310
    tr = Trace(
        h, t0, {"pid": pid, "command": "bottleneckd run -- python train.py --compile max-autotune", "constructed": name}
    )
    first = dict(data_wait=0.41, transfer=0.002, forward=46.0, backward=24.5, optimizer=1.1, other=0.3)
    per = dict(data_wait=0.002, transfer=0.001, forward=0.066, backward=0.132, optimizer=0.006, other=0.003)
    flops = 1.1e14
    facts = {
        "device": "cuda",
        "pid": pid,
        "cuda_uuids": [h.uuids[0]],
        "parameters": 1_557_000_000,
        "param_dtype": "float32",
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "has_conv": False,
        "input_rank": 2,
        "compiled": True,
        "optimizer_impl": "fused",
        "loader_workers": 2,
        "pin_memory": True,
        "persistent_workers": True,
        "batch_size": 8,
        "cores": 26,
        "flops_per_step": flops,
        "operand_bytes_per_step": 2.3e11,
        "achieved_flops": flops / 0.198,
        "achieved_bytes_per_second": 2.3e11 / 0.198,
        "tokens_per_example": 1024.0,
    }
    job = StepJob(
        t0,
        lambda k: [first if k == 0 else noisy(rng, per, 0.015)],
        lambda r: dict(facts),
        lambda r: ident("local", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=8,
    )
    warm_end = t0 + sum(first.values())

    def seg(k, s, e):
        return [(s, e, "compile" if k == 0 else "train")]

    for tick, t, iv in ticks(rng, 165, t0):
        ph, ranks = job.report(job.collect(t))
        w = segments_in(job.history, seg, t - iv, t)
        cf = w.get("compile", 0.0) / iv
        pool = 18.5 * cf
        jb = jobcpu(
            rng,
            rank_each=1.1 + pool,
            main=0.97 if cf > 0.5 else 0.88,
            workers=2,
            worker_each=0.03 + 0.12 * (1 - cf),
            usable=26,
            processes=3 + (20 if t < warm_end + 5 else 0),
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.3, jb, psi=0.28 * cf + 0.01)
        r += h.memory((38 + 22 * cf) * GB + j(rng, 2e8), (9 + 20 * cf) * GB, 2 * 0.9 * GB)
        r += h.storage(
            {"vda": dict(write=2.4e7 * cf + 2e5)}, dict(chars=j(rng, 1.2e6), write=2.4e7 * cf), capacity={"/": 0.22}
        )
        r += h.network(iv=iv)
        states = {
            "compile": gs(rng, 0.018, 0.004, 0.01, 0.06, 21.0e9, 128.0, 1755, spec=H100_SXM),
            "train": gs(rng, 0.94, 0.58, 0.36, 0.995, 61.0e9, 645.0, 1980, pcie=(3e6, 1.6e7), spec=H100_SXM),
        }
        s = mix(states, w)
        s["clock"] = int(round(s["clock"]))
        s.update(job_process=1.0, procs={pid: s["mem_used"] - 5e8}, nvl=(0.0, 0.0))
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def ebs_epoch1_pagecache_epoch2(name, rng, t0):
    """AWS g6e.4xlarge (1x L40S, 16 vCPU, 128 GiB): a video model (MViTv2-S, 32 x 16-frame 224^2
    uint8 clips a step, 4.8 MB each) reading 58 GB of clips from an EBS gp3 volume provisioned at
    1000 MB/s. Epoch 1 (~60 s): the volume delivers its provisioned 1000 MB/s, flat, ~40% of the
    step waits for data. From epoch 2 the whole data set is in the page cache (read_chars high,
    block reads ~0): the step drops to 97 ms and the GPU is busy ~96%, SMs ~84%."""
    h = Host(
        rng,
        "ip-10-0-3-117",
        "AMD EPYC 7R13 Processor",
        16,
        8,
        1,
        None,
        ZEN,
        124 * GiB,
        [L40S],
        disks=[
            ("nvme0n1", 200 * GB, "nvme", None, "Amazon Elastic Block Store"),
            ("nvme1n1", 500 * GB, "nvme", None, "Amazon Elastic Block Store"),
            ("nvme2n1", 600 * GB, "nvme", None, "Amazon EC2 NVMe Instance Storage"),
        ],
        nics=[("ens5", 20000)],
        mounts=[("/", "xfs", "/dev/nvme0n1p1", False, 200 * GB), ("/data", "ext4", "/dev/nvme1n1", False, 492 * GB)],
        dcgm=True,
    )
    pid = 9911
    tr = Trace(
        h,
        t0,
        {"pid": pid, "command": "bottleneckd run -- python train_video.py --data /data/clips", "constructed": name},
    )
    e1 = dict(data_wait=0.063, transfer=0.004, forward=0.029, backward=0.058, optimizer=0.003, other=0.001)
    e2 = dict(data_wait=0.002, transfer=0.004, forward=0.029, backward=0.058, optimizer=0.003, other=0.001)
    flops = 6.1e12
    epoch_steps = 378
    epoch = [0]

    def facts(r):
        return {
            "device": "cuda",
            "pid": pid,
            "cuda_uuids": [h.uuids[0]],
            "epoch": epoch[0],
            "parameters": 34_500_000,
            "param_dtype": "float32",
            "autocast_dtype": "bfloat16",
            "compute_dtype": "bfloat16",
            "has_conv": True,
            "conv_flop_share": 0.11,
            "input_rank": 5,
            "compiled": False,
            "optimizer_impl": "fused",
            "loader_workers": 6,
            "pin_memory": True,
            "persistent_workers": True,
            "prefetch_factor": 4,
            "batch_size": 32,
            "cores": 16,
            "flops_per_step": flops,
            "operand_bytes_per_step": 4.0e10,
            "achieved_flops": flops / 0.087,
            "achieved_bytes_per_second": 4.0e10 / 0.087,
        }

    job = StepJob(
        t0,
        lambda k: [noisy(rng, e1 if k < epoch_steps else e2, 0.04)],
        facts,
        lambda r: ident("local", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=32,
    )

    def seg(k, s, e):
        return [(s, e, "disk" if k < epoch_steps else "cache")]

    for tick, t, iv in ticks(rng, 120, t0):
        done = job.collect(t)
        epoch[0] = 0 if job.k < epoch_steps else (1 if job.k < 2 * epoch_steps else 2)
        ph, ranks = job.report(done)
        w = segments_in(job.history, seg, t - iv, t)
        d = w.get("disk", 0.0) / iv
        c = 1 - d
        wk_each = 0.14 * d + 0.33 * c
        jb = jobcpu(
            rng,
            rank_each=1.05,
            main=0.55 * d + 0.8 * c,
            workers=6,
            worker_each=wk_each,
            usable=16,
            processes_in_disk_wait=int(round(5 * d)),
            threads_in_disk_wait=int(round(6 * d)),
            pressure_some=0.02,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.3, jb, iowait=j(rng, 0.24 * d + 0.002), psi=0.03)
        used = 21 * GB + j(rng, 2e8)
        r += h.memory(used, 7.2 * GB, 6 * 1.3 * GB, psi_some=0.03 * d)
        rb = j(rng, 1.0e9, 0.004) * d + j(rng, 1.0e6) * c
        chars = rb * d + j(rng, 1.58e9, 0.02) * c
        r += h.storage(
            {
                "nvme1n1": dict(
                    read=rb,
                    rops=rb / 262144,
                    busy=clip(0.99 * d + 0.01 * c),
                    qd=31 * d + 0.01,
                    inflight=int(round(30 * d)),
                )
            },
            dict(calls=j(rng, 3100.0), chars=chars, bytes=rb, worker=rb, psi_some=0.62 * d, psi_full=0.31 * d),
            host_psi=(0.6 * d, 0.3 * d),
            capacity={"/": 0.31, "/data": 0.12},
        )
        r += h.network(iv=iv)
        states = {
            "disk": gs(rng, 0.5, 0.22, 0.3, 0.56, 37.5e9, 190.0, 2520, pcie=(2e6, 9.7e8), spec=L40S),
            "cache": gs(rng, 0.84, 0.37, 0.5, 0.965, 37.5e9, 305.0, 2520, pcie=(2e6, 1.58e9), spec=L40S),
        }
        s = mix(states, w)
        s.update(job_process=1.0, procs={pid: 37.0e9})
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def small_files_nvme_iops(name, rng, t0):
    """DGX A100 80GB, a small sequence model trained from 40 M one-sample .npz files (~5 KB) on a
    gen4 NVMe (/data, nvme5n1): each file costs ~3 random 4 KB reads (data, inode, directory block), 96 loader
    workers keep ~880k reads/s in flight (88% of the drive's 1M random-read IOPS, queue ~180) but
    only ~3.6 GB/s (51% of its sequential bytes): the drive is IOPS-bound, the workers sit in
    D state, and each rank waits for its batch 57% of the step."""
    h = dgx_a100(
        rng,
        "dgx-a100-09",
        mounts=[("/raid", "ext4", "/dev/md1", False, 10.5 * TB), ("/data", "xfs", "/dev/nvme5n1", False, 3.5 * TB)],
    )
    base = 77100
    tr = Trace(
        h,
        t0,
        {
            "pid": base,
            "command": "bottleneckd run -- torchrun --nproc_per_node 8 train_seq.py --data /data/samples",
            "constructed": name,
        },
    )
    per = dict(
        data_wait=0.064,
        transfer=0.002,
        forward=0.012,
        backward=0.026,
        optimizer=0.003,
        communication=0.003,
        other=0.0017,
    )
    flops = 2.4e12

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 8_100_000,
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
            "ddp_buckets": 2,
            "comm_seconds_per_step": j(rng, 0.006),
            "comm_exposed_seconds_per_step": j(rng, 0.003),
            "comm_overlapped_seconds_per_step": j(rng, 0.003),
            "comm_overlap_ratio": 0.5,
            "loader_workers": 12,
            "pin_memory": True,
            "persistent_workers": True,
            "prefetch_factor": 4,
            "batch_size": 4096,
            "cores": 256,
            "optimizer_impl": "fused",
            "flops_per_step": flops,
            "operand_bytes_per_step": 9.0e9,
            "achieved_flops": flops / 0.038,
            "achieved_bytes_per_second": 9.0e9 / 0.038,
            "tokens_per_example": 64.0,
        }

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.06) for _ in range(8)],
        facts,
        lambda r: ident("seq-small", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=4096,
    )
    wsites = {
        "data_wait": (
            "NpzDataset.__getitem__",
            "/home/ml/seq/data.py",
            41,
            "with np.load(self.paths[i]) as z:",
            False,
            False,
        ),
    }
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(
            rng,
            ranks=8,
            rank_each=0.55,
            main=0.42,
            workers=96,
            worker_each=0.41,
            usable=256,
            processes_in_disk_wait=rng.choice([64, 68, 71, 75]),
            threads_in_disk_wait=rng.choice([70, 74, 79]),
            pressure_some=0.04,
            worker_max_demand=0.5,
        )
        r = h.cpu(
            jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.4, jb, iowait=j(rng, 0.17), psi=0.04, sidecar=0.08
        )
        r += h.memory(260 * GB + j(rng, 5e8), 8 * 5.5 * GB, 96 * 0.6 * GB, 0.2 * GB)
        ops = j(rng, 8.8e5, 0.015)
        rb = ops * 4096
        r += h.storage(
            {
                "nvme5n1": dict(
                    read=rb,
                    rops=ops,
                    busy=clip(j(rng, 0.999, 0.001)),
                    qd=j(rng, 182, 0.04),
                    inflight=rng.choice([160, 171, 186, 190]),
                )
            },
            dict(
                calls=j(rng, 5.9e5),
                chars=j(rng, 1.47e9),
                bytes=rb,
                worker=rb,
                psi_some=j(rng, 0.81, 0.02),
                psi_full=j(rng, 0.44, 0.03),
            ),
            host_psi=(j(rng, 0.78, 0.02), j(rng, 0.41, 0.03)),
            capacity={"/": 0.4, "/data": 0.61},
        )
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.3,
                0.11,
                0.12,
                0.41,
                9.4e9,
                118.0,
                1410,
                pcie=(2e6, 1.4e8),
                nvl=(2.1e8, 2.1e8),
                spec=A100_SXM80,
                job_process=1.0,
                procs={base + 1 + i: 8.9e9},
            )
            r += h.gpu_readings(i, s, tick)
        stacks = {"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows({"data_wait": 2}, wsites, role="worker")}
        tr.add(t, iv, r, ph, ranks, stacks=stacks)
    return tr


def attach_cpu_metrics_sync(name, rng, t0):
    """`bottleneckd attach` to an image classifier (1000 classes, batch 512) on one A100 40GB PCIe:
    every step the loop calls `probs.cpu()` (a host sync: the host waits for the GPU to drain) and
    then computes a macro ROC-AUC with scikit-learn on the host, single-threaded, ~45% of the wall
    time. The GPU idles while the host computes: NVML busy ~52%, SMs ~45%. The main thread runs a
    full core; the machine's other 30 CPUs are nearly idle."""
    h = Host(
        rng,
        "r750xa-05",
        "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
        32,
        32,
        1,
        3200.0,
        CLX,
        256 * GiB,
        [A100_PCIE40],
        disks=[("nvme0n1", 3.84 * TB, "nvme", 4, "Dell Ent NVMe P5600 MU U.2 3.2TB")],
        nics=[("eno8303", 25000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p3", False, 3.5 * TB)],
        dcgm=True,
    )
    pid = 27701
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd attach --pid 27701", "constructed": name})
    dist = dict(forward=0.10, backward=0.08, optimizer=0.03, gpu_wait=0.27, other=0.45, data_wait=0.07)
    sites = {
        "forward": ("train_epoch", "/srv/cls/train.py", 131, "logits = model(x)", None, False),
        "backward": ("train_epoch", "/srv/cls/train.py", 134, "scaler.scale(loss).backward()", None, False),
        "optimizer": ("train_epoch", "/srv/cls/train.py", 135, "scaler.step(opt)", None, False),
        "gpu_wait": ("train_epoch", "/srv/cls/train.py", 139, "probs = logits.softmax(1).float().cpu()", None, False),
        "other": (
            "train_epoch",
            "/srv/cls/train.py",
            141,
            "aucs.append(roc_auc_score(y_1hot, probs.numpy(), average='macro'))",
            None,
            False,
        ),
        "data_wait": ("train_epoch", "/srv/cls/train.py", 128, "for x, y in loader:", False, False),
    }
    for tick, t, iv in ticks(rng, 60, t0):
        ph, c = attach_phases(rng, dist, interval=iv)
        jb = jobcpu(rng, rank_each=1.12, main=0.985, workers=6, worker_each=0.17, usable=32)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.4, jb, sidecar=0.07)
        r += h.memory(31 * GB + j(rng, 2e8), 9.8 * GB, 6 * 1.1 * GB)
        r += h.storage({}, dict(chars=j(rng, 2.4e8), bytes=j(rng, 1e5)), capacity={"/": 0.52})
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.45,
            0.2,
            0.22,
            0.52,
            22.6e9,
            148.0,
            1410,
            pcie=(8.5e7, 2.6e8),
            spec=A100_PCIE40,
            job_process=1.0,
            procs={pid: 22.1e9},
        )
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(c, sites)})
    return tr


def nvlink_degraded_gpu3(name, rng, t0):
    """HGX H100, 8-rank DDP of a 3B model (fp32 gradients, 12 GB a step): GPU 3 has 2 of its 18
    NVLinks up (NVML: 2 active links; the others down after link errors). NCCL's ring can move
    no faster than GPU 3's ~42 GB/s per direction: the all-reduce takes ~0.5 s instead of ~0.06 s,
    0.33 s of it exposed on every rank (49% of the step). GPU 3's NVLink runs at ~62% of its two
    links' 100 GB/s, the others' at ~7% of 900 GB/s. No rank computes slower than another."""
    specs = [H100_SXM] * 8
    specs[3] = dict(H100_SXM, links=2, nvlink=100e9)
    h = Host(
        rng,
        "hgx-h100-077",
        "Intel(R) Xeon(R) Platinum 8480C",
        224,
        112,
        2,
        3800.0,
        SPR,
        2015 * GiB,
        specs,
        disks=[
            ("nvme0n1", 1.92 * TB, "nvme", 4, "SAMSUNG MZ1L21T9HCLS"),
            ("nvme1n1", 3.84 * TB, "nvme", 4, "SAMSUNG MZQL23T8HCLS"),
        ],
        nics=[("eno1", 25000)],
        ib=[(f"mlx5_{k}", 1, 400) for k in range(8)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 1.79 * TB), ("/raid", "ext4", "/dev/nvme1n1", False, 3.5 * TB)],
    )
    base = 150200
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 8 train_3b.py", "constructed": name},
    )
    per = dict(
        data_wait=0.002, transfer=0.001, forward=0.10, backward=0.20, communication=0.33, optimizer=0.035, other=0.005
    )
    step_s = sum(per.values())
    flops = 1.47e14

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 2_980_000_000,
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
            "ddp_buckets": 480,
            "comm_seconds_per_step": j(rng, 0.50, 0.02),
            "comm_exposed_seconds_per_step": j(rng, 0.33, 0.02),
            "comm_overlapped_seconds_per_step": j(rng, 0.17, 0.03),
            "comm_overlap_ratio": 0.34,
            "loader_workers": 4,
            "pin_memory": True,
            "persistent_workers": True,
            "batch_size": 4,
            "optimizer_impl": "fused",
            "flops_per_step": flops,
            "operand_bytes_per_step": 4.0e11,
            "achieved_flops": flops / 0.30,
            "achieved_bytes_per_second": 4.0e11 / 0.30,
            "tokens_per_example": 2048.0,
        }

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.02) for _ in range(8)],
        facts,
        lambda r: ident("gpt3b", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=4,
    )
    nv = 21e9 / step_s
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(
            rng, ranks=8, rank_each=1.3, main=0.83, workers=32, worker_each=0.04, usable=224, comm_thread_cores=8 * 0.12
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 2.0, jb)
        r += h.memory(240 * GB + j(rng, 5e8), 8 * 14 * GB, 32 * 0.7 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 1.5e6)), capacity={"/": 0.3, "/raid": 0.44})
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.52,
                0.26,
                0.22,
                0.97,
                63.5e9,
                430.0,
                1980,
                pcie=(3e6, 1.1e7),
                nvl=(nv, nv),
                spec=H100_SXM,
                job_process=1.0,
                procs={base + 1 + i: 63.0e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def power_brake_dgx_a100(name, rng, t0):
    """DGX A100 80GB, ViT-L/16 DDP in bf16 (256 images per GPU): the BMC asserts the power brake
    (a PSU fault on the chassis) and every GPU reports hw_slowdown and hw_power_brake, its SM clock
    held at ~705 MHz (50% of 1410) with ~175 W drawn of 400 W: not thermal, not the power cap. SMs
    stay ~96% busy; forward and backward take ~2x their time at full clock (~28% MFU, ~55% before)."""
    h = dgx_a100(rng, "dgx-a100-31")
    base = 18800
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 8 train_vit.py", "constructed": name},
    )
    per = dict(
        data_wait=0.004, transfer=0.002, forward=0.18, backward=0.37, optimizer=0.012, communication=0.006, other=0.004
    )
    step_s = sum(per.values())
    flops = 4.8e13

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 304_300_000,
            "param_dtype": "float32",
            "autocast_dtype": "bfloat16",
            "compute_dtype": "bfloat16",
            "has_conv": True,
            "conv_flop_share": 0.01,
            "input_rank": 4,
            "ddp": True,
            "world_size": 8,
            "local_world_size": 8,
            "comm_backend": "nccl",
            "ddp_comm_timing": "comm hook",
            "ddp_buckets": 49,
            "comm_seconds_per_step": j(rng, 0.04),
            "comm_exposed_seconds_per_step": j(rng, 0.006),
            "comm_overlapped_seconds_per_step": j(rng, 0.034),
            "comm_overlap_ratio": 0.85,
            "loader_workers": 10,
            "pin_memory": True,
            "persistent_workers": True,
            "prefetch_factor": 2,
            "batch_size": 256,
            "cores": 256,
            "optimizer_impl": "fused",
            "flops_per_step": flops,
            "operand_bytes_per_step": 2.6e11,
            "achieved_flops": flops / 0.55,
            "achieved_bytes_per_second": 2.6e11 / 0.55,
        }

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.02) for _ in range(8)],
        facts,
        lambda r: ident("vitl", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=256,
    )
    nv = 2.1e9 / step_s
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(
            rng,
            ranks=8,
            rank_each=1.15,
            main=0.55,
            workers=80,
            worker_each=0.33,
            usable=256,
            comm_thread_cores=8 * 0.03,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.5, jb)
        r += h.memory(420 * GB + j(rng, 8e8), 8 * 7.5 * GB, 80 * 1.2 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 5.9e8), bytes=j(rng, 2e6), worker=2e6), capacity={"/": 0.35})
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.96,
                0.55,
                0.2,
                0.995,
                61.8e9,
                176.0,
                int(rng.choice([690, 705, 705, 720])),
                pcie=(4e6, 1.36e8),
                nvl=(nv, nv),
                spec=A100_SXM80,
                throttle={"hw_slowdown", "hw_power_brake"},
                job_process=1.0,
                procs={base + 1 + i: 61.3e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def multinode_trace_glitches(name, rng, t0):
    """Two HGX H100 nodes (8 x 400 Gb/s InfiniBand rails each): a 7B decoder under HSDP (sharded in
    the node, replicated across the two), bf16, ~49% MFU, compute-bound: IB ~2% busy, NVLink ~5%.
    The traces are imperfect: node 1's sidecar stalls for 21 s (one sample spans the gap and holds
    ~13 steps), node 0's mlx5_3 port counters are cleared once (that interval's rate is unknown),
    and node 0 wrote one sample twice (same t, same figures)."""
    hosts, traces = [], []
    base = [91000, 47000]
    for node in range(2):
        h = hgx_h100(rng, f"hgx-h100-{120 + node}")
        hosts.append(h)
        traces.append(
            Trace(
                h,
                t0 + node * 0.21,
                {
                    "pid": base[node],
                    "command": "bottleneckd run -- torchrun --nnodes 2 --nproc_per_node 8 hsdp.py",
                    "constructed": f"{name}.node{node}",
                },
            )
        )
    per = dict(data_wait=0.003, transfer=0.002, forward=0.52, backward=1.06, optimizer=0.02, other=0.01)
    step_s = sum(per.values())
    flops = 7.6e14

    def make_facts(node):
        h = hosts[node]

        def facts(r):
            return {
                "device": "cuda",
                "pid": base[node] + 1 + r,
                "cuda_uuids": [h.uuids[r]],
                "parameters": 6_740_000_000,
                "param_dtype": "float32",
                "autocast_dtype": "bfloat16",
                "compute_dtype": "bfloat16",
                "has_conv": False,
                "input_rank": 2,
                "fsdp": True,
                "sharded": True,
                "world_size": 16,
                "local_world_size": 8,
                "comm_backend": "nccl",
                "comm_seconds_per_step": j(rng, 0.62, 0.03),
                "comm_exposed_seconds_per_step": j(rng, 0.03, 0.05),
                "comm_overlapped_seconds_per_step": j(rng, 0.59, 0.03),
                "comm_overlap_ratio": 0.95,
                "loader_workers": 2,
                "pin_memory": True,
                "batch_size": 4,
                "optimizer_impl": "fused",
                "flops_per_step": flops,
                "operand_bytes_per_step": 2.2e12,
                "achieved_flops": flops / 1.58,
                "achieved_bytes_per_second": 2.2e12 / 1.58,
                "tokens_per_example": 4096.0,
            }

        return facts

    ib = 1.75e9 / step_s
    nv = 22.8e9
    for node in range(2):
        h, tr = hosts[node], traces[node]
        job = StepJob(
            t0 + node * 0.21,
            lambda k: [noisy(rng, per, 0.015) for _ in range(8)],
            make_facts(node),
            (
                lambda nd: (
                    lambda r: ident(
                        "hsdp7b", nd * 8 + r, 16, 8, hosts[nd], base[nd] + 1 + r, hosts[nd].uuids[r], node_rank=nd
                    )
                )
            )(node),
            examples_per_step=4,
        )
        gaps = {30: 21.0} if node == 1 else {}
        for tick, t, iv in ticks(rng, 70, t0 + node * 0.21, irregular=gaps):
            ph, ranks = job.report(job.collect(t))
            jb = jobcpu(
                rng,
                ranks=8,
                rank_each=1.3,
                main=0.8,
                workers=16,
                worker_each=0.04,
                usable=224,
                comm_thread_cores=8 * 0.2,
            )
            r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 2.2, jb)
            r += h.memory(230 * GB + j(rng, 5e8), 8 * 13 * GB, 16 * 0.7 * GB, 0.2 * GB)
            r += h.storage({}, dict(chars=j(rng, 1.3e6)), capacity={"/": 0.33, "/raid": 0.48})
            rates = {f"mlx5_{k}/1": (j(rng, ib, 0.04), j(rng, ib, 0.04)) for k in range(8)}
            reset = ("mlx5_3/1",) if node == 0 and tick == 40 else ()
            r += h.network(ib_rates=rates, iv=iv, reset=reset)
            for i in range(8):
                s = gs(
                    rng,
                    0.93,
                    0.55,
                    0.42,
                    0.995,
                    71.5e9,
                    640.0,
                    1980,
                    pcie=(ib, ib),
                    nvl=(nv, nv),
                    spec=H100_SXM,
                    rel=0.015,
                    job_process=1.0,
                    procs={base[node] + 1 + i: 71.0e9},
                )
                r += h.gpu_readings(i, s, tick)
            tr.add(t, iv, r, ph, ranks, slow=40.0 if iv > 5 else 1.0)
            if node == 0 and tick == 22:
                tr.lines.append(json.loads(json.dumps(tr.lines[-1])))
    return traces


def coco_eval_rank0(name, rng, t0):
    """DGX A100 40GB, Mask R-CNN in DDP (8 images per GPU, ~0.57 s a step). Every 105 steps (~60 s)
    the loop evaluates: 12 s of distributed inference on the 5,000 val images, then rank 0 alone
    runs pycocotools' COCOeval (bbox + segm, single-threaded, ~28 s) while ranks 1-7 wait in a
    barrier (their NCCL kernel spins: NVML busy 100%, SMs ~2%). The eval lands in the phases of the
    step after it (forward for the inference; other on rank 0, communication on the others), a
    ~40.6 s step reported whole; ~40% of the wall time is evaluation, ~28% COCOeval on one core."""
    h = dgx_a100(rng, "dgx-a100-40g-02", spec=A100_SXM40)
    base = 25500
    tr = Trace(
        h,
        t0,
        {
            "pid": base,
            "command": "bottleneckd run -- torchrun --nproc_per_node 8 train_maskrcnn.py --eval-every 105",
            "constructed": name,
        },
    )
    per = dict(
        data_wait=0.010, transfer=0.004, forward=0.18, backward=0.33, optimizer=0.02, communication=0.02, other=0.006
    )
    every, infer, coco = 105, 12.0, 28.0
    flops = 8 * 0.9e12

    def step(k):
        out = []
        for r in range(8):
            p = noisy(rng, per, 0.04)
            if k % every == every - 1:
                p["forward"] += j(rng, infer, 0.01)
                if r == 0:
                    p["other"] += coco
                else:
                    p["communication"] += coco
            out.append(p)
        # a synchronous step: the ranks end together, so their walls match the longest
        wall = max(sum(p.values()) for p in out)
        for p in out:
            p["communication"] += wall - sum(p.values())
        return out

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 44_400_000,
            "param_dtype": "float32",
            "autocast_dtype": "float16",
            "compute_dtype": "float16",
            "has_conv": True,
            "conv_flop_share": 0.83,
            "input_rank": 4,
            "ddp": True,
            "world_size": 8,
            "local_world_size": 8,
            "comm_backend": "nccl",
            "ddp_comm_timing": "comm hook",
            "ddp_buckets": 8,
            "comm_seconds_per_step": j(rng, 0.03),
            "comm_exposed_seconds_per_step": j(rng, 0.02),
            "comm_overlapped_seconds_per_step": j(rng, 0.01),
            "comm_overlap_ratio": 0.33,
            "loader_workers": 8,
            "pin_memory": True,
            "persistent_workers": True,
            "batch_size": 8,
            "cores": 256,
            "optimizer_impl": "foreach",
            "flops_per_step": flops,
            "operand_bytes_per_step": 1.6e11,
            "achieved_flops": flops / 0.51,
            "achieved_bytes_per_second": 1.6e11 / 0.51,
        }

    job = StepJob(
        t0, step, facts, lambda r: ident("maskrcnn", r, 8, 8, h, base + 1 + r, h.uuids[r]), examples_per_step=8
    )

    def seg(k, s, e):
        if k % every != every - 1:
            return [(s, e, "train")]
        return [(s, s + infer, "infer"), (s + infer, s + infer + coco, "coco"), (s + infer + coco, e, "train")]

    msites = {
        "other": ("evaluate", "/home/det/engine.py", 212, "coco_eval.accumulate(); coco_eval.summarize()", None, False),
        "forward": ("train_one_epoch", "/home/det/engine.py", 61, "loss_dict = model(images, targets)", None, False),
        "backward": ("train_one_epoch", "/home/det/engine.py", 66, "losses.backward()", None, False),
    }
    for tick, t, iv in ticks(rng, 230, t0):
        done = job.collect(t)
        ph, ranks = job.report(done)
        w = segments_in(job.history, seg, t - iv, t)
        tot = sum(w.values()) or 1.0
        ft, fi, fc = w.get("train", 0.0) / tot, w.get("infer", 0.0) / tot, w.get("coco", 0.0) / tot
        jb = jobcpu(
            rng,
            ranks=8,
            rank_each=1.1 * ft + 1.05 * fi + 0.95 * fc,
            main=0.8 * ft + 0.9 * fi + fc,
            workers=64,
            worker_each=0.42 * ft + 0.3 * fi + 0.0 * fc,
            usable=256,
            comm_thread_cores=8 * 0.05,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.3, jb)
        r += h.memory(300 * GB + j(rng, 8e8), 8 * 6 * GB + 9 * GB * (fi + fc), 64 * 0.9 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 1.4e8 * ft + 6e7 * fi)), capacity={"/": 0.36})
        r += h.network(iv=iv)
        for i in range(8):
            states = {
                "train": gs(
                    rng,
                    0.72,
                    0.3,
                    0.33,
                    0.97,
                    28.5e9,
                    290.0,
                    1410,
                    pcie=(3e6, 1.9e8),
                    nvl=(1.8e8, 1.8e8),
                    spec=A100_SXM40,
                ),
                "infer": gs(
                    rng, 0.55, 0.2, 0.25, 0.9, 28.5e9, 240.0, 1410, pcie=(2.6e7, 1.2e8), nvl=(1e6, 1e6), spec=A100_SXM40
                ),
                "coco": (
                    gs(rng, 0.0, 0.0, 0.0, 0.0, 28.5e9, 62.0, 1410, pcie=(1e5, 1e5), nvl=(0.0, 0.0), spec=A100_SXM40)
                    if i == 0
                    else gs(
                        rng, 0.02, 0.0, 0.003, 1.0, 28.5e9, 88.0, 1410, pcie=(1e5, 1e5), nvl=(2e4, 2e4), spec=A100_SXM40
                    )
                ),
            }
            s = mix(states, w)
            s.update(job_process=1.0, procs={base + 1 + i: 28.0e9})
            r += h.gpu_readings(i, s, tick)
        c = {}
        for _ in range(2):
            ph_k = "other" if rng.random() < fc else ("forward" if rng.random() < 0.4 else "backward")
            c[ph_k] = c.get(ph_k, 0) + 1
        tr.add(t, iv, r, ph, ranks, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(c, msites)})
    return tr


def dali_gpu_decode(name, rng, t0):
    """DGX A100 40GB, ResNet-50 (bf16, channels_last, 256 images per GPU) fed by a DALI pipeline
    that decodes the JPEGs on the SMs (device="mixed" with hw_decoder_load=0: nvJPEG's CUDA path)
    and crops/flips/normalises on the GPU. The GPU is saturated (SMs ~93%, NVML busy ~99.5%), the
    DALI kernels competing with training; the training loop waits for DALI ~32% of the step. The
    host's 256 CPUs are ~5% busy (DALI's reader threads); ImageNet is in the page cache."""
    h = dgx_a100(rng, "dgx-a100-40g-11", spec=A100_SXM40)
    base = 51200
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 8 main_dali.py", "constructed": name},
    )
    per = dict(
        data_wait=0.05,
        transfer=0.0005,
        forward=0.032,
        backward=0.064,
        optimizer=0.004,
        communication=0.003,
        other=0.002,
    )
    step_s = sum(per.values())
    flops = 256 * 12.3e9

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 25_557_032,
            "param_dtype": "float32",
            "autocast_dtype": "bfloat16",
            "compute_dtype": "bfloat16",
            "has_conv": True,
            "conv_flop_share": 0.97,
            "input_rank": 4,
            "ddp": True,
            "world_size": 8,
            "local_world_size": 8,
            "comm_backend": "nccl",
            "ddp_comm_timing": "comm hook",
            "ddp_buckets": 5,
            "comm_seconds_per_step": j(rng, 0.03),
            "comm_exposed_seconds_per_step": j(rng, 0.003),
            "comm_overlapped_seconds_per_step": j(rng, 0.027),
            "comm_overlap_ratio": 0.9,
            "cores": 256,
            "optimizer_impl": "foreach",
            "flops_per_step": flops,
            "operand_bytes_per_step": 9.0e10,
            "achieved_flops": flops / 0.096,
            "achieved_bytes_per_second": 9.0e10 / 0.096,
        }

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.03) for _ in range(8)],
        facts,
        lambda r: ident("rn50-dali", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=256,
    )
    sites = {
        "data_wait": (
            "DALIGenericIterator.__next__",
            "/opt/conda/lib/python3.10/site-packages/nvidia/dali/plugin/pytorch/__init__.py",
            238,
            "outputs = self._get_outputs()",
            None,
            False,
        ),
        "forward": ("train", "/workspace/rn50/main_dali.py", 188, "output = model(images)", None, False),
        "backward": ("train", "/workspace/rn50/main_dali.py", 191, "scaler.scale(loss).backward()", None, False),
    }
    jpeg = 8 * 256 * 110e3 / step_s
    for tick, t, iv in ticks(rng, 60, t0):
        done = job.collect(t)
        ph, ranks = job.report(done)
        jb = jobcpu(
            rng,
            ranks=8,
            rank_each=1.6,
            main=0.58,
            usable=256,
            comm_thread_cores=8 * 0.04,
            rank_side_thread_cores=8 * 1.05,
        )
        r = h.cpu(jb["rank_busy_cores"] + 1.2, jb)
        r += h.memory(190 * GB + j(rng, 5e8), 8 * 9.5 * GB, 0.0, 0.2 * GB)
        r += h.storage(
            {}, dict(calls=j(rng, 1.1e5), chars=j(rng, jpeg, 0.03), bytes=j(rng, 3e6), rank=3e6), capacity={"/": 0.36}
        )
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.93,
                0.28,
                0.52,
                0.995,
                33.4e9,
                335.0,
                1410,
                pcie=(5e6, jpeg / 8),
                nvl=(8.4e8, 8.4e8),
                spec=A100_SXM40,
                rel=0.015,
                job_process=1.0,
                procs={base + 1 + i: 32.9e9},
            )
            r += h.gpu_readings(i, s, tick)
        stacks = run_stacks(rng, done, sites)
        tr.add(t, iv, r, ph, ranks, stacks=stacks)
    return tr


def balanced_ddp_45mfu(name, rng, t0):
    """HGX H100, a 1.1B Llama-style model in DDP, bf16, 16 x 2048 tokens per rank: ~45% MFU, SMs
    ~84%, tensor pipes ~49%, DRAM ~38%, NVLink ~3%, all-reduce 92% hidden, data wait <1%: a
    healthy, well-overlapped job with nothing clearly saturated."""
    h = hgx_h100(rng, "hgx-h100-052")
    base = 66000
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 8 pretrain_1b.py", "constructed": name},
    )
    per = dict(
        data_wait=0.004, transfer=0.002, forward=0.17, backward=0.355, optimizer=0.014, communication=0.012, other=0.005
    )
    step_s = sum(per.values())
    flops = 2.5e14

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 1_100_000_000,
            "param_dtype": "float32",
            "autocast_dtype": "bfloat16",
            "compute_dtype": "bfloat16",
            "has_conv": False,
            "input_rank": 2,
            "compiled": False,
            "ddp": True,
            "world_size": 8,
            "local_world_size": 8,
            "comm_backend": "nccl",
            "ddp_comm_timing": "comm hook",
            "ddp_buckets": 176,
            "comm_seconds_per_step": j(rng, 0.15, 0.02),
            "comm_exposed_seconds_per_step": j(rng, 0.012, 0.05),
            "comm_overlapped_seconds_per_step": j(rng, 0.138, 0.02),
            "comm_overlap_ratio": 0.92,
            "loader_workers": 4,
            "pin_memory": True,
            "persistent_workers": True,
            "batch_size": 16,
            "optimizer_impl": "fused",
            "flops_per_step": flops,
            "operand_bytes_per_step": 6.9e11,
            "achieved_flops": flops / 0.525,
            "achieved_bytes_per_second": 6.9e11 / 0.525,
            "tokens_per_example": 2048.0,
        }

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.015) for _ in range(8)],
        facts,
        lambda r: ident("llama1b", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=16,
    )
    nv = 7.7e9 / step_s
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(
            rng, ranks=8, rank_each=1.25, main=0.86, workers=32, worker_each=0.05, usable=224, comm_thread_cores=8 * 0.1
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 2.0, jb)
        r += h.memory(260 * GB + j(rng, 5e8), 8 * 12 * GB, 32 * 0.7 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 2.2e6)), capacity={"/": 0.31, "/raid": 0.5})
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.84,
                0.49,
                0.38,
                0.985,
                52.0e9,
                560.0,
                1980,
                pcie=(3e6, 1.3e7),
                nvl=(nv, nv),
                spec=H100_SXM,
                rel=0.02,
                job_process=1.0,
                procs={base + 1 + i: 51.5e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def b200_fp8_fsdp(name, rng, t0):
    """HGX B200: an 8B decoder under FSDP in one node with Transformer Engine FP8 (72% of the FLOPs
    in FP8 GEMMs), 2 x 8192 tokens per rank: SMs ~95%, tensor pipes ~70%, ~1.8 PFLOP/s over the
    compute phases (80% of the bf16 dense peak, 40% of the FP8 one), the all-gathers and
    reduce-scatters hidden (NVLink ~8%). Power ~905 W of 1000 W. Compute-bound."""
    h = hgx_b200(rng, "hgx-b200-030")
    base = 120500
    tr = Trace(
        h,
        t0,
        {
            "pid": base,
            "command": "bottleneckd run -- torchrun --nproc_per_node 8 train_8b.py --fp8",
            "constructed": name,
        },
    )
    per = dict(data_wait=0.003, transfer=0.001, forward=0.19, backward=0.37, optimizer=0.012, other=0.004)
    step_s = sum(per.values())
    flops = 1.0e15

    def facts(r):
        return {
            "device": "cuda",
            "pid": base + 1 + r,
            "cuda_uuids": [h.uuids[r]],
            "parameters": 8_030_000_000,
            "param_dtype": "float32",
            "autocast_dtype": "bfloat16",
            "compute_dtype": "bfloat16",
            "fp8_flop_share": 0.72,
            "has_conv": False,
            "input_rank": 2,
            "fsdp": True,
            "sharded": True,
            "world_size": 8,
            "local_world_size": 8,
            "comm_backend": "nccl",
            "comm_seconds_per_step": j(rng, 0.29, 0.03),
            "comm_exposed_seconds_per_step": j(rng, 0.008, 0.05),
            "comm_overlapped_seconds_per_step": j(rng, 0.282, 0.03),
            "comm_overlap_ratio": 0.97,
            "loader_workers": 4,
            "pin_memory": True,
            "batch_size": 2,
            "optimizer_impl": "fused",
            "flops_per_step": flops,
            "operand_bytes_per_step": 1.6e12,
            "achieved_flops": flops / 0.56,
            "achieved_bytes_per_second": 1.6e12 / 0.56,
            "tokens_per_example": 8192.0,
        }

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.012) for _ in range(8)],
        facts,
        lambda r: ident("llama8b-fp8", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=2,
    )
    nv = 42e9 / step_s
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(
            rng, ranks=8, rank_each=1.3, main=0.9, workers=32, worker_each=0.04, usable=224, comm_thread_cores=8 * 0.15
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 2.0, jb)
        r += h.memory(300 * GB + j(rng, 5e8), 8 * 16 * GB, 32 * 0.7 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 2.5e6)), capacity={"/": 0.28, "/raid": 0.35})
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.95,
                0.70,
                0.36,
                0.996,
                171e9,
                905.0,
                1965,
                pcie=(3e6, 1.2e7),
                nvl=(nv, nv),
                spec=B200,
                rel=0.012,
                job_process=1.0,
                procs={base + 1 + i: 170.2e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


SCENARIOS = {
    "gh200_fp8_c2c_offload": gh200_fp8_c2c_offload,
    "attach_b200_two_of_eight": attach_b200_two_of_eight,
    "ddp_grad_accum_nosync": ddp_grad_accum_nosync,
    "fsdp_pcie_allgather_l40s": fsdp_pcie_allgather_l40s,
    "zero3_param_offload_l40s": zero3_param_offload_l40s,
    "compile_warmup_h100": compile_warmup_h100,
    "ebs_epoch1_pagecache_epoch2": ebs_epoch1_pagecache_epoch2,
    "small_files_nvme_iops": small_files_nvme_iops,
    "attach_cpu_metrics_sync": attach_cpu_metrics_sync,
    "nvlink_degraded_gpu3": nvlink_degraded_gpu3,
    "power_brake_dgx_a100": power_brake_dgx_a100,
    "multinode_trace_glitches": multinode_trace_glitches,
    "coco_eval_rank0": coco_eval_rank0,
    "dali_gpu_decode": dali_gpu_decode,
    "balanced_ddp_45mfu": balanced_ddp_45mfu,
    "b200_fp8_fsdp": b200_fp8_fsdp,
}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: construct_blind_gpu6.py OUT_DIR", file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for k, (name, fn) in enumerate(SCENARIOS.items()):
        rng = random.Random(6000 + k)
        tr = fn(name, rng, 1798000000.0 + 3600.0 * k)
        if isinstance(tr, list):
            for node, t in enumerate(tr):
                t.write(os.path.join(out, f"{name}.node{node}.jsonl"))
                n += 1
        else:
            tr.write(os.path.join(out, name + ".jsonl"))
            n += 1
    with open(os.path.join(out, "labels.json"), "w", encoding="utf-8") as f:
        json.dump(
            {name: {"resource": res, "stage": stage, **NOTES.get(name, {})} for name, (res, stage) in LABELS.items()},
            f,
            indent=1,
        )
    print(f"wrote {n} trace files ({len(SCENARIOS)} scenarios) and labels.json to {out}")
    return 0


# Labels, written before running bottleneckd on these traces: (resource, stage) that an engineer's
# intervention would prove limits the job (remove it and the step gets faster), with the first
# recommendation an engineer would make; NOTES repeats the recommendation, the straggler (None: no
# rank is one) and what else would be acceptable.
LABELS = {
    # FP8/bf16 tensor math bounds the step (SMs 95%, tensor 66%, 83% of the bf16 dense peak over the compute
    # phases); NVLink-C2C carries activation offload at ~22% and must not be blamed; first: nothing on the host
    # link: move the remaining bf16 FLOPs (attention) to FP8 (FlashAttention-3 FP8) or accept the step as is.
    "gh200_fp8_c2c_offload": ("gpu_compute", "compute"),
    # attach, 2 of 8 B200s used (SMs 91%, tensor 54%), 6 GPUs idle with no process: they belong to no one and
    # make no verdict; first: torch.compile / FP8 for the job's own compute (not "use the idle GPUs").
    "attach_b200_two_of_eight": ("gpu_compute", "compute"),
    # accumulation hides the all-reduce (once per 8 micro-batches, 15 ms exposed of 3.3 s): ~55% MFU,
    # compute-bound; first: nothing on communication; faster kernels (FlashAttention/torch.compile).
    "ddp_grad_accum_nosync": ("gpu_compute", "compute"),
    # FSDP's all-gathers/reduce-scatters over PCIe (no NVLink, across sockets) expose 2.65 s of a 3.64 s step;
    # first: fewer collectives: SHARD_GRAD_OP (no re-gather in backward) / a larger micro-batch per gather, or
    # plain DDP with a sharded 8-bit optimizer if it fits; check P2P across the sockets.
    "fsdp_pcie_allgather_l40s": ("inter_gpu_interconnect", "communication"),
    # the frozen weights stream over PCIe gen4 at 74% of the link, the GPU computes 11% of the time; first: keep
    # the weights on the GPU: quantise the frozen base to 4 bits (QLoRA, 17 GB) or use a GPU that holds them.
    "zero3_param_offload_l40s": ("cpu_gpu_interconnect", "compute"),
    # 72 s of torch.compile warm-up (CPU), then 90 s of compute-bound steady state (SMs 94%, ~53% MFU); the
    # verdict should follow the steady state; first: nothing for the steady state beyond FP8 / larger batch;
    # the warm-up: an Inductor cache (TORCHINDUCTOR_FX_GRAPH_CACHE / mega-cache) for the next runs.
    "compile_warmup_h100": ("gpu_compute", "compute"),
    # regime change: epoch 1 storage_bandwidth/data (EBS at its 1000 MB/s cap, 40% data wait); epochs 2-3 from the
    # page cache, GPU busy 96%: the current regime is compute; first: nothing on storage now (for the next
    # run's first epoch: copy the data to the instance NVMe); compute: torch.compile / channels-last.
    "ebs_epoch1_pagecache_epoch2": ("gpu_compute", "compute"),
    # the NVMe at 88% of its random-read IOPS with only 51% of its bytes, workers in D state, 57% data wait;
    # first: pack the small files into large shards (WebDataset/tar, Arrow, one memory-mapped array).
    "small_files_nvme_iops": ("storage_bandwidth", "data"),
    # attach: per-step .cpu() then single-threaded ROC-AUC on the host (45% of the samples), GPU busy 52%; first:
    # keep the metric on the GPU (torchmetrics on device), compute it every N steps / at epoch end, no per-step
    # host sync.
    "attach_cpu_metrics_sync": ("cpu_compute", "other"),
    # GPU 3 has 2 of 18 NVLinks: every rank waits 0.33 s of 0.67 s in the all-reduce; no straggler by compute
    # (the fault is gpu3's link; naming rank 3 for it is acceptable); first: fix/replace GPU 3's NVLink (drain the
    # node, nvidia-smi nvlink -s, field diagnostics), meanwhile bf16 gradient all-reduce.
    "nvlink_degraded_gpu3": ("inter_gpu_interconnect", "communication"),
    # power brake / HW slowdown on all 8 GPUs, clocks 50%, power 175 W: compute at half speed; first: a hardware
    # fix (PSU/BMC power brake, rack power), not a software change.
    "power_brake_dgx_a100": ("gpu_compute", "compute"),
    # two nodes, compute-bound (~49% MFU, IB 2%), with a 21 s sample gap, an IB counter reset and a duplicated
    # sample that must not change the verdict; first: nothing clearly (FP8 / larger micro-batch).
    "multinode_trace_glitches": ("gpu_compute", "compute"),
    # COCOeval on rank 0, single-threaded, 28 s every ~60 s of training, 7 ranks waiting (~28% of wall time;
    # eval ~40%); first: evaluate less often or asynchronously (a separate process / faster-coco-eval), so the
    # training ranks do not wait. Straggler: rank 0 (in other) is acceptable; none also.
    "coco_eval_rank0": ("cpu_compute", "other"),
    # GPU-side decoding (DALI, nvJPEG CUDA path) competes with training on saturated SMs; data wait 32%; first:
    # move the decoding off the SMs: the A100's hardware JPEG decoder (hw_decoder_load) or the ~240 idle CPUs
    # (or a pre-resized data set).
    "dali_gpu_decode": ("gpu_compute", "data"),
    # a healthy job at ~45% MFU, nothing saturated: undetermined (gpu_compute/compute also acceptable); first:
    # nothing urgent (FP8 / compile if anything).
    "balanced_ddp_45mfu": ("undetermined", "compute"),
    # FP8 FSDP on B200 at ~80% of the bf16 peak, comm hidden: compute-bound; first: nothing much (raise the FP8
    # share of the FLOPs).
    "b200_fp8_fsdp": ("gpu_compute", "compute"),
}

NOTES = {
    "gh200_fp8_c2c_offload": dict(
        first="no host-link change; FP8 attention / accept", straggler=None, never="cpu_gpu_interconnect"
    ),
    "attach_b200_two_of_eight": dict(first="torch.compile / FP8", straggler=None, never="idle GPUs 0,1,4-7"),
    "ddp_grad_accum_nosync": dict(first="faster kernels; nothing on comm", straggler=None),
    "fsdp_pcie_allgather_l40s": dict(first="SHARD_GRAD_OP / fewer, larger gathers", straggler=None),
    "zero3_param_offload_l40s": dict(first="keep weights on GPU (4-bit base, QLoRA)", straggler=None),
    "compile_warmup_h100": dict(first="steady state compute-bound; Inductor cache for warm-up", straggler=None),
    "ebs_epoch1_pagecache_epoch2": dict(
        first="none for storage now; compute: torch.compile",
        straggler=None,
        earlier_regime=["storage_bandwidth", "data"],
    ),
    "small_files_nvme_iops": dict(first="pack small files into shards", straggler=None),
    "attach_cpu_metrics_sync": dict(first="metrics on GPU, every N steps; no per-step .cpu()", straggler=None),
    "nvlink_degraded_gpu3": dict(
        first="fix GPU 3's NVLink (hardware)", straggler=None, device="gpu3", also_acceptable_straggler=3
    ),
    "power_brake_dgx_a100": dict(first="clear the power brake (hardware)", straggler=None),
    "multinode_trace_glitches": dict(first="nothing clearly", straggler=None),
    "coco_eval_rank0": dict(first="evaluate less often / asynchronously", straggler=None, also_acceptable_straggler=0),
    "dali_gpu_decode": dict(first="decode off the SMs: HW JPEG decoder or idle CPUs", straggler=None),
    "balanced_ddp_45mfu": dict(first="nothing urgent", straggler=None, also_acceptable=["gpu_compute", "compute"]),
    "b200_fp8_fsdp": dict(first="nothing much", straggler=None),
}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
