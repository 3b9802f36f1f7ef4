#!/usr/bin/env python3
"""Blind GPU traces, round 7: patterns the earlier rounds did not cover, written from
docs/trace-format.md, the samplers, the hook (bottleneckd/torch/) and data/peaks.json alone (not
the diagnosis, advice or rules).

Each scenario is a job a performance engineer meets: per-step `.tolist()` metrics in Python beside a
well-fed H100 (with stack samples) and on an 8-GPU H200 job (hook phases only), a DataLoader whose
pin-memory thread is the bottleneck, video decoding on a 32-thread host feeding 8 L4s, host swapping
from a deep prefetch queue, an A100 40GB whose caching allocator thrashes beside one that is full
and fine, a 4-of-8-GPU job whose NFS reads share a 100 GbE port with another team's traffic, two
nodes where one RoCE NIC negotiated half its speed, LoRA on an H100 at micro-batch 1, a for-loop
AdamW over 2,000 tensors, `clip_grad_norm_(...).item()` on a compute-bound job, RL rollouts
generated on the training GPUs, Parquet from S3 through a FUSE mount under `attach`, a compute-
bound bf16 job under `attach`, a GPU the catalog does not know, and a well-balanced DDP job.

    python tests/data/construct_blind_gpu7.py OUT_DIR

writes OUT_DIR/<scenario>.jsonl (a multi-node scenario: OUT_DIR/<scenario>.node<k>.jsonl, to be
analysed together) and OUT_DIR/labels.json. Stdlib only, seeded, deterministic. The machine,
reading and step helpers are those of construct_blind_gpu6.py, copied unchanged.

LABELS at the bottom were written before bottleneckd was run on these traces; no trace was
rejected and none was changed after the run. Before the first run, a check of the roofline facts
against the catalog peaks corrected three operand-byte figures (video_decode_32t_8l4 had 1.6x the
L4's DRAM bandwidth; pin_memory_thread_bound and h200_tolist_loss_tracking were lowered to match
their DRAM activity); every utilization is <= 1.
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
# round 7: more parts and small helpers
# --------------------------------------------------------------------------------------------

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
    fp64=26e12,
    fp64_tensor=51e12,
    fp8=1513e12,
    dram=2.0e12,
    links=0,
    nvlink=None,
)
A100_PCIE80 = dict(
    A100_PCIE40, name="NVIDIA A100 80GB PCIe", catalog="NVIDIA A100 80GB PCIe", mem=85899345920, tdp=300.0
)
RTX_PRO_6000 = gpu(
    name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
    catalog=None,
    mem=102626623488,
    max_clock=2617,
    tdp=600.0,
    idle_w=38.0,
    dram=None,
    pcie_gen=5,
    gpm=True,
)


def set_reading(rows: list, res: str, dev: str, metric: str, value, why: str = "") -> None:
    """Overwrite one reading's value in place (e.g. swap rates the helper writes as 0)."""
    for row in rows:
        if row[0] == res and row[1] == dev and row[2] == metric:
            row[3] = value
            del row[5:]
            if value is None and why:
                row.append(why)
            return
    unit = "B/s" if metric.endswith("per_second") else "B"
    rows.append([res, dev, metric, value, unit] + ([why] if value is None and why else []))


def one_gpu_vm(rng, hostname, spec, cpu, logical, mem, flags=SPR, disk_gen=4, nic=("ens8", 50000), dcgm=False):
    return Host(
        rng,
        hostname,
        cpu,
        logical,
        logical // 2,
        1,
        3800.0,
        flags,
        mem,
        [spec],
        disks=[
            ("nvme0n1", 200 * GB, "nvme", disk_gen, "nvme_card-pd"),
            ("nvme1n1", 3.0 * TB, "nvme", disk_gen, "nvme_card"),
        ],
        nics=[nic],
        mounts=[("/", "ext4", "/dev/nvme0n1p1", False, 193 * GB), ("/scratch", "xfs", "/dev/nvme1n1", False, 2.9 * TB)],
        dcgm=dcgm,
    )


def ddp_facts(h, base, r, world, local_world, flops, bytes_, compute_s, **kw):
    f = {
        "device": "cuda",
        "pid": base + 1 + r,
        "cuda_uuids": [h.uuids[r % len(h.uuids)]],
        "param_dtype": "float32",
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "has_conv": False,
        "input_rank": 2,
        "ddp": world > 1,
        "world_size": world,
        "local_world_size": local_world,
        "comm_backend": "nccl",
        "loader_workers": 4,
        "pin_memory": True,
        "persistent_workers": True,
        "optimizer_impl": "fused",
        "flops_per_step": flops,
        "operand_bytes_per_step": bytes_,
        "arithmetic_intensity": flops / bytes_,
        "achieved_flops": flops / compute_s,
        "achieved_bytes_per_second": bytes_ / compute_s,
    }
    f.update(kw)
    return f


# --------------------------------------------------------------------------------------------
# scenarios
# --------------------------------------------------------------------------------------------


def h100_tolist_metrics_stacks(name, rng, t0):
    """One H100 SXM (a 26-vCPU cloud VM): a 350M-parameter token classifier (NER, batch 32 x 1024,
    bf16 autocast). After every optimizer step the loop calls `logits.argmax(-1).tolist()` and
    `labels.tolist()` (a host sync) and computes span-level precision/recall/F1 in Python (seqeval)
    on the 32k tokens: ~150 ms a step on the main thread, while the GPU has nothing queued. The hook
    (CUDA events on the GPU's timeline) puts that gap between step_end and the next step_start in
    `other`: 31% of a 0.48 s step. During the compute phases SMs ~90%, tensor ~55%; on average SMs
    ~62%, NVML busy ~69%. The main thread is at a full core all the time (it spins in the sync
    while the GPU runs, then runs the metric). `run` with stacks: the main thread's samples are at
    the `.tolist()` line (waiting for the GPU) and in seqeval's Python."""
    h = one_gpu_vm(rng, "a3-h100-1g-04", H100_SXM, "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", 26, 234 * GiB)
    pid = 5120
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd run -- python train_ner.py --bs 32", "constructed": name})
    per = dict(data_wait=0.004, transfer=0.002, forward=0.105, backward=0.21, optimizer=0.012, other=0.152)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    flops = 7.4e13
    facts = ddp_facts(
        h,
        pid - 1,
        0,
        1,
        1,
        flops,
        4.1e11,
        compute,
        parameters=355_000_000,
        batch_size=32,
        tokens_per_example=1024.0,
        loader_workers=4,
        cores=26,
        cuda_memory_total_bytes=H100_SXM["mem"],
        cuda_memory_reserved_bytes=41_000_000_000,
        cuda_memory_allocated_bytes=9_800_000_000,
        cuda_memory_peak_allocated_bytes=38_500_000_000,
        cuda_alloc_retries=0,
    )
    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.03)],
        lambda r: dict(facts),
        lambda r: ident("local", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=32,
    )
    rows_src = {
        "wait": ("other", "train_epoch", "/home/nlp/train_ner.py", 188, "pred = logits.argmax(-1).tolist()"),
        "metric": ("other", "update", "/home/nlp/metrics.py", 41, "self.f1.append(seqeval_f1(gold, pred))"),
        "forward": ("forward", "train_epoch", "/home/nlp/train_ner.py", 176, "logits = model(ids, attention_mask=am)"),
        "backward": ("backward", "train_epoch", "/home/nlp/train_ner.py", 180, "loss.backward()"),
        "optimizer": ("optimizer", "train_epoch", "/home/nlp/train_ner.py", 182, "opt.step()"),
        "data": ("data_wait", "train_epoch", "/home/nlp/train_ner.py", 171, "for ids, am, labels in loader:"),
    }
    dist = dict(wait=0.50, metric=0.31, forward=0.07, backward=0.08, optimizer=0.03, data=0.01)
    busy_share = (compute + per["transfer"] + 0.004) / sum(per.values())
    for tick, t, iv in ticks(rng, 60, t0):
        done = job.collect(t)
        ph, ranks = job.report(done)
        jb = jobcpu(rng, rank_each=1.12, main=0.985, workers=4, worker_each=0.09, usable=26)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.3, jb)
        r += h.memory(21 * GB + j(rng, 1e8), 7.2 * GB, 4 * 0.9 * GB)
        r += h.storage({}, dict(chars=j(rng, 3.0e5)), capacity={"/": 0.41})
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.90 * busy_share,
            0.55 * busy_share,
            0.36 * busy_share,
            busy_share,
            41.6e9,
            90 + 520 * busy_share,
            1980,
            pcie=(2.0e6, 9.0e6),
            spec=H100_SXM,
            job_process=1.0,
            procs={pid: 41.1e9},
        )
        r += h.gpu_readings(0, s, tick)
        stacks = None
        if done:
            c: dict = {}
            for _ in range(2):
                k = pick(rng, dist)
                c[k] = c.get(k, 0) + 1
            rows = []
            for k, n in c.items():
                phase, fn, file, line, text = rows_src[k]
                rows.append([phase, "main", fn, file, line, text, n, False if phase == "data_wait" else None, False])
            stacks = {"source": "py-spy", "rate_hz": 2.0, "rows": rows}
        tr.add(t, iv, r, ph, ranks, stacks=stacks)
    return tr


def h200_tolist_loss_tracking(name, rng, t0):
    """HGX H200, 8-rank DDP: a 1.1B decoder (bf16, micro-batch 8 x 2048) trained with a curriculum
    sampler that keeps every example's loss: each step every rank calls
    `per_example_loss.detach().tolist()` and updates a Python dict of 4M entries, re-sorting the
    bucket heap (~85 ms of Python on the main thread, the GPU idle meanwhile). Hook phases only (no
    stacks): `other` ~26% of a 0.33 s step on every rank; the gradients' all-reduce is hidden
    (exposed ~8 ms), data wait ~1%. SMs ~91% while computing, ~66% on average."""
    h = hgx_h100(rng, "hgx-h200-207", gpu_spec=H200_SXM)
    base = 70300
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 8 train.py", "constructed": name},
    )
    per = dict(
        data_wait=0.003,
        transfer=0.0015,
        forward=0.075,
        backward=0.152,
        optimizer=0.006,
        communication=0.008,
        other=0.086,
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    flops = 1.18e14

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            8,
            8,
            flops,
            4.2e11,
            compute,
            parameters=1_100_000_000,
            batch_size=8,
            tokens_per_example=2048.0,
            ddp_comm_timing="comm hook",
            ddp_buckets=18,
            comm_seconds_per_step=j(rng, 0.060),
            comm_exposed_seconds_per_step=j(rng, 0.008),
            comm_overlapped_seconds_per_step=j(rng, 0.052),
            comm_overlap_ratio=0.87,
            loader_workers=2,
            cores=224,
        )

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.03) for _ in range(8)],
        facts,
        lambda r: ident("curric11b", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=8,
    )
    busy_share = (compute + per["communication"] + 0.003) / sum(per.values())
    nv = 4.4e9 * 2 / sum(per.values()) / 2
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(rng, ranks=8, rank_each=1.15, main=0.99, workers=16, worker_each=0.05, usable=224)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.5, jb)
        r += h.memory(260 * GB + j(rng, 5e8), 8 * 16 * GB, 16 * 0.9 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 1.6e6)), capacity={"/": 0.38, "/raid": 0.41})
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.91 * busy_share,
                0.56 * busy_share,
                0.33 * busy_share,
                busy_share,
                63.2e9,
                100 + 560 * busy_share,
                1980,
                pcie=(2.2e6, 6.0e6),
                nvl=(nv, nv),
                spec=H200_SXM,
                job_process=1.0,
                procs={base + 1 + i: 62.7e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def pin_memory_thread_bound(name, rng, t0):
    """One H100 PCIe in a 64-thread EPYC 9354 workstation: an action-recognition model on 16-frame
    clips. The 12 loader workers return float32 normalised clips (16 x 3 x 16 x 224 x 224 = 154 MB a
    batch, in
    shared memory) and DataLoader(pin_memory=True)'s pin-memory thread
    in the rank copies each batch into page-locked memory: ~98 ms a batch at ~1.6 GB/s (a
    single-threaded copy out of fresh shared-memory pages, page faults included), a full core. The
    GPU needs 52 ms a step: data wait ~47% of a 0.11 s step. Workers ~0.3 core each (they are ahead:
    their queue is full), the main thread ~0.35 core; 52 of 64 CPUs idle. PCIe H2D ~1.4 GB/s (2% of
    the gen5 link)."""
    h = Host(
        rng,
        "ws-h100-12",
        "AMD EPYC 9354 32-Core Processor",
        64,
        32,
        1,
        3800.0,
        ZEN4,
        512 * GiB,
        [H100_PCIE],
        disks=[("nvme0n1", 3.84 * TB, "nvme", 4, "SAMSUNG MZQL23T8HCLS")],
        nics=[("enp65s0f0", 25000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 3.5 * TB)],
    )
    pid = 33190
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd run -- python train_x3d.py", "constructed": name})
    per = dict(data_wait=0.052, transfer=0.006, forward=0.017, backward=0.033, optimizer=0.002, other=0.001)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = sum(per.values())
    flops = 4.0e12
    facts = ddp_facts(
        h,
        pid - 1,
        0,
        1,
        1,
        flops,
        6.0e10,
        compute,
        parameters=3_800_000,
        has_conv=True,
        conv_flop_share=0.88,
        input_rank=5,
        batch_size=16,
        loader_workers=12,
        prefetch_factor=2,
        pin_memory=True,
        cores=64,
        optimizer_impl="foreach",
    )
    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.03)],
        lambda r: dict(facts),
        lambda r: ident("local", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=16,
    )
    busy_share = (compute + per["transfer"]) / step
    h2d = 154e6 / step
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        pin = clip(j(rng, 0.985, 0.01))
        main = clip(j(rng, 0.35, 0.05))
        jb = jobcpu(
            rng,
            rank_each=pin + main + 0.08,
            main=main,
            workers=12,
            worker_each=0.30,
            usable=64,
            hottest_thread_busy=pin,
            hottest_thread_demand=clip(pin + 0.01, 0, 1.2),
            rank_side_thread_cores=pin + 0.08,
            launch_thread_cores=clip(main + 0.05),
            main_thread_demand=main + 0.01,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.3, jb)
        r += h.memory(41 * GB + j(rng, 2e8), 9.1 * GB, 12 * 1.3 * GB)
        r += h.storage(
            {"nvme0n1": dict(read=j(rng, 2.1e8), rops=j(rng, 1700), busy=0.09, qd=0.2)},
            dict(chars=j(rng, 2.1e8), bytes=j(rng, 2.1e8), worker=j(rng, 2.1e8)),
            capacity={"/": 0.58},
        )
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.86 * busy_share,
            0.31 * busy_share,
            0.55 * busy_share,
            busy_share,
            19.4e9,
            60 + 250 * busy_share,
            1755,
            pcie=(1.5e6, h2d),
            spec=H100_PCIE,
            job_process=1.0,
            procs={pid: 18.9e9},
        )
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def video_decode_32t_8l4(name, rng, t0):
    """A 2U server with 8 L4s and one 16-core EPYC 9124 (32 threads), a dcgm-exporter on the node:
    8-rank DDP fine-tuning VideoMAE-S on 16-frame H.264 clips decoded by PyAV in 2 loader workers per
    rank. Each worker runs FFmpeg's decoder threads and the resize/crop: ~1.6 cores each, 16 workers
    ~26 cores, the 8 ranks ~4.4: the host's 32 threads are ~96% busy and ~3 cores of threads wait on
    run queues. The GPUs wait for batches ~61% of a 0.85 s step (SMs ~33%, NVML busy ~37%)."""
    spec = L4
    h = Host(
        rng,
        "l4x8-2u-05",
        "AMD EPYC 9124 16-Core Processor",
        32,
        16,
        1,
        3711.0,
        ZEN4,
        384 * GiB,
        [spec] * 8,
        disks=[("nvme0n1", 960 * GB, "nvme", 4, "MZ1L2960HCJR"), ("nvme1n1", 7.68 * TB, "nvme", 4, "MZQL27T6HBLA")],
        nics=[("ens2f0np0", 25000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 0.9 * TB), ("/data", "xfs", "/dev/nvme1n1", False, 7.0 * TB)],
        dcgm=True,
    )
    base = 18800
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 8 run_videomae.py", "constructed": name},
    )
    per = dict(
        data_wait=0.52, transfer=0.006, forward=0.10, backward=0.20, optimizer=0.009, communication=0.011, other=0.004
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = sum(per.values())
    flops = 2.8e12  # 8 clips x 1568 tokens through ViT-S, forward + backward (attention included)

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            8,
            8,
            flops,
            4.0e10,
            compute,
            parameters=22_000_000,
            input_rank=5,
            has_conv=True,
            conv_flop_share=0.04,
            batch_size=8,
            loader_workers=2,
            prefetch_factor=2,
            cores=32,
            ddp_comm_timing="comm hook",
            ddp_buckets=4,
            comm_seconds_per_step=j(rng, 0.03),
            comm_exposed_seconds_per_step=j(rng, 0.011),
            comm_overlapped_seconds_per_step=j(rng, 0.019),
            comm_overlap_ratio=0.63,
            optimizer_impl="foreach",
        )

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.05) for _ in range(8)],
        facts,
        lambda r: ident("videomae", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=8,
    )
    busy_share = (compute + per["communication"] + per["transfer"]) / step
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(
            rng,
            ranks=8,
            rank_each=0.55,
            main=0.42,
            workers=16,
            worker_each=0.0,
            usable=32,
            runqueue_wait_cores=j(rng, 3.1, 0.08),
            pressure_some=clip(j(rng, 0.52, 0.05)),
            comm_thread_cores=8 * 0.03,
        )
        wk = [j(rng, 1.62, 0.05) for _ in range(16)]
        jb.update(
            worker_busy_cores=sum(wk),
            worker_max_busy_cores=max(wk),
            worker_hottest_thread_busy=clip(j(rng, 0.86, 0.03)),
            worker_max_demand=1.0,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.4, jb, psi=clip(j(rng, 0.55, 0.05)))
        r += h.memory(96 * GB + j(rng, 4e8), 8 * 4.2 * GB, 16 * 1.6 * GB, 0.1 * GB)
        r += h.storage(
            {"nvme1n1": dict(read=j(rng, 9e7), rops=j(rng, 700), busy=0.05, qd=0.1)},
            dict(chars=j(rng, 9e7), bytes=j(rng, 9e7), worker=j(rng, 9e7)),
            capacity={"/": 0.31, "/data": 0.62},
        )
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.88 * busy_share,
                0.45 * busy_share,
                0.30 * busy_share,
                busy_share,
                15.8e9,
                18 + 52 * busy_share,
                2040,
                pcie=(1.2e6, 2.4e7),
                spec=spec,
                job_process=1.0,
                procs={base + 1 + i: 15.3e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def host_swap_deep_prefetch(name, rng, t0):
    """4x A100 80GB PCIe on a 64-thread host with 256 GiB and an NVMe swap partition: a 3D
    segmentation model (4 ranks x 10 workers) with prefetch_factor=8 over 96^3 x 4-channel float32
    crops plus their one-hot masks (~620 MB a batch): ~200 GB of batches in flight plus each worker's
    copy of the case index; RAM is full (99.3%), the kernel swaps in ~470 MB/s and out ~390 MB/s,
    PSI memory some ~68% / full ~41%, workers stall in page faults (D state). Workers ~0.2 core, data
    wait ~71% of a 2.9 s step, GPUs busy ~28%. The swap NVMe is ~93% busy at ~220k IOPS (4 KiB)."""
    h = Host(
        rng,
        "a100pcie-4x-09",
        "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
        64,
        32,
        1,
        3200.0,
        CLX,
        256 * GiB,
        [A100_PCIE80] * 4,
        disks=[
            ("nvme0n1", 1.92 * TB, "nvme", 4, "INTEL SSDPE2KX020T8"),
            ("nvme1n1", 7.68 * TB, "nvme", 4, "MZQL27T6HBLA"),
        ],
        nics=[("eno1", 25000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 1.6 * TB), ("/data", "xfs", "/dev/nvme1n1", False, 7.0 * TB)],
        dcgm=True,
    )
    base = 12400
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 4 train_seg3d.py", "constructed": name},
    )
    per = dict(
        data_wait=2.06, transfer=0.035, forward=0.24, backward=0.49, optimizer=0.012, communication=0.02, other=0.01
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = sum(per.values())
    flops = 1.05e14

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            4,
            4,
            flops,
            6.5e11,
            compute,
            parameters=31_000_000,
            has_conv=True,
            conv_flop_share=0.95,
            input_rank=5,
            autocast_dtype="float16",
            compute_dtype="float16",
            batch_size=2,
            loader_workers=10,
            prefetch_factor=8,
            cores=64,
            ddp_comm_timing="comm hook",
            comm_seconds_per_step=j(rng, 0.05),
            comm_exposed_seconds_per_step=j(rng, 0.02),
            comm_overlapped_seconds_per_step=j(rng, 0.03),
            comm_overlap_ratio=0.6,
        )

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.06) for _ in range(4)],
        facts,
        lambda r: ident("seg3d", r, 4, 4, h, base + 1 + r, h.uuids[r]),
        examples_per_step=2,
    )
    busy_share = (compute + per["transfer"] + per["communication"]) / step
    sw_in = sw_out = 0.0
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(
            rng,
            ranks=4,
            rank_each=0.45,
            main=0.3,
            workers=40,
            worker_each=0.2,
            usable=64,
            processes_in_disk_wait=int(j(rng, 17, 0.15)),
            threads_in_disk_wait=int(j(rng, 23, 0.15)),
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.4, jb, iowait=clip(j(rng, 0.21, 0.05)), psi=0.08)
        used = 256 * GiB * 0.993
        r += h.memory(used, 4 * 9.5 * GB, 40 * 6.3 * GB, 0.2 * GB, psi_some=clip(j(rng, 0.68, 0.04)))
        si, so = j(rng, 4.7e8, 0.06), j(rng, 3.9e8, 0.06)
        sw_in += si * iv
        sw_out += so * iv
        set_reading(r, "cpu_memory", "host", "swap_in_bytes_per_second", si)
        set_reading(r, "cpu_memory", "host", "swap_out_bytes_per_second", so)
        set_reading(r, "cpu_memory", "host", "swap_in_bytes_total", 3.1e11 + sw_in)
        set_reading(r, "cpu_memory", "host", "swap_out_bytes_total", 4.4e11 + sw_out)
        set_reading(r, "cpu_memory", "host", "pressure_full", clip(j(rng, 0.41, 0.05)))
        r += h.storage(
            {
                "nvme0n1": dict(read=si, write=so, rops=si / 4096, wops=so / 16384, busy=0.93, qd=j(rng, 9.0, 0.1)),
                "nvme1n1": dict(read=j(rng, 2.1e8), rops=j(rng, 900), busy=0.06, qd=0.2),
            },
            dict(chars=j(rng, 2.2e8), bytes=j(rng, 2.1e8), worker=j(rng, 2.1e8), psi_some=0.44, psi_full=0.3),
            host_psi=(clip(j(rng, 0.47, 0.05)), clip(j(rng, 0.31, 0.05))),
            capacity={"/": 0.44, "/data": 0.51},
        )
        r += h.network(iv=iv)
        for i in range(4):
            s = gs(
                rng,
                0.8 * busy_share,
                0.42 * busy_share,
                0.5 * busy_share,
                busy_share,
                52.4e9,
                45 + 240 * busy_share,
                1410,
                pcie=(2e6, 620e6 / 4 / step),
                spec=A100_PCIE80,
                job_process=1.0,
                procs={base + 1 + i: 51.9e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def _a2_vm(rng, hostname):
    return one_gpu_vm(
        rng,
        hostname,
        A100_SXM40,
        "Intel(R) Xeon(R) CPU @ 2.20GHz",
        12,
        85 * GiB,
        flags=CLX,
        nic=("ens4", 24000),
        dcgm=True,
    )


def _single_gpu_job(name, rng, t0, h, pid, cmd, per, facts, examples, gpu_fn, n=60, cpu_fn=None, mem=(18 * GB, 6 * GB)):
    tr = Trace(h, t0, {"pid": pid, "command": cmd, "constructed": name})
    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.03)],
        facts,
        lambda r: ident("local", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=examples,
    )
    for tick, t, iv in ticks(rng, n, t0):
        ph, ranks = job.report(job.collect(t))
        jb = (
            cpu_fn(rng)
            if cpu_fn
            else jobcpu(rng, rank_each=1.1, main=0.9, workers=4, worker_each=0.12, usable=h.logical)
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.25, jb)
        r += h.memory(mem[0] + j(rng, 1e8), mem[1], jb.get("workers", 0) * 0.8 * GB)
        r += h.storage({}, dict(chars=j(rng, 5e5)), capacity={"/": 0.47})
        r += h.network(iv=iv)
        r += h.gpu_readings(0, gpu_fn(tick), tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def a100_40g_allocator_thrash(name, rng, t0):
    """One A100 SXM 40GB (a 12-vCPU cloud VM, DCGM on): a 1.3B decoder, bf16 autocast with fp32
    master weights and AdamW (20.8 GB of states), batches built to a token budget with dynamic
    lengths. The caching allocator cannot reuse its blocks for the changing shapes: ~2.8 cudaMalloc
    retries a step, each a cache flush (synchronise + cudaFree of every cached block) and fresh
    mallocs, ~0.1 s with the GPU idle, inside forward and backward on the GPU's timeline. NVML shows
    98.6% of the memory used, the tensors peak at 36.9 GB (86%). SMs ~64%, NVML busy ~71%."""
    h = _a2_vm(rng, "a2-highgpu-1g-31")
    pid = 9911
    per = dict(data_wait=0.003, transfer=0.002, forward=0.31, backward=0.66, optimizer=0.05, other=0.01)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    flops = 7.0e13
    state = {"retries": 3100}

    def facts(r):
        state["retries"] += int(j(rng, 2.8 * 1.0 / sum(per.values()), 0.2) + 0.5)
        return ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            flops,
            3.3e11,
            compute,
            parameters=1_310_000_000,
            batch_size=4,
            tokens_per_example=2048.0,
            cores=12,
            cuda_memory_total_bytes=A100_SXM40["mem"],
            cuda_memory_reserved_bytes=41_700_000_000,
            cuda_memory_allocated_bytes=22_400_000_000,
            cuda_memory_peak_allocated_bytes=36_900_000_000,
            cuda_alloc_retries=state["retries"],
            cuda_alloc_retries_per_step=j(rng, 2.8, 0.08),
            cuda_ooms=0,
            cuda_expandable_segments=False,
        )

    busy = 0.71

    def gpu_fn(tick):
        return gs(
            rng,
            0.9 * busy,
            0.58 * busy,
            0.33 * busy,
            busy,
            42.33e9,
            60 + 300 * busy,
            1410,
            pcie=(2e6, 5e6),
            spec=A100_SXM40,
            job_process=1.0,
            procs={pid: 41.9e9},
        )

    return _single_gpu_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python train_lm.py --token-budget 8192",
        per,
        facts,
        4,
        gpu_fn,
        mem=(27 * GB, 11 * GB),
    )


def a100_40g_full_but_fine(name, rng, t0):
    """The same kind of VM and model, with packed fixed-length sequences (12 x 1024 tokens): the
    caching allocator has reserved nearly all of the GPU (NVML 99.0% used, tensors peak at 39.1 GB,
    91%) and reuses its blocks: 0 retries, no OOM. SMs ~95%, tensor ~62%, ~46% MFU: the GPU computes
    all the time; a full memory is just the allocator keeping its cache."""
    h = _a2_vm(rng, "a2-highgpu-1g-32")
    pid = 10452
    per = dict(data_wait=0.002, transfer=0.001, forward=0.23, backward=0.47, optimizer=0.035, other=0.004)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    flops = 1.05e14

    def facts(r):
        return ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            flops,
            3.6e11,
            compute,
            parameters=1_310_000_000,
            batch_size=12,
            tokens_per_example=1024.0,
            cores=12,
            cuda_memory_total_bytes=A100_SXM40["mem"],
            cuda_memory_reserved_bytes=42_050_000_000,
            cuda_memory_allocated_bytes=22_400_000_000,
            cuda_memory_peak_allocated_bytes=39_100_000_000,
            cuda_alloc_retries=0,
            cuda_alloc_retries_per_step=0.0,
            cuda_ooms=0,
        )

    def gpu_fn(tick):
        return gs(
            rng,
            0.95,
            0.62,
            0.44,
            0.995,
            42.52e9,
            372.0,
            1410,
            pcie=(2e6, 4e6),
            spec=A100_SXM40,
            rel=0.015,
            job_process=1.0,
            procs={pid: 42.1e9},
        )

    return _single_gpu_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python train_lm.py --pack 1024",
        per,
        facts,
        12,
        gpu_fn,
        mem=(26 * GB, 11 * GB),
    )


def nic_shared_nfs_other_team(name, rng, t0):
    """A DGX A100 80GB shared by two teams: this job (4-rank DDP, GPUs 0-3) trains a ViT-B on
    uncompressed 12-band satellite tiles (512 x 512 x 12 x 2 B = 6.3 MB each) read from an NFS mount
    over the node's single 100 GbE port; the other team's job holds GPUs 4-7 and stages its data
    set from object storage with `s5cmd` (~7.5 cores, ~9.8 GB/s in over the same port). The port
    receives ~12.0 of 12.5 GB/s; this job's NFS reads get ~2.1 GB/s of it (17%). Data wait ~48% of
    a 0.75 s step, workers ~0.18 core each and often in D state (NFS waits), GPUs 0-3 busy ~50%;
    GPUs 4-7 ~96% busy with the other team's processes (no process of this job)."""
    nfs = ("/mnt/datasets", "nfs4", "nas01:/export/datasets", True, 0)
    h = dgx_a100(rng, "dgx-a100-shared-4", mounts=[("/raid", "ext4", "/dev/md1", False, 14 * TB), nfs])
    base = 51200
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 4 train_vit_s2.py", "constructed": name},
    )
    per = dict(
        data_wait=0.35, transfer=0.016, forward=0.12, backward=0.24, optimizer=0.01, communication=0.012, other=0.004
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = sum(per.values())
    flops = 4.0e13

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            4,
            4,
            flops,
            1.6e11,
            compute,
            parameters=86_600_000,
            input_rank=4,
            has_conv=True,
            conv_flop_share=0.02,
            batch_size=64,
            loader_workers=8,
            prefetch_factor=4,
            cores=256,
            ddp_comm_timing="comm hook",
            ddp_buckets=14,
            comm_seconds_per_step=j(rng, 0.03),
            comm_exposed_seconds_per_step=j(rng, 0.012),
            comm_overlapped_seconds_per_step=j(rng, 0.018),
            comm_overlap_ratio=0.6,
        )

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.08) for _ in range(4)],
        facts,
        lambda r: ident("s2vit", r, 4, 4, h, base + 1 + r, h.uuids[r]),
        examples_per_step=64,
    )
    busy_share = (compute + per["transfer"] + per["communication"]) / step
    ours = 4 * 64 * 6.3e6 / step
    other_pids = [88121, 88122, 88123, 88124]
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(
            rng,
            ranks=4,
            rank_each=0.75,
            main=0.55,
            workers=32,
            worker_each=0.18,
            usable=256,
            processes_in_disk_wait=int(j(rng, 14, 0.2)),
            threads_in_disk_wait=int(j(rng, 19, 0.2)),
        )
        s5 = j(rng, 7.5, 0.05)
        outside = [("s5cmd", 90112, s5)] + [("python3", p, j(rng, 1.25, 0.05)) for p in other_pids[:2]]
        r = h.cpu(
            jb["rank_busy_cores"] + jb["worker_busy_cores"] + s5 + 4 * 1.25 + 24 * 0.3 + 1.2,
            jb,
            iowait=0.012,
            outside=outside,
        )
        r += h.memory(610 * GB + j(rng, 1e9), 4 * 8.5 * GB, 32 * 0.9 * GB, 0.2 * GB)
        nfs_bytes = j(rng, ours, 0.05)
        r += h.storage(
            {},
            dict(chars=nfs_bytes, bytes=0.0, calls=j(rng, 2.1e4)),
            capacity={"/": 0.35, "/raid": 0.61},
        )
        other_rx = j(rng, 9.85e9, 0.02)
        r += h.network(
            nic_rates={"enp226s0": (j(rng, 3.1e8, 0.05), min(12.3e9, nfs_bytes * 1.02 + other_rx))},
            nfs_rates={"/mnt/datasets": nfs_bytes * 1.02},
            iv=iv,
        )
        for i in range(8):
            if i < 4:
                s = gs(
                    rng,
                    0.85 * busy_share,
                    0.5 * busy_share,
                    0.3 * busy_share,
                    busy_share,
                    31.5e9,
                    70 + 300 * busy_share,
                    1410,
                    pcie=(2e6, 64 * 6.3e6 / step),
                    nvl=(3.5e8, 3.5e8),
                    spec=A100_SXM80,
                    job_process=1.0,
                    procs={base + 1 + i: 31.0e9},
                )
            else:
                s = gs(
                    rng,
                    0.82,
                    0.47,
                    0.38,
                    0.96,
                    66.0e9,
                    330.0,
                    1410,
                    pcie=(3e6, 1.5e8),
                    nvl=(6e9, 6e9),
                    spec=A100_SXM80,
                    job_process=0.0,
                    procs={other_pids[i - 4]: 65.5e9},
                )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def multinode_roce_half_speed(name, rng, t0):
    """Two 8x A100 80GB SXM nodes, one 200 Gb/s RoCE NIC each for NCCL (mlx5_0, ens1f0np0) and a
    10 GbE management port: DDP of a 1.3B GPT, fp32 gradients (5.2 GB). Node 1's NIC negotiated
    100 Gb/s (its port rate reads 100). NCCL's rings cross the node boundary: each NIC carries ~9.75
    GB each way a step, at the slow link's ~11.5 GB/s: ~0.85 s in flight, ~0.45 s of it exposed
    after backward on every rank: ~36% of a 1.24 s step. Node 1's port ~63% busy on average (~92%
    while the all-reduce runs), node 0's ~32% of its 200 Gb/s; NVLink ~3%. No rank computes
    longer than the others."""
    hosts, traces = [], []
    base = [40100, 61700]
    for node in range(2):
        speed = 200 if node == 0 else 100
        h = Host(
            rng,
            f"a100-node-{17 + node}",
            "AMD EPYC 7763 64-Core Processor",
            256,
            128,
            2,
            3529.0,
            ZEN,
            2015 * GiB,
            [A100_SXM80] * 8,
            disks=[
                ("nvme0n1", 1.92 * TB, "nvme", 4, "SAMSUNG MZ1L21T9HCLS"),
                ("nvme1n1", 7.68 * TB, "nvme", 4, "MZQL27T6"),
            ],
            nics=[("eno1", 10000), ("ens1f0np0", speed * 1000)],
            ib=[("mlx5_0", 1, speed)],
            mounts=[
                ("/", "ext4", "/dev/nvme0n1p2", False, 1.79 * TB),
                ("/data", "xfs", "/dev/nvme1n1", False, 7.0 * TB),
            ],
            dcgm=True,
        )
        hosts.append(h)
        traces.append(
            Trace(
                h,
                t0 + node * 0.17,
                {
                    "pid": base[node],
                    "command": "bottleneckd run -- torchrun --nnodes 2 --nproc_per_node 8 train_gpt.py",
                    "constructed": f"{name}.node{node}",
                },
            )
        )
    per = dict(
        data_wait=0.003, transfer=0.002, forward=0.25, backward=0.50, optimizer=0.025, communication=0.45, other=0.006
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = sum(per.values())
    flops = 1.36e14
    vol = 9.75e9

    def make_facts(node):
        h = hosts[node]

        def facts(r):
            f = ddp_facts(
                h,
                base[node],
                r,
                16,
                8,
                flops,
                4.6e11,
                compute,
                parameters=1_313_000_000,
                batch_size=8,
                tokens_per_example=2048.0,
                loader_workers=2,
                cores=256,
                ddp_comm_timing="comm hook",
                ddp_buckets=210,
                comm_seconds_per_step=j(rng, 0.85, 0.02),
                comm_exposed_seconds_per_step=j(rng, 0.45, 0.02),
                comm_overlapped_seconds_per_step=j(rng, 0.40, 0.03),
                comm_overlap_ratio=0.47,
            )
            f["cuda_uuids"] = [h.uuids[r]]
            return f

        return facts

    step_phases = {}

    def step_fn(k):
        if k not in step_phases:
            step_phases[k] = [noisy(rng, per, 0.02) for _ in range(16)]
        return step_phases[k]

    for node in range(2):
        h, tr = hosts[node], traces[node]
        job = StepJob(
            t0 + node * 0.17,
            (lambda nd: lambda k: step_fn(k)[nd * 8 : nd * 8 + 8])(node),
            make_facts(node),
            (
                lambda nd: (
                    lambda r: ident(
                        "gpt13-2n", nd * 8 + r, 16, 8, hosts[nd], base[nd] + 1 + r, hosts[nd].uuids[r], node_rank=nd
                    )
                )
            )(node),
            examples_per_step=8,
        )
        for tick, t, iv in ticks(rng, 70, t0 + node * 0.17):
            ph, ranks = job.report(job.collect(t))
            jb = jobcpu(
                rng,
                ranks=8,
                rank_each=1.2,
                main=0.82,
                workers=16,
                worker_each=0.06,
                usable=256,
                comm_thread_cores=8 * 0.1,
            )
            r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.8, jb)
            r += h.memory(240 * GB + j(rng, 5e8), 8 * 12 * GB, 16 * 0.8 * GB, 0.2 * GB)
            r += h.storage({}, dict(chars=j(rng, 1.1e6)), capacity={"/": 0.4, "/data": 0.55})
            rate = j(rng, vol / step, 0.04)
            r += h.network(
                nic_rates={"ens1f0np0": (j(rng, 2.1e6, 0.2), j(rng, 2.4e6, 0.2))},
                ib_rates={"mlx5_0/1": (rate, j(rng, rate, 0.01))},
                iv=iv,
            )
            nv = vol / step
            for i in range(8):
                s = gs(
                    rng,
                    0.90 * (compute + 0.45 * 0.3) / step,
                    0.55 * compute / step,
                    0.4 * compute / step,
                    0.995,
                    66.4e9,
                    255.0,
                    1410,
                    pcie=(rate / 8, rate / 8),
                    nvl=(nv, nv),
                    spec=A100_SXM80,
                    job_process=1.0,
                    procs={base[node] + 1 + i: 65.9e9},
                )
                r += h.gpu_readings(i, s, tick)
            tr.add(t, iv, r, ph, ranks)
    return traces


def lora_h100_micro1(name, rng, t0):
    """One H100 SXM (26-vCPU VM): LoRA (r=16 on q,k,v,o) fine-tuning of a 1.2B decoder held in bf16,
    Hugging Face Trainer + PEFT, micro-batch 1 x 512 tokens, gradient accumulation 16, no
    torch.compile. A step is ~3,000 small kernels launched from Python: the launching threads (the
    main thread in forward, the autograd thread in backward) are at a full core between them, the
    GPU busy ~28% of the time, SMs ~11%, tensor ~3%, ~3% of the bf16 peak. Each micro-batch is a
    hook step (the optimizer step of the tiny adapters every 16th)."""
    h = one_gpu_vm(rng, "a3-h100-1g-11", H100_SXM, "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", 26, 234 * GiB)
    pid = 7303
    per = dict(data_wait=0.001, transfer=0.0004, forward=0.029, backward=0.053, optimizer=0.0035, other=0.004)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    flops = 2.6e12

    def facts(r):
        return ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            flops,
            1.0e10,
            compute,
            parameters=1_241_000_000,
            param_dtype="bfloat16",
            batch_size=1,
            tokens_per_example=512.0,
            loader_workers=2,
            cores=26,
            framework="transformers",
            cuda_memory_total_bytes=H100_SXM["mem"],
            cuda_memory_reserved_bytes=6_900_000_000,
            cuda_memory_allocated_bytes=2_700_000_000,
            cuda_memory_peak_allocated_bytes=5_800_000_000,
            cuda_alloc_retries=0,
        )

    def cpu_fn(rng):
        main = clip(j(rng, 0.57, 0.03))
        auto = clip(j(rng, 0.41, 0.03))
        return jobcpu(
            rng,
            rank_each=main + auto + 0.09,
            main=main,
            workers=2,
            worker_each=0.03,
            usable=26,
            launch_thread_cores=clip(main + auto),
            hottest_thread_busy=main,
            main_thread_demand=main + 0.01,
            rank_side_thread_cores=auto + 0.09,
        )

    def gpu_fn(tick):
        return gs(
            rng,
            0.11,
            0.03,
            0.04,
            0.28,
            7.5e9,
            128.0,
            1980,
            pcie=(1.5e6, 3e6),
            spec=H100_SXM,
            rel=0.05,
            job_process=1.0,
            procs={pid: 7.0e9},
        )

    return _single_gpu_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python finetune_lora.py --per_device_train_batch_size 1 --gradient_accumulation_steps 16",
        per,
        facts,
        1,
        gpu_fn,
        cpu_fn=cpu_fn,
        mem=(14 * GB, 5.5 * GB),
    )


def forloop_adamw_2000_tensors(name, rng, t0):
    """One H100 SXM: a 620M-parameter multi-task perception model (a backbone and 40 heads, 2,048
    parameter tensors) trained with torch.optim.AdamW(foreach=False) (set to save the foreach
    temporaries' memory): every step launches ~12 small kernels per tensor, ~24,000 launches from
    the main thread, ~0.18 s during which the GPU mostly waits for them (busy ~30%, DRAM ~3.5%: the
    states' 22 GB would take 7 ms at the HBM's rate). Optimizer ~45% of a 0.40 s step; forward and
    backward are compute-bound (SMs ~85%)."""
    h = one_gpu_vm(rng, "a3-h100-1g-17", H100_SXM, "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", 26, 234 * GiB)
    pid = 4410
    per = dict(data_wait=0.003, transfer=0.002, forward=0.07, backward=0.14, optimizer=0.178, other=0.004)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = sum(per.values())
    flops = 6.0e13

    def facts(r):
        return ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            flops,
            3.4e11,
            compute,
            parameters=620_000_000,
            input_rank=4,
            has_conv=True,
            conv_flop_share=0.35,
            batch_size=64,
            loader_workers=8,
            cores=26,
            optimizer_impl="for-loop",
            cuda_memory_total_bytes=H100_SXM["mem"],
            cuda_memory_reserved_bytes=52_000_000_000,
            cuda_memory_allocated_bytes=12_600_000_000,
            cuda_memory_peak_allocated_bytes=47_000_000_000,
            cuda_alloc_retries=0,
        )

    fb = (per["forward"] + per["backward"]) / step
    op = per["optimizer"] / step
    busy = fb * 0.97 + op * 0.30 + 0.005

    def cpu_fn(rng):
        main = clip(j(rng, 0.93, 0.02))
        return jobcpu(
            rng,
            rank_each=main + 0.25,
            main=main,
            workers=8,
            worker_each=0.22,
            usable=26,
            launch_thread_cores=clip(main + 0.15),
        )

    def gpu_fn(tick):
        return gs(
            rng,
            0.85 * fb + 0.05 * op,
            0.5 * fb,
            0.3 * fb + 0.035 * op,
            busy,
            53.1e9,
            100 + 500 * fb,
            1980,
            pcie=(2e6, 1.1e8),
            spec=H100_SXM,
            job_process=1.0,
            procs={pid: 52.6e9},
        )

    return _single_gpu_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python train_multitask.py",
        per,
        facts,
        64,
        gpu_fn,
        cpu_fn=cpu_fn,
        mem=(40 * GB, 9 * GB),
    )


def clip_grad_item_compute_bound(name, rng, t0):
    """HGX H100, 8-rank DDP: a 1.3B GPT (bf16, micro-batch 16 x 2048). Every step the loop calls
    `gnorm = clip_grad_norm_(model.parameters(), 1.0).item()` (foreach over 390 tensors) to log the
    norm: a host sync between backward and the optimizer. The host waits there for the GPU to
    finish backward, so most of the main thread's stack samples sit on that line (`other` in the
    stacks); the sync costs the GPU only ~4 ms of idle a step (the optimizer and the next forward
    are launched late), in the hook's backward/other. SMs ~93%, tensor ~60%, ~45% MFU; the
    all-reduce is hidden (exposed ~15 ms). `run` with stacks."""
    h = hgx_h100(rng, "hgx-h100-088")
    base = 30500
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 8 train_gpt.py", "constructed": name},
    )
    per = dict(
        data_wait=0.004, transfer=0.002, forward=0.24, backward=0.49, optimizer=0.012, communication=0.015, other=0.006
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = sum(per.values())
    flops = 3.3e14

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            8,
            8,
            flops,
            1.1e12,
            compute,
            parameters=1_313_000_000,
            batch_size=16,
            tokens_per_example=2048.0,
            loader_workers=2,
            cores=224,
            ddp_comm_timing="comm hook",
            ddp_buckets=210,
            comm_seconds_per_step=j(rng, 0.09),
            comm_exposed_seconds_per_step=j(rng, 0.015),
            comm_overlapped_seconds_per_step=j(rng, 0.075),
            comm_overlap_ratio=0.83,
        )

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.015) for _ in range(8)],
        facts,
        lambda r: ident("gpt13", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=16,
    )
    sites = {
        "wait": (
            "other",
            "train",
            "/work/gpt/train_gpt.py",
            214,
            "gnorm = clip_grad_norm_(model.parameters(), 1.0).item()",
        ),
        "backward": ("backward", "train", "/work/gpt/train_gpt.py", 211, "loss.backward()"),
        "forward": ("forward", "train", "/work/gpt/train_gpt.py", 207, "loss = model(x, targets=y)"),
        "optimizer": ("optimizer", "train", "/work/gpt/train_gpt.py", 216, "opt.step()"),
        "data": ("data_wait", "train", "/work/gpt/train_gpt.py", 203, "x, y = next(batches)"),
    }
    dist = dict(wait=0.62, backward=0.22, forward=0.10, optimizer=0.03, data=0.03)
    nv = 2 * 7 / 8 * 5.25e9 / step
    for tick, t, iv in ticks(rng, 60, t0):
        done = job.collect(t)
        ph, ranks = job.report(done)
        jb = jobcpu(rng, ranks=8, rank_each=1.2, main=0.97, workers=16, worker_each=0.04, usable=224)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.6, jb)
        r += h.memory(190 * GB + j(rng, 5e8), 8 * 12 * GB, 16 * 0.7 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 1.0e6)), capacity={"/": 0.33, "/raid": 0.47})
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.93,
                0.60,
                0.44,
                0.99,
                61.3e9,
                610.0,
                1980,
                pcie=(2e6, 5e6),
                nvl=(nv, nv),
                spec=H100_SXM,
                rel=0.015,
                job_process=1.0,
                procs={base + 1 + i: 60.8e9},
            )
            r += h.gpu_readings(i, s, tick)
        stacks = None
        if done:
            c: dict = {}
            for _ in range(2):
                k = pick(rng, dist)
                c[k] = c.get(k, 0) + 1
            rows = []
            for k, n in c.items():
                phase, fn, file, line, text = sites[k]
                rows.append([phase, "main", fn, file, line, text, n, False if phase == "data_wait" else None, False])
            stacks = {"source": "py-spy", "rate_hz": 2.0, "rows": rows}
        tr.add(t, iv, r, ph, ranks, stacks=stacks)
    return tr


def rl_rollout_generation(name, rng, t0):
    """HGX H100, GRPO on a 7B policy: FSDP training (8 ranks, bf16) alternating with rollouts that
    the same processes generate with Hugging Face `generate()` on the gathered weights (64 prompts
    per GPU, up to 1024 new tokens, KV cache): ~8 s of decoding, then 8 optimizer steps of ~1.0 s.
    The generation runs outside the hooked step (between step_end and the next step_start): the
    first step after each rollout carries ~8 s of `other`, ~49% of the wall time. Decoding at batch
    64 streams the 14 GB of weights and the KV cache every token: DRAM ~79% busy, SMs ~58%, tensor
    ~14%; training steps SMs ~92%, tensor ~60%, ~49% MFU, NVLink ~8%."""
    h = hgx_h100(rng, "hgx-h100-140")
    base = 83300
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 8 grpo_train.py", "constructed": name},
    )
    per = dict(
        data_wait=0.002, transfer=0.002, forward=0.29, backward=0.58, optimizer=0.04, communication=0.03, other=0.01
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    gen, every = 8.0, 8
    flops = 4.4e14

    def step_fn(k):
        out = []
        g = j(rng, gen, 0.03)
        for _ in range(8):
            p = noisy(rng, per, 0.02)
            if k % every == 0:
                p["other"] += g
            out.append(p)
        return out

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            8,
            8,
            flops,
            1.4e12,
            compute,
            parameters=7_620_000_000,
            fsdp=True,
            sharded=True,
            ddp=False,
            batch_size=8,
            tokens_per_example=1536.0,
            loader_workers=1,
            cores=224,
            comm_seconds_per_step=j(rng, 0.42),
            comm_exposed_seconds_per_step=j(rng, 0.03),
            comm_overlapped_seconds_per_step=j(rng, 0.39),
            comm_overlap_ratio=0.93,
        )

    job = StepJob(
        t0, step_fn, facts, lambda r: ident("grpo7b", r, 8, 8, h, base + 1 + r, h.uuids[r]), examples_per_step=8
    )

    def seg(k, s, e):
        if k % every != 0:
            return [(s, e, "train")]
        g = e - s - sum(per.values())
        return [(s, s + g, "gen"), (s + g, e, "train")]

    for tick, t, iv in ticks(rng, 100, t0):
        ph, ranks = job.report(job.collect(t))
        w = segments_in(job.history, seg, t - iv, t)
        tot = sum(w.values()) or 1.0
        fg = w.get("gen", 0.0) / tot
        jb = jobcpu(rng, ranks=8, rank_each=1.15, main=0.96, workers=8, worker_each=0.02 * (1 - fg), usable=224)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.2, jb)
        r += h.memory(240 * GB + j(rng, 5e8), 8 * 19 * GB, 8 * 0.6 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 2e5)), capacity={"/": 0.36, "/raid": 0.52})
        r += h.network(iv=iv)
        for i in range(8):
            states = {
                "train": gs(
                    rng,
                    0.92,
                    0.60,
                    0.36,
                    0.995,
                    74.2e9,
                    650.0,
                    1980,
                    pcie=(2e6, 4e6),
                    nvl=(3.7e10, 3.7e10),
                    spec=H100_SXM,
                ),
                "gen": gs(
                    rng, 0.58, 0.14, 0.79, 0.98, 74.2e9, 540.0, 1980, pcie=(2e6, 2e6), nvl=(2e8, 2e8), spec=H100_SXM
                ),
            }
            s = mix(states, w or {"train": 1.0})
            s.update(job_process=1.0, procs={base + 1 + i: 73.7e9})
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def attach_s3_fuse_parquet(name, rng, t0):
    """`bottleneckd attach` to a 4-rank DDP job on an AWS g6e.12xlarge (4x L40S, 48 vCPUs, 100 Gb/s
    ENA): a CTR model reading zstd Parquet row groups from S3 through a mountpoint-s3 FUSE mount
    (/mnt/s3). The FUSE mount has no byte counter (storage_network rows unknown); the NIC receives
    ~11.8 of 12.5 GB/s, the job's read() calls return ~11.5 GB/s, the `mount-s3` daemon outside the
    job runs ~7 cores. 6 workers per rank at ~0.42 core (decompress + to tensors). The main
    threads wait for batches ~63% of the samples; GPUs busy ~34% (no DCGM: SM activity unknown). The
    3.8 TB instance-store NVMe is idle."""
    h = Host(
        rng,
        "ip-10-0-31-207",
        "AMD EPYC 7R13 Processor",
        48,
        24,
        1,
        None,
        ZEN,
        384 * GiB,
        [L40S] * 4,
        disks=[
            ("nvme0n1", 500 * GB, "nvme", None, "Amazon Elastic Block Store"),
            ("nvme1n1", 3.8 * TB, "nvme", 4, "Amazon EC2 NVMe Instance Storage"),
        ],
        nics=[("ens32", 100000)],
        mounts=[
            ("/", "ext4", "/dev/nvme0n1p1", False, 490 * GB),
            ("/opt/dlami/nvme", "ext4", "/dev/nvme1n1", False, 3.5 * TB),
            ("/mnt/s3", "fuse.mountpoint-s3", "mountpoint-s3", True, 0),
        ],
    )
    base = 4021
    tr = Trace(h, t0, {"pid": base, "command": "bottleneckd attach --pid 4021", "constructed": name})
    dist = dict(
        data_wait=0.63, forward=0.11, backward=0.17, optimizer=0.03, gpu_wait=0.02, communication=0.02, other=0.02
    )
    sites = {
        "data_wait": ("train", "/home/ubuntu/ctr/train.py", 97, "for dense, sparse, y in loader:", False, False),
        "forward": ("train", "/home/ubuntu/ctr/train.py", 101, "logits = model(dense, sparse)", None, False),
        "backward": ("train", "/home/ubuntu/ctr/train.py", 103, "loss.backward()", None, False),
        "optimizer": ("train", "/home/ubuntu/ctr/train.py", 104, "opt.step()", None, False),
        "gpu_wait": ("train", "/home/ubuntu/ctr/train.py", 108, "torch.cuda.synchronize()", None, False),
        "communication": ("train", "/home/ubuntu/ctr/train.py", 103, "loss.backward()", None, False),
        "other": ("train", "/home/ubuntu/ctr/train.py", 110, "meter.update(loss.detach())", None, False),
    }
    wsite = ("_read_group", "/home/ubuntu/ctr/data/parquet_ds.py", 64, "tbl = self.pf.read_row_group(g, columns=COLS)")
    why = "fuse.mountpoint-s3: no generic byte counter (NFS mountstats only)"
    for tick, t, iv in ticks(rng, 60, t0):
        ph, c = attach_phases(rng, dist, interval=iv)
        jb = jobcpu(rng, ranks=4, rank_each=0.62, main=0.45, workers=24, worker_each=0.42, usable=48)
        ms3 = j(rng, 7.1, 0.05)
        r = h.cpu(
            jb["rank_busy_cores"] + jb["worker_busy_cores"] + ms3 + 0.6,
            jb,
            outside=[("mount-s3", 1422, ms3)],
            sidecar=0.09,
        )
        r += h.memory(92 * GB + j(rng, 4e8), 4 * 6.2 * GB, 24 * 1.4 * GB, 0.1 * GB)
        rx = j(rng, 11.8e9, 0.015)
        r += h.storage(
            {},
            dict(chars=rx * 0.975, bytes=0.0, calls=j(rng, 9.0e4)),
            capacity={"/": 0.38, "/opt/dlami/nvme": 0.01},
        )
        r += h.network(nic_rates={"ens32": (j(rng, 3.9e8, 0.05), min(rx, 12.45e9))}, nfs_rates={"/mnt/s3": 0.0}, iv=iv)
        set_reading(r, "storage_network_bandwidth", "/mnt/s3", "throughput", None, why)
        set_reading(r, "storage_network_bandwidth", "/mnt/s3", "utilization", None, why)
        for i in range(4):
            s = gs(
                rng,
                0.3,
                0.1,
                0.1,
                0.34,
                21.4e9,
                140.0,
                2520,
                pcie=(3e6, 4.2e8),
                spec=L40S,
                job_process=1.0,
                procs={base + 1 + i: 20.9e9},
            )
            r += h.gpu_readings(i, s, tick)
        rows = stack_rows(c, sites)
        rows.append(["data_wait", "worker", *wsite, 1, False, False])
        tr.add(t, iv, r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": rows})
    return tr


def attach_h100_bf16_compute(name, rng, t0):
    """`bottleneckd attach` to an 8-rank torchrun job on an HGX H100 (all 8 GPUs the job's): a 3B
    decoder in bf16 autocast, DDP. SMs ~96%, tensor ~68%, DRAM ~40%, NVLink ~4%, NVML busy 99.8%;
    the main threads run ahead of the GPU and block in kernel launches (the launch queue is full),
    so their stack samples sit in forward/backward/optimizer. No hook facts (attach)."""
    h = hgx_h100(rng, "hgx-h100-203")
    base = 144000
    tr = Trace(h, t0, {"pid": base, "command": "bottleneckd attach --pid 144000", "constructed": name})
    dist = dict(
        forward=0.30, backward=0.52, optimizer=0.06, communication=0.04, other=0.05, data_wait=0.02, gpu_wait=0.01
    )
    sites = {
        "forward": ("train_step", "/opt/llm/train.py", 142, "out = model(input_ids=ids, labels=ids)", None, False),
        "backward": ("train_step", "/opt/llm/train.py", 143, "out.loss.backward()", None, False),
        "optimizer": ("train_step", "/opt/llm/train.py", 146, "optimizer.step()", None, False),
        "communication": ("train_step", "/opt/llm/train.py", 143, "out.loss.backward()", None, False),
        "other": (
            "main",
            "/opt/llm/train.py",
            201,
            "lr_sched.step(); optimizer.zero_grad(set_to_none=True)",
            None,
            False,
        ),
        "data_wait": ("main", "/opt/llm/train.py", 188, "ids = next(train_iter)", False, False),
        "gpu_wait": ("main", "/opt/llm/train.py", 205, "if step % 100 == 0: torch.cuda.synchronize()", None, False),
    }
    for tick, t, iv in ticks(rng, 60, t0):
        ph, c = attach_phases(rng, dist, interval=iv)
        jb = jobcpu(rng, ranks=8, rank_each=1.2, main=0.97, workers=16, worker_each=0.07, usable=224)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.7, jb, sidecar=0.1)
        r += h.memory(205 * GB + j(rng, 5e8), 8 * 14 * GB, 16 * 0.8 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 1.5e6)), capacity={"/": 0.42, "/raid": 0.36})
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.96,
                0.68,
                0.40,
                0.998,
                76.8e9,
                668.0,
                1980,
                pcie=(2e6, 5e6),
                nvl=(1.8e10, 1.8e10),
                spec=H100_SXM,
                rel=0.012,
                job_process=1.0,
                procs={base + 1 + i: 76.3e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(c, sites)})
    return tr


def unknown_gpu_rtx_pro_6000(name, rng, t0):
    """One NVIDIA RTX PRO 6000 Blackwell Server Edition (96 GB, PCIe gen5, GPM) in a 64-thread EPYC
    server: a GPU the catalog does not know, so its FLOP/s and DRAM peaks are unknown (no
    calibration was run). Full fine-tuning of a 1.5B decoder in bf16, micro-batch 16 x 1024:
    SMs ~95%, tensor ~62%, DRAM activity ~41% (GPM's fraction, with no B/s figure), NVML busy
    99.6%, clocks at their maximum, ~265 TFLOP/s achieved (about half of what the part's bf16
    dense rate is believed to be). Compute-bound; MFU cannot be stated."""
    spec = RTX_PRO_6000
    h = Host(
        rng,
        "gpu-srv-rtxpro-02",
        "AMD EPYC 9355P 32-Core Processor",
        64,
        32,
        1,
        4400.0,
        ZEN4,
        768 * GiB,
        [spec],
        disks=[("nvme0n1", 3.84 * TB, "nvme", 5, "MZWLO3T8HCLS")],
        nics=[("enp1s0f0np0", 100000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 3.5 * TB)],
    )
    missing = f"GPU model {spec['name']!r} is not in the catalog; run 'bottleneckd calibrate'"
    u = h.uuids[0]
    h.peaks = [
        p for p in h.peaks if not (p["device"] == "gpu0" and p["resource"] in ("gpu_compute", "gpu_memory_bandwidth"))
    ]
    for metric, res, unit in (
        ("fp16_bf16_tensor_dense", "gpu_compute", "FLOP/s"),
        ("fp32", "gpu_compute", "FLOP/s"),
        ("dram_bandwidth", "gpu_memory_bandwidth", "B/s"),
    ):
        h.peaks.append(
            {
                "resource": res,
                "device": "gpu0",
                "metric": metric,
                "value": None,
                "unit": unit,
                "origin": "unknown",
                "source": missing,
                "catalog_value": None,
                "uuid": u,
                "direction": "",
            }
        )
    h.gpus[0] = dict(spec, dram=1.0)  # placeholder for the helper's arithmetic; rows fixed below
    pid = 22087
    per = dict(data_wait=0.002, transfer=0.001, forward=0.19, backward=0.39, optimizer=0.02, other=0.004)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    flops = 1.6e14

    def facts(r):
        return ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            flops,
            4.5e11,
            compute,
            parameters=1_540_000_000,
            batch_size=16,
            tokens_per_example=1024.0,
            cores=64,
            cuda_memory_total_bytes=spec["mem"],
            cuda_memory_reserved_bytes=71_000_000_000,
            cuda_memory_allocated_bytes=25_000_000_000,
            cuda_memory_peak_allocated_bytes=66_000_000_000,
            cuda_alloc_retries=0,
        )

    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd run -- python sft.py --bs 16", "constructed": name})
    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.015)],
        facts,
        lambda r: ident("local", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=16,
    )
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(rng, rank_each=1.15, main=0.96, workers=4, worker_each=0.05, usable=64)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.3, jb)
        r += h.memory(34 * GB + j(rng, 1e8), 12 * GB, 4 * 0.8 * GB)
        r += h.storage({}, dict(chars=j(rng, 4e5)), capacity={"/": 0.27})
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.95,
            0.62,
            0.41,
            0.996,
            72.4e9,
            565.0,
            2617,
            pcie=(2e6, 5e6),
            spec=dict(spec, tdp=600.0),
            rel=0.015,
            job_process=1.0,
            procs={pid: 71.9e9},
        )
        g = h.gpu_readings(0, s, tick)
        set_reading(
            g,
            "gpu_memory_bandwidth",
            "gpu0",
            "throughput",
            None,
            "no theoretical DRAM bandwidth for this GPU in the catalog",
        )
        set_reading(g, "gpu_memory_bandwidth", "gpu0", "peak", None, "unknown")
        r += g
        tr.add(t, iv, r, ph, ranks)
    return tr


def balanced_ddp_data4_comm6(name, rng, t0):
    """HGX H100, 8-rank DDP of a 760M decoder (bf16, micro-batch 8 x 4096): data wait ~4% (the
    tokenised shards come through 6 workers per rank at ~0.5 core), the gradients' all-reduce
    exposed ~6% (fp32 buckets, ~90 ms in flight, two thirds hidden), SMs ~86%, tensor ~52%, ~42%
    MFU over the compute phases, nothing near a limit: a healthy job."""
    h = hgx_h100(rng, "hgx-h100-061")
    base = 56000
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 8 pretrain.py", "constructed": name},
    )
    per = dict(
        data_wait=0.02, transfer=0.003, forward=0.14, backward=0.28, optimizer=0.015, communication=0.03, other=0.005
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = sum(per.values())
    flops = 1.8e14

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            8,
            8,
            flops,
            6.0e11,
            compute,
            parameters=760_000_000,
            batch_size=8,
            tokens_per_example=4096.0,
            loader_workers=6,
            cores=224,
            ddp_comm_timing="comm hook",
            ddp_buckets=120,
            comm_seconds_per_step=j(rng, 0.09),
            comm_exposed_seconds_per_step=j(rng, 0.03),
            comm_overlapped_seconds_per_step=j(rng, 0.06),
            comm_overlap_ratio=0.67,
        )

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.03) for _ in range(8)],
        facts,
        lambda r: ident("pt760m", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=8,
    )
    nv = 2 * 7 / 8 * 3.04e9 / step
    busy_share = 1 - per["data_wait"] / step
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(rng, ranks=8, rank_each=1.2, main=0.93, workers=48, worker_each=0.5, usable=224)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.6, jb)
        r += h.memory(260 * GB + j(rng, 5e8), 8 * 10 * GB, 48 * 1.1 * GB, 0.2 * GB)
        r += h.storage(
            {"nvme1n1": dict(read=j(rng, 4.5e7), rops=j(rng, 350), busy=0.02)},
            dict(chars=j(rng, 4.5e7), bytes=j(rng, 4.5e7), worker=j(rng, 4.5e7)),
            capacity={"/": 0.3, "/raid": 0.58},
        )
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.90 * busy_share,
                0.55 * busy_share,
                0.42 * busy_share,
                busy_share,
                58.2e9,
                590.0,
                1980,
                pcie=(2e6, 6e6),
                nvl=(nv, nv),
                spec=H100_SXM,
                job_process=1.0,
                procs={base + 1 + i: 57.7e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


SCENARIOS = {
    "h100_tolist_metrics_stacks": h100_tolist_metrics_stacks,
    "h200_tolist_loss_tracking": h200_tolist_loss_tracking,
    "pin_memory_thread_bound": pin_memory_thread_bound,
    "video_decode_32t_8l4": video_decode_32t_8l4,
    "host_swap_deep_prefetch": host_swap_deep_prefetch,
    "a100_40g_allocator_thrash": a100_40g_allocator_thrash,
    "a100_40g_full_but_fine": a100_40g_full_but_fine,
    "nic_shared_nfs_other_team": nic_shared_nfs_other_team,
    "multinode_roce_half_speed": multinode_roce_half_speed,
    "lora_h100_micro1": lora_h100_micro1,
    "forloop_adamw_2000_tensors": forloop_adamw_2000_tensors,
    "clip_grad_item_compute_bound": clip_grad_item_compute_bound,
    "rl_rollout_generation": rl_rollout_generation,
    "attach_s3_fuse_parquet": attach_s3_fuse_parquet,
    "attach_h100_bf16_compute": attach_h100_bf16_compute,
    "unknown_gpu_rtx_pro_6000": unknown_gpu_rtx_pro_6000,
    "balanced_ddp_data4_comm6": balanced_ddp_data4_comm6,
}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: construct_blind_gpu7.py OUT_DIR", file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for k, (name, fn) in enumerate(SCENARIOS.items()):
        rng = random.Random(7000 + k)
        tr = fn(name, rng, 1799000000.0 + 3600.0 * k)
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
    # ~150 ms of Python metrics (seqeval on .tolist()'d predictions) a step on the main thread, the GPU idle: other
    # 31%; first: compute the metric on the GPU (torchmetrics on device) every N steps / at epoch end, or hand the
    # tensors to a background thread; no per-step .tolist().
    "h100_tolist_metrics_stacks": ("cpu_compute", "other"),
    # the same pattern seen by hook phases alone: per-example loss .tolist() + Python dict/heap updates, other ~26%
    # on all 8 ranks; first: keep the per-example losses on the GPU (a device tensor indexed by example id), sync
    # them every N steps.
    "h200_tolist_loss_tracking": ("cpu_compute", "other"),
    # the rank's pin-memory thread at a full core copying 154 MB float32 batches into pinned memory, workers and
    # CPUs idle, data wait ~47%; first: ship uint8 clips (4x fewer bytes) and normalise on the GPU (or pin in the
    # workers' output buffers / drop pin_memory for a preallocated pinned buffer).
    "pin_memory_thread_bound": ("cpu_compute", "data"),
    # 16 decode workers at ~1.6 cores each on a 32-thread host, host ~96% busy, run queues, data wait ~61%; first:
    # decode on the GPUs (NVDEC: DALI / torchcodec) or pre-decode/downsample the clips; more workers cannot help.
    "video_decode_32t_8l4": ("cpu_compute", "data"),
    # RAM full, swapping ~470/390 MB/s, PSI memory full ~41%, workers in D state, data wait ~71%; first: cut the
    # in-flight batches (prefetch_factor 8 -> 2, fewer workers) and share the case index (numpy, not Python lists).
    "host_swap_deep_prefetch": ("cpu_memory", "data"),
    # ~2.8 allocator retries a step at 98.6% NVML / 86% peak allocated: cache flushes stall the GPU ~30% of the step;
    # first: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (or bucket the sequence lengths).
    "a100_40g_allocator_thrash": ("gpu_memory", "compute"),
    # 99% of the memory held by the caching allocator, 0 retries, SMs 95%: compute-bound; first: nothing on memory;
    # FlashAttention / torch.compile for the compute.
    "a100_40g_full_but_fine": ("gpu_compute", "compute"),
    # the 100 GbE port at ~96% rx, mostly the other team's s5cmd; this job's NFS reads get 2.1 GB/s, data wait ~48%;
    # first: stage the shards on the node's local NVMe (/raid), or separate the traffic (QoS / another port).
    "nic_shared_nfs_other_team": ("storage_network_bandwidth", "data"),
    # node 1's RoCE NIC at 100 of 200 Gb/s: the all-reduce exposed ~36% on every rank; first: fix the link (cable /
    # switch port / ethtool autoneg on node 1); meanwhile bf16 gradient compression or more accumulation.
    "multinode_roce_half_speed": ("inter_node_interconnect", "communication"),
    # launch-bound LoRA at micro-batch 1 x 512: launching threads ~1 core, GPU busy 28%, SMs 11%; first: larger
    # micro-batch (packing, less accumulation), then CUDA graphs / torch.compile.
    "lora_h100_micro1": ("cpu_compute", "compute"),
    # for-loop AdamW over 2,048 tensors: ~24k launches a step, optimizer ~45% with the GPU mostly idle; first:
    # AdamW(fused=True) (or foreach=True).
    "forloop_adamw_2000_tensors": ("cpu_compute", "optimizer"),
    # compute-bound (SMs 93%, ~45% MFU); the per-step .item() on the grad norm is where the host waits (stacks) but
    # costs the GPU ~4 ms; first: nothing on the sync (log the norm every N steps if anything); FP8 / compile.
    "clip_grad_item_compute_bound": ("gpu_compute", "compute"),
    # rollouts generated with HF generate on the training GPUs, ~49% of the wall in `other`, decode DRAM-bound
    # (~79%); first: generate with an inference engine (vLLM/SGLang colocated: paged KV, CUDA graphs, continuous
    # batching), or larger rollout batches.
    "rl_rollout_generation": ("gpu_memory_bandwidth", "other"),
    # attach: S3 via a FUSE mount, the NIC at ~94% rx, mount rows unknown, data wait ~63%; first: cache/stage the
    # Parquet on the idle 3.8 TB instance-store NVMe (or read fewer bytes: column projection, better compression).
    "attach_s3_fuse_parquet": ("storage_network_bandwidth", "data"),
    # attach, compute-bound bf16 (SMs 96%, tensor 68%); first: nothing much: FP8 / torch.compile.
    "attach_h100_bf16_compute": ("gpu_compute", "compute"),
    # a GPU the catalog does not know: SMs 95%, tensor 62%: compute-bound, MFU unknown; first: `bottleneckd
    # calibrate` to know the peaks, then nothing much (compile/FP8 if anything).
    "unknown_gpu_rtx_pro_6000": ("gpu_compute", "compute"),
    # a healthy job: data 4%, exposed comm 6%, ~42% MFU; first: nothing to do.
    "balanced_ddp_data4_comm6": ("gpu_compute", "compute"),
}

NOTES = {
    "h100_tolist_metrics_stacks": dict(first="metrics on GPU every N steps; no per-step .tolist()", straggler=None),
    "h200_tolist_loss_tracking": dict(first="keep per-example losses on GPU; sync every N steps", straggler=None),
    "pin_memory_thread_bound": dict(
        first="uint8 batches, normalise on GPU (fewer bytes for the pin thread)",
        straggler=None,
        also_acceptable=["cpu_memory_bandwidth", "data"],
    ),
    "video_decode_32t_8l4": dict(first="GPU video decode (NVDEC) / pre-decode clips", straggler=None),
    "host_swap_deep_prefetch": dict(first="lower prefetch_factor / workers; share the index", straggler=None),
    "a100_40g_allocator_thrash": dict(first="expandable_segments:True / bucket lengths", straggler=None),
    "a100_40g_full_but_fine": dict(first="nothing on memory; faster kernels", straggler=None, never="gpu_memory"),
    "nic_shared_nfs_other_team": dict(
        first="stage data on local NVMe / separate the other team's traffic",
        straggler=None,
        also_acceptable=["inter_node_interconnect", "data"],
        never="gpu4-7 (not the job's)",
    ),
    "multinode_roce_half_speed": dict(first="fix node 1's NIC link speed", straggler=None, device="node 1 mlx5_0/1"),
    "lora_h100_micro1": dict(
        first="larger micro-batch / CUDA graphs", straggler=None, also_acceptable=["undetermined", "compute"]
    ),
    "forloop_adamw_2000_tensors": dict(first="AdamW(fused=True)", straggler=None),
    "clip_grad_item_compute_bound": dict(
        first="nothing on the sync; FP8/compile", straggler=None, never="cpu_compute/other"
    ),
    "rl_rollout_generation": dict(
        first="inference engine (vLLM) for rollouts", straggler=None, also_acceptable=["gpu_compute", "other"]
    ),
    "attach_s3_fuse_parquet": dict(
        first="stage Parquet on local NVMe", straggler=None, also_acceptable=["inter_node_interconnect", "data"]
    ),
    "attach_h100_bf16_compute": dict(first="nothing much (FP8 / compile)", straggler=None),
    "unknown_gpu_rtx_pro_6000": dict(first="calibrate for peaks; nothing much", straggler=None),
    "balanced_ddp_data4_comm6": dict(
        first="nothing to do", straggler=None, also_acceptable=["undetermined", "compute"]
    ),
}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
