#!/usr/bin/env python3
"""Blind GPU traces, round 8: real-world messiness and mixed signals, written from
docs/trace-format.md, the samplers, the hook (bottleneckd/torch/) and data/peaks.json alone (not
the diagnosis, advice or rules).

Each scenario is a job where two things go on and a naive reading would pick the wrong one: a
decode-bound loader on a node where another tenant's zstd takes the CPUs and its tar keeps the
NVMe busy (attach); a thermally throttled GPU in 8-rank DDP beside a modest data wait on every
rank; a memory-bandwidth-bound video UNet with an exposed NVLink all-reduce, sampled every second
and every 5 s; a loader slow only in epoch 1 (decoding into a cache) before a PCIe all-reduce takes
over; a bare `record` (NVML/GPM only, no phases) of a DRAM-bound GNN; a CPU-only job bound by a
pure-Python tokenizer on one thread (attach); augmentation workers in an 8-CPU cgroup on a
64-thread node; blocking pinned host-to-device copies; an all-reduce across two sockets' PCIe (SYS);
fp16 with a loss scaler skipping steps; evaluation on a side stream overlapping training; micro-batch
1 with activation checkpointing on a full A100 40GB; batches concatenated in the ranks' main threads;
two nodes where node 1 reads its data from a SATA SSD; a compute-bound H100 beside a co-tenant that
only holds memory.

    python tests/data/construct_blind_gpu8.py OUT_DIR

writes OUT_DIR/<scenario>.jsonl (a multi-node scenario: OUT_DIR/<scenario>.node<k>.jsonl, to be
analysed together) and OUT_DIR/labels.json. Stdlib only, seeded, deterministic. The machine,
reading and step helpers are those of construct_blind_gpu7.py, copied unchanged except that a
`sata` block device gets the catalog's SATA III sequential-read figure (data/peaks.json
`sata_ssd_seq_read`, 550 MB/s; no IOPS figure) instead of an unknown peak, and that `Host.cpu`
keeps every logical CPU's busy share at or under 1 (the round-7 helper could write a CPU above 1
when the host was nearly, but not wholly, busy).

LABELS at the bottom were written before bottleneckd was run on these traces.
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
            elif transport == "sata":  # round 8: the catalog's SATA III link figure, no IOPS figure
                row(
                    "storage_bandwidth",
                    name,
                    "sequential_read",
                    550e6,
                    "B/s",
                    "catalog",
                    "SATA III 6 Gb/s link limit (about 550 MB/s after encoding)",
                )
                row(
                    "storage_bandwidth",
                    name,
                    "random_read_4k_iops",
                    None,
                    "IO/s",
                    "unknown",
                    "no catalog figure for a sata device; run 'bottleneckd calibrate'",
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
        # round 8: no logical CPU above 1 (the round-7 helper could put the remainder of the nearly
        # full CPUs on one CPU, above 1, when busy_total was close to a whole number)
        vals = []
        left = busy_total
        while left > 1e-9 and len(vals) < n:
            v = min(left, r.uniform(0.96, 1.0))
            vals.append(v)
            left -= v
        k = 0
        while left > 1e-9 and k < len(vals):
            add = min(left, 1.0 - vals[k])
            vals[k] += add
            left -= add
            k += 1
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
            elif transport == "sata":
                seq = 550e6
                bu = (rb + wb) / seq
                why = "peak unknown; run 'bottleneckd calibrate'"
                util = [bu, "ratio"]
                bu_r, ou_r = [bu, "ratio"], [None, "ratio", why]
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
# round 8: small helpers
# --------------------------------------------------------------------------------------------


def steady(per: dict) -> float:
    return sum(per.values())


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


# --------------------------------------------------------------------------------------------
# scenarios
# --------------------------------------------------------------------------------------------


def attach_loader_cotenant_zstd(name, rng, t0):
    """`bottleneckd attach` to a 4-rank DDP job on a shared 4x L40S node (one EPYC 7543, 64 threads,
    a dcgm-exporter): a ViT-B/16 trained on ImageNet-style JPEGs read from the local NVMe (/data),
    6 loader workers per rank doing decode + RandomResizedCrop + RandAugment (~14 ms an image on a
    core). Another tenant's backup runs on the same node: `tar` of /data piped into `zstd -T0`, which
    takes ~46 cores and reads /data at ~2.2 GB/s (the NVMe busy ~74%, a queue of ~3, 31% of its
    7 GB/s), and sends ~0.9 GB/s out of the 25 GbE port. The 24 workers would each run a full core;
    they get ~0.56 core each (~10.5 cores of their threads wait on run queues, PSI cpu some ~0.82),
    the host is ~99% busy. Data wait ~45% of the main threads' stack samples, GPUs busy ~55%. Two
    candidates: the busy NVMe (another tenant's bytes: the job reads only ~0.1 GB/s of it) and the
    CPU the loader cannot get (the job's)."""
    h = Host(
        rng,
        "l40s-shared-07",
        "AMD EPYC 7543 32-Core Processor",
        64,
        32,
        1,
        3737.0,
        ZEN,
        512 * GiB,
        [L40S] * 4,
        disks=[
            ("nvme0n1", 960 * GB, "nvme", 4, "SAMSUNG MZ1L2960HCJR"),
            ("nvme1n1", 7.68 * TB, "nvme", 4, "SAMSUNG MZQL27T6HBLA"),
        ],
        nics=[("enp65s0f0np0", 25000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 0.9 * TB), ("/data", "xfs", "/dev/nvme1n1", False, 7.0 * TB)],
        dcgm=True,
    )
    base = 61200
    tr = Trace(h, t0, {"pid": base, "command": "bottleneckd attach --pid 61200", "constructed": name})
    dist = dict(data_wait=0.45, forward=0.15, backward=0.30, optimizer=0.03, communication=0.04, other=0.03)
    sites = {
        "data_wait": ("train_one_epoch", "/home/cv/vit/engine.py", 58, "for images, target in loader:", False, False),
        "forward": ("train_one_epoch", "/home/cv/vit/engine.py", 64, "output = model(images)", None, False),
        "backward": ("train_one_epoch", "/home/cv/vit/engine.py", 67, "loss.backward()", None, False),
        "optimizer": ("train_one_epoch", "/home/cv/vit/engine.py", 69, "optimizer.step()", None, False),
        "communication": ("train_one_epoch", "/home/cv/vit/engine.py", 67, "loss.backward()", None, False),
        "other": (
            "train_one_epoch",
            "/home/cv/vit/engine.py",
            73,
            "metric_logger.update(loss=loss.item())",
            None,
            False,
        ),
    }
    wsite = ("__call__", "/home/cv/vit/transforms.py", 112, "img = self.randaug(img)")
    busy = 0.55
    for tick, t, iv in ticks(rng, 60, t0):
        ph, c = attach_phases(rng, dist, interval=iv)
        wk = [clip(j(rng, 0.56, 0.08)) for _ in range(24)]
        jb = jobcpu(
            rng,
            ranks=4,
            rank_each=0.45,
            main=0.33,
            workers=24,
            worker_each=0.56,
            usable=64,
            runqueue_wait_cores=j(rng, 10.5, 0.06),
            pressure_some=clip(j(rng, 0.84, 0.03)),
            worker_max_demand=1.0,
            main_thread_demand=0.52,
            hottest_thread_demand=0.52,
        )
        jb.update(worker_busy_cores=sum(wk), worker_max_busy_cores=max(wk), worker_hottest_thread_busy=max(wk))
        zstd = j(rng, 46.2, 0.02)
        tar = j(rng, 1.15, 0.05)
        r = h.cpu(
            jb["rank_busy_cores"] + jb["worker_busy_cores"] + zstd + tar + 0.7,
            jb,
            iowait=0.006,
            psi=clip(j(rng, 0.82, 0.03)),
            outside=[("zstd", 90417, zstd), ("tar", 90416, tar)],
            sidecar=0.08,
        )
        r += h.memory(180 * GB + j(rng, 5e8), 4 * 5.5 * GB, 24 * 0.7 * GB, 0.1 * GB)
        ours = j(rng, 1.0e8, 0.08)
        theirs = j(rng, 2.2e9, 0.04)
        r += h.storage(
            {"nvme1n1": dict(read=ours + theirs, rops=ours / 110e3 + theirs / 262144, busy=0.74, qd=j(rng, 3.1, 0.1))},
            dict(chars=ours, bytes=ours, worker=ours, calls=j(rng, 3.6e3)),
            host_psi=(0.04, 0.01),
            capacity={"/": 0.33, "/data": 0.71},
        )
        r += h.network(nic_rates={"enp65s0f0np0": (j(rng, 9.0e8, 0.05), j(rng, 1.2e7, 0.1))}, iv=iv)
        for i in range(4):
            s = gs(
                rng,
                0.86 * busy,
                0.46 * busy,
                0.33 * busy,
                busy,
                31.2e9,
                40 + 280 * busy,
                2520,
                pcie=(2.1e6, 35e6),
                spec=L40S,
                job_process=1.0,
                procs={base + 1 + i: 30.7e9},
            )
            r += h.gpu_readings(i, s, tick)
        rows = stack_rows(c, sites)
        rows.append(["data_wait", "worker", *wsite, 2, True, False])
        tr.add(t, iv, r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": rows})
    return tr


def ddp8_thermal_rank5_data_wait(name, rng, t0):
    """HGX H100, 8-rank DDP of a 1.3B decoder (bf16, micro-batch 12 x 2048). GPU 5's fans are failing:
    `hw_thermal` holds its SM clock at ~1300 of 1980 MHz and its forward/backward take ~1.4x the
    others'; every rank also waits ~65 ms a step for batches (the tokenised shards are read through
    2 workers per rank; ~9% of a 0.73 s step). The seven healthy ranks finish backward ~0.18 s
    before rank 5 and wait in the gradients' last all-reduce bucket: exposed communication ~27% on
    them, ~2% on rank 5. Two signals: a uniform modest data wait and one slow GPU; the slow GPU sets
    the step."""
    h = hgx_h100(rng, "hgx-h100-117")
    base = 90700
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 8 train.py", "constructed": name},
    )
    healthy = dict(data_wait=0.065, transfer=0.003, forward=0.15, backward=0.30, optimizer=0.012, other=0.005)
    slow_f = 1.4
    flops = 2.4e14

    def step_fn(k):
        out = []
        r5 = noisy(rng, healthy, 0.02)
        r5["forward"] *= slow_f
        r5["backward"] *= slow_f
        r5["communication"] = j(rng, 0.015, 0.1)
        wall = sum(r5.values())
        for r in range(8):
            if r == 5:
                out.append(r5)
                continue
            p = noisy(rng, healthy, 0.02)
            p["data_wait"] = r5["data_wait"] * j(rng, 1.0, 0.05)
            p["communication"] = max(0.01, wall - sum(p.values()))
            out.append(p)
        return out

    def facts(r):
        slow = r == 5
        compute = (0.15 + 0.30) * (slow_f if slow else 1.0) + 0.012
        exposed = 0.015 if slow else 0.195
        return ddp_facts(
            h,
            base,
            r,
            8,
            8,
            flops,
            7.5e11,
            compute,
            parameters=1_313_000_000,
            batch_size=12,
            tokens_per_example=2048.0,
            loader_workers=2,
            cores=224,
            ddp_comm_timing="comm hook",
            ddp_buckets=210,
            comm_seconds_per_step=j(rng, exposed + 0.07),
            comm_exposed_seconds_per_step=j(rng, exposed),
            comm_overlapped_seconds_per_step=j(rng, 0.07),
            comm_overlap_ratio=0.07 / (exposed + 0.07),
        )

    job = StepJob(
        t0, step_fn, facts, lambda r: ident("gpt13", r, 8, 8, h, base + 1 + r, h.uuids[r]), examples_per_step=12
    )
    step = 0.065 + 0.003 + 0.45 * slow_f + 0.012 + 0.015 + 0.005
    nv = 2 * 7 / 8 * 5.25e9 / step
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(rng, ranks=8, rank_each=1.15, main=0.9, workers=16, worker_each=0.48, usable=224)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.5, jb)
        r += h.memory(230 * GB + j(rng, 5e8), 8 * 12 * GB, 16 * 1.2 * GB, 0.2 * GB)
        r += h.storage(
            {"nvme1n1": dict(read=j(rng, 6.5e7), rops=j(rng, 500), busy=0.03)},
            dict(chars=j(rng, 6.5e7), bytes=j(rng, 6.5e7), worker=j(rng, 6.5e7)),
            capacity={"/": 0.31, "/raid": 0.52},
        )
        r += h.network(iv=iv)
        for i in range(8):
            if i == 5:
                c = (0.45 * slow_f + 0.012) / step
                s = gs(
                    rng,
                    0.93 * c + 0.02,
                    0.58 * c,
                    0.36 * c,
                    c + 0.03,
                    64.1e9,
                    110 + 330 * c,
                    1305,
                    pcie=(2e6, 6e6),
                    nvl=(nv, nv),
                    spec=H100_SXM,
                    throttle={"hw_thermal"},
                    job_process=1.0,
                    procs={base + 1 + i: 63.6e9},
                )
            else:
                c = (0.45 + 0.012) / step
                s = gs(
                    rng,
                    0.93 * c + 0.05 * 0.27,
                    0.60 * c,
                    0.37 * c,
                    1 - 0.089,
                    64.1e9,
                    120 + 540 * c,
                    1980,
                    pcie=(2e6, 6e6),
                    nvl=(nv, nv),
                    spec=H100_SXM,
                    job_process=1.0,
                    procs={base + 1 + i: 63.6e9},
                )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def _membw_comm_job(name, rng, t0, interval: float, n: int, hostname: str):
    """HGX H100, 8-rank DDP of a 2.6B video-diffusion UNet in eager bf16 autocast (GroupNorm,
    SiLU, attention over 16 frames x 32 x 32 latents, fp32 gradients of 10.4 GB). Over the compute
    phases (81% of a 0.675 s step) the DRAM is ~84% busy (1.55 TB a step: 2.8 TB/s, 84% of 3.35),
    SMs ~85%, tensor ~12%, ~15% of the bf16 peak (intensity ~53 FLOP/B, far under the ridge). The
    gradients' all-reduce (18.2 GB each way per GPU a step, ~0.25 s in flight) is exposed ~0.105 s,
    ~15.5% of the step; NVLink ~6% busy on average. Two candidates; the memory-bound compute is the
    larger lever."""
    h = hgx_h100(rng, hostname)
    base = 72100
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 8 train_vdm.py", "constructed": name},
        interval=interval,
    )
    per = dict(
        data_wait=0.010, transfer=0.004, forward=0.17, backward=0.36, optimizer=0.02, communication=0.105, other=0.006
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = steady(per)
    flops = 8.25e13
    bytes_ = 0.84 * 3.35e12 * compute

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            8,
            8,
            flops,
            bytes_,
            compute,
            parameters=2_600_000_000,
            input_rank=5,
            has_conv=True,
            conv_flop_share=0.31,
            batch_size=2,
            loader_workers=4,
            cores=224,
            ddp_comm_timing="comm hook",
            ddp_buckets=400,
            comm_seconds_per_step=j(rng, 0.25),
            comm_exposed_seconds_per_step=j(rng, 0.105),
            comm_overlapped_seconds_per_step=j(rng, 0.145),
            comm_overlap_ratio=0.58,
        )

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.02) for _ in range(8)],
        facts,
        lambda r: ident("vdm26", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=2,
    )
    c = compute / step
    nv = 18.2e9 / step
    for tick, t, iv in ticks(rng, n, t0, base=interval):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(rng, ranks=8, rank_each=1.15, main=0.88, workers=32, worker_each=0.08, usable=224)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.4, jb)
        r += h.memory(250 * GB + j(rng, 5e8), 8 * 16 * GB, 32 * 0.9 * GB, 0.2 * GB)
        r += h.storage(
            {"nvme1n1": dict(read=j(rng, 2.4e7), rops=j(rng, 190), busy=0.01)},
            dict(chars=j(rng, 2.4e7), bytes=j(rng, 2.4e7), worker=j(rng, 2.4e7)),
            capacity={"/": 0.29, "/raid": 0.63},
        )
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.85 * c + 0.06 * per["communication"] / step,
                0.12 * c,
                0.84 * c + 0.05 * per["communication"] / step,
                0.985,
                71.0e9,
                130 + 520 * c,
                1980,
                pcie=(2e6, 8e6),
                nvl=(nv, nv),
                spec=H100_SXM,
                rel=0.015,
                job_process=1.0,
                procs={base + 1 + i: 70.5e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def vdm_membw_with_exposed_allreduce(name, rng, t0):
    """See _membw_comm_job: sampled every second."""
    return _membw_comm_job(name, rng, t0, 1.0, 60, "hgx-h100-202")


def vdm_membw_coarse_5s(name, rng, t0):
    """The same job as vdm_membw_with_exposed_allreduce, recorded with `--interval 5`: 24 samples of
    5 s, each carrying ~7.4 steps of every rank; counters are 5-second averages."""
    return _membw_comm_job(name, rng, t0, 5.0, 24, "hgx-h100-203")


def epoch1_decode_cache_then_pcie_allreduce(name, rng, t0):
    """A 4x L40S PCIe server (one EPYC 7413, 48 threads; no NVLink, the four GPUs under one PCIe
    switch, P2P on): 4-rank DDP of ConvNeXt-L (198M parameters, fp32 gradients of 792 MB) on a 46k-image
    product catalogue. Epoch 1 (the first ~70 s): the 40 loader workers decode the 12-megapixel
    originals (~3 MB JPEGs, ~60 ms each with the resize) and write a 256-px uint8 cache (a
    memory-mapped array on /data): workers at a full core, the host ~96% busy, ~2.0 GB/s read from
    the NVMe, data wait ~59% of a 0.78 s step. From epoch 2 the workers crop/flip the cached uint8
    arrays (~0.12 core each) and the job is what its GPUs and their links make it: 0.22 s of
    compute (bf16, ~60 TFLOP/s) and the gradients' ring all-reduce over PCIe (1.19 GB each way per
    GPU, ~0.11 s in flight at ~11 GB/s, ~0.085 s exposed after backward): communication ~27% of a
    0.316 s step. The trace ends ~110 s into that regime."""
    spec = L40S
    h = Host(
        rng,
        "l40s-4x-srv-03",
        "AMD EPYC 7413 24-Core Processor",
        48,
        24,
        1,
        3630.0,
        ZEN,
        256 * GiB,
        [spec] * 4,
        disks=[
            ("nvme0n1", 960 * GB, "nvme", 4, "SAMSUNG MZ1L2960HCJR"),
            ("nvme1n1", 7.68 * TB, "nvme", 4, "MZQL27T6HBLA"),
        ],
        nics=[("enp1s0f0np0", 25000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 0.9 * TB), ("/data", "xfs", "/dev/nvme1n1", False, 7.0 * TB)],
        dcgm=True,
    )
    base = 27300
    tr = Trace(
        h,
        t0,
        {
            "pid": base,
            "command": "bottleneckd run -- torchrun --nproc_per_node 4 train_convnext.py",
            "constructed": name,
        },
    )
    warm = dict(
        data_wait=0.004,
        transfer=0.003,
        forward=0.072,
        backward=0.138,
        optimizer=0.010,
        communication=0.085,
        other=0.004,
    )
    cold = dict(warm, data_wait=0.464, communication=0.012)
    compute = warm["forward"] + warm["backward"] + warm["optimizer"]
    n_cold = 90  # 46k images / 512 a step
    flops = 1.32e13

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            4,
            4,
            flops,
            1.1e11,
            compute,
            parameters=198_000_000,
            input_rank=4,
            has_conv=True,
            conv_flop_share=0.71,
            batch_size=128,
            loader_workers=10,
            prefetch_factor=2,
            cores=48,
            epoch=1 if job.k < n_cold else 2,
            ddp_comm_timing="comm hook",
            ddp_buckets=32,
            comm_seconds_per_step=j(rng, 0.11),
            comm_exposed_seconds_per_step=j(rng, 0.085 if job.k >= n_cold else 0.012),
            comm_overlapped_seconds_per_step=j(rng, 0.025 if job.k >= n_cold else 0.098),
            comm_overlap_ratio=0.23 if job.k >= n_cold else 0.89,
        )

    job = StepJob(
        t0,
        lambda k: [noisy(rng, cold if k < n_cold else warm, 0.03) for _ in range(4)],
        facts,
        lambda r: ident("convnext", r, 4, 4, h, base + 1 + r, h.uuids[r]),
        examples_per_step=128,
    )

    def seg(k, s, e):
        return [(s, e, "cold" if k < n_cold else "warm")]

    for tick, t, iv in ticks(rng, 180, t0):
        ph, ranks = job.report(job.collect(t))
        w = segments_in(job.history, seg, t - iv, t)
        tot = sum(w.values()) or 1.0
        fc = w.get("cold", 0.0) / tot
        wk_each = 0.12 + (0.99 - 0.12) * fc
        jb = jobcpu(
            rng,
            ranks=4,
            rank_each=0.85 - 0.3 * fc,
            main=0.72 - 0.3 * fc,
            workers=40,
            worker_each=wk_each,
            usable=48,
            runqueue_wait_cores=j(rng, 0.05 + 2.4 * fc, 0.1),
            pressure_some=clip(j(rng, 0.03 + 0.35 * fc, 0.05)),
            comm_thread_cores=4 * 0.04,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.4, jb, psi=clip(0.02 + 0.38 * fc))
        r += h.memory(110 * GB + 40 * GB * (1 - fc) + j(rng, 3e8), 4 * 6.1 * GB, 40 * (0.9 + 0.5 * fc) * GB, 0.1 * GB)
        rd = fc * j(rng, 2.0e9, 0.04) + (1 - fc) * j(rng, 2.9e8, 0.1)
        wr = fc * j(rng, 1.7e8, 0.05)
        r += h.storage(
            {
                "nvme1n1": dict(
                    read=rd,
                    write=wr,
                    rops=fc * rd / 262144 + (1 - fc) * rd / 131072,
                    busy=0.05 + 0.31 * fc,
                    qd=0.1 + 1.2 * fc,
                )
            },
            dict(chars=rd * (1 + 0.3 * (1 - fc)), bytes=rd, worker=rd + wr, write=wr),
            capacity={"/": 0.31, "/data": 0.44},
        )
        r += h.network(iv=iv)
        step = steady(cold) * fc + steady(warm) * (1 - fc)
        c = compute / step
        comm = (0.11 * (1 - fc) + 0.11 * fc) / step
        p2p = 1.19e9 / step
        for i in range(4):
            s = gs(
                rng,
                0.86 * c + 0.05 * comm,
                0.48 * c,
                0.44 * c + 0.1 * comm,
                clip(c + comm * 0.9 + 0.01),
                38.5e9,
                45 + 290 * c,
                2520,
                pcie=(p2p + 1e6, p2p + 128 * 150528 / step),
                spec=spec,
                job_process=1.0,
                procs={base + 1 + i: 38.0e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def record_nvml_only_membw(name, rng, t0):
    """`bottleneckd record` (no pid, no hook: no phases, no job rows) on a one-H100 SXM VM running
    someone's training job (a graph neural network: sparse gather/scatter over a 40M-edge graph,
    message passing in fp32). GPM counters: DRAM activity ~90%, SMs ~40%, tensor ~4%, FP32 ~18%,
    NVML busy 99%, memory busy 88%; the host runs ~1.3 cores for it. With no phases, the counters
    alone say what bounds the GPU: its memory bandwidth."""
    h = one_gpu_vm(rng, "a3-h100-1g-22", H100_SXM, "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", 26, 234 * GiB)
    tr = Trace(h, t0, {"pid": None, "command": "bottleneckd record -o gnn.jsonl", "constructed": name})
    for tick, t, iv in ticks(rng, 60, t0):
        r = h.cpu(j(rng, 1.35, 0.05), None)
        r += h.memory(31 * GB + j(rng, 2e8), 0.0, job=False)
        r += h.storage({"nvme1n1": dict(read=j(rng, 2e6, 0.3), rops=40)}, None, capacity={"/": 0.44, "/scratch": 0.37})
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.40,
            0.04,
            0.90,
            0.99,
            58.4e9,
            455.0,
            1980,
            pcie=(3e6, 1.1e7),
            spec=H100_SXM,
            rel=0.02,
            fp32=clip(j(rng, 0.18, 0.03)),
            membusy=clip(j(rng, 0.88, 0.02)),
            procs={44120: 57.9e9},
        )
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, None)
    return tr


def attach_cpu_only_slow_tokenizer(name, rng, t0):
    """`bottleneckd attach` to a CPU-only training job on a 32-vCPU VM (no GPU): a 6-layer text
    classifier (22M parameters) trained in fp32 on 16 intra-op threads; DataLoader(num_workers=0)
    and a collate_fn that calls a slow (pure-Python) BertTokenizer on each batch of 64 raw texts.
    The main thread tokenises ~70% of the time at a full core (its stack samples in the collate_fn's
    `tok(...)` line), then runs forward/backward/AdamW on 16 threads ~30% of the time: the host is
    ~20% busy on average (~6.4 of 32 cores), the single hot thread is the limit."""
    h = Host(
        rng,
        "c6i-8xl-31",
        "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz",
        32,
        16,
        1,
        3500.0,
        CLX,
        64 * GiB,
        [],
        disks=[("nvme0n1", 200 * GB, "nvme", None, "Amazon Elastic Block Store")],
        nics=[("ens5", 12500)],
        mounts=[("/", "ext4", "/dev/nvme0n1p1", False, 193 * GB)],
    )
    pid = 8812
    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd attach --pid 8812", "constructed": name})
    dist = dict(data_wait=0.70, forward=0.09, backward=0.16, optimizer=0.03, other=0.02)
    sites = {
        "data_wait": (
            "collate",
            "/home/ec2-user/cls/train.py",
            41,
            "enc = tok(texts, padding=True, truncation=True)",
            False,
            False,
        ),
        "forward": ("train", "/home/ec2-user/cls/train.py", 77, "logits = model(**enc)", None, False),
        "backward": ("train", "/home/ec2-user/cls/train.py", 79, "loss.backward()", None, False),
        "optimizer": ("train", "/home/ec2-user/cls/train.py", 80, "opt.step()", None, False),
        "other": ("train", "/home/ec2-user/cls/train.py", 83, "pbar.set_postfix(loss=loss.item())", None, False),
    }
    for _tick, t, iv in ticks(rng, 60, t0):
        ph, c = attach_phases(rng, dist, facts_extra={"device": "cpu"}, interval=iv)
        par = 0.30
        main = clip(j(rng, 0.99, 0.01))
        side = 15 * par * j(rng, 0.92, 0.04)
        jb = jobcpu(
            rng,
            ranks=1,
            rank_each=main + side,
            main=main,
            workers=0,
            usable=32,
            rank_side_thread_cores=side,
            hottest_thread_busy=main,
            main_thread_demand=clip(main + 0.005, 0, 1.2),
        )
        jb["rank_busy_cores"] = main + side
        r = h.cpu(jb["rank_busy_cores"] + 0.3, jb, sidecar=0.05)
        r += h.memory(7.4 * GB + j(rng, 5e7), 3.1 * GB)
        r += h.storage({}, dict(chars=j(rng, 1.5e5)), capacity={"/": 0.36})
        r += h.network(iv=iv)
        tr.add(t, iv, r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": stack_rows(c, sites)})
        tr.lines[-1]["samplers"]["gpu"] = [False, 0.0001, h.machine["unknown"]["gpus"]]
    return tr


def cgroup8_of_64_augment_workers(name, rng, t0):
    """A Kubernetes pod with a CPU limit of 8 (cgroup quota 800 ms per 100 ms) on a 64-thread
    2-socket node (Xeon Gold 6326) with one A100 80GB PCIe: a Swin-T segmentation model on 512 px
    aerial tiles, 8 loader workers doing albumentations (elastic, colour jitter, random rotate,
    ~28 ms a tile). The workers and the rank use the whole quota (job ~7.95 cores) and are
    throttled: ~1.9 cores of runnable time wait (schedstat), the pod's cgroup PSI cpu some ~62%.
    The node shows 56 CPUs: other pods use ~17, the host is ~40% busy; `usable_cores` 8. Data wait
    ~55% of a 0.52 s step; the GPU busy ~44%."""
    spec = A100_PCIE80
    h = Host(
        rng,
        "k8s-gpu-a100-14",
        "Intel(R) Xeon(R) Gold 6326 CPU @ 2.90GHz",
        64,
        32,
        2,
        3500.0,
        CLX,
        512 * GiB,
        [spec],
        disks=[("nvme0n1", 1.92 * TB, "nvme", 4, "SAMSUNG MZQL21T9HCJR")],
        nics=[("ens1f0", 25000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 1.8 * TB)],
    )
    pid = 31
    per = dict(data_wait=0.285, transfer=0.004, forward=0.072, backward=0.145, optimizer=0.009, other=0.005)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = steady(per)
    flops = 1.5e13

    def facts(r):
        return ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            flops,
            1.2e11,
            compute,
            parameters=59_800_000,
            input_rank=4,
            has_conv=True,
            conv_flop_share=0.22,
            batch_size=16,
            loader_workers=8,
            prefetch_factor=2,
            cores=8,
            loader_workers_saturate_cores=True,
        )

    busy = (compute + per["transfer"]) / step + 0.005

    def cpu_fn(rng):
        wk = [clip(j(rng, 0.84, 0.04)) for _ in range(8)]
        main = clip(j(rng, 0.55, 0.04))
        jb = jobcpu(
            rng,
            rank_each=main + 0.72,
            main=main,
            workers=8,
            worker_each=0.84,
            usable=8,
            runqueue_wait_cores=j(rng, 1.9, 0.08),
            pressure_some=clip(j(rng, 0.62, 0.04)),
            worker_max_demand=1.0,
            main_thread_demand=main + 0.12,
            hottest_thread_demand=main + 0.12,
            rank_side_thread_cores=0.72,
        )
        jb.update(worker_busy_cores=sum(wk), worker_max_busy_cores=max(wk), worker_hottest_thread_busy=max(wk))
        scale = 7.95 / (jb["rank_busy_cores"] + jb["worker_busy_cores"])
        jb["rank_busy_cores"] *= scale
        jb["worker_busy_cores"] *= scale
        jb["_others"] = j(rng, 17.5, 0.04)
        return jb

    tr = Trace(h, t0, {"pid": pid, "command": "bottleneckd run -- python train_seg.py", "constructed": name})
    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.04)],
        facts,
        lambda r: ident("default/seg-swin-7f9c", 0, 1, 1, h, pid, h.uuids[0]),
        examples_per_step=16,
    )
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = cpu_fn(rng)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + jb.pop("_others"), jb, psi=0.04)
        r += h.memory(160 * GB + j(rng, 5e8), 6.8 * GB, 8 * 1.1 * GB)
        rd = j(rng, 16 * 1.4e6 / step, 0.05)
        r += h.storage(
            {"nvme0n1": dict(read=rd + j(rng, 4e7), rops=rd / 1.4e6 * 2 + 300, busy=0.04)},
            dict(chars=rd, bytes=rd, worker=rd),
            capacity={"/": 0.48},
        )
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.84 * busy,
            0.42 * busy,
            0.38 * busy,
            busy,
            27.3e9,
            50 + 230 * busy,
            1410,
            pcie=(2e6, 16 * 3 * 512 * 512 * 4 / step),
            spec=spec,
            job_process=None,
            procs={2291544: 26.8e9},
        )
        r += h.gpu_readings(0, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def pinned_blocking_h2d_copies(name, rng, t0):
    """One A100 80GB SXM (a 12-vCPU cloud VM, DCGM on): a UNet segmenting 12-band satellite tiles,
    batch 32 x 12 x 512 x 512 float32 (403 MB) plus int64 masks (67 MB). DataLoader(pin_memory=True),
    but the loop copies with `.cuda()` (non_blocking=False): each step's 470 MB cross PCIe gen4 at
    ~23.5 GB/s pinned (75% of the 31.5 GB/s link per direction) while the host waits and the GPU
    has nothing queued: the hook's `transfer` ~20% of a 0.1 s step. Over the step PCIe H2D ~4.7 GB/s
    (15%). The compute phases run at SMs ~85% (bf16 autocast, ~49 TFLOP/s); workers ~0.45 core each,
    the pin-memory thread ~0.4 core, data wait ~1%."""
    h = one_gpu_vm(
        rng,
        "a2-ultragpu-1g-09",
        A100_SXM80,
        "Intel(R) Xeon(R) CPU @ 2.20GHz",
        12,
        170 * GiB,
        flags=CLX,
        nic=("ens4", 24000),
        dcgm=True,
    )
    pid = 6120
    per = dict(data_wait=0.001, transfer=0.020, forward=0.026, backward=0.050, optimizer=0.002, other=0.001)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = steady(per)
    flops = 3.8e12
    h2d = 470e6

    def facts(r):
        return ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            flops,
            5.5e10,
            compute,
            parameters=31_000_000,
            input_rank=4,
            has_conv=True,
            conv_flop_share=0.9,
            batch_size=32,
            loader_workers=8,
            pin_memory=True,
            cores=12,
            optimizer_impl="fused",
        )

    fc = compute / step

    def cpu_fn(rng):
        main = clip(j(rng, 0.62, 0.03))
        return jobcpu(
            rng,
            rank_each=main + 0.45,
            main=main,
            workers=8,
            worker_each=0.45,
            usable=12,
            rank_side_thread_cores=0.45,
            hottest_thread_busy=main,
        )

    def gpu_fn(tick):
        return gs(
            rng,
            0.85 * fc,
            0.45 * fc,
            0.40 * fc,
            fc + 0.01,
            23.9e9,
            70 + 300 * fc,
            1410,
            pcie=(j(rng, 2.5e6, 0.05), h2d / step),
            spec=A100_SXM80,
            job_process=1.0,
            procs={pid: 23.4e9},
        )

    return _single_gpu_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python train_unet_s2.py",
        per,
        facts,
        32,
        gpu_fn,
        cpu_fn=cpu_fn,
        mem=(52 * GB, 7 * GB),
    )


def numa_sys_pcie_allreduce(name, rng, t0):
    """8x A100 80GB PCIe in a 2-socket Xeon Platinum 8358 server (128 threads): GPUs 0-3 under socket
    0's root complex, 4-7 under socket 1's (nvidia-smi topo: SYS between the halves; no NVLink).
    8-rank DDP of a ViT-L (304M parameters, fp32 gradients of 1.2 GB): NCCL's ring crosses the
    sockets twice, through host memory (SHM over UPI) at ~9.5 GB/s: 2.1 GB each way per GPU a step,
    ~0.22 s in flight, ~0.11 s exposed after backward: communication ~35% of a 0.316 s step (batch
    128 a rank, ~126 TFLOP/s, 40% of the bf16 peak, over 0.19 s of compute). Each GPU's PCIe link
    moves ~6.6 GB/s on average (21% of 31.5), ~30% while the all-reduce runs: no counter the
    samplers read is near a limit (the UPI/SHM hop is not measured). SMs ~85% while computing."""
    spec = A100_PCIE80
    h = Host(
        rng,
        "pcie8-a100-02",
        "Intel(R) Xeon(R) Platinum 8358 CPU @ 2.60GHz",
        128,
        64,
        2,
        3400.0,
        CLX,
        1024 * GiB,
        [spec] * 8,
        disks=[("nvme0n1", 1.92 * TB, "nvme", 4, "INTEL SSDPF2KX019T1"), ("nvme1n1", 7.68 * TB, "nvme", 4, "MZQL27T6")],
        nics=[("ens10f0", 100000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 1.8 * TB), ("/data", "xfs", "/dev/nvme1n1", False, 7.0 * TB)],
        dcgm=True,
    )
    base = 50800
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 8 train_vitl.py", "constructed": name},
    )
    per = dict(
        data_wait=0.008, transfer=0.004, forward=0.060, backward=0.120, optimizer=0.008, communication=0.11, other=0.006
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = steady(per)
    flops = 2.37e13

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            8,
            8,
            flops,
            1.5e11,
            compute,
            parameters=304_000_000,
            input_rank=4,
            has_conv=True,
            conv_flop_share=0.01,
            batch_size=128,
            loader_workers=6,
            cores=128,
            ddp_comm_timing="comm hook",
            ddp_buckets=48,
            comm_seconds_per_step=j(rng, 0.22),
            comm_exposed_seconds_per_step=j(rng, 0.11),
            comm_overlapped_seconds_per_step=j(rng, 0.11),
            comm_overlap_ratio=0.5,
        )

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.03) for _ in range(8)],
        facts,
        lambda r: ident("vitl", r, 8, 8, h, base + 1 + r, h.uuids[r]),
        examples_per_step=128,
    )
    c = compute / step
    cm = 0.22 / step
    ring = 2.1e9 / step
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(
            rng,
            ranks=8,
            rank_each=1.25,
            main=0.82,
            workers=48,
            worker_each=0.42,
            usable=128,
            comm_thread_cores=8 * 0.22,
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.2, jb)
        r += h.memory(300 * GB + j(rng, 5e8), 8 * 9 * GB, 48 * 1.0 * GB, 0.2 * GB)
        rd = j(rng, 8 * 128 * 1.1e5 / step, 0.05)
        r += h.storage(
            {"nvme1n1": dict(read=rd, rops=rd / 1.1e5, busy=0.06, qd=0.2)},
            dict(chars=rd, bytes=rd, worker=rd),
            capacity={"/": 0.27, "/data": 0.58},
        )
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.85 * c + 0.08 * cm,
                0.50 * c,
                0.36 * c + 0.05 * cm,
                clip(c + 0.11 / step + 0.01),
                33.5e9,
                60 + 220 * c,
                1410,
                pcie=(ring, ring + 128 * 150528 / step),
                spec=spec,
                job_process=1.0,
                procs={base + 1 + i: 33.0e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def fp16_scaler_skipping_steps(name, rng, t0):
    """4x A100 80GB SXM (an HGX A100 4-GPU board, DCGM): 4-rank DDP of a 1.4B decoder under
    autocast(float16) with a dynamic GradScaler; the loss overflows often (an attention logit
    blow-up in fp16): ~35% of the steps find inf/nan gradients and GradScaler skips
    `optimizer.step()` (those steps' optimizer phase is the 3 ms unscale/check instead of 40 ms).
    The time is spent like a healthy compute-bound job's: SMs ~93%, tensor ~60%, ~47% of the fp16
    dense peak over the compute phases, the all-reduce hidden. Only the training curve shows the
    waste; the trace can only show time."""
    h = Host(
        rng,
        "hgx-a100-4g-05",
        "AMD EPYC 7763 64-Core Processor",
        128,
        64,
        1,
        3529.0,
        ZEN,
        1031 * GiB,
        [A100_SXM80] * 4,
        disks=[
            ("nvme0n1", 1.92 * TB, "nvme", 4, "SAMSUNG MZ1L21T9HCLS"),
            ("nvme1n1", 7.68 * TB, "nvme", 4, "MZQL27T6"),
        ],
        nics=[("enp65s0f0", 100000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 1.8 * TB), ("/data", "xfs", "/dev/nvme1n1", False, 7.0 * TB)],
        dcgm=True,
    )
    base = 14440
    tr = Trace(
        h,
        t0,
        {
            "pid": base,
            "command": "bottleneckd run -- torchrun --nproc_per_node 4 train_lm.py --fp16",
            "constructed": name,
        },
    )
    per = dict(
        data_wait=0.003, transfer=0.002, forward=0.30, backward=0.60, optimizer=0.040, communication=0.012, other=0.006
    )
    flops = 1.38e14

    def step_fn(k):
        skipped = rng.random() < 0.35
        out = []
        for _ in range(4):
            p = noisy(rng, per, 0.015)
            if skipped:
                p["optimizer"] = j(rng, 0.003, 0.1)
            out.append(p)
        return out

    compute = per["forward"] + per["backward"] + 0.65 * per["optimizer"] + 0.35 * 0.003

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            4,
            4,
            flops,
            5.2e11,
            compute,
            parameters=1_400_000_000,
            autocast_dtype="float16",
            compute_dtype="float16",
            batch_size=8,
            tokens_per_example=2048.0,
            loader_workers=2,
            cores=128,
            ddp_comm_timing="comm hook",
            ddp_buckets=220,
            comm_seconds_per_step=j(rng, 0.11),
            comm_exposed_seconds_per_step=j(rng, 0.012),
            comm_overlapped_seconds_per_step=j(rng, 0.098),
            comm_overlap_ratio=0.89,
        )

    job = StepJob(
        t0, step_fn, facts, lambda r: ident("lm14", r, 4, 4, h, base + 1 + r, h.uuids[r]), examples_per_step=8
    )
    step = steady(per) - 0.35 * 0.037
    nv = 2 * 3 / 4 * 5.6e9 / step
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        jb = jobcpu(rng, ranks=4, rank_each=1.15, main=0.95, workers=8, worker_each=0.05, usable=128)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.9, jb)
        r += h.memory(150 * GB + j(rng, 5e8), 4 * 14 * GB, 8 * 0.7 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 6e5)), capacity={"/": 0.35, "/data": 0.42})
        r += h.network(iv=iv)
        for i in range(4):
            s = gs(
                rng,
                0.93,
                0.60,
                0.41,
                0.99,
                71.5e9,
                345.0,
                1410,
                pcie=(2e6, 4e6),
                nvl=(nv, nv),
                spec=A100_SXM80,
                rel=0.015,
                fp16=clip(j(rng, 0.05, 0.05)),
                job_process=1.0,
                procs={base + 1 + i: 71.0e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def eval_side_stream_overlap(name, rng, t0):
    """HGX H100, 8-rank DDP of a 1.3B decoder (bf16). Every 100 steps a background thread on each rank
    runs a 12 s evaluation on its own CUDA stream (no_grad forward over a held-out set) while training
    continues: the two streams share the SMs, so the training steps in those windows take ~1.35x
    (their forward/backward, measured on the compute stream, stretch); there is no `other` and no
    wait. SMs ~95%, tensor ~62%, NVML busy ~99.5% all the time; ~46% MFU outside the evaluation
    windows. The GPU computes all the time, mostly training."""
    h = hgx_h100(rng, "hgx-h100-154")
    base = 38800
    tr = Trace(
        h,
        t0,
        {
            "pid": base,
            "command": "bottleneckd run -- torchrun --nproc_per_node 8 train.py --async-eval",
            "constructed": name,
        },
    )
    per = dict(
        data_wait=0.003, transfer=0.002, forward=0.145, backward=0.29, optimizer=0.011, communication=0.012, other=0.004
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    flops = 2.0e14
    every, ev_s, slow = 100, 12.0, 1.35

    def step_fn(k):
        out = []
        for _ in range(8):
            p = noisy(rng, per, 0.015)
            out.append(p)
        return out

    # which steps fall in an evaluation window: steps k in [100m, 100m + n_ev) are stretched
    n_ev = int(ev_s / (steady(per) + (slow - 1) * (per["forward"] + per["backward"])))

    def step_fn2(k):
        out = step_fn(k)
        if k % every < n_ev and k >= every:
            for p in out:
                p["forward"] *= slow
                p["backward"] *= slow
        return out

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            8,
            8,
            flops,
            7.0e11,
            compute,
            parameters=1_313_000_000,
            batch_size=8,
            tokens_per_example=2048.0,
            loader_workers=2,
            cores=224,
            ddp_comm_timing="comm hook",
            ddp_buckets=210,
            comm_seconds_per_step=j(rng, 0.085),
            comm_exposed_seconds_per_step=j(rng, 0.012),
            comm_overlapped_seconds_per_step=j(rng, 0.073),
            comm_overlap_ratio=0.86,
        )

    job = StepJob(
        t0, step_fn2, facts, lambda r: ident("gpt13e", r, 8, 8, h, base + 1 + r, h.uuids[r]), examples_per_step=8
    )

    def seg(k, s, e):
        return [(s, e, "eval" if (k % every < n_ev and k >= every) else "train")]

    nv = 2 * 7 / 8 * 5.25e9 / steady(per)
    for tick, t, iv in ticks(rng, 120, t0):
        ph, ranks = job.report(job.collect(t))
        w = segments_in(job.history, seg, t - iv, t)
        tot = sum(w.values()) or 1.0
        fe = w.get("eval", 0.0) / tot
        jb = jobcpu(rng, ranks=8, rank_each=1.2 + 0.25 * fe, main=0.95, workers=16, worker_each=0.04, usable=224)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.5, jb)
        r += h.memory(220 * GB + j(rng, 5e8), 8 * 13 * GB, 16 * 0.7 * GB, 0.2 * GB)
        r += h.storage({}, dict(chars=j(rng, 4e5 + 2e7 * fe)), capacity={"/": 0.33, "/raid": 0.49})
        r += h.network(iv=iv)
        for i in range(8):
            s = gs(
                rng,
                0.945 + 0.02 * fe,
                0.61 + 0.03 * fe,
                0.40 + 0.05 * fe,
                0.995,
                69.0e9 + 6e9 * fe,
                640.0 + 20 * fe,
                1980,
                pcie=(2e6, 5e6),
                nvl=(nv * (1 - 0.26 * fe), nv * (1 - 0.26 * fe)),
                spec=H100_SXM,
                rel=0.012,
                job_process=1.0,
                procs={base + 1 + i: 68.5e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def act_ckpt_micro1_a100_40g(name, rng, t0):
    """One A100 SXM 40GB (a 12-vCPU cloud VM, DCGM on): full fine-tuning of a 2.7B decoder with fp32
    master weights, bf16 autocast and bitsandbytes 8-bit AdamW: weights 10.8 GB + gradients 10.8 GB +
    optimizer state 5.4 GB leave room only for micro-batch 1 x 2048 with full activation
    checkpointing (the tensors peak at 39.6 GB, 92%; NVML 97% used). Backward re-runs every block's
    forward (0.48 s of backward against 0.16 s of forward, 3x instead of 2x: ~25% of the step is
    recompute). At micro-batch 1 the kernels are small: SMs ~55%, tensor ~30%, NVML busy ~97%,
    ~21% of the bf16 peak counting the recompute. The memory the states take sets the micro-batch
    and the recompute."""
    h = _a2_vm(rng, "a2-highgpu-1g-58")
    pid = 11873
    per = dict(data_wait=0.003, transfer=0.001, forward=0.16, backward=0.48, optimizer=0.05, other=0.01)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    flops = 4.6e13

    def facts(r):
        return ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            flops,
            3.0e11,
            compute,
            parameters=2_700_000_000,
            batch_size=1,
            tokens_per_example=2048.0,
            loader_workers=2,
            cores=12,
            optimizer_impl="bitsandbytes AdamW8bit",
            cuda_memory_total_bytes=A100_SXM40["mem"],
            cuda_memory_reserved_bytes=40_900_000_000,
            cuda_memory_allocated_bytes=28_300_000_000,
            cuda_memory_peak_allocated_bytes=39_600_000_000,
            cuda_alloc_retries=0,
            cuda_alloc_retries_per_step=0.0,
            cuda_ooms=0,
        )

    def cpu_fn(rng):
        main = clip(j(rng, 0.72, 0.03))
        return jobcpu(rng, rank_each=main + 0.2, main=main, workers=2, worker_each=0.04, usable=12)

    def gpu_fn(tick):
        return gs(
            rng,
            0.55,
            0.30,
            0.30,
            0.97,
            41.66e9,
            245.0,
            1410,
            pcie=(2e6, 3e6),
            spec=A100_SXM40,
            rel=0.02,
            job_process=1.0,
            procs={pid: 41.2e9},
        )

    return _single_gpu_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python finetune.py --per_device_train_batch_size 1 --gradient_checkpointing",
        per,
        facts,
        1,
        gpu_fn,
        cpu_fn=cpu_fn,
        mem=(30 * GB, 12 * GB),
    )


def collate_concat_main_thread(name, rng, t0):
    """An HGX A100 4-GPU board (80 GB SXM) in a 2-socket EPYC 7763 host (256 threads, resctrl MBM,
    `bottleneckd calibrate`d at 330 GB/s): 4-rank DDP of an EfficientNet-B4 at 512 px. The
    DataLoader's workers (8 a rank, ~0.35 core each) return single uint8 images (batch_size=None);
    the rank's main thread builds each batch: np.concatenate of 256 images into a 201 MB array, a
    second concatenation with a mix-up buffer, then .pin_memory(): ~600 MB of copies into freshly
    faulted pages, ~0.12 s a step at one core (~5 GB/s of copying, ~11 GB/s of DRAM traffic with the
    page zeroing). Data wait ~40% of a 0.326 s step; the main threads at a full core; host DRAM
    traffic ~30 GB/s (9% of the calibrated peak); 230 of 256 CPUs idle."""
    h = Host(
        rng,
        "hgx-a100-4g-11",
        "AMD EPYC 7763 64-Core Processor",
        256,
        128,
        2,
        3529.0,
        ZEN,
        1031 * GiB,
        [A100_SXM80] * 4,
        disks=[
            ("nvme0n1", 1.92 * TB, "nvme", 4, "SAMSUNG MZ1L21T9HCLS"),
            ("nvme1n1", 7.68 * TB, "nvme", 4, "MZQL27T6"),
        ],
        nics=[("enp65s0f0", 100000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 1.8 * TB), ("/data", "xfs", "/dev/nvme1n1", False, 7.0 * TB)],
        dcgm=True,
        membw_calibrated=3.3e11,
    )
    base = 47700
    tr = Trace(
        h,
        t0,
        {"pid": base, "command": "bottleneckd run -- torchrun --nproc_per_node 4 train_effnet.py", "constructed": name},
    )
    per = dict(
        data_wait=0.13, transfer=0.012, forward=0.055, backward=0.11, optimizer=0.005, communication=0.01, other=0.004
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = steady(per)
    flops = 9.0e12

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            4,
            4,
            flops,
            1.7e11,
            compute,
            parameters=19_300_000,
            input_rank=4,
            has_conv=True,
            conv_flop_share=0.93,
            batch_size=256,
            loader_workers=8,
            pin_memory=False,
            cores=256,
            ddp_comm_timing="comm hook",
            ddp_buckets=4,
            comm_seconds_per_step=j(rng, 0.03),
            comm_exposed_seconds_per_step=j(rng, 0.01),
            comm_overlapped_seconds_per_step=j(rng, 0.02),
            comm_overlap_ratio=0.67,
        )

    job = StepJob(
        t0,
        lambda k: [noisy(rng, per, 0.03) for _ in range(4)],
        facts,
        lambda r: ident("effb4", r, 4, 4, h, base + 1 + r, h.uuids[r]),
        examples_per_step=256,
    )
    busy = (compute + per["communication"]) / step + 0.01
    for tick, t, iv in ticks(rng, 60, t0):
        ph, ranks = job.report(job.collect(t))
        main = clip(j(rng, 0.975, 0.01))
        jb = jobcpu(
            rng,
            ranks=4,
            rank_each=main + 0.12,
            main=main,
            workers=32,
            worker_each=0.35,
            usable=256,
            hottest_thread_busy=main,
            main_thread_demand=clip(main + 0.01, 0, 1.2),
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.1, jb)
        membw = j(rng, 3.0e10, 0.04)
        r += h.memory(260 * GB + j(rng, 8e8), 4 * 11 * GB, 32 * 0.9 * GB, 0.2 * GB, membw=membw)
        rd = j(rng, 4 * 256 * 9.0e4 / step, 0.05)
        r += h.storage(
            {"nvme1n1": dict(read=rd, rops=rd / 9.0e4, busy=0.08, qd=0.3)},
            dict(chars=rd, bytes=rd, worker=rd),
            capacity={"/": 0.3, "/data": 0.66},
        )
        r += h.network(iv=iv)
        for i in range(4):
            s = gs(
                rng,
                0.83 * busy,
                0.28 * busy,
                0.47 * busy,
                busy,
                46.0e9,
                70 + 280 * busy,
                1410,
                pcie=(2e6, 201e6 / step),
                nvl=(1.0e8, 1.0e8),
                spec=A100_SXM80,
                job_process=1.0,
                procs={base + 1 + i: 45.5e9},
            )
            r += h.gpu_readings(i, s, tick)
        tr.add(t, iv, r, ph, ranks)
    return tr


def two_node_slow_sata_node1(name, rng, t0):
    """Two HGX H100 nodes (8 GPUs each, 8x 400 Gb/s InfiniBand), 16-rank DDP of a 1.0B video DiT
    fed 2-second 1080p H.264 clips (~5 MB each, 16 a rank a step, decoded on the GPUs' NVDEC: the
    loader workers only read). Node 0 reads its shard copy from a PCIe gen4 NVMe (/raid); node 1,
    after a drive swap, from a SATA SSD (sda, 550 MB/s): its 8 ranks need 640 MB a step and get
    ~535 MB/s (busy 100%, ~28 requests queued, 26 worker threads in D state), so they wait ~0.79 s
    a step for clips; node 0's ranks finish backward and wait ~0.79 s for them in the all-reduce.
    A 1.21 s step where 0.41 s would do; node 0's NVMe reads ~0.53 GB/s (8%). IB ~1.6%, NVLink ~1.4%."""
    hosts, traces = [], []
    base = [20100, 20900]
    for node in range(2):
        if node == 0:
            h = hgx_h100(rng, "hgx-h100-061")
        else:
            h = Host(
                rng,
                "hgx-h100-062",
                "Intel(R) Xeon(R) Platinum 8480C",
                224,
                112,
                2,
                3800.0,
                SPR,
                2015 * GiB,
                [H100_SXM] * 8,
                disks=[
                    ("nvme0n1", 1.92 * TB, "nvme", 4, "SAMSUNG MZ1L21T9HCLS"),
                    ("sda", 3.84 * TB, "sata", None, "SAMSUNG MZ7LH3T8HMLT-00005"),
                ],
                nics=[("eno1", 25000)],
                ib=[(f"mlx5_{k}", 1, 400) for k in range(8)],
                mounts=[
                    ("/", "ext4", "/dev/nvme0n1p2", False, 1.79 * TB),
                    ("/raid", "ext4", "/dev/sda1", False, 3.5 * TB),
                ],
            )
        hosts.append(h)
        traces.append(
            Trace(
                h,
                t0 + node * 0.23,
                {
                    "pid": base[node],
                    "command": "bottleneckd run -- torchrun --nnodes 2 --nproc_per_node 8 train_vdit.py",
                    "constructed": f"{name}.node{node}",
                },
            )
        )
    fast = dict(data_wait=0.005, transfer=0.006, forward=0.13, backward=0.26, optimizer=0.012, other=0.005)
    compute = fast["forward"] + fast["backward"] + fast["optimizer"]
    wait1 = 0.79
    flops = 9.5e13
    step_phases: dict = {}

    def step_fn(k):
        if k not in step_phases:
            slow = []
            for _ in range(8):
                p = noisy(rng, fast, 0.02)
                p["data_wait"] = j(rng, wait1, 0.05)
                p["communication"] = j(rng, 0.012, 0.1)
                slow.append(p)
            wall = max(sum(p.values()) for p in slow)
            quick = []
            for _ in range(8):
                p = noisy(rng, fast, 0.02)
                p["communication"] = max(0.01, wall - sum(p.values()))
                quick.append(p)
            for p in slow:
                p["communication"] += wall - sum(p.values())
            step_phases[k] = quick + slow
        return step_phases[k]

    def make_facts(node):
        h = hosts[node]

        def facts(r):
            exposed = 0.012 if node == 1 else wait1
            f = ddp_facts(
                h,
                base[node],
                r,
                16,
                8,
                flops,
                3.3e11,
                compute,
                parameters=1_020_000_000,
                input_rank=5,
                batch_size=16,
                loader_workers=4,
                cores=224,
                ddp_comm_timing="comm hook",
                ddp_buckets=160,
                comm_seconds_per_step=j(rng, exposed + 0.1),
                comm_exposed_seconds_per_step=j(rng, exposed),
                comm_overlapped_seconds_per_step=j(rng, 0.1),
                comm_overlap_ratio=0.1 / (exposed + 0.1),
            )
            f["cuda_uuids"] = [h.uuids[r]]
            return f

        return facts

    step = 0.005 + 0.006 + compute + 0.005 + wait1
    for node in range(2):
        h, tr = hosts[node], traces[node]
        job = StepJob(
            t0 + node * 0.23,
            (lambda nd: lambda k: step_fn(k)[nd * 8 : nd * 8 + 8])(node),
            make_facts(node),
            (
                lambda nd: (
                    lambda r: ident(
                        "vdit-2n", nd * 8 + r, 16, 8, hosts[nd], base[nd] + 1 + r, hosts[nd].uuids[r], node_rank=nd
                    )
                )
            )(node),
            examples_per_step=16,
        )
        for tick, t, iv in ticks(rng, 70, t0 + node * 0.23):
            ph, ranks = job.report(job.collect(t))
            slow = node == 1
            jb = jobcpu(
                rng,
                ranks=8,
                rank_each=1.1,
                main=0.62,
                workers=32,
                worker_each=0.05 if slow else 0.12,
                usable=224,
                comm_thread_cores=8 * 0.05,
                processes_in_disk_wait=int(j(rng, 21, 0.15)) if slow else 0,
                threads_in_disk_wait=int(j(rng, 26, 0.15)) if slow else 0,
            )
            r = h.cpu(
                jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.3,
                jb,
                iowait=clip(j(rng, 0.045, 0.1)) if slow else 0.002,
            )
            r += h.memory(300 * GB + j(rng, 5e8), 8 * 14 * GB, 32 * 0.6 * GB, 0.2 * GB)
            rd = j(rng, 640e6 / step, 0.03)
            if slow:
                rd = min(rd, j(rng, 5.35e8, 0.01))
                r += h.storage(
                    {
                        "sda": dict(
                            read=rd, rops=rd / 524288, busy=0.998, qd=j(rng, 28, 0.08), inflight=int(j(rng, 28, 0.1))
                        )
                    },
                    dict(chars=rd, bytes=rd, worker=rd, calls=rd / 524288, psi_some=0.91, psi_full=0.74),
                    host_psi=(clip(j(rng, 0.88, 0.03)), clip(j(rng, 0.7, 0.04))),
                    capacity={"/": 0.28, "/raid": 0.84},
                )
            else:
                r += h.storage(
                    {"nvme1n1": dict(read=rd, rops=rd / 524288, busy=0.09, qd=0.6)},
                    dict(chars=rd, bytes=rd, worker=rd, calls=rd / 524288),
                    capacity={"/": 0.28, "/raid": 0.84},
                )
            ibr = j(rng, 2 * 4.08e9 * 15 / 16 / 8 / step, 0.04)
            r += h.network(ib_rates={f"mlx5_{k}/1": (ibr, j(rng, ibr, 0.01)) for k in range(8)}, iv=iv)
            nv = 2 * 4.08e9 * 15 / 16 / step
            for i in range(8):
                c = compute / step
                s = gs(
                    rng,
                    0.9 * c + (0.02 if slow else 0.05 * wait1 / step),
                    0.55 * c,
                    0.35 * c,
                    clip(c + (0.03 if slow else wait1 / step)),
                    58.0e9,
                    110 + 520 * c,
                    1980,
                    pcie=(2e6, 80e6 / step),
                    nvl=(nv / 2, nv / 2),
                    spec=H100_SXM,
                    job_process=1.0,
                    procs={base[node] + 1 + i: 57.5e9},
                )
                r += h.gpu_readings(i, s, tick)
            tr.add(t, iv, r, ph, ranks)
    return traces


def h100_cotenant_holding_memory(name, rng, t0):
    """A 64-thread Threadripper PRO workstation with one H100 PCIe shared by a small team: the job
    fine-tunes a 1.0B decoder (bf16, micro-batch 8 x 2048) and is compute-bound (SMs ~94%, tensor
    ~61%, NVML busy 100%, ~44% of the bf16 peak). NVML's process list also shows a colleague's idle
    Jupyter kernel (`python3`, pid 3311) holding 30.9 GB of the GPU's memory (GPU memory 93% used),
    running no kernels: the utilisation is all the job's."""
    spec = H100_PCIE
    h = Host(
        rng,
        "ws-tr-h100-03",
        "AMD Ryzen Threadripper PRO 5975WX 32-Cores",
        64,
        32,
        1,
        4560.0,
        ZEN,
        256 * GiB,
        [spec],
        disks=[("nvme0n1", 3.84 * TB, "nvme", 4, "Samsung SSD 990 PRO 4TB")],
        nics=[("enp36s0", 10000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 3.5 * TB)],
    )
    pid = 15530
    per = dict(data_wait=0.003, transfer=0.001, forward=0.11, backward=0.21, optimizer=0.013, other=0.004)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    flops = 1.1e14

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
            parameters=1_010_000_000,
            batch_size=8,
            tokens_per_example=2048.0,
            loader_workers=4,
            cores=64,
            cuda_memory_total_bytes=spec["mem"],
            cuda_memory_reserved_bytes=46_500_000_000,
            cuda_memory_allocated_bytes=16_200_000_000,
            cuda_memory_peak_allocated_bytes=44_800_000_000,
            cuda_alloc_retries=0,
        )

    def gpu_fn(tick):
        return gs(
            rng,
            0.94,
            0.61,
            0.43,
            1.0,
            79.4e9,
            338.0,
            1755,
            pcie=(2e6, 5e6),
            spec=spec,
            rel=0.012,
            job_process=1.0,
            procs={pid: 47.0e9, 3311: 30.9e9},
        )

    def cpu_fn(rng):
        return jobcpu(rng, rank_each=1.12, main=0.96, workers=4, worker_each=0.06, usable=64)

    return _single_gpu_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python sft.py --bs 8",
        per,
        facts,
        8,
        gpu_fn,
        cpu_fn=cpu_fn,
        mem=(41 * GB, 11 * GB),
    )


SCENARIOS = {
    "attach_loader_cotenant_zstd": attach_loader_cotenant_zstd,
    "ddp8_thermal_rank5_data_wait": ddp8_thermal_rank5_data_wait,
    "vdm_membw_with_exposed_allreduce": vdm_membw_with_exposed_allreduce,
    "vdm_membw_coarse_5s": vdm_membw_coarse_5s,
    "epoch1_decode_cache_then_pcie_allreduce": epoch1_decode_cache_then_pcie_allreduce,
    "record_nvml_only_membw": record_nvml_only_membw,
    "attach_cpu_only_slow_tokenizer": attach_cpu_only_slow_tokenizer,
    "cgroup8_of_64_augment_workers": cgroup8_of_64_augment_workers,
    "pinned_blocking_h2d_copies": pinned_blocking_h2d_copies,
    "numa_sys_pcie_allreduce": numa_sys_pcie_allreduce,
    "fp16_scaler_skipping_steps": fp16_scaler_skipping_steps,
    "eval_side_stream_overlap": eval_side_stream_overlap,
    "act_ckpt_micro1_a100_40g": act_ckpt_micro1_a100_40g,
    "collate_concat_main_thread": collate_concat_main_thread,
    "two_node_slow_sata_node1": two_node_slow_sata_node1,
    "h100_cotenant_holding_memory": h100_cotenant_holding_memory,
}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: construct_blind_gpu8.py OUT_DIR", file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for k, (name, fn) in enumerate(SCENARIOS.items()):
        rng = random.Random(8000 + k)
        tr = fn(name, rng, 1800000000.0 + 3600.0 * k)
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
    # attach: 24 decode/RandAugment workers get ~0.56 core each because another tenant's `zstd -T0` takes ~46 of 64
    # threads (10.5 cores of the job's threads on run queues); the NVMe is ~74% busy but with the other tenant's bytes
    # (the job reads 0.1 GB/s); first: give the job its cores back: stop / reschedule / cpuset-limit the backup's zstd
    # (then, if still short, lighter augmentation or GPU augmentation).
    "attach_loader_cotenant_zstd": ("cpu_compute", "data"),
    # rank 5's GPU at hw_thermal, 1305 MHz: its forward/backward 1.4x; the seven others wait ~27% of the step in the
    # all-reduce; a uniform 9% data wait is secondary; first: fix GPU 5's cooling (drain the node / exclude the GPU).
    "ddp8_thermal_rank5_data_wait": ("gpu_compute", "compute"),
    # compute phases 81% of the step with DRAM ~84% (intensity 53 FLOP/B, 15% of the bf16 peak) beside an exposed
    # all-reduce of 15.5%; first: fuse the memory-bound norm/activation ops (torch.compile, fused GroupNorm+SiLU),
    # the larger lever; then the all-reduce (bf16 gradient compression / bigger buckets).
    "vdm_membw_with_exposed_allreduce": ("gpu_memory_bandwidth", "compute"),
    # the same job at 5 s sampling: the same verdict.
    "vdm_membw_coarse_5s": ("gpu_memory_bandwidth", "compute"),
    # epoch 1 (first ~70 s): decode-bound workers (cpu_compute/data); the current regime (last ~110 s): the gradients'
    # all-reduce over PCIe P2P exposed ~27% (no NVLink); first (current): fewer/lighter all-reduces: gradient
    # accumulation with no_sync, or a bf16 compression hook; nothing on the loader now (the cache fixed it).
    "epoch1_decode_cache_then_pcie_allreduce": ("inter_gpu_interconnect", "communication"),
    # record only (no phases, no job rows): DRAM 90%, SMs 40%, tensor 4%, busy 99%: the GPU's memory bandwidth;
    # first: cut the bytes: fuse the gather/scatter message passing (torch.compile / a fused SpMM kernel such as
    # pyg-lib's segment_matmul or cuSPARSE), bf16 features.
    "record_nvml_only_membw": ("gpu_memory_bandwidth", "compute"),
    # attach, CPU-only: the main thread at a full core tokenising with a pure-Python tokenizer (70% of the samples),
    # the host ~20% busy; first: a fast (Rust) tokenizer, batched, or pre-tokenise the data set once; or workers.
    "attach_cpu_only_slow_tokenizer": ("cpu_compute", "data"),
    # an 8-CPU cgroup quota, 8 augmenting workers + the rank use all of it (throttled, PSI ~62%) while the node shows
    # 56 CPUs and ~40% busy; data wait ~55%; first: raise the pod's CPU limit (or move augmentation to the GPU).
    "cgroup8_of_64_augment_workers": ("cpu_compute", "data"),
    # blocking pinned copies (non_blocking=False) of 470 MB a step, 20% of the step at 75% of the PCIe gen4 link,
    # the GPU idle meanwhile; first: non_blocking=True with the next batch prefetched to the GPU on a side stream
    # (overlap the copy), and fewer bytes (uint8 masks, bf16 or uint16 tiles normalised on the GPU).
    "pinned_blocking_h2d_copies": ("cpu_gpu_interconnect", "transfer"),
    # 8 PCIe GPUs across two sockets: NCCL's ring crosses the sockets through host memory, all-reduce exposed ~35%,
    # PCIe counters only ~21%; first: fewer all-reduces (gradient accumulation with no_sync) / bf16 gradient
    # compression; check NCCL_P2P_LEVEL / topology (or keep jobs within a socket: 2 x 4 GPUs).
    "numa_sys_pcie_allreduce": ("inter_gpu_interconnect", "communication"),
    # fp16 with ~35% of steps skipped by the loss scaler: the time is compute-bound (SMs 93%, ~48% MFU); the tool can
    # only see time; first (engineer): switch autocast to bf16 on the A100 (no loss scaling, no skipped steps).
    "fp16_scaler_skipping_steps": ("gpu_compute", "compute"),
    # evaluation on a side stream overlapped with training, GPU busy 99.5% throughout, no other stage: compute-bound;
    # first: nothing on evaluation (it costs ~5% of the GPU time); FP8 / torch.compile if anything.
    "eval_side_stream_overlap": ("gpu_compute", "compute"),
    # memory-capacity bound: micro-batch 1 with full checkpointing (97% NVML, peak 92%), SMs 55%, ~25% recompute;
    # first: free GPU memory (shard the optimizer state / offload it, or LoRA) to raise the micro-batch and use
    # selective checkpointing.
    "act_ckpt_micro1_a100_40g": ("gpu_memory", "compute"),
    # each rank's main thread concatenates/pins ~600 MB a step at one core, data wait 40%, host DRAM 9% of its peak;
    # first: collate in the DataLoader workers (batch_size set, default collate) or into a preallocated pinned
    # buffer; drop the extra concatenation.
    "collate_concat_main_thread": ("cpu_compute", "data"),
    # node 1's data on a SATA SSD at its 550 MB/s (busy 100%): its 8 ranks wait ~0.79 s a step for data, node 0's
    # ranks wait for them in the all-reduce; first: put node 1's data on NVMe (or cache/stage it in RAM / read it
    # from node 0's copy); straggler: node 1's ranks (8-15).
    "two_node_slow_sata_node1": ("storage_bandwidth", "data"),
    # compute-bound (SMs 94%, ~44% MFU); another user's idle Jupyter kernel holds 31 GB of the GPU's memory but runs
    # nothing; first: nothing about the co-tenant; torch.compile / FP8 for the compute.
    "h100_cotenant_holding_memory": ("gpu_compute", "compute"),
}

NOTES = {
    "attach_loader_cotenant_zstd": dict(
        first="stop / limit the other tenant's zstd (isolate cores for the job)",
        straggler=None,
        never="storage_bandwidth (the other tenant's bytes)",
    ),
    "ddp8_thermal_rank5_data_wait": dict(first="fix GPU 5's cooling / exclude it", straggler=5, device="gpu5"),
    "vdm_membw_with_exposed_allreduce": dict(
        first="fuse memory-bound ops (torch.compile)", straggler=None, never="inter_gpu_interconnect first"
    ),
    "vdm_membw_coarse_5s": dict(first="fuse memory-bound ops (torch.compile)", straggler=None),
    "epoch1_decode_cache_then_pcie_allreduce": dict(
        first="gradient accumulation / bf16 compression for the PCIe all-reduce",
        straggler=None,
        earlier_regime=["cpu_compute", "data"],
    ),
    "record_nvml_only_membw": dict(first="fuse the gather/scatter kernels; fewer bytes", straggler=None),
    "attach_cpu_only_slow_tokenizer": dict(first="fast tokenizer / pre-tokenise / workers", straggler=None),
    "cgroup8_of_64_augment_workers": dict(first="raise the pod's CPU limit (or GPU augmentation)", straggler=None),
    "pinned_blocking_h2d_copies": dict(first="non_blocking=True + prefetch to GPU; fewer bytes", straggler=None),
    "numa_sys_pcie_allreduce": dict(first="gradient accumulation / bf16 compression; topology check", straggler=None),
    "fp16_scaler_skipping_steps": dict(first="bf16 autocast instead of fp16 (engineer); tool: compute", straggler=None),
    "eval_side_stream_overlap": dict(first="nothing on eval; FP8 / compile", straggler=None, never="other"),
    "act_ckpt_micro1_a100_40g": dict(first="free GPU memory to raise the micro-batch", straggler=None),
    "collate_concat_main_thread": dict(first="collate in the workers / preallocated pinned buffer", straggler=None),
    "two_node_slow_sata_node1": dict(
        first="node 1's data on NVMe / cached", straggler="node 1 (ranks 8-15)", device="node 1 sda"
    ),
    "h100_cotenant_holding_memory": dict(
        first="nothing about the co-tenant; compile / FP8", straggler=None, never="gpu_memory"
    ),
}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
