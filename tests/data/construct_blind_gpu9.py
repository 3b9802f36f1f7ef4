#!/usr/bin/env python3
"""Blind GPU traces, round 9: the textbook bottlenecks a held-out judge would most likely build,
written from docs/trace-format.md, the samplers, the hook (bottleneckd/torch/) and data/peaks.json
alone (not the diagnosis, advice or rules).

Each common bottleneck appears once or twice (a clean and a slightly noisy variant), on A100, H100,
L4, RTX 4090, A10, T4 and CPU-only machines, under `run` (hook phases) and `attach` (stack samples
only): a DataLoader with num_workers=0 decoding JPEGs; two workers a rank on a 256-thread node; a
data set read over NFS on 10 GbE; random 4 KiB reads at the NVMe's IOPS limit; pageable
host-to-device copies; fp32 matmuls with TF32 off on an A100; an elementwise-heavy model bound by
HBM bandwidth; a launch-bound batch of 2; a DDP all-reduce through PCIe/host memory on 4x RTX 4090;
DDP across two nodes on 25 GbE; a straggler rank with an uneven shard; four CPU ranks with PyTorch's
default threads on 8 CPUs; a CPU job bound by DRAM bandwidth; a checkpoint (with fsync) to a SATA
SSD every 50 steps; an evaluation loop every 100 steps; a full GPU with the allocator retrying.

How the hook reports the periodic work (bottleneckd/torch/timing.py, clock_phases.py): a step's
wall runs from the previous step's end; a checkpoint written after optimizer.step() falls between
that end and the next batch request, i.e. in the next step's `other`; an evaluation loop run from a
plain script asks its (also timed) loader for batches after forwards with no optimizer step, so its
batches are folded into the next training step as micro-batches (data_wait, transfer, forward, and
the metric code after each forward as `backward`). A step longer than an interval is reported
whole where it ends; the intervals before carry null phases.

    python tests/data/construct_blind_gpu9.py OUT_DIR

writes OUT_DIR/<scenario>.jsonl (a multi-node scenario: OUT_DIR/<scenario>.node<k>.jsonl, to be
analysed together) and OUT_DIR/labels.json. Stdlib only, seeded, deterministic. The machine,
reading and step helpers are those of construct_blind_gpu8.py, copied unchanged (its `Host.cpu`
keeps every logical CPU at or under 1).

Corrections after the first run (labels unchanged): two attach scenarios' worker stack rows had
their count after draws_random/seeded (rejected as malformed; now in the documented order);
cpu_4proc_default_threads_8vcpu had a `communication` phase without the DDP comm hook's facts
(`ddp_comm_timing`, `comm_*_seconds_per_step`) that the real hook writes with it on gloo.

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


def _run_job(name, rng, t0, h, pid, cmd, step_fn, facts, examples, tick_fn, n=60, ident_fn=None):
    """A `bottleneckd run` job: the hook's phases of the steps that ended in each interval;
    tick_fn(tick, t, iv, job) -> the interval's readings."""
    tr = Trace(h, t0, {"pid": pid, "command": cmd, "constructed": name})
    uuid = h.uuids[0] if h.uuids else ""
    job = StepJob(
        t0,
        step_fn,
        facts,
        ident_fn or (lambda r: ident("local", 0, 1, 1, h, pid, uuid)),
        examples_per_step=examples,
    )
    for tick, t, iv in ticks(rng, n, t0):
        ph, ranks = job.report(job.collect(t))
        r = tick_fn(tick, t, iv, job)
        tr.add(t, iv, r, ph, ranks)
        if not h.gpus:
            tr.lines[-1]["samplers"]["gpu"] = [False, 0.0001, h.machine["unknown"]["gpus"]]
    return tr


def _attach_job(name, rng, t0, h, pid, dist_fn, sites, tick_fn, n=60, facts_extra=None, worker_rows=None):
    """A `bottleneckd attach` job: py-spy stack samples of the main thread at 2 Hz (steps count the
    samples), dist_fn(tick) -> the phase shares of that interval."""
    tr = Trace(h, t0, {"pid": pid, "command": f"bottleneckd attach --pid {pid}", "constructed": name})
    for tick, t, iv in ticks(rng, n, t0):
        ph, c = attach_phases(rng, dist_fn(tick), facts_extra=facts_extra, interval=iv)
        rows = stack_rows(c, sites)
        if worker_rows:
            rows += worker_rows(tick)
        r = tick_fn(tick, t, iv)
        tr.add(t, iv, r, ph, stacks={"source": "py-spy", "rate_hz": 2.0, "rows": rows})
        if not h.gpus:
            tr.lines[-1]["samplers"]["gpu"] = [False, 0.0001, h.machine["unknown"]["gpus"]]
    return tr


def _sync_ranks(rng, per_list, rel=0.03):
    """Synchronous DDP step: every rank's wall is the slowest rank's; the others' gap goes to
    communication (waiting in the all-reduce)."""
    ps = [noisy(rng, p, rel) for p in per_list]
    wall = max(sum(p.values()) for p in ps)
    for p in ps:
        p["communication"] = p.get("communication", 0.0) + wall - sum(p.values())
    return ps


def _nvml_cloud_host(rng, hostname, spec, cpu, logical, physical, mem, flags, disks, nic, mounts, max_mhz=None):
    return Host(
        rng, hostname, cpu, logical, physical, 1, max_mhz, flags, mem, [spec], disks=disks, nics=[nic], mounts=mounts
    )


# --------------------------------------------------------------------------------------------
# scenarios
# --------------------------------------------------------------------------------------------


def t4_workers0_pil_decode(name, rng, t0):
    """GCP n1-standard-8 with one T4 (8 vCPUs, 30 GB): ResNet-50 fp16 autocast, batch 64 at 224 px,
    torchvision ImageFolder with DataLoader(num_workers=0): every JPEG (~112 KB) is decoded and
    RandomResizedCrop'd by PIL in the training process's main thread (~4.46 ms an image, 0.285 s a
    batch) while the GPU waits. Data wait ~51% of a 0.555 s step, the main thread at ~99% of one
    core, the host ~16% busy (7 CPUs idle); the T4 busy ~49%. Clean: little jitter."""
    h = _nvml_cloud_host(
        rng,
        "n1-std8-t4-03",
        T4,
        "Intel(R) Xeon(R) CPU @ 2.30GHz",
        8,
        4,
        30 * GiB,
        BDW,
        [("sda", 200 * GB, "scsi", None, "PersistentDisk")],
        ("ens4", 16000),
        [("/", "ext4", "/dev/sda1", False, 197 * GB)],
    )
    pid = 2871
    per = dict(data_wait=0.2853, transfer=0.0066, forward=0.0857, backward=0.1664, optimizer=0.0081, other=0.0029)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = steady(per)

    def facts(r):
        f = ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            7.86e11,
            3.0e10,
            compute,
            parameters=25_557_032,
            input_rank=4,
            has_conv=True,
            conv_flop_share=0.97,
            batch_size=64,
            loader_workers=0,
            pin_memory=False,
            persistent_workers=False,
            optimizer_impl="foreach",
            autocast_dtype="float16",
            compute_dtype="float16",
            cores=8,
        )
        return f

    busy = (compute + per["transfer"]) / step + 0.01

    def tick_fn(tick, t, iv, job):
        main = clip(j(rng, 0.985, 0.008))
        jb = jobcpu(rng, rank_each=main + 0.07, main=main, workers=0, usable=8, rank_side_thread_cores=0.07)
        jb["rank_busy_cores"] = main + j(rng, 0.07, 0.1)
        r = h.cpu(jb["rank_busy_cores"] + j(rng, 0.22, 0.1), jb)
        r += h.memory(9.1 * GB + j(rng, 3e7), 5.3 * GB)
        rd = j(rng, 64 * 112e3 / step, 0.06)
        r += h.storage(
            {"sda": dict(read=rd * 0.93, rops=rd * 0.93 / 112e3 * 1.3, busy=0.11, qd=0.14)},
            dict(chars=rd, bytes=rd * 0.93, rank=rd * 0.93, calls=j(rng, 64 * 5 / step, 0.05)),
            capacity={"/": 0.58},
        )
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.8 * busy,
            0.3 * busy,
            0.35 * busy,
            busy,
            9.6e9,
            18 + 50 * busy,
            1590,
            pcie=(2e6, 64 * 3 * 224 * 224 * 4 / step),
            spec=T4,
            job_process=1.0,
            procs={pid: 9.2e9},
        )
        r += h.gpu_readings(0, s, tick)
        return r

    return _run_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python train_imagenet.py --workers 0",
        lambda k: [noisy(rng, per, 0.025)],
        facts,
        64,
        tick_fn,
    )


def attach_l4_workers0_decode_noisy(name, rng, t0):
    """`bottleneckd attach` to a ViT-S/16 run on a GCP g2-standard-16 (one L4, 16 vCPUs): a
    DataLoader with num_workers=0, so the dataset's __getitem__ (PIL open, RandomResizedCrop,
    ColorJitter) runs in the main thread: ~54% of its stack samples are in the data stage. Noisy: a
    TensorBoard server and a notebook kernel take ~0.7-1.0 core, a `pip install` spikes ~3 cores for
    ~10 s, the shares wander by a few points from interval to interval. The main thread ~1 core, the
    host ~13% busy; the L4 busy ~46%."""
    h = _nvml_cloud_host(
        rng,
        "g2-std16-l4-08",
        L4,
        "Intel(R) Xeon(R) CPU @ 2.20GHz",
        16,
        8,
        64 * GiB,
        CLX,
        [("nvme0n1", 300 * GB, "nvme", None, "nvme_card-pd")],
        ("ens4", 32000),
        [("/", "ext4", "/dev/nvme0n1p1", False, 290 * GB)],
    )
    pid = 40417
    base = dict(data_wait=0.535, forward=0.115, backward=0.235, optimizer=0.04, gpu_wait=0.035, other=0.04)
    sites = {
        "data_wait": (
            "__getitem__",
            "/home/jupyter/vit/data.py",
            47,
            'img = Image.open(path).convert("RGB")',
            True,
            False,
        ),
        "forward": ("train_one_epoch", "/home/jupyter/vit/train.py", 88, "logits = model(x)", None, False),
        "backward": ("train_one_epoch", "/home/jupyter/vit/train.py", 90, "scaler.scale(loss).backward()", None, False),
        "optimizer": ("train_one_epoch", "/home/jupyter/vit/train.py", 91, "scaler.step(opt)", None, False),
        "gpu_wait": ("train_one_epoch", "/home/jupyter/vit/train.py", 95, "running += loss.item()", None, False),
        "other": ("train_one_epoch", "/home/jupyter/vit/train.py", 97, "writer.add_scalar('loss', l, it)", None, False),
    }

    def dist_fn(tick):
        return {k: v * j(rng, 1.0, 0.08) for k, v in base.items()}

    def tick_fn(tick, t, iv):
        busy = clip(j(rng, 0.46, 0.06))
        main = clip(j(rng, 0.99, 0.008))
        side = j(rng, 0.14, 0.15)
        jb = jobcpu(rng, rank_each=main + side, main=main, workers=0, usable=16, rank_side_thread_cores=side)
        jb["rank_busy_cores"] = main + side
        spike = j(rng, 3.1, 0.1) if 31 <= tick < 41 else 0.0
        r = h.cpu(main + side + j(rng, 0.85, 0.15) + spike + 0.2, jb, sidecar=0.06)
        r += h.memory(14.2 * GB + j(rng, 2e8), 6.4 * GB)
        rd = j(rng, 11.5e6, 0.12)
        r += h.storage(
            {"nvme0n1": dict(read=rd, rops=rd / 96e3, busy=0.06)},
            dict(chars=rd, bytes=rd * 0.8, rank=rd * 0.8),
            capacity={"/": 0.63},
        )
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.8 * busy,
            0.35 * busy,
            0.4 * busy,
            busy,
            13.8e9,
            16 + 52 * busy,
            2040,
            rel=0.05,
            pcie=(3e6, 77.1e6 / 0.95 * busy / 0.46),
            spec=L4,
            job_process=1.0,
            procs={pid: 13.3e9},
        )
        r += h.gpu_readings(0, s, tick)
        return r

    return _attach_job(name, rng, t0, h, pid, dist_fn, sites, tick_fn)


def dgx_a100_two_workers_per_rank(name, rng, t0):
    """DGX A100 80GB (2x EPYC 7742, 256 threads), 8-rank DDP of EfficientNet-B3 at 300 px (bf16,
    channels_last, batch 96 a rank) with DataLoader(num_workers=2): each image costs ~12.1 ms of a
    core (decode, RandAugment, RandomErasing), 1.16 core-seconds a batch, so two workers hand out a
    batch every ~0.58 s while the GPU needs 0.33 s. Data wait ~41% of a 0.588 s step on every rank;
    the 16 workers each at a full core, the node ~10% busy (230 threads idle); GPUs busy ~57%."""
    h = dgx_a100(rng, "dgx-a100-07")
    base = 71300
    per = dict(
        data_wait=0.243,
        transfer=0.004,
        forward=0.105,
        backward=0.212,
        optimizer=0.011,
        communication=0.009,
        other=0.004,
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = steady(per)
    flops = 96 * 1.85e9 * 3

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            8,
            8,
            flops,
            4.1e10,
            compute,
            parameters=12_233_232,
            input_rank=4,
            has_conv=True,
            conv_flop_share=0.93,
            batch_size=96,
            loader_workers=2,
            prefetch_factor=2,
            cores=256,
            ddp_comm_timing="comm hook",
            ddp_buckets=3,
            comm_seconds_per_step=j(rng, 0.031),
            comm_exposed_seconds_per_step=j(rng, 0.009),
            comm_overlapped_seconds_per_step=j(rng, 0.022),
            comm_overlap_ratio=0.71,
        )

    grads = 12_233_232 * 4
    nv = 2 * 7 / 8 * grads / step
    c = compute / step

    def tick_fn(tick, t, iv, job):
        jb = jobcpu(
            rng, ranks=8, rank_each=1.05, main=0.78, workers=16, worker_each=0.992, usable=256, worker_max_demand=1.0
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 2.1, jb)
        r += h.memory(205 * GB + j(rng, 4e8), 8 * 9.5 * GB, 16 * 1.9 * GB, 0.2 * GB)
        rd = j(rng, 8 * 96 * 135e3 / step, 0.04)
        r += h.storage(
            {f"nvme{k}n1": dict(read=rd / 4, rops=rd / 4 / 135e3, busy=0.03) for k in range(2, 6)},
            dict(chars=rd, bytes=rd, worker=rd, calls=j(rng, 8 * 96 * 3 / step)),
            capacity={"/": 0.22, "/raid": 0.41},
        )
        r += h.network(iv=iv)
        for i in range(8):
            busy = c + (per["transfer"] + per["communication"]) / step
            s = gs(
                rng,
                0.9 * c + 0.01,
                0.35 * c,
                0.45 * c,
                busy,
                31.4e9,
                60 + 300 * c,
                1410,
                pcie=(2e6, 96 * 3 * 300 * 300 / step),
                nvl=(nv, nv),
                spec=A100_SXM80,
                job_process=1.0,
                procs={base + 1 + i: 30.9e9},
            )
            r += h.gpu_readings(i, s, tick)
        return r

    return _run_job(
        name,
        rng,
        t0,
        h,
        base,
        "bottleneckd run -- torchrun --nproc_per_node 8 train.py --model efficientnet_b3 -j 2",
        lambda k: _sync_ranks(rng, [per] * 8, 0.03),
        facts,
        96,
        tick_fn,
        ident_fn=lambda r: ident("effnet-b3", r, 8, 8, h, base + 1 + r, h.uuids[r]),
    )


def attach_h100_few_workers_noisy(name, rng, t0):
    """`bottleneckd attach` to a 4-rank DDP self-supervised ViT-B run (DINO-style multi-crop: 2
    global 224 px + 8 local 96 px crops of each image, colour jitter, blur, solarise) on a 4x H100
    PCIe server with 2x EPYC 9354 (128 threads), DataLoader(num_workers=3) a rank: the 12 workers run
    at a full core each and the main threads wait ~47% of their stack samples for batches; the host
    ~12% busy. Noisy: the shares wander by interval, another user's rsync takes ~5 cores for ~15 s,
    one sample's counters arrive late."""
    h = Host(
        rng,
        "h100p-4g-srv-12",
        "AMD EPYC 9354 32-Core Processor",
        128,
        64,
        2,
        3800.0,
        ZEN4,
        768 * GiB,
        [H100_PCIE] * 4,
        disks=[
            ("nvme0n1", 960 * GB, "nvme", 4, "SAMSUNG MZ1L2960HCJR"),
            ("nvme1n1", 7.68 * TB, "nvme", 4, "SAMSUNG MZQL27T6HBLA"),
        ],
        nics=[("ens1f0np0", 100000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 0.9 * TB), ("/data", "xfs", "/dev/nvme1n1", False, 7.0 * TB)],
    )
    pid = 55210
    base = dict(
        data_wait=0.47, forward=0.13, backward=0.27, optimizer=0.035, communication=0.04, gpu_wait=0.025, other=0.03
    )
    sites = {
        "data_wait": (
            "train_one_epoch",
            "/home/ssl/dino/main_dino.py",
            291,
            "for it, (images, _) in enumerate(metric_logger.log_every(data_loader, 10, header)):",
            False,
            False,
        ),
        "forward": (
            "train_one_epoch",
            "/home/ssl/dino/main_dino.py",
            299,
            "student_output = student(images)",
            None,
            False,
        ),
        "backward": (
            "train_one_epoch",
            "/home/ssl/dino/main_dino.py",
            311,
            "fp16_scaler.scale(loss).backward()",
            None,
            False,
        ),
        "optimizer": (
            "train_one_epoch",
            "/home/ssl/dino/main_dino.py",
            318,
            "fp16_scaler.step(optimizer)",
            None,
            False,
        ),
        "communication": (
            "train_one_epoch",
            "/home/ssl/dino/main_dino.py",
            311,
            "fp16_scaler.scale(loss).backward()",
            None,
            False,
        ),
        "gpu_wait": (
            "train_one_epoch",
            "/home/ssl/dino/main_dino.py",
            329,
            "metric_logger.update(loss=loss.item())",
            None,
            False,
        ),
        "other": ("train_one_epoch", "/home/ssl/dino/main_dino.py", 323, "m = momentum_schedule[it]", None, False),
    }
    wsite = ("__call__", "/home/ssl/dino/utils.py", 131, "crops.append(self.local_transfo(image))", True, False)

    def dist_fn(tick):
        return {k: v * j(rng, 1.0, 0.09) for k, v in base.items()}

    def tick_fn(tick, t, iv):
        busy = clip(j(rng, 0.51, 0.05))
        jb = jobcpu(
            rng, ranks=4, rank_each=0.92, main=0.61, workers=12, worker_each=0.985, usable=128, worker_max_demand=1.0
        )
        rs = j(rng, 5.2, 0.1) if 18 <= tick < 33 else 0.0
        r = h.cpu(
            jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.2 + rs,
            jb,
            sidecar=0.07,
            outside=[("rsync", 88121, rs / 2)] if rs else (),
        )
        r += h.memory(96 * GB + j(rng, 4e8), 4 * 7.2 * GB, 12 * 1.4 * GB, 0.1 * GB)
        rd = j(rng, 4 * 64 * 118e3 / 0.62, 0.06)
        extra = j(rng, 3.1e8, 0.1) if rs else 0.0
        r += h.storage(
            {"nvme1n1": dict(read=rd + extra, rops=rd / 118e3 + extra / 131072, busy=0.03 + (0.2 if rs else 0.0))},
            dict(chars=rd, bytes=rd, worker=rd, calls=j(rng, 1.7e3)),
            capacity={"/": 0.3, "/data": 0.52},
        )
        r += h.network(
            nic_rates={"ens1f0np0": (j(rng, 3.0e8, 0.1), j(rng, 2e6)) if rs else (j(rng, 2e5), j(rng, 3e5))}, iv=iv
        )
        for i in range(4):
            b = clip(j(rng, busy, 0.04))
            s = gs(
                rng,
                0.88 * b,
                0.42 * b,
                0.3 * b,
                b,
                38.5e9,
                60 + 260 * b,
                1755,
                rel=0.05,
                pcie=(3e6, 4 * 10 * 3 * 150 * 150 * 4 / 0.62 * b / 0.51),
                spec=H100_PCIE,
                job_process=1.0,
                procs={pid + 1 + i: 38.0e9},
            )
            r += h.gpu_readings(i, s, tick)
        return r

    def worker_rows(tick):
        return [["data_wait", "worker", *wsite[:4], 2 + tick % 2, *wsite[4:]]]

    tr = _attach_job(name, rng, t0, h, pid, dist_fn, sites, tick_fn, worker_rows=worker_rows)
    tr.lines[23]["interval"] = round(tr.lines[23]["interval"] + 0.31, 6)  # a late sample (the sidecar was descheduled)
    tr.lines[23]["t"] = round(tr.lines[23]["t"] + 0.31, 4)
    for line in tr.lines[24:]:
        line["t"] = round(line["t"] + 0.31, 4)
    return tr


def nfs_10gbe_a10x4_read(name, rng, t0):
    """A 4x A10 server (EPYC 7313, 32 threads, one 10 GbE port) training a ResNet-50-style model on
    multispectral tiles stored as uncompressed uint16 TIFFs (2.36 MB each) on the team's NFS filer
    (/mnt/datasets, nfs4 over eno1). 4 ranks x batch 64 = 604 MB a step; the mount moves ~1.15 GB/s
    (92% of the 1.25 GB/s link; the NIC's receive ~1.17 GB/s with the RPC overhead), so a step takes
    ~0.52 s where the GPUs need ~0.31 s: data wait ~40%. The 24 workers are light (~0.2 core each,
    decode is a memcpy), ~14 of their threads in D state on NFS reads; the local NVMe idle."""
    h = Host(
        rng,
        "a10x4-srv-02",
        "AMD EPYC 7313 16-Core Processor",
        32,
        16,
        1,
        3729.0,
        ZEN,
        256 * GiB,
        [A10] * 4,
        disks=[("nvme0n1", 960 * GB, "nvme", 4, "SAMSUNG MZ1L2960HCJR")],
        nics=[("eno1", 10000)],
        mounts=[
            ("/", "ext4", "/dev/nvme0n1p2", False, 0.9 * TB),
            ("/mnt/datasets", "nfs4", "filer01:/export/datasets", True, 0),
        ],
    )
    base = 19400
    per = dict(
        data_wait=0.2106,
        transfer=0.0128,
        forward=0.0921,
        backward=0.1858,
        optimizer=0.0087,
        communication=0.0081,
        other=0.0039,
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = steady(per)
    sample_bytes = 2.36e6

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            4,
            4,
            64 * 4.1e9 * 3,
            2.6e10,
            compute,
            parameters=25_610_000,
            input_rank=4,
            has_conv=True,
            conv_flop_share=0.96,
            batch_size=64,
            loader_workers=6,
            prefetch_factor=2,
            cores=32,
            ddp_comm_timing="comm hook",
            ddp_buckets=4,
            comm_seconds_per_step=j(rng, 0.021),
            comm_exposed_seconds_per_step=j(rng, 0.008),
            comm_overlapped_seconds_per_step=j(rng, 0.013),
            comm_overlap_ratio=0.62,
        )

    c = compute / step
    peer = 2 * 3 / 4 * 25_610_000 * 4 / step

    def tick_fn(tick, t, iv, job):
        jb = jobcpu(
            rng,
            ranks=4,
            rank_each=1.02,
            main=0.71,
            workers=24,
            worker_each=0.21,
            usable=32,
            processes_in_disk_wait=int(j(rng, 11, 0.15)),
            threads_in_disk_wait=int(j(rng, 14, 0.15)),
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.6, jb, iowait=clip(j(rng, 0.041, 0.1)))
        r += h.memory(61 * GB + j(rng, 3e8), 4 * 5.1 * GB, 24 * 0.9 * GB, 0.1 * GB)
        nfs = j(rng, 4 * 64 * sample_bytes / step, 0.015)
        r += h.storage(
            {}, dict(chars=nfs, bytes=0.0, worker=0.0, calls=j(rng, 4 * 64 * 2.1 / step)), capacity={"/": 0.37}
        )
        r += h.network(
            nic_rates={"eno1": (j(rng, 1.4e7, 0.08), nfs * j(rng, 1.013, 0.003))},
            nfs_rates={"/mnt/datasets": nfs},
            iv=iv,
        )
        for i in range(4):
            s = gs(
                rng,
                0.85 * c,
                0.4 * c,
                0.45 * c,
                c + 0.045,
                17.9e9,
                40 + 100 * c,
                1695,
                pcie=(peer, 64 * sample_bytes * 2 / step + peer),
                spec=A10,
                job_process=1.0,
                procs={base + 1 + i: 17.4e9},
            )
            r += h.gpu_readings(i, s, tick)
        return r

    return _run_job(
        name,
        rng,
        t0,
        h,
        base,
        "bottleneckd run -- torchrun --nproc_per_node 4 train_tiles.py --data /mnt/datasets/s2-tiles",
        lambda k: _sync_ranks(rng, [per] * 4, 0.025),
        facts,
        64,
        tick_fn,
        ident_fn=lambda r: ident("tiles-r50", r, 4, 4, h, base + 1 + r, h.uuids[r]),
    )


def attach_nvme_random_4k_iops(name, rng, t0):
    """`bottleneckd attach` to a click-through-rate model on an RTX 4090 workstation (Ryzen 9 7950X,
    128 GB): each batch of 16,384 rows is gathered by 12 loader workers with one unbuffered 4 KiB
    read each at a random offset of a 1.6 TB row file on a PCIe gen4 NVMe (/data): ~925k reads/s
    (92.5% of the drive's 1.0M random-read IOPS figure, 3.8 GB/s, 54% of its sequential figure),
    busy 100%, ~61 requests queued, io PSI ~70%. The main thread waits for batches ~64% of its
    samples; the GPU ~30% busy; the CPUs mostly idle (iowait ~28%)."""
    h = Host(
        rng,
        "ws-4090-11",
        "AMD Ryzen 9 7950X 16-Core Processor",
        32,
        16,
        1,
        5881.0,
        ZEN4,
        128 * GiB,
        [RTX4090],
        disks=[
            ("nvme0n1", 1 * TB, "nvme", 4, "Samsung SSD 980 PRO 1TB"),
            ("nvme1n1", 2 * TB, "nvme", 4, "Samsung SSD 990 PRO 2TB"),
        ],
        nics=[("enp14s0", 2500)],
        mounts=[
            ("/", "ext4", "/dev/nvme0n1p2", False, 0.93 * TB),
            ("/data", "ext4", "/dev/nvme1n1p1", False, 1.8 * TB),
        ],
    )
    pid = 7731
    base = dict(data_wait=0.64, forward=0.08, backward=0.14, optimizer=0.05, gpu_wait=0.04, other=0.05)
    sites = {
        "data_wait": ("train", "/home/rk/ctr/train.py", 64, "for dense, sparse, y in loader:", False, False),
        "forward": ("train", "/home/rk/ctr/train.py", 70, "logit = model(dense, sparse)", None, False),
        "backward": ("train", "/home/rk/ctr/train.py", 72, "loss.backward()", None, False),
        "optimizer": ("train", "/home/rk/ctr/train.py", 73, "opt.step()", None, False),
        "gpu_wait": ("train", "/home/rk/ctr/train.py", 76, "auc.update(logit.sigmoid().cpu(), y.cpu())", None, False),
        "other": ("train", "/home/rk/ctr/train.py", 78, "if it % 100 == 0: log(it, loss)", None, False),
    }
    wsite = ("__getitem__", "/home/rk/ctr/data.py", 38, "buf = os.pread(self.fd, ROW, ROW * int(i))", False, False)

    def tick_fn(tick, t, iv):
        ops = j(rng, 0.925e6, 0.012)
        rd = ops * 4096
        wk = [clip(j(rng, 0.38, 0.08)) for _ in range(12)]
        jb = jobcpu(
            rng,
            rank_side_thread_cores=0.18,
            rank_each=0.86,
            main=0.66,
            workers=12,
            worker_each=0.38,
            usable=32,
            processes_in_disk_wait=int(j(rng, 10, 0.1)),
            threads_in_disk_wait=int(j(rng, 12, 0.1)),
        )
        jb.update(worker_busy_cores=sum(wk), worker_max_busy_cores=max(wk), worker_hottest_thread_busy=max(wk))
        r = h.cpu(
            jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.5, jb, iowait=clip(j(rng, 0.28, 0.06)), sidecar=0.05
        )
        r += h.memory(38 * GB + j(rng, 2e8), 7.1 * GB, 12 * 0.6 * GB)
        r += h.storage(
            {"nvme1n1": dict(read=rd, rops=ops, busy=0.999, qd=j(rng, 61, 0.05), inflight=int(j(rng, 62, 0.08)))},
            dict(
                chars=rd,
                bytes=rd,
                worker=rd,
                calls=ops,
                psi_some=clip(j(rng, 0.72, 0.03)),
                psi_full=clip(j(rng, 0.55, 0.04)),
            ),
            host_psi=(clip(j(rng, 0.7, 0.03)), clip(j(rng, 0.53, 0.04))),
            capacity={"/": 0.41, "/data": 0.89},
        )
        r += h.network(iv=iv)
        busy = clip(j(rng, 0.30, 0.05))
        s = gs(
            rng,
            0.7 * busy,
            0.2 * busy,
            0.3 * busy,
            busy,
            6.1e9,
            30 + 300 * busy,
            2520,
            pcie=(2e6, j(rng, 4.6e8, 0.05)),
            spec=RTX4090,
            job_process=1.0,
            procs={pid: 5.6e9},
        )
        r += h.gpu_readings(0, s, tick)
        return r

    return _attach_job(
        name,
        rng,
        t0,
        h,
        pid,
        lambda tick: base,
        sites,
        tick_fn,
        worker_rows=lambda tick: [["data_wait", "worker", *wsite[:4], 4, *wsite[4:]]],
    )


def l4_pageable_h2d_s2(name, rng, t0):
    """GCP g2-standard-8 (one L4, 8 vCPUs): a small UNet on Sentinel-2 tiles, batch 48 x 13 x 256 x
    256 float32 (164 MB) plus int64 masks (25 MB), DataLoader(pin_memory=False) and `.to("cuda")`
    on the pageable batch: 189 MB a step through the driver's staging buffer at ~4.6 GB/s (15% of the
    31.5 GB/s gen4 x16 link), the main thread copying at one core. transfer ~37% of a 0.113 s step,
    compute (bf16) ~60%, data wait ~2%; over the step PCIe H2D ~1.7 GB/s (5.3%), the L4 busy ~60%."""
    h = one_gpu_vm(
        rng, "g2-std8-l4-17", L4, "Intel(R) Xeon(R) CPU @ 2.20GHz", 8, 32 * GiB, flags=CLX, nic=("ens4", 16000)
    )
    pid = 3318
    per = dict(data_wait=0.0021, transfer=0.0412, forward=0.0213, backward=0.0428, optimizer=0.0032, other=0.0019)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = steady(per)
    h2d = 48 * 13 * 256 * 256 * 4 + 48 * 256 * 256 * 8

    def facts(r):
        return ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            1.2e12,
            1.3e10,
            compute,
            parameters=7_850_000,
            input_rank=4,
            has_conv=True,
            conv_flop_share=0.94,
            batch_size=48,
            loader_workers=6,
            pin_memory=False,
            cores=8,
        )

    busy = compute / step + 0.01

    def tick_fn(tick, t, iv, job):
        wk = [clip(j(rng, 0.33, 0.06)) for _ in range(6)]
        main = clip(j(rng, 0.79, 0.02))
        jb = jobcpu(
            rng, rank_each=main + 0.08, main=main, workers=6, worker_each=0.33, usable=8, rank_side_thread_cores=0.08
        )
        jb.update(worker_busy_cores=sum(wk), worker_max_busy_cores=max(wk))
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.3, jb)
        r += h.memory(16.8 * GB + j(rng, 1e8), 5.9 * GB, 6 * 1.1 * GB)
        rd = j(rng, 48 * 2.1e6 / step * 0.4, 0.05)
        r += h.storage(
            {"nvme1n1": dict(read=rd, rops=rd / 262144, busy=0.05)},
            dict(chars=rd * 2.5, bytes=rd, worker=rd),
            capacity={"/": 0.33, "/scratch": 0.58},
        )
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.85 * busy,
            0.3 * busy,
            0.55 * busy,
            busy,
            11.3e9,
            18 + 50 * busy,
            2040,
            pcie=(3e6, h2d / step),
            spec=L4,
            job_process=1.0,
            procs={pid: 10.9e9},
        )
        r += h.gpu_readings(0, s, tick)
        return r

    return _run_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python train_s2_unet.py",
        lambda k: [noisy(rng, per, 0.02)],
        facts,
        48,
        tick_fn,
    )


def a100_fp32_tf32_off_noisy(name, rng, t0):
    """One A100 80GB SXM (12-vCPU cloud VM, DCGM on): a 354M GPT-style model trained in plain fp32
    with torch's default matmul precision (allow_tf32=False): every matmul on the FP32 pipes, tensor
    activity ~0, SMs ~96%, FP32 pipes ~74%, ~15.3 TFLOP/s (78% of the 19.5 TFLOP/s fp32 peak, 10% of
    the TF32 tensor peak). Noisy: step times jitter ~5%, every ~17th step waits ~60 ms for a batch
    (a worker reading a large shard), a few samples with DCGM scraped late."""
    h = one_gpu_vm(
        rng,
        "a2-ultragpu-1g-31",
        A100_SXM80,
        "Intel(R) Xeon(R) CPU @ 2.20GHz",
        12,
        170 * GiB,
        flags=CLX,
        nic=("ens4", 24000),
        dcgm=True,
    )
    pid = 9152
    per = dict(data_wait=0.0058, transfer=0.0021, forward=0.0931, backward=0.1846, optimizer=0.0062, other=0.0036)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = steady(per)
    flops = 6 * 354e6 * 2048

    def facts(r):
        f = ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            flops,
            1.1e11,
            compute,
            parameters=354_000_000,
            batch_size=4,
            tokens_per_example=512.0,
            loader_workers=2,
            cores=12,
            param_dtype="float32",
            compute_dtype="float32",
            allow_tf32=False,
            cudnn_allow_tf32=True,
            optimizer_impl="foreach",
        )
        f.pop("autocast_dtype", None)
        return f

    def step_fn(k):
        p = noisy(rng, per, 0.05)
        if k % 17 == 9:
            p["data_wait"] += j(rng, 0.06, 0.1)
        return [p]

    c = compute / step

    def tick_fn(tick, t, iv, job):
        jb = jobcpu(rng, rank_each=1.08, main=0.94, workers=2, worker_each=0.09, usable=12)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + j(rng, 0.4, 0.3), jb)
        r += h.memory(28 * GB + j(rng, 2e8), 9.8 * GB, 2 * 1.3 * GB)
        r += h.storage(
            {"nvme1n1": dict(read=j(rng, 4e6, 0.5), rops=j(rng, 60, 0.3))},
            dict(chars=j(rng, 3e6, 0.4)),
            capacity={"/": 0.46, "/scratch": 0.31},
        )
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.99 * c,
            0.0,
            0.21,
            clip(c + 0.012),
            41.3e9,
            330.0,
            1395,
            rel=0.04,
            pcie=(2e6, 9e6),
            spec=A100_SXM80,
            fp32=clip(j(rng, 0.74, 0.04)),
            fp16=0.0,
            job_process=1.0,
            procs={pid: 40.8e9},
        )
        r += h.gpu_readings(0, s, tick)
        return r

    return _run_job(
        name, rng, t0, h, pid, "bottleneckd run -- python train_gpt.py --dtype float32", step_fn, facts, 4, tick_fn
    )


def h100_elementwise_membw(name, rng, t0):
    """One H100 SXM (a3 VM, GPM): a NAFNet-style image-restoration network in eager bf16 (LayerNorm,
    SimpleGate, simplified channel attention, 1x1 and depthwise convs at 256 px, batch 32): ~0.62 TB
    moved a step for 19.8 TFLOP, 32 FLOP/B, far under the H100's ridge (~295 FLOP/B). Over the compute
    phases the HBM moves ~2.85 TB/s (85% of 3.35 TB/s), SMs ~88%, tensor ~9%; ~91 TFLOP/s (9% of the
    bf16 peak). Data wait ~1.4% of a 0.224 s step. Clean."""
    h = one_gpu_vm(rng, "a3-h100-1g-07", H100_SXM, "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", 26, 234 * GiB)
    pid = 5520
    per = dict(data_wait=0.0031, transfer=0.0015, forward=0.071, backward=0.139, optimizer=0.0072, other=0.0021)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = steady(per)
    flops, bytes_ = 1.98e13, 6.2e11

    def facts(r):
        return ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            flops,
            bytes_,
            compute,
            parameters=29_100_000,
            input_rank=4,
            has_conv=True,
            conv_flop_share=0.68,
            batch_size=32,
            loader_workers=8,
            cores=26,
        )

    c = compute / step

    def tick_fn(tick, t, iv, job):
        jb = jobcpu(rng, rank_each=1.1, main=0.93, workers=8, worker_each=0.31, usable=26)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.3, jb)
        r += h.memory(41 * GB + j(rng, 1e8), 8.2 * GB, 8 * 1.0 * GB)
        rd = j(rng, 32 * 0.9e6 / step, 0.04)
        r += h.storage(
            {"nvme1n1": dict(read=rd, rops=rd / 262144, busy=0.04)},
            dict(chars=rd, bytes=rd, worker=rd),
            capacity={"/": 0.36, "/scratch": 0.44},
        )
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.88,
            0.09,
            2.854e12 / 3.35e12 * c,
            0.99,
            52.4e9,
            560.0,
            1980,
            rel=0.015,
            pcie=(2e6, 32 * 3 * 256 * 256 * 4 * 2 / step),
            spec=H100_SXM,
            fp32=clip(j(rng, 0.14, 0.05)),
            job_process=1.0,
            procs={pid: 51.9e9},
        )
        r += h.gpu_readings(0, s, tick)
        return r

    return _run_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python train_nafnet.py",
        lambda k: [noisy(rng, per, 0.015)],
        facts,
        32,
        tick_fn,
    )


def attach_a100_membw_norm_heavy(name, rng, t0):
    """`bottleneckd attach` to a video super-resolution model (BasicVSR++-style: deformable
    alignment, many small convs, LeakyReLU, flow warping in eager fp16 autocast) on one A100 40GB PCIe
    in a 2x Xeon Gold 6342 server with a dcgm-exporter. DCGM: DRAM active ~81%, SMs ~86%, tensor ~8%,
    FP32 ~18%, NVML busy ~98%. The main thread's samples: launching forward/backward, waiting on the
    GPU at the loss's `.item()` (~33%), data wait ~4%. Noisy: counters jitter ~6%, every ~20 s a
    ~10% data-wait blip as the loader opens a new clip archive, a 1-core co-tenant process."""
    h = Host(
        rng,
        "gpu-a100p-04",
        "Intel(R) Xeon(R) Gold 6342 CPU @ 2.80GHz",
        96,
        48,
        2,
        3500.0,
        CLX,
        512 * GiB,
        [A100_PCIE40],
        disks=[("nvme0n1", 1.92 * TB, "nvme", 4, "INTEL SSDPF2KX019T1")],
        nics=[("ens2f0", 25000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 1.8 * TB)],
        dcgm=True,
    )
    pid = 120877
    base = dict(data_wait=0.04, forward=0.19, backward=0.31, optimizer=0.06, gpu_wait=0.33, other=0.07)
    sites = {
        "data_wait": ("train", "/home/vsr/basicsr/train.py", 182, "train_data = prefetcher.next()", False, False),
        "forward": (
            "optimize_parameters",
            "/home/vsr/basicsr/models/video_recurrent_model.py",
            97,
            "self.output = self.net_g(self.lq)",
            None,
            False,
        ),
        "backward": (
            "optimize_parameters",
            "/home/vsr/basicsr/models/video_recurrent_model.py",
            104,
            "self.scaler.scale(l_total).backward()",
            None,
            False,
        ),
        "optimizer": (
            "optimize_parameters",
            "/home/vsr/basicsr/models/video_recurrent_model.py",
            106,
            "self.scaler.step(self.optimizer_g)",
            None,
            False,
        ),
        "gpu_wait": (
            "reduce_loss_dict",
            "/home/vsr/basicsr/models/base_model.py",
            371,
            "log_dict[name] = value.mean().item()",
            None,
            False,
        ),
        "other": ("train", "/home/vsr/basicsr/train.py", 190, "msg_logger(log_vars)", None, False),
    }

    def dist_fn(tick):
        d = {k: v * j(rng, 1.0, 0.07) for k, v in base.items()}
        if tick % 20 == 7:
            d["data_wait"] += 0.11
        return d

    def tick_fn(tick, t, iv):
        blip = 0.1 if tick % 20 == 7 else 0.0
        busy = clip(j(rng, 0.98 - blip, 0.01))
        jb = jobcpu(rng, rank_each=1.12, main=0.97, workers=4, worker_each=0.22, usable=96)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + j(rng, 1.05, 0.1) + 0.3, jb, sidecar=0.07)
        r += h.memory(88 * GB + j(rng, 3e8), 11.4 * GB, 4 * 1.6 * GB)
        rd = j(rng, 4.2e7 + blip * 3e9, 0.08)
        r += h.storage(
            {"nvme0n1": dict(read=rd, rops=rd / 131072, busy=0.03 + blip)},
            dict(chars=rd, bytes=rd, worker=rd),
            capacity={"/": 0.57},
        )
        r += h.network(iv=iv)
        s = gs(
            rng,
            0.86 * busy,
            0.08 * busy,
            0.81 * busy,
            busy,
            36.1e9,
            70 + 170 * busy,
            1410,
            rel=0.06,
            pcie=(3e6, j(rng, 1.4e8, 0.1)),
            spec=A100_PCIE40,
            fp32=clip(j(rng, 0.18, 0.06)),
            job_process=1.0,
            procs={pid: 35.6e9},
        )
        r += h.gpu_readings(0, s, tick)
        return r

    return _attach_job(name, rng, t0, h, pid, dist_fn, sites, tick_fn)


def a10_bs2_launch_bound(name, rng, t0):
    """AWS g5.2xlarge (one A10, 8 vCPUs of an EPYC 7R32): a 44M-parameter 6-layer transformer
    fine-tuned in eager fp32/TF32 at batch 2 x 128 tokens: ~2,100 kernels a step, each a few
    microseconds of GPU work behind ~15 us of Python and dispatcher time on the host. The main thread
    (forward, optimizer) and the autograd device thread (backward) take turns at one core (launching
    threads ~0.99 core); the A10 is busy ~29% of the time. 0.039 s a step, data wait ~2%."""
    h = Host(
        rng,
        "g5-2xl-launch-04",
        "AMD EPYC 7R32",
        8,
        4,
        1,
        3300.0,
        ZEN,
        32 * GiB,
        [A10],
        disks=[
            ("nvme0n1", 200 * GB, "nvme", None, "Amazon Elastic Block Store"),
            ("nvme1n1", 450 * GB, "nvme", None, "Amazon EC2 NVMe Instance Storage"),
        ],
        nics=[("ens5", 25000)],
        mounts=[("/", "xfs", "/dev/nvme0n1p1", False, 193 * GB)],
    )
    pid = 4410
    per = dict(data_wait=0.0009, transfer=0.0004, forward=0.0131, backward=0.0189, optimizer=0.0046, other=0.0013)
    compute = per["forward"] + per["backward"] + per["optimizer"]

    def facts(r):
        return _no_autocast(
            ddp_facts(
                h,
                pid - 1,
                0,
                1,
                1,
                6 * 44e6 * 256,
                2.5e9,
                compute,
                parameters=44_100_000,
                batch_size=2,
                tokens_per_example=128.0,
                loader_workers=2,
                cores=8,
                param_dtype="float32",
                compute_dtype="float32",
                allow_tf32=True,
                optimizer_impl="foreach",
                compiled=False,
            )
        )

    def tick_fn(tick, t, iv, job):
        main = clip(j(rng, 0.64, 0.03))
        ag = clip(j(rng, 0.35, 0.04))
        jb = jobcpu(
            rng,
            rank_each=main + ag + 0.05,
            main=main,
            workers=2,
            worker_each=0.04,
            usable=8,
            launch_thread_cores=clip(main + ag),
            hottest_thread_busy=main,
            main_thread_demand=main + 0.01,
            rank_side_thread_cores=ag + 0.05,
        )
        jb["rank_busy_cores"] = main + ag + 0.05
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.2, jb)
        r += h.memory(6.3 * GB + j(rng, 5e7), 3.4 * GB, 2 * 0.5 * GB)
        r += h.storage({}, dict(chars=j(rng, 2e5)), capacity={"/": 0.29})
        r += h.network(iv=iv)
        busy = clip(j(rng, 0.29, 0.03))
        s = gs(
            rng,
            0.5 * busy,
            0.2 * busy,
            0.2 * busy,
            busy,
            3.9e9,
            58 + 30 * busy,
            1695,
            pcie=(j(rng, 1e6), j(rng, 5e6)),
            spec=A10,
            job_process=1.0,
            procs={pid: 3.5e9},
        )
        r += h.gpu_readings(0, s, tick)
        return r

    return _run_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python finetune.py --batch-size 2",
        lambda k: [noisy(rng, per, 0.03)],
        facts,
        2,
        tick_fn,
    )


def _no_autocast(f: dict) -> dict:
    f.pop("autocast_dtype", None)
    return f


def ddp4_4090_pcie_allreduce(name, rng, t0):
    """A 4x RTX 4090 workstation (Threadripper PRO 7975WX, 64 threads, PCIe gen4 x16 each, no NVLink
    and no peer-to-peer on GeForce): 4-rank DDP of a 1.1B decoder (bf16 autocast, fp32 gradients of
    4.4 GB). NCCL's ring goes through host shared memory: each GPU sends and receives 6.6 GB a step
    at ~11.5 GB/s (36% of the link per direction while it runs; 24% over the step), 0.574 s in flight
    of which ~0.41 s is exposed after backward: communication ~48% of a 0.867 s step. NVML busy
    ~97% (NCCL's copy kernels count as busy)."""
    h = Host(
        rng,
        "ws-4x4090-02",
        "AMD Ryzen Threadripper PRO 7975WX 32-Cores",
        64,
        32,
        1,
        5350.0,
        ZEN4,
        512 * GiB,
        [RTX4090] * 4,
        disks=[
            ("nvme0n1", 2 * TB, "nvme", 4, "Samsung SSD 990 PRO 2TB"),
            ("nvme1n1", 4 * TB, "nvme", 4, "Samsung SSD 990 PRO 4TB"),
        ],
        nics=[("enp65s0", 10000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 1.8 * TB), ("/data", "ext4", "/dev/nvme1n1p1", False, 3.6 * TB)],
    )
    base = 33100
    per = dict(
        data_wait=0.0042,
        transfer=0.0021,
        forward=0.1312,
        backward=0.2688,
        optimizer=0.0448,
        communication=0.4121,
        other=0.0039,
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = steady(per)

    def facts(r):
        return ddp_facts(
            h,
            base,
            r,
            4,
            4,
            6 * 1.1e9 * 4096,
            9.0e11,
            compute,
            parameters=1_100_048_384,
            batch_size=4,
            tokens_per_example=1024.0,
            loader_workers=4,
            cores=64,
            ddp_comm_timing="comm hook",
            ddp_buckets=170,
            comm_seconds_per_step=j(rng, 0.574, 0.02),
            comm_exposed_seconds_per_step=j(rng, 0.412, 0.02),
            comm_overlapped_seconds_per_step=j(rng, 0.162, 0.03),
            comm_overlap_ratio=0.282,
        )

    ring = 2 * 3 / 4 * 4.4e9 / step
    c = compute / step

    def tick_fn(tick, t, iv, job):
        jb = jobcpu(
            rng, ranks=4, rank_each=1.45, main=0.82, workers=16, worker_each=0.05, usable=64, comm_thread_cores=4 * 0.38
        )
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.5, jb)
        r += h.memory(142 * GB + j(rng, 3e8), 4 * 21 * GB, 16 * 0.5 * GB, 0.1 * GB)
        r += h.storage(
            {"nvme1n1": dict(read=j(rng, 2.5e6, 0.2), rops=40, busy=0.01)},
            dict(chars=j(rng, 2.5e6, 0.2), bytes=j(rng, 2e5), worker=j(rng, 2e5)),
            capacity={"/": 0.44, "/data": 0.61},
        )
        r += h.network(iv=iv)
        for i in range(4):
            s = gs(
                rng,
                0.9 * c,
                0.5 * c,
                0.4 * c,
                clip(c + 0.47 + 0.01),
                23.1e9,
                60 + 330 * c + 40 * 0.48,
                2520,
                pcie=(ring, ring + 4 * 1024 * 8 / step),
                spec=RTX4090,
                job_process=1.0,
                procs={base + 1 + i: 22.6e9},
            )
            r += h.gpu_readings(i, s, tick)
        return r

    return _run_job(
        name,
        rng,
        t0,
        h,
        base,
        "bottleneckd run -- torchrun --nproc_per_node 4 train_lm.py",
        lambda k: _sync_ranks(rng, [per] * 4, 0.02),
        facts,
        4,
        tick_fn,
        ident_fn=lambda r: ident("lm-1b1", r, 4, 4, h, base + 1 + r, h.uuids[r]),
    )


def two_node_a100_25gbe_allreduce(name, rng, t0):
    """Two cloud nodes, each 4x A100 40GB SXM (NVLink inside the node) and one 25 GbE port, no
    InfiniBand: 8-rank DDP of a 354M GPT (bf16 autocast, fp32 gradients of 1.42 GB) over NCCL's
    sockets transport. Each node's port carries ~2.49 GB a step each way (ring across the nodes) at
    ~2.9 GB/s while the all-reduce runs (93% of 3.125 GB/s), 0.86 s in flight, ~0.64 s exposed after
    backward: communication ~64% of a 1.006 s step on every rank; the NIC ~79% busy over the step,
    NVLink <1%."""
    hosts, traces = [], []
    base = [41000, 52000]
    for node in range(2):
        h = Host(
            rng,
            f"a100x4-n{node:02d}",
            "AMD EPYC 7543 32-Core Processor",
            128,
            64,
            2,
            3737.0,
            ZEN,
            1024 * GiB,
            [dict(A100_SXM40, links=12)] * 4,
            disks=[("nvme0n1", 1.6 * TB, "nvme", 4, "nvme_card-pd")],
            nics=[("ens6", 25000)],
            mounts=[("/", "ext4", "/dev/nvme0n1p1", False, 1.5 * TB)],
            dcgm=True,
        )
        hosts.append(h)
        traces.append(
            Trace(
                h,
                t0 + node * 0.17,
                {
                    "pid": base[node],
                    "command": "bottleneckd run -- torchrun --nnodes 2 --nproc_per_node 4 train_gpt.py",
                    "constructed": f"{name}.node{node}",
                },
            )
        )
    per = dict(
        data_wait=0.0034,
        transfer=0.0018,
        forward=0.1093,
        backward=0.2284,
        optimizer=0.0181,
        communication=0.6412,
        other=0.0041,
    )
    compute = per["forward"] + per["backward"] + per["optimizer"]
    step = steady(per)
    cache: dict = {}

    def step_fn(k):
        if k not in cache:
            cache[k] = _sync_ranks(rng, [per] * 8, 0.02)
        return cache[k]

    def make_facts(node):
        def facts(r):
            f = ddp_facts(
                hosts[node],
                base[node],
                r,
                8,
                4,
                6 * 354e6 * 8192,
                2.2e11,
                compute,
                parameters=354_000_000,
                batch_size=8,
                tokens_per_example=1024.0,
                loader_workers=2,
                cores=128,
                ddp_comm_timing="comm hook",
                ddp_buckets=57,
                comm_seconds_per_step=j(rng, 0.862, 0.02),
                comm_exposed_seconds_per_step=j(rng, 0.641, 0.02),
                comm_overlapped_seconds_per_step=j(rng, 0.221, 0.03),
                comm_overlap_ratio=0.256,
            )
            f["cuda_uuids"] = [hosts[node].uuids[r]]
            return f

        return facts

    nic = 2.49e9 / step
    c = compute / step
    for node in range(2):
        h, tr = hosts[node], traces[node]
        job = StepJob(
            t0 + node * 0.17,
            (lambda nd: lambda k: step_fn(k)[nd * 4 : nd * 4 + 4])(node),
            make_facts(node),
            (
                lambda nd: (
                    lambda r: ident(
                        "gpt-2n", nd * 4 + r, 8, 4, hosts[nd], base[nd] + 1 + r, hosts[nd].uuids[r], node_rank=nd
                    )
                )
            )(node),
            examples_per_step=8,
        )
        for tick, t, iv in ticks(rng, 70, t0 + node * 0.17):
            ph, ranks = job.report(job.collect(t))
            jb = jobcpu(
                rng,
                ranks=4,
                rank_each=1.35,
                main=0.74,
                workers=8,
                worker_each=0.04,
                usable=128,
                comm_thread_cores=4 * 0.41,
            )
            r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.9, jb)
            r += h.memory(88 * GB + j(rng, 3e8), 4 * 9 * GB, 8 * 0.5 * GB, 0.1 * GB)
            r += h.storage(
                {"nvme0n1": dict(read=j(rng, 3e6, 0.2), rops=30, busy=0.01)},
                dict(chars=j(rng, 3e6, 0.2)),
                capacity={"/": 0.39},
            )
            r += h.network(nic_rates={"ens6": (j(rng, nic, 0.02), j(rng, nic, 0.02))}, iv=iv)
            for i in range(4):
                s = gs(
                    rng,
                    0.9 * c + 0.08 * (1 - c),
                    0.5 * c,
                    0.4 * c,
                    0.975,
                    38.9e9,
                    75 + 270 * c,
                    1410,
                    pcie=(j(rng, 2.3e9, 0.03), j(rng, 2.3e9, 0.03)),
                    nvl=(nic, nic),
                    spec=A100_SXM40,
                    job_process=1.0,
                    procs={base[node] + 1 + i: 38.4e9},
                )
                r += h.gpu_readings(i, s, tick)
            tr.add(t, iv, r, ph, ranks)
    return traces


def ddp8_a100_uneven_shard_rank3(name, rng, t0):
    """DGX A100 80GB, 8-rank DDP fine-tuning a 1.3B decoder with dynamic padding; the pre-sharded
    data gives rank 3 the shard of long documents (its batches pad to ~1.38x the tokens). Rank 3's
    forward+backward take 1.38x the others' (its GPU busy ~99%, SMs ~86%); the seven others finish
    ~0.145 s earlier and wait in the last all-reduce bucket: communication ~28% of the 0.524 s step on
    them, ~2% on rank 3. NVML busy ~99% on all eight (NCCL's waiting kernel counts), SM activity
    ~65% on the seven."""
    h = dgx_a100(rng, "dgx-a100-22")
    base = 64400
    healthy = dict(data_wait=0.0061, transfer=0.0023, forward=0.118, backward=0.236, optimizer=0.0121, other=0.0035)
    slow = 1.38
    flops = 4.8e13

    def step_fn(k):
        ps = [noisy(rng, healthy, 0.02) for _ in range(8)]
        ps[3]["forward"] *= slow
        ps[3]["backward"] *= slow
        ps[3]["communication"] = j(rng, 0.011, 0.1)
        wall = max(sum(p.values()) for p in ps)
        for p in ps:
            p["communication"] = p.get("communication", 0.0) + wall - sum(p.values())
        return ps

    def facts(r):
        s = slow if r == 3 else 1.0
        comp = (0.118 + 0.236) * s + 0.0121
        exposed = 0.011 if r == 3 else 0.145
        return ddp_facts(
            h,
            base,
            r,
            8,
            8,
            flops * s,
            5.1e11 * s,
            comp,
            parameters=1_316_000_000,
            batch_size=8,
            tokens_per_example=768.0 * s,
            loader_workers=2,
            cores=256,
            ddp_comm_timing="comm hook",
            ddp_buckets=210,
            comm_seconds_per_step=j(rng, exposed + 0.07),
            comm_exposed_seconds_per_step=j(rng, exposed),
            comm_overlapped_seconds_per_step=j(rng, 0.07),
            comm_overlap_ratio=0.07 / (exposed + 0.07),
        )

    step = 0.0061 + 0.0023 + 0.354 * slow + 0.0121 + 0.011 + 0.0035
    nv = 2 * 7 / 8 * 5.26e9 / step

    def tick_fn(tick, t, iv, job):
        jb = jobcpu(rng, ranks=8, rank_each=1.12, main=0.88, workers=16, worker_each=0.07, usable=256)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 1.6, jb)
        r += h.memory(260 * GB + j(rng, 4e8), 8 * 12.5 * GB, 16 * 0.7 * GB, 0.2 * GB)
        r += h.storage(
            {"nvme2n1": dict(read=j(rng, 1.2e7, 0.2), rops=90, busy=0.01)},
            dict(chars=j(rng, 1.2e7, 0.2), bytes=j(rng, 1e7, 0.2), worker=j(rng, 1e7, 0.2)),
            capacity={"/": 0.25, "/raid": 0.47},
        )
        r += h.network(iv=iv)
        for i in range(8):
            if i == 3:
                c = (0.354 * slow + 0.0121) / step
                s = gs(
                    rng,
                    0.9 * c,
                    0.52 * c,
                    0.38 * c,
                    0.988,
                    71.2e9,
                    90 + 300 * c,
                    1410,
                    pcie=(2e6, 5e6),
                    nvl=(nv, nv),
                    spec=A100_SXM80,
                    job_process=1.0,
                    procs={base + 1 + i: 70.7e9},
                )
            else:
                c = (0.354 + 0.0121) / step
                s = gs(
                    rng,
                    0.9 * c + 0.08 * (1 - c),
                    0.52 * c,
                    0.38 * c,
                    0.986,
                    64.8e9,
                    90 + 300 * c,
                    1410,
                    pcie=(2e6, 5e6),
                    nvl=(nv, nv),
                    spec=A100_SXM80,
                    job_process=1.0,
                    procs={base + 1 + i: 64.3e9},
                )
            r += h.gpu_readings(i, s, tick)
        return r

    return _run_job(
        name,
        rng,
        t0,
        h,
        base,
        "bottleneckd run -- torchrun --nproc_per_node 8 finetune.py --shards /raid/shards",
        step_fn,
        facts,
        8,
        tick_fn,
        ident_fn=lambda r: ident("ft-1b3", r, 8, 8, h, base + 1 + r, h.uuids[r]),
    )


def cpu_4proc_default_threads_8vcpu(name, rng, t0):
    """AWS c7a.2xlarge (8 vCPUs, 8 physical cores, no SMT; no GPU): `torchrun --nproc_per_node 4`
    (gloo DDP) of a ResNet-18 on CIFAR-sized images, each rank with PyTorch's default intra-op
    threads (8: one a core), so 32 OpenMP threads share 8 CPUs. The host is 100% busy, ~23 cores'
    worth of runnable time waits on run queues, cgroup PSI cpu some ~99%; each rank's main thread gets
    ~0.42 core. A step takes ~2.23 s (forward+backward ~82%, the gloo all-reduce ~14%, waiting for
    descheduled peers)."""
    h = Host(
        rng,
        "c7a-2xl-12",
        "AMD EPYC 9R14",
        8,
        8,
        1,
        3700.0,
        ZEN4,
        16 * GiB,
        [],
        disks=[("nvme0n1", 100 * GB, "nvme", None, "Amazon Elastic Block Store")],
        nics=[("ens5", 12500)],
        mounts=[("/", "xfs", "/dev/nvme0n1p1", False, 97 * GB)],
    )
    base = 2200
    per = dict(data_wait=0.021, forward=0.62, backward=1.21, optimizer=0.06, communication=0.31, other=0.012)

    def facts(r):
        return {
            "device": "cpu",
            "pid": base + 1 + r,
            "param_dtype": "float32",
            "compute_dtype": "float32",
            "has_conv": True,
            "conv_flop_share": 0.95,
            "input_rank": 4,
            "parameters": 11_173_962,
            "ddp": True,
            "world_size": 4,
            "local_world_size": 4,
            "comm_backend": "gloo",
            # corrected after the first run: the hook's DDP comm hook times gloo's all-reduce too (host
            # clocks, torch/ddp_comm.py), so a trace with a `communication` phase carries these facts
            "ddp_comm_timing": "comm hook",
            "ddp_buckets": 2,
            "comm_seconds_per_step": 0.47,
            "comm_exposed_seconds_per_step": 0.31,
            "comm_overlapped_seconds_per_step": 0.16,
            "comm_overlap_ratio": 0.34,
            "intra_op_threads": 8,
            "loader_workers": 0,
            "batch_size": 128,
            "cores": 8,
            "optimizer_impl": "foreach",
            "flops_per_step": 2.1e11,
            "operand_bytes_per_step": 9.5e9,
            "arithmetic_intensity": 2.1e11 / 9.5e9,
            "achieved_flops": 2.1e11 / 1.89,
            "achieved_bytes_per_second": 9.5e9 / 1.89,
        }

    def tick_fn(tick, t, iv, job):
        mains = [clip(j(rng, 0.42, 0.06)) for _ in range(4)]
        tot = j(rng, 7.86, 0.004)
        jb = jobcpu(
            rng,
            ranks=4,
            rank_each=tot / 4,
            main=max(mains),
            workers=0,
            usable=8,
            runqueue_wait_cores=j(rng, 23.4, 0.04),
            pressure_some=clip(j(rng, 0.99, 0.005)),
            main_thread_demand=clip(max(mains) + 0.55, 0, 1.2),
            hottest_thread_demand=1.0,
            hottest_thread_busy=max(mains),
            comm_thread_cores=j(rng, 0.11, 0.1),
            rank_side_thread_cores=tot - sum(mains),
        )
        jb["rank_busy_cores"] = tot
        r = h.cpu(min(8.0, tot + 0.12), jb, psi=clip(j(rng, 0.99, 0.005)), sidecar=0.03)
        r += h.memory(8.9 * GB + j(rng, 5e7), 4 * 1.55 * GB, 0.0, 0.08 * GB)
        r += h.storage({}, dict(chars=j(rng, 6e5, 0.1)), capacity={"/": 0.31})
        r += h.network(iv=iv)
        return r

    return _run_job(
        name,
        rng,
        t0,
        h,
        base,
        "bottleneckd run -- torchrun --nproc_per_node 4 train_cifar.py",
        lambda k: _sync_ranks(rng, [per] * 4, 0.04),
        facts,
        128,
        tick_fn,
        n=70,
        ident_fn=lambda r: ident("cifar-cpu", r, 4, 4, h, base + 1 + r, ""),
    )


def attach_cpu_dlrm_membw(name, rng, t0):
    """`bottleneckd attach` to a CPU-only DLRM-style recommender on a bare-metal 2x Xeon Gold 6338
    (128 threads, resctrl MBM mounted, `bottleneckd calibrate` measured 281 GB/s of DRAM traffic):
    180 GB of fp32 EmbeddingBag tables gathered at random rows, 64 intra-op threads (PyTorch's default:
    one a physical core). MBM: ~247 GB/s (88% of the measured peak); the 64 threads busy (stalled on
    DRAM, which counts as busy), the host ~51%; the main thread's samples in forward/backward/the
    sparse optimizer step, data wait ~4%."""
    h = Host(
        rng,
        "xeon-6338-bm-05",
        "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
        128,
        64,
        2,
        3200.0,
        CLX,
        512 * GiB,
        [],
        disks=[("nvme0n1", 3.84 * TB, "nvme", 4, "INTEL SSDPF2KX038TZ")],
        nics=[("ens785f0", 25000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 3.5 * TB)],
        membw_calibrated=2.81e11,
    )
    pid = 16002
    base = dict(data_wait=0.04, forward=0.36, backward=0.42, optimizer=0.13, other=0.05)
    sites = {
        "data_wait": ("train", "/opt/dlrm/dlrm_main.py", 402, "X, lS_o, lS_i, T = next(it)", False, False),
        "forward": (
            "apply_emb",
            "/opt/dlrm/dlrm_model.py",
            311,
            "V = E(sparse_index_group_batch, sparse_offset_group_batch)",
            None,
            False,
        ),
        "backward": ("train", "/opt/dlrm/dlrm_main.py", 418, "E.backward()", None, False),
        "optimizer": ("train", "/opt/dlrm/dlrm_main.py", 421, "optimizer.step()", None, False),
        "other": ("train", "/opt/dlrm/dlrm_main.py", 430, "total_loss += E.detach().item() * mbs", None, False),
    }

    def tick_fn(tick, t, iv):
        main = clip(j(rng, 0.99, 0.005))
        side = j(rng, 63.0, 0.005) * 0.985
        jb = jobcpu(rng, rank_each=main + side, main=main, workers=0, usable=128, rank_side_thread_cores=side)
        jb["rank_busy_cores"] = main + side
        r = h.cpu(main + side + 0.6, jb, sidecar=0.05)
        r += h.memory(214 * GB + j(rng, 3e8), 196 * GB, membw=min(2.79e11, j(rng, 2.47e11, 0.02)))
        r += h.storage({}, dict(chars=j(rng, 2.2e7, 0.1)), capacity={"/": 0.52})
        r += h.network(iv=iv)
        return r

    return _attach_job(name, rng, t0, h, pid, lambda tick: base, sites, tick_fn, facts_extra={"device": "cpu"})


def ckpt_every_50_sata_fsync(name, rng, t0):
    """A Supermicro server (2x Xeon Silver 4314, 64 threads, 256 GB) with one A100 80GB PCIe training
    a 407M GPT (bf16 autocast, fp32 params + AdamW: a 4.9 GB checkpoint). Every 50 steps (15.9 s) the
    script saves to /ckpt, a SATA SSD (sdb), with torch.save then os.fsync: ~0.95 s copying the state
    to the host, then ~9.55 s while the drive writes at ~515 MB/s (94% of SATA's 550 MB/s), the main
    thread in D state, the GPU idle. The hook puts the save in the next step's `other` (10.5 s, a step
    reported whole where it ends, null phases before it): ~40% of the wall time."""
    h = Host(
        rng,
        "sm-a100p-09",
        "Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz",
        64,
        32,
        2,
        3400.0,
        CLX,
        256 * GiB,
        [A100_PCIE80],
        disks=[
            ("nvme0n1", 960 * GB, "nvme", 4, "SAMSUNG MZ1L2960HCJR"),
            ("sdb", 1.92 * TB, "sata", None, "SAMSUNG MZ7L31T9HBLT-00A07"),
        ],
        nics=[("eno1", 10000)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 0.9 * TB), ("/ckpt", "ext4", "/dev/sdb1", False, 1.8 * TB)],
    )
    pid = 27711
    per = dict(data_wait=0.0032, transfer=0.0011, forward=0.0972, backward=0.1958, optimizer=0.0163, other=0.0037)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    d2h, write = 0.95, 9.55
    every = 50

    def step_fn(k):
        p = noisy(rng, per, 0.02)
        if k and k % every == 0:
            p["other"] += j(rng, d2h, 0.02) + j(rng, write, 0.015)
        return [p]

    def facts(r):
        return ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            6 * 407e6 * 8192,
            1.6e11,
            compute,
            parameters=407_000_000,
            batch_size=8,
            tokens_per_example=1024.0,
            loader_workers=4,
            cores=64,
        )

    def seg(k, s, e):
        if k and k % every == 0:
            return [(s, s + d2h, "d2h"), (s + d2h, s + d2h + write, "write"), (s + d2h + write, e, "train")]
        return [(s, e, "train")]

    c = compute / steady(per)

    def tick_fn(tick, t, iv, job):
        w = segments_in(job.history, seg, t - iv, t)
        tot = sum(w.values()) or 1.0
        fw = {m: w.get(m, 0.0) / tot for m in ("train", "d2h", "write")}
        main = fw["train"] * 0.95 + fw["d2h"] * 0.99 + fw["write"] * 0.06
        jb = jobcpu(
            rng,
            rank_each=main + 0.12,
            main=main,
            workers=4,
            worker_each=0.05 * fw["train"],
            usable=64,
            threads_in_disk_wait=1 if fw["write"] > 0.5 else 0,
            processes_in_disk_wait=1 if fw["write"] > 0.5 else 0,
        )
        jb["rank_busy_cores"] = main + 0.12
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.4, jb, iowait=0.015 * fw["write"] + 0.001)
        r += h.memory(
            31 * GB + fw["write"] * 4.9 * GB + j(rng, 1e8),
            12.4 * GB + 4.9 * GB * (fw["write"] + fw["d2h"]),
            4 * 0.6 * GB,
        )
        wb = j(rng, 5.15e8, 0.015) * fw["write"]
        r += h.storage(
            {
                "sdb": dict(
                    read=0.0,
                    write=wb,
                    rops=0.0,
                    wops=wb / 524288,
                    busy=min(1.0, 0.999 * fw["write"] + 0.001),
                    qd=j(rng, 9.1, 0.06) * fw["write"] + 0.001,
                    inflight=int(9 * fw["write"]),
                ),
                "nvme0n1": dict(read=j(rng, 1.4e6, 0.2), rops=20, busy=0.004),
            },
            dict(
                chars=j(rng, 1.4e6, 0.2),
                bytes=j(rng, 1e6, 0.2),
                write=wb,
                rank=wb,
                psi_some=0.9 * fw["write"],
                psi_full=0.85 * fw["write"],
            ),
            host_psi=(0.9 * fw["write"], 0.85 * fw["write"]),
            capacity={"/": 0.42, "/ckpt": 0.63},
        )
        r += h.network(iv=iv)
        train = gs(rng, 0.9 * c, 0.5 * c, 0.35 * c, 0.99, 46.3e9, 255.0, 1410, pcie=(2e6, 9e6), spec=A100_PCIE80)
        idle = gs(rng, 0.0, 0.0, 0.0, 0.0, 46.3e9, 58.0, 1410, pcie=(2e5, 1e5), spec=A100_PCIE80)
        copy = dict(idle, busy=0.02, pcie_tx=j(rng, 5.15e9, 0.03), power=72.0)
        s = mix({"train": train, "d2h": copy, "write": idle}, fw)
        s.update(job_process=1.0, procs={pid: 45.8e9})
        r += h.gpu_readings(0, s, tick)
        return r

    return _run_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python train_gpt.py --save-every 50 --ckpt-dir /ckpt",
        step_fn,
        facts,
        8,
        tick_fn,
        n=110,
    )


def eval_every_100_4090(name, rng, t0):
    """An RTX 4090 workstation (Ryzen 9 7950X): ConvNeXt-T on 224 px images, bf16, batch 128, 10
    workers; training is GPU-bound (0.244 s a step, data wait ~1%). After every 100th step the script
    runs its validation loop (12,800 images, batch 256, a fresh non-persistent val loader: ~2.3 s of
    worker start-up, then 50 batches with a top-1/top-5 `.item()` after each): ~10.5 s, ~30% of the
    wall time. The hook folds the val batches into the next training step as micro-batches (their
    loader waits, copies, forwards, and the metric code after each forward as `backward`): one step
    of ~10.7 s every 100."""
    h = Host(
        rng,
        "ws-4090-23",
        "AMD Ryzen 9 7950X 16-Core Processor",
        32,
        16,
        1,
        5881.0,
        ZEN4,
        64 * GiB,
        [RTX4090],
        disks=[("nvme0n1", 2 * TB, "nvme", 4, "Samsung SSD 990 PRO 2TB")],
        nics=[("enp12s0", 2500)],
        mounts=[("/", "ext4", "/dev/nvme0n1p2", False, 1.8 * TB)],
    )
    pid = 9904
    per = dict(data_wait=0.0028, transfer=0.0031, forward=0.0742, backward=0.1523, optimizer=0.0094, other=0.0022)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    ev = dict(data_wait=3.7, transfer=0.31, forward=5.375, backward=1.075)
    every = 100

    def step_fn(k):
        p = noisy(rng, per, 0.02)
        if k and k % every == 0:
            for ph, v in ev.items():
                p[ph] += j(rng, v, 0.02)
        return [p]

    def facts(r):
        return ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            128 * 4.5e9 * 3,
            6.1e10,
            compute,
            parameters=28_589_128,
            input_rank=4,
            has_conv=True,
            conv_flop_share=0.35,
            batch_size=128,
            loader_workers=10,
            persistent_workers=False,
            cores=32,
        )

    def seg(k, s, e):
        if k and k % every == 0:
            return [(s, s + 2.3, "eval_start"), (s + 2.3, s + 10.46, "eval"), (s + 10.46, e, "train")]
        return [(s, e, "train")]

    c = compute / steady(per)

    def tick_fn(tick, t, iv, job):
        w = segments_in(job.history, seg, t - iv, t)
        tot = sum(w.values()) or 1.0
        fw = {m: w.get(m, 0.0) / tot for m in ("train", "eval_start", "eval")}
        wk = 10 * 0.42 * fw["train"] + 10 * 0.55 * fw["eval"] + 10 * 0.9 * fw["eval_start"]
        jb = jobcpu(rng, rank_each=1.05, main=0.9, workers=10, worker_each=wk / 10, usable=32)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.5, jb)
        r += h.memory(29 * GB + j(rng, 1e8), 6.4 * GB, 10 * 1.1 * GB)
        rd = j(rng, 128 * 112e3 / 0.244 * fw["train"] + 256 * 112e3 / 0.163 * fw["eval"], 0.05)
        r += h.storage(
            {"nvme0n1": dict(read=rd, rops=rd / 112e3, busy=0.05)},
            dict(chars=rd, bytes=rd * 0.3, worker=rd * 0.3),
            capacity={"/": 0.66},
        )
        r += h.network(iv=iv)
        train = gs(
            rng,
            0.9 * c,
            0.5 * c,
            0.45 * c,
            0.985,
            17.6e9,
            405.0,
            2520,
            pcie=(2e6, 128 * 3 * 224 * 224 / 0.244),
            spec=RTX4090,
        )
        evs = gs(rng, 0.6, 0.35, 0.3, 0.66, 17.6e9, 260.0, 2520, pcie=(2e6, 256 * 3 * 224 * 224 / 0.163), spec=RTX4090)
        idle = gs(rng, 0.0, 0.0, 0.0, 0.0, 17.6e9, 38.0, 2520, pcie=(2e5, 1e5), spec=RTX4090)
        s = mix({"train": train, "eval": evs, "eval_start": idle}, fw)
        s.update(job_process=1.0, procs={pid: 17.1e9})
        r += h.gpu_readings(0, s, tick)
        return r

    return _run_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python train_convnext.py --eval-every 100",
        step_fn,
        facts,
        128,
        tick_fn,
        n=110,
    )


def h100_memory_full_alloc_retries(name, rng, t0):
    """One H100 SXM (a3 VM): full fine-tuning of a 1.5B decoder (bf16 autocast, fp32 AdamW states,
    micro-batch 6 x 4096, no activation checkpointing). The allocator's peak reaches 83.6 of 85.5 GB:
    NVML 99.3% used, ~2.6 cudaMalloc retries a step (each frees the cache and synchronises, ~75 ms),
    ~0.2 s of a 0.79 s step with the GPU idle between kernels: NVML busy ~75%, SMs ~70%, tensor ~41%
    (~28% of the bf16 peak). No data wait to speak of."""
    h = one_gpu_vm(rng, "a3-h100-1g-40", H100_SXM, "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", 26, 234 * GiB)
    pid = 31555
    per = dict(data_wait=0.0024, transfer=0.0012, forward=0.2136, backward=0.5187, optimizer=0.0513, other=0.0041)
    compute = per["forward"] + per["backward"] + per["optimizer"]
    state = {"retries": 1412}

    def facts(r):
        state["retries"] += int(round(j(rng, 2.6, 0.1) * 1.26))
        return ddp_facts(
            h,
            pid - 1,
            0,
            1,
            1,
            6 * 1.5e9 * 24576,
            7.5e11,
            compute,
            parameters=1_498_000_000,
            batch_size=6,
            tokens_per_example=4096.0,
            loader_workers=2,
            cores=26,
            cuda_memory_total_bytes=H100_SXM["mem"],
            cuda_memory_reserved_bytes=84_270_000_000,
            cuda_memory_allocated_bytes=61_300_000_000,
            cuda_memory_peak_allocated_bytes=83_610_000_000,
            cuda_alloc_retries=state["retries"],
            cuda_alloc_retries_per_step=j(rng, 2.6, 0.08),
            cuda_ooms=0,
            cuda_expandable_segments=False,
        )

    def tick_fn(tick, t, iv, job):
        jb = jobcpu(rng, rank_each=1.1, main=0.93, workers=2, worker_each=0.03, usable=26)
        r = h.cpu(jb["rank_busy_cores"] + jb["worker_busy_cores"] + 0.3, jb)
        r += h.memory(52 * GB + j(rng, 2e8), 18.5 * GB, 2 * 0.8 * GB)
        r += h.storage({}, dict(chars=j(rng, 4e5, 0.2)), capacity={"/": 0.39, "/scratch": 0.22})
        r += h.network(iv=iv)
        busy = clip(j(rng, 0.745, 0.02))
        s = gs(
            rng,
            0.93 * busy,
            0.55 * busy,
            0.4 * busy,
            busy,
            84.9e9,
            120 + 460 * busy,
            1980,
            rel=0.02,
            pcie=(2e6, 4e6),
            spec=H100_SXM,
            job_process=1.0,
            procs={pid: 84.3e9},
        )
        r += h.gpu_readings(0, s, tick)
        return r

    return _run_job(
        name,
        rng,
        t0,
        h,
        pid,
        "bottleneckd run -- python sft.py --micro-batch 6",
        lambda k: [noisy(rng, per, 0.03)],
        facts,
        6,
        tick_fn,
    )


SCENARIOS = {
    "t4_workers0_pil_decode": t4_workers0_pil_decode,
    "attach_l4_workers0_decode_noisy": attach_l4_workers0_decode_noisy,
    "dgx_a100_two_workers_per_rank": dgx_a100_two_workers_per_rank,
    "attach_h100_few_workers_noisy": attach_h100_few_workers_noisy,
    "nfs_10gbe_a10x4_read": nfs_10gbe_a10x4_read,
    "attach_nvme_random_4k_iops": attach_nvme_random_4k_iops,
    "l4_pageable_h2d_s2": l4_pageable_h2d_s2,
    "a100_fp32_tf32_off_noisy": a100_fp32_tf32_off_noisy,
    "h100_elementwise_membw": h100_elementwise_membw,
    "attach_a100_membw_norm_heavy": attach_a100_membw_norm_heavy,
    "a10_bs2_launch_bound": a10_bs2_launch_bound,
    "ddp4_4090_pcie_allreduce": ddp4_4090_pcie_allreduce,
    "two_node_a100_25gbe_allreduce": two_node_a100_25gbe_allreduce,
    "ddp8_a100_uneven_shard_rank3": ddp8_a100_uneven_shard_rank3,
    "cpu_4proc_default_threads_8vcpu": cpu_4proc_default_threads_8vcpu,
    "attach_cpu_dlrm_membw": attach_cpu_dlrm_membw,
    "ckpt_every_50_sata_fsync": ckpt_every_50_sata_fsync,
    "eval_every_100_4090": eval_every_100_4090,
    "h100_memory_full_alloc_retries": h100_memory_full_alloc_retries,
}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: construct_blind_gpu9.py OUT_DIR", file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for k, (name, fn) in enumerate(SCENARIOS.items()):
        rng = random.Random(9000 + k)
        tr = fn(name, rng, 1810000000.0 + 3600.0 * k)
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
    # num_workers=0: PIL decode in the main thread, data wait 51%, one core of 8 busy; first: num_workers ~6-7
    # (and pin_memory=True).
    "t4_workers0_pil_decode": ("cpu_compute", "data"),
    # attach, the same on an L4 with noise; first: num_workers > 0.
    "attach_l4_workers0_decode_noisy": ("cpu_compute", "data"),
    # 2 workers a rank each at a full core on a 256-thread node, data wait 41%; first: num_workers ~8-12 a rank.
    "dgx_a100_two_workers_per_rank": ("cpu_compute", "data"),
    # attach, 3 workers a rank at a full core each on 128 threads, data wait ~47%; first: more workers.
    "attach_h100_few_workers_noisy": ("cpu_compute", "data"),
    # NFS on 10 GbE at ~92% of the link, data wait 40%; first: stage the data set on the local NVMe (or cache it).
    "nfs_10gbe_a10x4_read": ("storage_network_bandwidth", "data"),
    # attach, random 4 KiB reads at ~92% of the NVMe's IOPS figure; first: read sequentially (pre-shuffled
    # contiguous chunks / larger records), not one 4 KiB read a row.
    "attach_nvme_random_4k_iops": ("storage_bandwidth", "data"),
    # pageable H2D copies 37% of the step; first: pin_memory=True + non_blocking=True (and uint8 masks).
    "l4_pageable_h2d_s2": ("cpu_gpu_interconnect", "transfer"),
    # fp32 matmuls with TF32 off, 78% of the fp32 peak; first: enable TF32 (set_float32_matmul_precision('high'))
    # or bf16 autocast.
    "a100_fp32_tf32_off_noisy": ("gpu_compute", "compute"),
    # HBM at 85% in the compute phases, 32 FLOP/B; first: torch.compile to fuse the elementwise/norm ops.
    "h100_elementwise_membw": ("gpu_memory_bandwidth", "compute"),
    # attach, DCGM DRAM ~81%, SMs ~86%, tensor 8%; first: fuse the memory-bound ops (torch.compile / fused kernels).
    "attach_a100_membw_norm_heavy": ("gpu_memory_bandwidth", "compute"),
    # batch 2, GPU busy 29%, the launching threads at one core; first: CUDA graphs / torch.compile
    # (mode="reduce-overhead") or a bigger batch.
    "a10_bs2_launch_bound": ("cpu_compute", "compute"),
    # PCIe (no NVLink, no P2P) all-reduce exposed 48%; first: fewer/lighter all-reduces (gradient accumulation with
    # no_sync, bf16 gradient compression hook).
    "ddp4_4090_pcie_allreduce": ("inter_gpu_interconnect", "communication"),
    # 25 GbE between two nodes, all-reduce exposed 64%, NIC 79%/93%; first: gradient accumulation / bf16 (or
    # PowerSGD) compression; long term a faster fabric.
    "two_node_a100_25gbe_allreduce": ("inter_node_interconnect", "communication"),
    # rank 3's long-document shard: 1.38x compute, the others wait 28% in the all-reduce; first: rebalance the
    # shards (equal tokens a rank, length-grouped sampling over the whole set); straggler 3.
    "ddp8_a100_uneven_shard_rank3": ("gpu_compute", "compute"),
    # 4 ranks x 8 threads on 8 CPUs: run-queue wait ~23 cores, PSI 99%; first: OMP_NUM_THREADS=2 (set_num_threads)
    # a rank.
    "cpu_4proc_default_threads_8vcpu": ("cpu_compute", "compute"),
    # attach, CPU-only, MBM 88% of the calibrated DRAM peak; first: fewer bytes (bf16/int8 embedding tables, fused
    # embedding+optimizer kernels), not more threads.
    "attach_cpu_dlrm_membw": ("cpu_memory_bandwidth", "compute"),
    # checkpoint + fsync to a SATA SSD at ~94% of its link, 40% of the wall time; first: asynchronous checkpointing
    # (background thread / DCP async_save) to the NVMe, or save less often.
    "ckpt_every_50_sata_fsync": ("storage_bandwidth", "other"),
    # validation every 100 steps, ~30% of the time, GPU forwards; first: evaluate less often / on a subset
    # (persistent val workers); training itself is GPU-bound.
    "eval_every_100_4090": ("gpu_compute", "other"),
    # GPU memory 99%, 2.6 allocator retries a step, GPU idle ~25%; first: cut peak memory (activation checkpointing
    # or a smaller micro-batch with accumulation; expandable_segments:True).
    "h100_memory_full_alloc_retries": ("gpu_memory", "compute"),
}

NOTES = {
    "t4_workers0_pil_decode": dict(first="num_workers > 0 (6-7)", straggler=None),
    "attach_l4_workers0_decode_noisy": dict(first="num_workers > 0", straggler=None),
    "dgx_a100_two_workers_per_rank": dict(first="raise num_workers to ~8-12 a rank", straggler=None),
    "attach_h100_few_workers_noisy": dict(first="raise num_workers", straggler=None),
    "nfs_10gbe_a10x4_read": dict(first="stage the data on local NVMe / cache it", straggler=None),
    "attach_nvme_random_4k_iops": dict(
        first="sequential / chunked reads instead of random 4 KiB reads", straggler=None
    ),
    "l4_pageable_h2d_s2": dict(first="pin_memory=True + non_blocking=True", straggler=None),
    "a100_fp32_tf32_off_noisy": dict(first="enable TF32 / bf16 autocast", straggler=None),
    "h100_elementwise_membw": dict(first="torch.compile (fuse elementwise ops)", straggler=None),
    "attach_a100_membw_norm_heavy": dict(first="fuse memory-bound ops (torch.compile)", straggler=None),
    "a10_bs2_launch_bound": dict(first="CUDA graphs / torch.compile reduce-overhead, or bigger batch", straggler=None),
    "ddp4_4090_pcie_allreduce": dict(
        first="gradient accumulation with no_sync / bf16 gradient compression", straggler=None
    ),
    "two_node_a100_25gbe_allreduce": dict(first="gradient accumulation / gradient compression", straggler=None),
    "ddp8_a100_uneven_shard_rank3": dict(
        first="rebalance the shards (equal tokens per rank)", straggler=3, device="gpu3"
    ),
    "cpu_4proc_default_threads_8vcpu": dict(first="OMP_NUM_THREADS=2 per rank (torch.set_num_threads)", straggler=None),
    "attach_cpu_dlrm_membw": dict(first="fewer bytes: bf16/int8 embeddings, fused embedding kernels", straggler=None),
    "ckpt_every_50_sata_fsync": dict(
        first="asynchronous checkpointing / faster disk / less often", straggler=None, device="sdb"
    ),
    "eval_every_100_4090": dict(
        first="evaluate less often / on a subset", straggler=None, also_acceptable=["gpu_compute", "compute"]
    ),
    "h100_memory_full_alloc_retries": dict(
        first="activation checkpointing / smaller micro-batch; expandable_segments", straggler=None
    ),
}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
