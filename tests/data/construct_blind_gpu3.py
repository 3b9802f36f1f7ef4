#!/usr/bin/env python3
"""Blind-constructed traces, round 3: new training patterns, written from docs/trace-format.md.

Usage: python tests/data/construct_blind_gpu3.py OUT_DIR

Writes one `<scenario>.jsonl` trace per scenario (the multi-node scenario writes one file per
node, `<scenario>.node<K>.jsonl`) into OUT_DIR: ~40 samples at 1 s, stdlib only, deterministic.

Each scenario is simulated as a timeline of training steps, each step a list of segments
(phase, seconds, what is busy during it); a sample's readings are the time-weighted mean of the
segments its interval covers, and its `phases` are the steps that *ended* in the interval (as the
hook reports them). `LABELS` at the bottom was written before the tool was run on these traces.
"""

from __future__ import annotations

import json
import os
import random
import sys

T0 = 1796400000.0
N_SAMPLES = 40
GiB = 1024**3
MiB = 1024**2

# --------------------------------------------------------------------------------------------
# hardware
# --------------------------------------------------------------------------------------------

GPU_SPECS = {
    "H100": dict(
        name="NVIDIA H100 80GB HBM3",
        mem=81559 * MiB,
        catalog_mem=80e9,
        pcie_gen=5,
        nvlink=18,
        gpm=True,
        tdp=700.0,
        idle=72.0,
        max_clock=1980.0,
        dram=3.35e12,
        compute=[
            ("fp16_bf16_tensor_dense", 989e12),
            ("tf32_tensor_dense", 494.5e12),
            ("fp32", 67e12),
            ("fp8_tensor_dense", 1979e12),
            ("fp64", 34e12),
        ],
        nvlink_total=900e9,
        src="NVIDIA H100 Tensor Core GPU datasheet (SXM5)",
    ),
    "H200": dict(
        name="NVIDIA H200",
        mem=143771 * MiB,
        catalog_mem=141e9,
        pcie_gen=5,
        nvlink=18,
        gpm=True,
        tdp=700.0,
        idle=75.0,
        max_clock=1980.0,
        dram=4.8e12,
        compute=[
            ("fp16_bf16_tensor_dense", 989e12),
            ("tf32_tensor_dense", 494.5e12),
            ("fp32", 67e12),
            ("fp8_tensor_dense", 1979e12),
            ("fp64", 34e12),
        ],
        nvlink_total=900e9,
        src="NVIDIA H200 Tensor Core GPU datasheet (SXM)",
    ),
    "A100_80": dict(
        name="NVIDIA A100-SXM4-80GB",
        mem=81920 * MiB,
        catalog_mem=80e9,
        pcie_gen=4,
        nvlink=12,
        gpm=False,
        tdp=400.0,
        idle=58.0,
        max_clock=1410.0,
        dram=2.039e12,
        compute=[
            ("fp16_bf16_tensor_dense", 312e12),
            ("tf32_tensor_dense", 156e12),
            ("fp32", 19.5e12),
            ("fp64", 9.7e12),
        ],
        nvlink_total=600e9,
        src="NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB)",
    ),
    "A100_40": dict(
        name="NVIDIA A100-SXM4-40GB",
        mem=40536 * MiB,
        catalog_mem=40e9,
        pcie_gen=4,
        nvlink=12,
        gpm=False,
        tdp=400.0,
        idle=52.0,
        max_clock=1410.0,
        dram=1.555e12,
        compute=[
            ("fp16_bf16_tensor_dense", 312e12),
            ("tf32_tensor_dense", 156e12),
            ("fp32", 19.5e12),
            ("fp64", 9.7e12),
        ],
        nvlink_total=600e9,
        src="NVIDIA A100 Tensor Core GPU datasheet (SXM4 40GB)",
    ),
    "L4": dict(
        name="NVIDIA L4",
        mem=23034 * MiB,
        catalog_mem=24e9,
        pcie_gen=4,
        nvlink=0,
        gpm=False,
        tdp=72.0,
        idle=16.0,
        max_clock=2040.0,
        dram=300e9,
        compute=[
            ("fp16_bf16_tensor_dense", 121e12),
            ("tf32_tensor_dense", 60e12),
            ("fp32", 30.3e12),
            ("fp8_tensor_dense", 242.5e12),
        ],
        nvlink_total=None,
        src="NVIDIA L4 Tensor Core GPU datasheet",
    ),
    "L40S": dict(
        name="NVIDIA L40S",
        mem=46068 * MiB,
        catalog_mem=48e9,
        pcie_gen=4,
        nvlink=0,
        gpm=False,
        tdp=350.0,
        idle=34.0,
        max_clock=2520.0,
        dram=864e9,
        compute=[
            ("fp16_bf16_tensor_dense", 362e12),
            ("tf32_tensor_dense", 183e12),
            ("fp32", 91.6e12),
            ("fp8_tensor_dense", 733e12),
        ],
        nvlink_total=None,
        src="NVIDIA L40S GPU datasheet",
    ),
}

PCIE_X16 = {4: 31.508e9, 5: 63.015e9}

NO_MBM = (
    "no memory-bandwidth counters: resctrl MBM is not mounted at /sys/fs/resctrl "
    "(Intel RDT / AMD QoS needed; usually absent in VMs)"
)


def make_uuid(rng: random.Random) -> str:
    h = "".join(rng.choice("0123456789abcdef") for _ in range(32))
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class Node:
    """One machine: its detection result, its peaks, and the simulated counters it keeps."""

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
        mem_bytes: int,
        gpu_kind: str | None,
        n_gpus: int,
        cpu_peak: float,
        cpu_peak_src: str,
        membw_peak: float | None,
        disks: list[tuple[str, int, float, float]],  # name, size, seq read B/s, 4k IOPS
        nics: list[tuple[str, int | None]],  # name, speed Mb/s
        ib: list[tuple[str, int, float]],  # device, port, rate Gb/s
        mounts: list[tuple[str, str, str, bool, int]],  # mountpoint, fstype, source, network, size
        dcgm: bool = True,
    ):
        self.rng = rng
        self.hostname = hostname
        self.logical = logical
        self.gpu_kind = gpu_kind
        self.spec = GPU_SPECS[gpu_kind] if gpu_kind else None
        self.gpus = []
        for i in range(n_gpus):
            self.gpus.append(dict(index=i, dev=f"gpu{i}", uuid=make_uuid(rng)))
        self.mem_bytes = mem_bytes
        self.membw_peak = membw_peak
        self.disks = disks
        self.nics = nics
        self.ib = ib
        self.mounts = mounts
        self.dcgm = dcgm
        self.energy = {g["dev"]: rng.uniform(2e7, 9e7) for g in self.gpus}
        self.disk_tot = {d[0]: [rng.uniform(1e12, 5e12), rng.uniform(1e12, 5e12), 1e8, 1e8, 1e5] for d in disks}
        self.nic_tot = {n[0]: [rng.uniform(1e12, 9e12), rng.uniform(1e12, 9e12)] for n in nics}
        self.ib_tot = {f"{d}/{p}": [rng.uniform(1e14, 9e14), rng.uniform(1e14, 9e14)] for d, p, _ in ib}
        self.swap_tot = [rng.uniform(0, 1e6), rng.uniform(0, 1e6)]
        unknown = {}
        if not self.gpus:
            unknown["gpus"] = "NVML unavailable: NVML could not start: NVML Shared Library Not Found"
        if max_mhz is None:
            unknown["cpu.max_mhz"] = "cpufreq not exposed (common in VMs and containers)"
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
            "memory_total_bytes": mem_bytes,
            "gpus": [
                {
                    "index": g["index"],
                    "name": self.spec["name"],
                    "uuid": g["uuid"],
                    "memory_total_bytes": self.spec["mem"],
                    "pcie_max_generation": self.spec["pcie_gen"],
                    "pcie_max_width": 16,
                    "nvlink_active_links": self.spec["nvlink"],
                    "gpm_supported": self.spec["gpm"],
                }
                for g in self.gpus
            ],
            "block_devices": [
                {
                    "name": name,
                    "size_bytes": size,
                    "rotational": False,
                    "model": "SAMSUNG MZQL23T8HCLS-00A07" if size > 2e12 else "SAMSUNG MZ1L21T9HCLS-00A07",
                    "transport": "nvme",
                    "pcie_generation": 4,
                }
                for name, size, _, _ in disks
            ],
            "nics": [{"name": n, "speed_mbps": s, "operstate": "up", "virtual": False} for n, s in nics],
            "ib_ports": [{"device": d, "port": p, "rate_gbps": r, "state": "ACTIVE"} for d, p, r in ib],
            "mounts": [{"mountpoint": m, "fstype": f, "source": s, "network": net} for m, f, s, net, _ in mounts],
            "unknown": unknown,
        }
        peaks = []
        for g in self.gpus:
            sp = self.spec
            first = len(peaks)
            for metric, v in sp["compute"]:
                peaks.append(self._peak("gpu_compute", g["dev"], metric, v, "FLOP/s", "catalog", sp["src"], v))
            peaks.append(
                self._peak(
                    "gpu_memory",
                    g["dev"],
                    "capacity",
                    float(sp["mem"]),
                    "B",
                    "detected",
                    "NVML memory total",
                    sp["catalog_mem"],
                )
            )
            peaks.append(
                self._peak(
                    "gpu_memory_bandwidth",
                    g["dev"],
                    "dram_bandwidth",
                    sp["dram"],
                    "B/s",
                    "catalog",
                    sp["src"],
                    sp["dram"],
                    direction="read+write",
                )
            )
            pcie = PCIE_X16[sp["pcie_gen"]]
            peaks.append(
                self._peak(
                    "cpu_gpu_interconnect",
                    g["dev"],
                    "pcie_x16",
                    pcie,
                    "B/s",
                    "detected",
                    f"PCIe gen{sp['pcie_gen']} x16 (NVML max link): PCI-SIG spec",
                    pcie,
                    direction="per direction",
                )
            )
            if sp["nvlink_total"]:
                peaks.append(
                    self._peak(
                        "inter_gpu_interconnect",
                        g["dev"],
                        "nvlink_total",
                        sp["nvlink_total"],
                        "B/s",
                        "catalog",
                        f"{sp['src']}: {sp['nvlink']} NVLink links",
                        sp["nvlink_total"],
                        direction="both",
                    )
                )
            else:
                peaks.append(
                    self._peak(
                        "inter_gpu_interconnect",
                        g["dev"],
                        "-",
                        None,
                        "B/s",
                        "unknown",
                        "no NVLink on this GPU (peer traffic goes over PCIe)",
                        None,
                    )
                )
            for p in peaks[first:]:
                p["uuid"] = g["uuid"]
        if not self.gpus:
            for res, unit in (("gpu_compute", "FLOP/s"), ("gpu_memory", "B"), ("gpu_memory_bandwidth", "B/s")):
                peaks.append(self._peak(res, "-", "-", None, unit, "unknown", unknown["gpus"], None))
        peaks.append(
            self._peak("cpu_compute", "cpu", "fp32_matmul", cpu_peak, "FLOP/s", "calibrated", cpu_peak_src, None)
        )
        peaks.append(
            self._peak(
                "cpu_memory", "host", "capacity", float(mem_bytes), "B", "detected", "/proc/meminfo MemTotal", None
            )
        )
        if membw_peak:
            peaks.append(
                self._peak(
                    "cpu_memory_bandwidth",
                    "host",
                    "dram_channels",
                    membw_peak,
                    "B/s",
                    "detected",
                    "DMI: DDR channels x MT/s x 8 bytes (JEDEC)",
                    membw_peak,
                    direction="read+write",
                )
            )
        else:
            peaks.append(
                self._peak(
                    "cpu_memory_bandwidth",
                    "host",
                    "-",
                    None,
                    "B/s",
                    "unknown",
                    "no calibration profile and no DMI memory table readable",
                    None,
                )
            )
        for name, size, seq, iops in disks:
            peaks.append(
                self._peak(
                    "storage_bandwidth",
                    name,
                    "sequential_read",
                    seq,
                    "B/s",
                    "catalog",
                    "NVMe gen4 sequential read (catalog)",
                    seq,
                    direction="read",
                )
            )
            peaks.append(
                self._peak(
                    "storage_bandwidth",
                    name,
                    "random_read_4k_iops",
                    iops,
                    "IO/s",
                    "catalog",
                    "NVMe gen4 random read 4k (catalog)",
                    iops,
                    direction="read",
                )
            )
        for m, f, s, net, size in mounts:
            if net:
                peaks.append(
                    self._peak(
                        "storage_network_bandwidth",
                        m,
                        "-",
                        None,
                        "B/s",
                        "unknown",
                        "network mount: no line rate known",
                        None,
                    )
                )
            else:
                peaks.append(
                    self._peak("storage_capacity", m, "capacity", float(size), "B", "detected", "statvfs", None)
                )
        for n, s in nics:
            peaks.append(
                self._peak(
                    "inter_node_interconnect",
                    n,
                    "ethernet",
                    s * 1e6 / 8,
                    "B/s",
                    "detected",
                    f"{n}: link speed {s} Mb/s",
                    None,
                    direction="per direction",
                )
            )
        for d, p, r in ib:
            peaks.append(
                self._peak(
                    "inter_node_interconnect",
                    f"{d}/{p}",
                    "infiniband",
                    r * 1e9 / 8,
                    "B/s",
                    "detected",
                    f"{d} port {p}: rate {r:g} Gb/sec (4X NDR)" if r >= 400 else f"{d} port {p}: rate {r:g} Gb/sec",
                    None,
                    direction="per direction",
                )
            )
        self.peaks = peaks
        self.cpu_busy_base = [rng.uniform(0.0, 0.03) for _ in range(logical)]

    @staticmethod
    def _peak(resource, device, metric, value, unit, origin, source, catalog_value, direction=""):
        return {
            "resource": resource,
            "device": device,
            "metric": metric,
            "value": value,
            "unit": unit,
            "origin": origin,
            "source": source,
            "catalog_value": catalog_value,
            "uuid": None,
            "direction": direction,
        }

    def header(self, meta: str) -> dict:
        return {
            "type": "header",
            "format": "bottleneckd.trace",
            "version": 1,
            "created": T0 - 1.5,
            "interval": 1.0,
            "machine": self.machine,
            "peaks": self.peaks,
            "meta": {"constructed": meta},
        }


# --------------------------------------------------------------------------------------------
# the timeline
# --------------------------------------------------------------------------------------------

PHASE_ORDER = ("other", "data_wait", "transfer", "forward", "backward", "communication", "optimizer")


def seg(phase: str, dur: float, **act) -> tuple[str, float, dict]:
    return (phase, max(0.0, dur), act)


def build_timeline(step_fn, end: float, rng: random.Random, start: float = -3.0):
    """[(t0, t1, phase, act, step_id)], [(t_end, {phase: s})]: steps from ``start`` until past ``end``."""
    t = start
    segs = []
    steps = []
    k = 0
    while t < end + 5:
        parts = step_fn(k, t, rng)
        per = {}
        for phase, dur, act in parts:
            segs.append((t, t + dur, phase, act, k))
            per[phase] = per.get(phase, 0.0) + dur
            t += dur
        steps.append((t, per))
        k += 1
    return segs, steps


def mean_activity(segs, a: float, b: float, background: dict) -> tuple[dict, dict]:
    """Time-weighted mean of every activity key over [a, b) (per-port dicts averaged per port,
    lists taken as they are), plus the background's; also each phase's share of the interval."""
    acc, shares = {}, {}
    span = b - a
    for s0, s1, phase, act, _ in segs:
        if s1 <= a or s0 >= b:
            continue
        w = (min(s1, b) - max(s0, a)) / span
        shares[phase] = shares.get(phase, 0.0) + w
        for key, v in act.items():
            if isinstance(v, dict):
                d = acc.setdefault(key, {})
                for kk, vv in v.items():
                    d[kk] = d.get(kk, 0.0) + w * vv
            elif isinstance(v, list):
                acc[key] = v
            else:
                acc[key] = acc.get(key, 0.0) + w * v
    for key, v in background.items():
        if isinstance(v, (list, dict)):
            acc[key] = v
        else:
            acc[key] = acc.get(key, 0.0) + v
    return acc, shares


def phase_at(segs, t: float) -> str | None:
    for s0, s1, phase, _, _ in segs:
        if s0 <= t < s1:
            return phase
    return None


def jitter(rng: random.Random, v: float, rel: float = 0.03) -> float:
    return max(0.0, v * (1.0 + rng.gauss(0.0, rel)))


# --------------------------------------------------------------------------------------------
# readings
# --------------------------------------------------------------------------------------------


def R(resource, device, metric, value, unit, why=None):
    r = [resource, device, metric, value, unit]
    if value is None:
        r.append(why or "unknown")
    return r


def gpu_readings(node: Node, g: dict, act: dict, rng: random.Random, tick: int, interval: float, job: dict) -> list:
    sp = node.spec
    dev = g["dev"]
    on = 1.0
    busy = min(1.0, jitter(rng, act.get("busy", 0.0) * on, 0.02))
    sm = min(busy, jitter(rng, act.get("sm", 0.0) * on, 0.03))
    tensor = min(sm, jitter(rng, act.get("tensor", 0.0) * on, 0.04))
    dram = min(0.98, jitter(rng, act.get("dram", 0.0) * on, 0.04))
    fp32 = min(sm, jitter(rng, act.get("fp32", 0.04 * sm), 0.05))
    out = []
    used = job.get("gpu_mem", {}).get(dev, job.get("gpu_mem_all", 2 * GiB))
    used = min(float(sp["mem"]) - 50 * MiB, jitter(rng, used, 0.002))
    out += [
        R("gpu_memory", dev, "used", used, "B"),
        R("gpu_memory", dev, "utilization", used / sp["mem"], "ratio"),
        R("gpu_memory", dev, "peak", float(sp["mem"]), "B"),
    ]
    pid = job.get("gpu_pid", {}).get(dev)
    if tick % 10 == 0 and pid:
        out.append(R("gpu_memory", dev, f"process_bytes:{pid}", used - 520 * MiB, "B"))
    if pid:
        out.append(R("gpu_compute", dev, "job_process", 1.0, "bool"))
    pcie_peak = PCIE_X16[sp["pcie_gen"]]
    tx = jitter(rng, act.get("pcie_tx", 0.0) * on + 40e6, 0.05)
    rx = jitter(rng, act.get("pcie_rx", 0.0) * on + 60e6, 0.05)
    out += [
        R("cpu_gpu_interconnect", dev, "throughput", max(tx, rx), "B/s"),
        R("cpu_gpu_interconnect", dev, "utilization", max(tx, rx) / pcie_peak, "ratio"),
        R("cpu_gpu_interconnect", dev, "peak", pcie_peak, "B/s"),
        R("cpu_gpu_interconnect", dev, "tx_bytes_per_second", tx, "B/s"),
        R("cpu_gpu_interconnect", dev, "rx_bytes_per_second", rx, "B/s"),
    ]
    if tick % 10 == 0:
        out += [
            R("cpu_gpu_interconnect", dev, "link_generation", float(sp["pcie_gen"]), "gen"),
            R("cpu_gpu_interconnect", dev, "link_width", 16.0, "lanes"),
        ]
    if sp["nvlink_total"]:
        ntx = jitter(rng, act.get("nvl_tx", 0.0) * on + 5e6, 0.04)
        nrx = jitter(rng, act.get("nvl_rx", 0.0) * on + 5e6, 0.04)
        out += [
            R("inter_gpu_interconnect", dev, "throughput", ntx + nrx, "B/s"),
            R("inter_gpu_interconnect", dev, "utilization", (ntx + nrx) / sp["nvlink_total"], "ratio"),
            R("inter_gpu_interconnect", dev, "peak", sp["nvlink_total"], "B/s"),
            R("inter_gpu_interconnect", dev, "tx_bytes_per_second", ntx, "B/s"),
            R("inter_gpu_interconnect", dev, "rx_bytes_per_second", nrx, "B/s"),
        ]
    else:
        why = "no NVLink on this GPU: NVML reports no active links"
        out += [
            R("inter_gpu_interconnect", dev, "throughput", None, "B/s", why),
            R("inter_gpu_interconnect", dev, "utilization", None, "ratio", why),
        ]
    load = 0.25 * busy + 0.45 * sm + 0.2 * tensor + 0.1 * dram
    power = jitter(rng, sp["idle"] + (sp["tdp"] - sp["idle"]) * min(1.0, load * 1.05), 0.02)
    power = min(power, sp["tdp"] * 0.99)
    node.energy[dev] += power * interval
    clock = sp["max_clock"] if load < 0.6 else sp["max_clock"] * (1.0 - 0.1 * (load - 0.6))
    clock = round(clock / 15.0) * 15.0
    out += [
        R("gpu_compute", dev, "power", power, "W"),
        R("gpu_compute", dev, "energy", node.energy[dev], "J"),
        R("gpu_compute", dev, "sm_clock", clock, "MHz"),
        R("gpu_compute", dev, "sm_clock_ratio", clock / sp["max_clock"], "ratio"),
    ]
    for lab in ("sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"):
        out.append(R("gpu_compute", dev, f"throttle:{lab}", 0.0, "bool"))
    mem_busy = min(1.0, jitter(rng, dram * 1.15 + 0.01 * busy, 0.04))
    out += [
        R("gpu_compute", dev, "busy_fraction", busy, "ratio"),
        R("gpu_memory_bandwidth", dev, "memory_busy_fraction", mem_busy, "ratio"),
    ]
    if sp["gpm"] or node.dcgm:
        source = "GPM" if sp["gpm"] else "dcgm-exporter"
        occ = min(1.0, sm * jitter(rng, 0.55, 0.05))
        fp16 = min(sm, jitter(rng, act.get("fp16", 0.05 * sm), 0.05))
        integer = min(sm, jitter(rng, 0.08 * sm, 0.05))
        out += [
            R("gpu_compute", dev, "sm_activity", sm, "ratio"),
            R("gpu_compute", dev, "sm_occupancy", occ, "ratio"),
            R("gpu_compute", dev, "tensor_activity", tensor, "ratio"),
            R("gpu_compute", dev, "fp32_activity", fp32, "ratio"),
            R("gpu_compute", dev, "fp16_activity", fp16, "ratio"),
            R("gpu_compute", dev, "fp64_activity", 0.0, "ratio"),
            R("gpu_compute", dev, "integer_activity", integer, "ratio"),
            R("gpu_compute", dev, "utilization", sm, "ratio"),
            R("gpu_compute", dev, f"activity_source:{source}", 1.0, "bool"),
            R("gpu_memory_bandwidth", dev, "utilization", dram, "ratio"),
            R("gpu_memory_bandwidth", dev, "throughput", dram * sp["dram"], "B/s"),
            R("gpu_memory_bandwidth", dev, "peak", sp["dram"], "B/s"),
        ]
    else:
        why = "GPM not supported on this GPU (Hopper or later needed); no dcgm-exporter answered at 127.0.0.1:9400"
        for m in (
            "sm_activity",
            "sm_occupancy",
            "tensor_activity",
            "fp32_activity",
            "fp16_activity",
            "fp64_activity",
            "integer_activity",
        ):
            out.append(R("gpu_compute", dev, m, None, "ratio", why))
        out.append(
            R(
                "gpu_compute",
                dev,
                "utilization",
                None,
                "ratio",
                f"SM activity unknown ({why}); busy_fraction is a time fraction, not load",
            )
        )
        out.append(R("gpu_memory_bandwidth", dev, "throughput", None, "B/s", f"DRAM bandwidth unknown ({why})"))
        out.append(R("gpu_memory_bandwidth", dev, "utilization", None, "ratio", f"DRAM bandwidth unknown ({why})"))
    out.append(R("gpu_compute", dev, "up", 1.0, "bool"))
    return out


def host_readings(node: Node, act: dict, rng: random.Random, interval: float, job: dict) -> list:
    """CPU, memory, storage, network readings of the host and the job's processes."""
    out = []
    n_ranks = job.get("local_ranks", 1)
    n_workers = job.get("workers_per_rank", 0) * n_ranks
    main = min(1.0, jitter(rng, act.get("main", 0.0), 0.02))
    side = jitter(rng, act.get("side", 0.0), 0.04)  # per rank
    autograd = min(1.0, jitter(rng, act.get("autograd", 0.0), 0.04))
    workers = jitter(rng, act.get("workers", 0.0), 0.04)  # all workers of one rank, cores
    outside = jitter(rng, act.get("outside", 0.0), 0.02)
    runq = jitter(rng, act.get("runq", 0.0), 0.05)
    sidecar = jitter(rng, 0.035, 0.1)
    rank_busy = n_ranks * (main + side)
    worker_busy = n_ranks * workers
    job_busy = rank_busy + worker_busy
    host_busy = min(float(node.logical), job_busy + outside + sidecar + 0.15)
    # per-core: the busiest threads first, spread over the cores
    loads = []
    for _ in range(n_ranks):
        loads.append(main)
        if side > 0:
            k = max(1, int(round(side / 0.85)))
            loads += [side / k] * k
        if n_workers:
            per = workers / max(1, job.get("workers_per_rank", 1))
            loads += [per] * job.get("workers_per_rank", 0)
    per_core = [0.0] * node.logical
    for i, v in enumerate(loads[: node.logical]):
        per_core[i] = min(1.0, v)
    # everything else (other processes, the OS) fills the cores' remaining time, emptiest first
    rest = max(0.0, host_busy - sum(per_core))
    for _ in range(4):
        room = [1.0 - c for c in per_core]
        total_room = sum(room)
        if rest <= 1e-9 or total_room <= 1e-9:
            break
        f = min(1.0, rest / total_room)
        for i in range(node.logical):
            per_core[i] += room[i] * f
        rest -= total_room * f
    total = 0.0
    for k in range(node.logical):
        b = min(1.0, max(0.0, per_core[k] + node.cpu_busy_base[k] * rng.random()))
        total += b
        out.append(R("cpu_compute", f"cpu{k}", "busy", round(b, 4), "ratio"))
    iow = act.get("iowait", 0.0)
    psi = min(1.0, runq / max(1.0, job_busy) * 0.9) if runq else 0.01 * rng.random()
    out += [
        R("cpu_compute", "host", "utilization", total / node.logical, "ratio"),
        R("cpu_compute", "host", "busy_cores", total, "cores"),
        R("cpu_compute", "host", "cores", float(node.logical), "cores"),
        R("cpu_compute", "host", "iowait", iow, "ratio"),
        R(
            "cpu_compute",
            "host",
            "pressure_some",
            min(1.0, psi + (0.6 if outside > 0.8 * node.logical else 0.0)),
            "ratio",
        ),
    ]
    per_worker = workers / max(1, job.get("workers_per_rank", 1)) if n_workers else None
    no_w = "no loader workers"
    hottest = max(main, autograd, side / max(1, round(side / 0.85)) if side else 0.0)
    wdemand = act.get("worker_demand")
    out += [
        R("cpu_compute", "job", "busy_cores", job_busy, "cores"),
        R("cpu_compute", "job", "rank_busy_cores", rank_busy, "cores"),
        R("cpu_compute", "job", "worker_busy_cores", worker_busy, "cores"),
        R("cpu_compute", "job", "launcher_busy_cores", 0.01 if n_ranks > 1 else 0.0, "cores"),
        R(
            "cpu_compute",
            "job",
            "worker_max_busy_cores",
            None if not n_workers else min(1.0, per_worker * 1.08),
            "cores",
            no_w,
        ),
        R("cpu_compute", "job", "main_busy_cores", main, "cores"),
        R("cpu_compute", "job", "launch_thread_cores", min(2.0, main + autograd), "cores"),
        R("cpu_compute", "job", "rank_side_thread_cores", side, "cores"),
        R("cpu_compute", "job", "comm_thread_cores", jitter(rng, act.get("comm_threads", 0.01), 0.1), "cores"),
        R("cpu_compute", "job", "hottest_thread_busy", min(1.0, hottest), "cores"),
        R(
            "cpu_compute",
            "job",
            "worker_hottest_thread_busy",
            None if not n_workers else min(1.0, per_worker * 1.1),
            "cores",
            no_w,
        ),
        R("cpu_compute", "job", "main_thread_demand", min(1.0, main + act.get("main_wait", 0.0)), "cores"),
        R("cpu_compute", "job", "hottest_thread_demand", min(1.0, hottest + act.get("main_wait", 0.0)), "cores"),
        R(
            "cpu_compute",
            "job",
            "worker_max_demand",
            None if not n_workers else min(1.0, wdemand if wdemand is not None else per_worker * 1.1),
            "cores",
            no_w,
        ),
        R("cpu_compute", "job", "runqueue_wait_cores", runq, "cores"),
        R("cpu_compute", "job", "usable_cores", float(job.get("usable", node.logical)), "cores"),
        R("cpu_compute", "job", "processes", float(n_ranks + n_workers + (1 if n_ranks > 1 else 0)), "count"),
        R("cpu_compute", "job", "ranks", float(n_ranks), "count"),
        R("cpu_compute", "job", "workers", float(n_workers), "count"),
        R("cpu_compute", "job", "processes_in_disk_wait", float(act.get("dwait_procs", 0.0) > 0.5), "count"),
        R("cpu_compute", "job", "threads_in_disk_wait", float(round(act.get("dwait_procs", 0.0))), "count"),
        R("cpu_compute", "job", "pressure_some", min(1.0, psi), "ratio"),
        R("cpu_compute", "sidecar", "busy_cores", sidecar, "cores"),
        R("cpu_compute", "package", "energy", None, "J", "RAPL energy_uj readable by root only (CVE-2020-8694)"),
    ]
    for name, cores in act.get("outside_procs", []):
        out.append(R("cpu_compute", name, "outside_process_cores", jitter(rng, cores, 0.02), "cores"))
    # memory
    used = jitter(rng, job.get("host_mem_used", 0.2 * node.mem_bytes), 0.001)
    used = min(used, node.mem_bytes * 0.99)
    swin = act.get("swap_in", 0.0)
    swout = act.get("swap_out", 0.0)
    node.swap_tot[0] += swin * interval
    node.swap_tot[1] += swout * interval
    rank_rss = jitter(rng, job.get("rank_rss", 12 * GiB), 0.001) * n_ranks
    worker_rss = jitter(rng, job.get("worker_rss", 2.5 * GiB), 0.002) * n_workers
    out += [
        R("cpu_memory", "host", "used", used, "B"),
        R("cpu_memory", "host", "utilization", used / node.mem_bytes, "ratio"),
        R("cpu_memory", "host", "peak", float(node.mem_bytes), "B"),
        R("cpu_memory", "host", "available", node.mem_bytes - used, "B"),
        R("cpu_memory", "host", "swap_in_bytes_per_second", swin, "B/s"),
        R("cpu_memory", "host", "swap_out_bytes_per_second", swout, "B/s"),
        R("cpu_memory", "host", "swap_in_bytes_total", node.swap_tot[0], "B"),
        R("cpu_memory", "host", "swap_out_bytes_total", node.swap_tot[1], "B"),
        R("cpu_memory", "host", "pressure_some", 0.0, "ratio"),
        R("cpu_memory", "host", "pressure_full", 0.0, "ratio"),
        R("cpu_memory", "job", "resident_bytes", rank_rss + worker_rss, "B"),
        R("cpu_memory", "job", "rank_resident_bytes", rank_rss, "B"),
        R("cpu_memory", "job", "worker_resident_bytes", worker_rss, "B"),
        R("cpu_memory", "job", "launcher_resident_bytes", 150 * MiB if n_ranks > 1 else 0.0, "B"),
    ]
    if node.membw_peak:
        bw = jitter(rng, act.get("membw", 0.0) + 4e9, 0.03)
        out += [
            R("cpu_memory_bandwidth", "host", "throughput", bw, "B/s"),
            R("cpu_memory_bandwidth", "host", "utilization", bw / node.membw_peak, "ratio"),
            R("cpu_memory_bandwidth", "host", "peak", node.membw_peak, "B/s"),
        ]
    else:
        out += [
            R("cpu_memory_bandwidth", "host", "throughput", None, "B/s", NO_MBM),
            R("cpu_memory_bandwidth", "host", "utilization", None, "ratio", NO_MBM),
        ]
    # storage: the data disk is the first one listed
    for i, (name, size, seq, iops) in enumerate(node.disks):
        scale = 1.0 if i == 0 else 0.02
        rb = jitter(rng, act.get("disk_r", 0.0) * scale + 0.2e6, 0.05)
        wb = jitter(rng, act.get("disk_w", 0.0) * scale + 0.5e6, 0.05)
        ro = jitter(rng, act.get("disk_rops", rb / 131072) + 5, 0.05)
        wo = jitter(rng, act.get("disk_wops", wb / 262144) + 12, 0.05)
        tot = node.disk_tot[name]
        tot[0] += rb * interval
        tot[1] += wb * interval
        tot[2] += ro * interval
        tot[3] += wo * interval
        busy = min(1.0, (rb + wb) / seq * 1.3 + 0.005)
        tot[4] += busy * interval
        bu, ou = (rb + wb) / seq, (ro + wo) / iops
        out += [
            R("storage_bandwidth", name, "throughput", rb + wb, "B/s"),
            R("storage_bandwidth", name, "read_bytes_per_second", rb, "B/s"),
            R("storage_bandwidth", name, "operations_per_second", ro + wo, "IO/s"),
            R("storage_bandwidth", name, "read_operations_per_second", ro, "IO/s"),
            R("storage_bandwidth", name, "byte_utilization", bu, "ratio"),
            R("storage_bandwidth", name, "operation_utilization", ou, "ratio"),
            R("storage_bandwidth", name, "utilization", max(bu, ou), "ratio"),
            R("storage_bandwidth", name, "busy", busy, "ratio"),
            R("storage_bandwidth", name, "peak", seq, "B/s"),
            R("storage_bandwidth", name, "read_bytes_total", tot[0], "B"),
            R("storage_bandwidth", name, "written_bytes_total", tot[1], "B"),
            R("storage_bandwidth", name, "reads_completed_total", tot[2], "count"),
            R("storage_bandwidth", name, "writes_completed_total", tot[3], "count"),
            R("storage_bandwidth", name, "io_time_seconds_total", tot[4], "s"),
            R("storage_bandwidth", name, "queue_depth", busy * (8.0 if wb > 1e9 else 1.2), "requests"),
            R("storage_bandwidth", name, "in_flight", float(round(busy * 4)), "requests"),
        ]
    jr = act.get("job_read", act.get("disk_r", 0.0))
    jw = act.get("job_write", act.get("disk_w", 0.0))
    out += [
        R("storage_bandwidth", "host", "pressure_some", min(1.0, act.get("io_psi", 0.0)), "ratio"),
        R("storage_bandwidth", "host", "pressure_full", min(1.0, act.get("io_psi", 0.0) * 0.6), "ratio"),
        R("storage_bandwidth", "job", "read_calls_per_second", jitter(rng, act.get("read_calls", 50.0), 0.05), "1/s"),
        R(
            "storage_bandwidth",
            "job",
            "read_chars_per_second",
            jitter(rng, act.get("read_chars", jr) + 1e5, 0.05),
            "B/s",
        ),
        R("storage_bandwidth", "job", "read_bytes_per_second", jitter(rng, jr + 1e4, 0.05), "B/s"),
        R("storage_bandwidth", "job", "write_bytes_per_second", jitter(rng, jw + 1e4, 0.05), "B/s"),
        R("storage_bandwidth", "job", "rank_bytes_per_second", jitter(rng, act.get("rank_io", jw) + 1e4, 0.05), "B/s"),
        R(
            "storage_bandwidth",
            "job",
            "worker_bytes_per_second",
            jitter(rng, act.get("worker_io", jr) + 1e3, 0.05),
            "B/s",
        ),
        R("storage_bandwidth", "job", "launcher_bytes_per_second", 0.0, "B/s"),
        R("storage_bandwidth", "job", "pressure_some", min(1.0, act.get("io_psi", 0.0)), "ratio"),
        R("storage_bandwidth", "job", "pressure_full", min(1.0, act.get("io_psi", 0.0) * 0.6), "ratio"),
    ]
    for m, f, s, net, size in node.mounts:
        if net:
            v = act.get("nfs", 0.0)
            out += [
                R("storage_network_bandwidth", m, "throughput", jitter(rng, v, 0.05), "B/s"),
                R(
                    "storage_network_bandwidth",
                    m,
                    "utilization",
                    None,
                    "ratio",
                    "peak unknown; run 'bottleneckd calibrate'",
                ),
            ]
        else:
            u = job.get("disk_used", {}).get(m, 0.4 * size)
            out += [
                R("storage_capacity", m, "used", u, "B"),
                R("storage_capacity", m, "utilization", u / size, "ratio"),
                R("storage_capacity", m, "peak", float(size), "B"),
                R("storage_capacity", m, "free", size - u, "B"),
            ]
    # network
    for j, (name, speed) in enumerate(node.nics):
        peak = speed * 1e6 / 8
        tx = jitter(rng, act.get("net_tx", 0.0) * (1 if j == 0 else 0) + 2e5, 0.06)
        rx = jitter(rng, act.get("net_rx", 0.0) * (1 if j == 0 else 0) + 3e5, 0.06)
        tot = node.nic_tot[name]
        tot[0] += tx * interval
        tot[1] += rx * interval
        out += [
            R("inter_node_interconnect", name, "throughput", max(tx, rx), "B/s"),
            R("inter_node_interconnect", name, "utilization", max(tx, rx) / peak, "ratio"),
            R("inter_node_interconnect", name, "peak", peak, "B/s"),
            R("inter_node_interconnect", name, "tx_bytes_per_second", tx, "B/s"),
            R("inter_node_interconnect", name, "rx_bytes_per_second", rx, "B/s"),
            R("inter_node_interconnect", name, "transmit_bytes_total", tot[0], "B"),
            R("inter_node_interconnect", name, "receive_bytes_total", tot[1], "B"),
        ]
    ib_act = act.get("ib", {})
    for d, p, rate in node.ib:
        name = f"{d}/{p}"
        peak = rate * 1e9 / 8
        v = ib_act.get(name, 0.0) if isinstance(ib_act, dict) else 0.0
        tx = jitter(rng, v + 1e5, 0.03)
        rx = jitter(rng, v + 1e5, 0.03)
        tot = node.ib_tot[name]
        tot[0] += tx * interval
        tot[1] += rx * interval
        out += [
            R("inter_node_interconnect", name, "transmit_bytes_total", tot[0], "B"),
            R("inter_node_interconnect", name, "receive_bytes_total", tot[1], "B"),
            R("inter_node_interconnect", name, "throughput", min(peak, max(tx, rx)), "B/s"),
            R("inter_node_interconnect", name, "utilization", min(1.0, max(tx, rx) / peak), "ratio"),
            R("inter_node_interconnect", name, "peak", peak, "B/s"),
        ]
    return out


# --------------------------------------------------------------------------------------------
# writing a scenario
# --------------------------------------------------------------------------------------------


def write_trace(
    path: str,
    node: Node,
    meta: str,
    segs,
    steps,
    job: dict,
    rng: random.Random,
    facts_fn,
    background=None,
    ranks: list[dict] | None = None,
    stacks_fn=None,
    job_gpus: list[str] | None = None,
):
    """One trace: header, then N_SAMPLES samples. ``ranks``: identities of the local ranks (each
    reports the shared timeline's steps with its own jitter)."""
    lines = [node.header(meta)]
    t = T0
    prev = T0 - 1.0
    batch = job.get("batch_size", 1)
    for i in range(N_SAMPLES):
        interval = 1.0 + rng.uniform(-0.004, 0.006)
        t = prev + interval
        a, b = prev - T0, t - T0
        bg = background(a) if background else {}
        act, shares = mean_activity(segs, a, b, bg)
        ended = [(te, per) for te, per in steps if a <= te < b]
        readings = host_readings(node, act, rng, interval, job)
        for g in node.gpus:
            if job_gpus is None or g["dev"] in job_gpus:
                readings += gpu_readings(node, g, act, rng, i, interval, job)
            else:
                readings += gpu_readings(node, g, {}, rng, i, interval, {"gpu_mem_all": 0.6 * GiB})
        phases = None
        rank_entries = None
        if ended:
            facts = facts_fn(i, b, act)
            if ranks:
                rank_entries = []
                tot = {"steps": 0, "wall_seconds": 0.0, "phases": {}}
                for r in ranks:
                    rp = {}
                    for _, per in ended:
                        for ph, s in per.items():
                            rp[ph] = rp.get(ph, 0.0) + s
                    # each rank's own jitter: compute a little faster or slower, the wait absorbs it
                    d = rng.gauss(0.0, 0.01) * (rp.get("forward", 0) + rp.get("backward", 0))
                    if "backward" in rp:
                        rp["backward"] = max(0.0, rp["backward"] + d)
                    if "communication" in rp and rp["communication"] > abs(d):
                        rp["communication"] -= d
                    else:
                        rp["other"] = max(0.0, rp.get("other", 0.0) - d)
                    full = {
                        ph: round(rp.get(ph, 0.0), 6)
                        for ph in (
                            "data_wait",
                            "transfer",
                            "forward",
                            "backward",
                            "optimizer",
                            "communication",
                            "other",
                        )
                    }
                    wall = sum(full.values())
                    rfacts = dict(facts)
                    rfacts["pid"] = r["pid"]
                    if r.get("gpu"):
                        rfacts["cuda_uuids"] = [r["gpu"]]
                    entry = {
                        "identity": r,
                        "phases": {
                            "steps": len(ended),
                            "wall_seconds": wall,
                            "phases": full,
                            "facts": rfacts,
                            "examples": len(ended) * batch,
                        },
                    }
                    rank_entries.append(entry)
                    tot["steps"] += len(ended)
                    tot["wall_seconds"] += wall
                    for ph, s in full.items():
                        tot["phases"][ph] = tot["phases"].get(ph, 0.0) + s
                phases = {
                    "steps": tot["steps"],
                    "wall_seconds": tot["wall_seconds"],
                    "phases": tot["phases"],
                    "facts": rank_entries[0]["phases"]["facts"],
                    "examples": tot["steps"] * batch,
                }
            else:
                per_all = {}
                for _, per in ended:
                    for ph, s in per.items():
                        per_all[ph] = per_all.get(ph, 0.0) + s
                full = {
                    ph: round(per_all.get(ph, 0.0), 6)
                    for ph in ("data_wait", "transfer", "forward", "backward", "optimizer", "communication", "other")
                }
                phases = {
                    "steps": len(ended),
                    "wall_seconds": sum(full.values()),
                    "phases": full,
                    "facts": facts,
                    "examples": len(ended) * batch,
                }
        samplers = {
            "cpu_compute": [True, round(rng.uniform(0.003, 0.012), 6), ""],
            "cpu_memory": [True, round(rng.uniform(0.0003, 0.0008), 6), ""],
            "cpu_memory_bandwidth": [True, 4e-05, ""],
            "storage": [True, round(rng.uniform(0.0006, 0.002), 6), ""],
            "inter_node": [True, round(rng.uniform(0.0002, 0.0009), 6), ""],
            "energy": [True, 1e-05, ""],
        }
        if node.gpus:
            samplers["gpu"] = [True, round(rng.uniform(0.002, 0.009), 6), ""]
        if any(m[3] for m in node.mounts):
            samplers["storage_network"] = [True, 0.0004, ""]
        sample = {
            "type": "sample",
            "t": t,
            "interval": interval,
            "readings": readings,
            "phases": phases,
            "samplers": samplers,
        }
        if rank_entries:
            sample["ranks"] = rank_entries
        if stacks_fn is not None:
            rows = stacks_fn(segs, a, b)
            if rows is not None:
                sample["stacks"] = {"source": "py-spy", "rate_hz": 2.0, "rows": rows}
                samplers["stacks"] = [True, 0.024, ""]
        lines.append(sample)
        prev = t
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")


def stack_sampler(sites: dict, rate: float = 2.0):
    """Stack rows from the main thread's phase at ``rate`` instants per second: ``sites`` maps a
    phase to (role, function, file, line, text) or None (no user frame: torch's own code)."""

    def fn(segs, a, b):
        counts: dict[tuple, int] = {}
        n = int(round((b - a) * rate))
        for k in range(n):
            tt = a + (k + 0.5) / rate
            ph = phase_at(segs, tt)
            if ph is None:
                continue
            site = sites.get(ph)
            if site is None:
                key = (ph, "main", None, None, None, None)
            else:
                key = (ph, *site)
            counts[key] = counts.get(key, 0) + 1
        rows = []
        for key, c in counts.items():
            ph, role, func, file, line, text = key
            draws = False if ph == "data_wait" else None
            rows.append([ph, role, func, file, line, text, c, draws, False])
        return rows

    return fn


def identities(
    n_local: int,
    node_rank: int,
    world: int,
    hostname: str,
    gpus: list[dict],
    base_pid: int,
    job: str = "train-7f3c",
    run: str = "r1",
):
    out = []
    for lr in range(n_local):
        out.append(
            {
                "job": job,
                "run": run,
                "restart": 0,
                "rank": node_rank * n_local + lr,
                "local_rank": lr,
                "world_size": world,
                "local_world_size": n_local,
                "node": hostname,
                "node_rank": node_rank,
                "gpu": gpus[lr]["uuid"],
                "pid": base_pid + lr * 7,
                "pod": "",
                "namespace": "",
            }
        )
    return out


def cum(state: dict, key: str, add: float) -> float:
    state[key] = state.get(key, 0.0) + add
    return state[key]


# --------------------------------------------------------------------------------------------
# machines
# --------------------------------------------------------------------------------------------


def vm_h100_1g(rng, host="a3-h100-1g-0"):
    """A cloud VM with one H100 SXM 80GB (26 vCPUs, 234 GB)."""
    return Node(
        rng,
        host,
        "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz",
        26,
        13,
        1,
        None,
        ["avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"],
        234 * 10**9,
        "H100",
        1,
        1.1e12,
        "measured here: numpy fp32 matmul 2048x2048, best of 0.5 s",
        None,
        [("nvme0n1", 3_000_000_000_000, 7.0e9, 1.0e6), ("sda", 200_000_000_000, 7.0e9, 1.0e6)],
        [("ens7", 100000)],
        [],
        [
            ("/", "ext4", "/dev/sda1", False, 200_000_000_000),
            ("/mnt/localssd", "ext4", "/dev/nvme0n1", False, 3_000_000_000_000),
        ],
    )


def dgx_h100(rng, host):
    return Node(
        rng,
        host,
        "Intel(R) Xeon(R) Platinum 8480C",
        224,
        112,
        2,
        3800.0,
        ["avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"],
        2_063_000_000_000,
        "H100",
        8,
        9.8e12,
        "measured here: numpy fp32 matmul 4096x4096, best of 0.5 s",
        None,
        [("nvme2n1", 3_840_000_000_000, 7.0e9, 1.0e6), ("nvme0n1", 1_920_000_000_000, 7.0e9, 1.0e6)],
        [("enp170s0f1np1", 100000)],
        [(f"mlx5_{i}", 1, 400.0) for i in range(8)],
        [
            ("/", "ext4", "/dev/nvme0n1p2", False, 1_800_000_000_000),
            ("/raid", "ext4", "/dev/md0", False, 30_000_000_000_000),
        ],
    )


# --------------------------------------------------------------------------------------------
# scenarios
# --------------------------------------------------------------------------------------------

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def base_gpu_facts(**kw):
    f = {
        "device": "cuda",
        "ddp": False,
        "fsdp": False,
        "sharded": False,
        "offloading": False,
        "compiled": False,
        "allow_tf32": False,
        "cudnn_allow_tf32": True,
        "has_conv": False,
        "optimizer_closure": False,
        "timed_step_share": 0.125,
        "persistent_workers": True,
        "pin_memory": True,
    }
    f.update(kw)
    return f


@scenario
def item_sync_logging(out_dir):
    """1x H100: GPT 1.3B bf16 fine-tune whose loop calls .item() on every parameter's grad norm and
    logs each step: other 46% (main thread a full core, GPU idle), compute 52%. The host's Python
    work per step is what limits: cpu_compute / other."""
    rng = random.Random(301)
    node = vm_h100_1g(rng)
    g = node.gpus[0]
    pid = 41877
    flops = 6 * 1.3e9 * 16 * 2048

    def step(k, t, rng):
        f, bw = jitter(rng, 0.146, 0.01), jitter(rng, 0.291, 0.01)
        comp = dict(busy=0.99, sm=0.86, tensor=0.62, dram=0.34, main=0.55, autograd=0.35)
        return [
            seg("other", jitter(rng, 0.386, 0.03), main=0.99, busy=0.06, sm=0.02, dram=0.01),
            seg("data_wait", jitter(rng, 0.005, 0.2), main=0.5, busy=0.0),
            seg("transfer", 0.003, main=0.4, busy=0.3, sm=0.01, pcie_tx=0, pcie_rx=15e9),
            seg("forward", f, **comp),
            seg("backward", bw, **comp),
            seg("optimizer", jitter(rng, 0.009, 0.05), busy=0.98, sm=0.55, dram=0.85, main=0.6),
        ]

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng)
    st = {}

    def facts(i, b, act):
        return base_gpu_facts(
            pid=pid,
            cuda_uuids=[g["uuid"]],
            parameters=1_315_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            loader_workers=4,
            batch_size=16,
            cores=26,
            loader_workers_saturate_cores=False,
            prefetch_factor=2,
            input_rank=2,
            tokens_per_example=2048.0,
            optimizer_impl="fused",
            flops_per_step=flops,
            operand_bytes_per_step=2.1e11,
            arithmetic_intensity=flops / 2.1e11,
            weight_byte_share=0.31,
            fp8_flop_share=0.0,
            conv_flop_share=0.0,
            achieved_flops=flops / 0.437,
            achieved_bytes_per_second=2.1e11 / 0.437,
            epoch=0,
            thread_cpu_seconds=cum(st, "cpu", 0.93),
            runqueue_wait_seconds=cum(st, "rq", 0.002),
            cuda_memory_total_bytes=node.spec["mem"],
            cuda_memory_reserved_bytes=int(52.4 * GiB),
            cuda_memory_allocated_bytes=int(21.7 * GiB),
            cuda_memory_peak_allocated_bytes=int(47.9 * GiB),
            cuda_alloc_retries=0,
            cuda_alloc_retries_per_step=0.0,
            cuda_ooms=0,
            cuda_expandable_segments=False,
        )

    job = dict(
        local_ranks=1,
        workers_per_rank=4,
        gpu_pid={"gpu0": pid},
        gpu_mem={"gpu0": 53.1 * GiB},
        batch_size=16,
        host_mem_used=61e9,
        rank_rss=14 * GiB,
        worker_rss=1.9 * GiB,
    )
    bg = lambda a: dict(workers=0.22, side=0.12)  # noqa: E731
    stacks = stack_sampler(
        {
            "other": (
                "main",
                "log_step",
                "train.py",
                188,
                "grad_norms = {n: p.grad.norm().item() for n, p in model.named_parameters()}",
            ),
            "forward": ("main", "train_step", "train.py", 161, "loss = model(input_ids, labels=labels).loss"),
            "backward": ("main", "train_step", "train.py", 162, "loss.backward()"),
        }
    )
    write_trace(
        os.path.join(out_dir, "item_sync_logging.jsonl"),
        node,
        "construct_blind_gpu3: item_sync_logging",
        segs,
        steps,
        job,
        rng,
        facts,
        bg,
        stacks_fn=stacks,
    )


@scenario
def periodic_checkpoint(out_dir):
    """1x H200: 0.6B decoder pre-training, compute-bound (SM ~0.88), with a blocking torch.save of
    model+optimizer (8.4 GB) to local NVMe every ~20 s taking ~2.5 s (12% of wall time). The GPU's
    compute limits the rest: gpu_compute / compute."""
    rng = random.Random(302)
    node = Node(
        rng,
        "h200-1g-07",
        "AMD EPYC 9654 96-Core Processor",
        32,
        16,
        1,
        None,
        ["avx", "avx2", "fma", "avx512f", "avx512_bf16"],
        256 * 10**9,
        "H200",
        1,
        1.6e12,
        "measured here: numpy fp32 matmul 2048x2048, best of 0.5 s",
        None,
        [("nvme1n1", 3_840_000_000_000, 7.0e9, 1.0e6), ("nvme0n1", 480_000_000_000, 7.0e9, 1.0e6)],
        [("eth0", 100000)],
        [],
        [
            ("/", "ext4", "/dev/nvme0n1p1", False, 480_000_000_000),
            ("/scratch", "xfs", "/dev/nvme1n1", False, 3_840_000_000_000),
        ],
    )
    g = node.gpus[0]
    pid = 9120
    flops = 6 * 0.6e9 * 8 * 4096
    ckpt_steps = set()

    def step(k, t, rng):
        parts = []
        if 8.0 <= t < 8.31 or 28.0 <= t < 28.31:
            ckpt_steps.add(k)
            parts += [
                seg("other", 0.35, main=1.0, busy=0.35, sm=0.02, pcie_tx=24e9, dram=0.02),
                seg(
                    "other",
                    jitter(rng, 2.2, 0.03),
                    main=0.92,
                    busy=0.0,
                    disk_w=3.6e9,
                    job_write=3.6e9,
                    iowait=0.03,
                    io_psi=0.2,
                    dwait_procs=1.0,
                ),
            ]
        else:
            parts.append(seg("other", jitter(rng, 0.004, 0.1), main=0.9, busy=0.5, sm=0.3))
        comp = dict(busy=0.995, sm=0.9, tensor=0.66, dram=0.42, main=0.45, autograd=0.4)
        parts += [
            seg("data_wait", jitter(rng, 0.002, 0.2), main=0.6, busy=0.9, sm=0.8),
            seg("transfer", 0.0015, main=0.5, busy=0.99, sm=0.85, pcie_rx=2e9),
            seg("forward", jitter(rng, 0.092, 0.01), **comp),
            seg("backward", jitter(rng, 0.184, 0.01), **comp),
            seg("optimizer", jitter(rng, 0.006, 0.05), busy=0.99, sm=0.6, dram=0.8, main=0.7),
        ]
        return parts

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng)
    st = {}

    def facts(i, b, act):
        return base_gpu_facts(
            pid=pid,
            cuda_uuids=[g["uuid"]],
            parameters=610_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            loader_workers=6,
            batch_size=8,
            cores=32,
            loader_workers_saturate_cores=False,
            prefetch_factor=4,
            input_rank=2,
            tokens_per_example=4096.0,
            optimizer_impl="fused",
            flops_per_step=flops,
            operand_bytes_per_step=1.9e11,
            arithmetic_intensity=flops / 1.9e11,
            weight_byte_share=0.22,
            fp8_flop_share=0.0,
            conv_flop_share=0.0,
            achieved_flops=flops / 0.276,
            achieved_bytes_per_second=1.9e11 / 0.276,
            epoch=0,
            thread_cpu_seconds=cum(st, "cpu", 0.6),
            runqueue_wait_seconds=cum(st, "rq", 0.001),
            cuda_memory_total_bytes=node.spec["mem"],
            cuda_memory_reserved_bytes=int(88 * GiB),
            cuda_memory_allocated_bytes=int(14 * GiB),
            cuda_memory_peak_allocated_bytes=int(81 * GiB),
            cuda_alloc_retries=0,
            cuda_alloc_retries_per_step=0.0,
            cuda_ooms=0,
            cuda_expandable_segments=False,
        )

    job = dict(
        local_ranks=1,
        workers_per_rank=6,
        gpu_pid={"gpu0": pid},
        gpu_mem={"gpu0": 89 * GiB},
        batch_size=8,
        host_mem_used=72e9,
        rank_rss=19 * GiB,
        worker_rss=1.2 * GiB,
        disk_used={"/scratch": 1.2e12},
    )
    bg = lambda a: dict(workers=0.3, side=0.1)  # noqa: E731
    stacks = stack_sampler(
        {
            "other": ("main", "save_checkpoint", "train.py", 244, "torch.save(state, tmp_path)"),
            "forward": ("main", "train", "train.py", 203, "logits = model(tokens)"),
            "backward": ("main", "train", "train.py", 205, "loss.backward()"),
        }
    )
    write_trace(
        os.path.join(out_dir, "periodic_checkpoint.jsonl"),
        node,
        "construct_blind_gpu3: periodic_checkpoint",
        segs,
        steps,
        job,
        rng,
        facts,
        bg,
        stacks_fn=stacks,
    )


@scenario
def cpu_hog_starves_loader(out_dir):
    """1x A100 80GB on a 64-thread host: ResNet-50 AMP with 12 loader workers decoding JPEGs while
    an unrelated ffmpeg (~46 cores) and a preprocessing pool (~10) hold the CPUs; workers get ~0.4
    core each, data wait ~68%. Giving the job its cores back is the fix: cpu_compute / data."""
    rng = random.Random(303)
    node = Node(
        rng,
        "gpu-ws-03",
        "AMD EPYC 7543 32-Core Processor",
        64,
        32,
        1,
        3737.0,
        ["avx", "avx2", "fma"],
        512 * 10**9,
        "A100_80",
        1,
        1.9e12,
        "measured here: numpy fp32 matmul 2048x2048, best of 0.5 s",
        None,
        [("nvme0n1", 3_840_000_000_000, 7.0e9, 1.0e6)],
        [("eno1", 25000)],
        [],
        [("/", "ext4", "/dev/nvme0n1p2", False, 3_800_000_000_000)],
    )
    g = node.gpus[0]
    pid = 17002
    flops = 3 * 4.1e9 * 2 * 256

    def step(k, t, rng):
        comp = dict(busy=0.99, sm=0.78, tensor=0.45, dram=0.55, main=0.7, autograd=0.5)
        return [
            seg("other", 0.002, main=0.9),
            seg("data_wait", jitter(rng, 0.205, 0.08), main=0.15, busy=0.0),
            seg("transfer", 0.006, main=0.5, busy=0.2, pcie_rx=12e9),
            seg("forward", jitter(rng, 0.031, 0.02), **comp),
            seg("backward", jitter(rng, 0.062, 0.02), **comp),
            seg("optimizer", 0.004, busy=0.98, sm=0.5, dram=0.7, main=0.8),
        ]

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng)
    st = {}

    def facts(i, b, act):
        return base_gpu_facts(
            pid=pid,
            cuda_uuids=[g["uuid"]],
            parameters=25_557_032,
            param_dtype="float32",
            autocast_dtype="float16",
            compute_dtype="float16",
            has_conv=True,
            input_rank=4,
            loader_workers=12,
            batch_size=256,
            cores=64,
            loader_workers_saturate_cores=False,
            prefetch_factor=2,
            optimizer_impl="foreach",
            flops_per_step=flops,
            operand_bytes_per_step=9.6e10,
            arithmetic_intensity=flops / 9.6e10,
            conv_flop_share=0.97,
            fp8_flop_share=0.0,
            weight_byte_share=0.04,
            achieved_flops=flops / 0.093,
            achieved_bytes_per_second=9.6e10 / 0.093,
            epoch=3,
            thread_cpu_seconds=cum(st, "cpu", 0.55),
            runqueue_wait_seconds=cum(st, "rq", 0.31),
            cuda_memory_total_bytes=node.spec["mem"],
            cuda_memory_reserved_bytes=int(27 * GiB),
            cuda_memory_allocated_bytes=int(3.1 * GiB),
            cuda_memory_peak_allocated_bytes=int(24.8 * GiB),
            cuda_alloc_retries=0,
            cuda_ooms=0,
        )

    job = dict(
        local_ranks=1,
        workers_per_rank=12,
        gpu_pid={"gpu0": pid},
        gpu_mem={"gpu0": 27.6 * GiB},
        batch_size=256,
        host_mem_used=201e9,
        rank_rss=9 * GiB,
        worker_rss=1.1 * GiB,
        usable=64,
    )
    bg = lambda a: dict(
        workers=4.9,
        side=0.3,
        outside=58.0,
        runq=7.6,
        worker_demand=1.0,
        main_wait=0.3,  # noqa: E731
        disk_r=410e6,
        job_read=410e6,
        read_calls=3100.0,
        outside_procs=[("ffmpeg[48211]", 47.6), ("python3[50112]", 9.9), ("gzip[50530]", 0.5)],
    )
    stacks = stack_sampler(
        {
            "data_wait": ("worker", "__getitem__", "data/imagenet.py", 64, "img = Image.open(path).convert('RGB')"),
        }
    )
    write_trace(
        os.path.join(out_dir, "cpu_hog_starves_loader.jsonl"),
        node,
        "construct_blind_gpu3: cpu_hog_starves_loader",
        segs,
        steps,
        job,
        rng,
        facts,
        bg,
        stacks_fn=stacks,
    )


@scenario
def cpu_thread_oversubscription(out_dir):
    """CPU-only, 32 vCPUs: a tabular transformer with torch's default 16 intra-op threads and 8
    loader workers each running numpy/OpenBLAS with its default 32 threads: ~270 runnable threads
    on 32 CPUs, run queues long, compute phases 78%. Capping the threads is the fix: cpu_compute /
    compute."""
    rng = random.Random(304)
    node = Node(
        rng,
        "c6i-8xl-11",
        "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz",
        32,
        16,
        1,
        3500.0,
        ["avx", "avx2", "fma", "avx512f"],
        64 * 10**9,
        None,
        0,
        1.4e12,
        "measured here: numpy fp32 matmul 2048x2048, best of 0.5 s",
        None,
        [("nvme0n1", 500_000_000_000, 1.0e9, 16000.0)],
        [("ens5", 12500)],
        [],
        [("/", "xfs", "/dev/nvme0n1p1", False, 500_000_000_000)],
    )
    pid = 3311
    flops = 6 * 12e6 * 512 * 8

    def step(k, t, rng):
        comp = dict(main=0.62, side=18.8, runq=26.0, main_wait=0.38, workers=12.0, worker_demand=1.0)
        return [
            seg("other", 0.012, main=0.6, side=2.0, workers=12.0, runq=24.0, main_wait=0.4),
            seg(
                "data_wait",
                jitter(rng, 0.29, 0.08),
                main=0.3,
                side=0.5,
                workers=30.4,
                runq=21.0,
                main_wait=0.5,
                worker_demand=1.0,
            ),
            seg("transfer", 0.0, main=0.5),
            seg("forward", jitter(rng, 0.42, 0.04), **comp),
            seg("backward", jitter(rng, 0.86, 0.04), **comp),
            seg("optimizer", jitter(rng, 0.07, 0.04), main=0.7, side=14.0, workers=12.0, runq=22.0, main_wait=0.3),
        ]

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng)
    st = {}

    def facts(i, b, act):
        return {
            "device": "cpu",
            "pid": pid,
            "ddp": False,
            "loader_workers": 8,
            "pin_memory": False,
            "persistent_workers": False,
            "prefetch_factor": 2,
            "batch_size": 512,
            "cores": 32,
            "loader_workers_saturate_cores": False,
            "input_rank": 2,
            "optimizer_closure": False,
            "timed_step_share": 1.0,
            "compiled": False,
            "has_conv": False,
            "parameters": 12_100_000,
            "param_dtype": "float32",
            "fsdp": False,
            "sharded": False,
            "offloading": False,
            "optimizer_impl": "foreach",
            "flops_per_step": flops,
            "operand_bytes_per_step": 2.6e10,
            "arithmetic_intensity": flops / 2.6e10,
            "weight_byte_share": 0.07,
            "compute_dtype": "float32",
            "fp8_flop_share": 0.0,
            "conv_flop_share": 0.0,
            "achieved_flops": flops / 1.28,
            "achieved_bytes_per_second": 2.6e10 / 1.28,
            "epoch": 1,
            "thread_cpu_seconds": cum(st, "cpu", 0.6),
            "runqueue_wait_seconds": cum(st, "rq", 0.39),
        }

    job = dict(
        local_ranks=1,
        workers_per_rank=8,
        batch_size=512,
        host_mem_used=41e9,
        rank_rss=7 * GiB,
        worker_rss=2.2 * GiB,
        usable=32,
    )
    write_trace(
        os.path.join(out_dir, "cpu_thread_oversubscription.jsonl"),
        node,
        "construct_blind_gpu3: cpu_thread_oversubscription",
        segs,
        steps,
        job,
        rng,
        facts,
    )


@scenario
def hf_trainer_no_workers_tokenize(out_dir):
    """1x L4 (8 vCPUs): HF Trainer fine-tuning a 184M DeBERTa with dataloader_num_workers=0 and a
    collate_fn that runs a slow (Python) tokenizer: data wait 65%, the main thread at one full core,
    7 cores idle, GPU busy 30%. The loader's one CPU thread limits: cpu_compute / data."""
    rng = random.Random(305)
    node = Node(
        rng,
        "g2-standard-8-2",
        "Intel(R) Xeon(R) CPU @ 2.20GHz",
        8,
        4,
        1,
        None,
        ["avx", "avx2", "fma", "avx512f"],
        32 * 10**9,
        "L4",
        1,
        2.6e11,
        "measured here: numpy fp32 matmul 2048x2048, best of 0.5 s",
        None,
        [("nvme0n1", 375_000_000_000, 2.4e9, 4.0e5), ("sda", 100_000_000_000, 2.4e9, 4.0e5)],
        [("ens4", 16000)],
        [],
        [("/", "ext4", "/dev/sda1", False, 100_000_000_000)],
    )
    g = node.gpus[0]
    pid = 2214
    flops = 6 * 184e6 * 32 * 256

    def step(k, t, rng):
        comp = dict(busy=0.98, sm=0.7, tensor=0.42, dram=0.5, main=0.9, autograd=0.3)
        return [
            seg("other", 0.008, main=1.0, busy=0.1),
            seg("data_wait", jitter(rng, 0.19, 0.05), main=1.0, busy=0.0),
            seg("transfer", 0.003, main=0.9, busy=0.2, pcie_rx=3e9),
            seg("forward", jitter(rng, 0.027, 0.02), **comp),
            seg("backward", jitter(rng, 0.051, 0.02), **comp),
            seg("optimizer", jitter(rng, 0.012, 0.03), busy=0.97, sm=0.45, dram=0.8, main=0.95),
        ]

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng)
    st = {}

    def facts(i, b, act):
        return base_gpu_facts(
            pid=pid,
            cuda_uuids=[g["uuid"]],
            framework="transformers",
            parameters=184_400_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            loader_workers=0,
            pin_memory=True,
            persistent_workers=False,
            batch_size=32,
            cores=8,
            loader_workers_saturate_cores=False,
            input_rank=2,
            tokens_per_example=256.0,
            optimizer_impl="fused",
            flops_per_step=flops,
            operand_bytes_per_step=2.4e10,
            arithmetic_intensity=flops / 2.4e10,
            weight_byte_share=0.3,
            fp8_flop_share=0.0,
            conv_flop_share=0.0,
            achieved_flops=flops / 0.078,
            achieved_bytes_per_second=2.4e10 / 0.078,
            epoch=0,
            thread_cpu_seconds=cum(st, "cpu", 0.99),
            runqueue_wait_seconds=cum(st, "rq", 0.004),
            cuda_memory_total_bytes=node.spec["mem"],
            cuda_memory_reserved_bytes=int(9.8 * GiB),
            cuda_memory_allocated_bytes=int(2.9 * GiB),
            cuda_memory_peak_allocated_bytes=int(8.7 * GiB),
            cuda_alloc_retries=0,
            cuda_ooms=0,
        )

    job = dict(
        local_ranks=1,
        workers_per_rank=0,
        gpu_pid={"gpu0": pid},
        gpu_mem={"gpu0": 10.4 * GiB},
        batch_size=32,
        host_mem_used=9.5e9,
        rank_rss=5.5 * GiB,
        usable=8,
    )
    bg = lambda a: dict(side=0.1)  # noqa: E731
    stacks = stack_sampler(
        {
            "data_wait": (
                "main",
                "collate",
                "train_hf.py",
                57,
                "enc = tokenizer(texts, padding='longest', truncation=True, max_length=256)",
            ),
            "other": None,
        }
    )
    write_trace(
        os.path.join(out_dir, "hf_trainer_no_workers_tokenize.jsonl"),
        node,
        "construct_blind_gpu3: hf_trainer_no_workers_tokenize",
        segs,
        steps,
        job,
        rng,
        facts,
        bg,
        stacks_fn=stacks,
    )


@scenario
def ddp_pcie_allreduce_4gpu(out_dir):
    """4x L40S (PCIe gen4, no NVLink, GPUs on both sockets: NCCL through host memory, ~8 GB/s bus
    bandwidth): DDP of a 1.3B model with fp32 gradients (5.2 GB a step). The all-reduce takes 0.98 s
    a step, 0.65 s of it exposed (51% of the step). The GPU-to-GPU path limits:
    inter_gpu_interconnect / communication."""
    rng = random.Random(306)
    node = Node(
        rng,
        "l40s-4x-02",
        "AMD EPYC 7313 16-Core Processor",
        64,
        32,
        2,
        3729.0,
        ["avx", "avx2", "fma"],
        512 * 10**9,
        "L40S",
        4,
        1.8e12,
        "measured here: numpy fp32 matmul 2048x2048, best of 0.5 s",
        None,
        [("nvme0n1", 3_840_000_000_000, 7.0e9, 1.0e6)],
        [("enp65s0f0", 25000)],
        [],
        [("/", "ext4", "/dev/nvme0n1p2", False, 3_800_000_000_000)],
    )
    pids = [5501 + 7 * k for k in range(4)]
    flops = 6 * 1.3e9 * 4 * 2048
    ar_bytes = 2 * 3 / 4 * 5.2e9  # each GPU sends (and receives) per all-reduce

    def step(k, t, rng):
        fwd, bwd = jitter(rng, 0.172, 0.01), jitter(rng, 0.356, 0.01)
        exposed = jitter(rng, 0.645, 0.02)
        ov = 0.33
        comp = dict(busy=0.99, sm=0.84, tensor=0.58, dram=0.45, main=0.6, autograd=0.3)
        comm_bw = ar_bytes / (ov + exposed)
        bwd_ov = dict(comp, pcie_tx=comm_bw * ov / bwd, pcie_rx=comm_bw * ov / bwd, side=0.4, comm_threads=0.3)
        return [
            seg("other", 0.01, main=0.9, busy=0.1),
            seg("data_wait", 0.004, main=0.5),
            seg("transfer", 0.004, main=0.5, busy=0.2, pcie_rx=4e9),
            seg("forward", fwd, **comp),
            seg("backward", bwd, **bwd_ov),
            seg(
                "communication",
                exposed,
                busy=0.97,
                sm=0.06,
                dram=0.12,
                pcie_tx=comm_bw,
                pcie_rx=comm_bw,
                main=0.98,
                side=0.5,
                comm_threads=0.6,
                membw=30e9,
            ),
            seg("optimizer", jitter(rng, 0.062, 0.03), busy=0.98, sm=0.5, dram=0.85, main=0.8),
        ]

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng)
    st = {}

    def facts(i, b, act):
        return base_gpu_facts(
            pid=pids[0],
            ddp=True,
            world_size=4,
            local_world_size=4,
            comm_backend="nccl",
            ddp_comm_timing="comm hook",
            ddp_buckets=209,
            comm_seconds_per_step=0.975,
            comm_exposed_seconds_per_step=0.645,
            comm_overlapped_seconds_per_step=0.33,
            comm_overlap_ratio=0.338,
            parameters=1_310_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            loader_workers=4,
            batch_size=4,
            cores=64,
            loader_workers_saturate_cores=False,
            prefetch_factor=2,
            input_rank=2,
            tokens_per_example=2048.0,
            optimizer_impl="fused",
            flops_per_step=flops,
            operand_bytes_per_step=9.1e10,
            arithmetic_intensity=flops / 9.1e10,
            weight_byte_share=0.45,
            fp8_flop_share=0.0,
            conv_flop_share=0.0,
            achieved_flops=flops / 0.528,
            achieved_bytes_per_second=9.1e10 / 0.528,
            epoch=0,
            thread_cpu_seconds=cum(st, "cpu", 0.8),
            runqueue_wait_seconds=cum(st, "rq", 0.002),
            cuda_memory_total_bytes=node.spec["mem"],
            cuda_memory_reserved_bytes=int(39.5 * GiB),
            cuda_memory_allocated_bytes=int(21.4 * GiB),
            cuda_memory_peak_allocated_bytes=int(37.2 * GiB),
            cuda_alloc_retries=0,
            cuda_ooms=0,
        )

    ranks = identities(4, 0, 4, node.hostname, node.gpus, pids[0])
    job = dict(
        local_ranks=4,
        workers_per_rank=4,
        gpu_pid={g["dev"]: pids[k] for k, g in enumerate(node.gpus)},
        gpu_mem_all=40.1 * GiB,
        batch_size=4,
        host_mem_used=148e9,
        rank_rss=16 * GiB,
        worker_rss=1.4 * GiB,
    )
    bg = lambda a: dict(workers=0.15)  # noqa: E731
    write_trace(
        os.path.join(out_dir, "ddp_pcie_allreduce_4gpu.jsonl"),
        node,
        "construct_blind_gpu3: ddp_pcie_allreduce_4gpu",
        segs,
        steps,
        job,
        rng,
        facts,
        bg,
        ranks=ranks,
    )


@scenario
def allocator_fragmentation(out_dir):
    """1x H100 80GB: 3B decoder full fine-tune on unpacked variable-length batches (4k-32k tokens):
    the caching allocator holds 78.9 GB, tensors peak at 61 GB, ~2.4 cudaMalloc retries a step, each
    a cache flush and device sync: forward/backward stall (GPU busy 72%, SM 52%). Setting
    expandable_segments is the fix: gpu_memory / compute."""
    rng = random.Random(307)
    node = vm_h100_1g(rng, "a3-h100-1g-9")
    g = node.gpus[0]
    pid = 66120
    flops = 6 * 3.0e9 * 4 * 4096
    st = {}

    def step(k, t, rng):
        stall = jitter(rng, 0.26, 0.25)
        comp = dict(busy=0.99, sm=0.82, tensor=0.6, dram=0.4, main=0.6, autograd=0.4)
        stalled = dict(busy=0.12, sm=0.05, dram=0.03, main=1.0)
        return [
            seg("other", 0.006, main=0.9),
            seg("data_wait", 0.004, main=0.6),
            seg("transfer", 0.002, main=0.5, busy=0.3, pcie_rx=6e9),
            seg("forward", jitter(rng, 0.16, 0.04), **comp),
            seg("forward", stall * 0.4, **stalled),
            seg("backward", jitter(rng, 0.32, 0.04), **comp),
            seg("backward", stall * 0.6, **stalled),
            seg("optimizer", jitter(rng, 0.021, 0.04), busy=0.99, sm=0.55, dram=0.86, main=0.8),
        ]

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng)

    def facts(i, b, act):
        return base_gpu_facts(
            pid=pid,
            cuda_uuids=[g["uuid"]],
            parameters=3_010_000_000,
            param_dtype="bfloat16",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            loader_workers=4,
            batch_size=4,
            cores=26,
            loader_workers_saturate_cores=False,
            prefetch_factor=2,
            input_rank=2,
            tokens_per_example=jitter(rng, 4096.0, 0.3),
            optimizer_impl="fused",
            flops_per_step=flops,
            operand_bytes_per_step=2.6e11,
            arithmetic_intensity=flops / 2.6e11,
            weight_byte_share=0.28,
            fp8_flop_share=0.0,
            conv_flop_share=0.0,
            achieved_flops=flops / 0.74,
            achieved_bytes_per_second=2.6e11 / 0.74,
            epoch=0,
            activation_checkpointing=False,
            thread_cpu_seconds=cum(st, "cpu", 0.82),
            runqueue_wait_seconds=cum(st, "rq", 0.002),
            cuda_memory_total_bytes=node.spec["mem"],
            cuda_memory_reserved_bytes=int(78.9e9 + rng.uniform(-2e8, 2e8)),
            cuda_memory_allocated_bytes=int(rng.uniform(38e9, 47e9)),
            cuda_memory_peak_allocated_bytes=int(61.3e9),
            cuda_alloc_retries=int(cum(st, "retry", 2.4 * 1.3)),
            cuda_alloc_retries_per_step=jitter(rng, 2.4, 0.15),
            cuda_ooms=0,
            cuda_expandable_segments=False,
        )

    job = dict(
        local_ranks=1,
        workers_per_rank=4,
        gpu_pid={"gpu0": pid},
        gpu_mem={"gpu0": 79.4e9},
        batch_size=4,
        host_mem_used=58e9,
        rank_rss=13 * GiB,
        worker_rss=1.6 * GiB,
    )
    bg = lambda a: dict(workers=0.2, side=0.15)  # noqa: E731
    write_trace(
        os.path.join(out_dir, "allocator_fragmentation.jsonl"),
        node,
        "construct_blind_gpu3: allocator_fragmentation",
        segs,
        steps,
        job,
        rng,
        facts,
        bg,
    )


@scenario
def compile_recompiles(out_dir):
    """1x H100: torch.compile'd 350M model fed unbucketed sequence lengths: Dynamo recompiles
    every ~5 s, ~3 s each (compile_threads=1: the main thread at a full core, GPU idle), landing in
    the other stage as the brief describes: other ~55%, compute ~43%. Host compilation limits:
    cpu_compute / other."""
    rng = random.Random(308)
    node = vm_h100_1g(rng, "a3-h100-1g-4")
    g = node.gpus[0]
    pid = 12345
    flops = 6 * 350e6 * 32 * 1024
    next_compile = [1.2]

    def step(k, t, rng):
        parts = []
        if t >= next_compile[0]:
            parts.append(seg("other", jitter(rng, 2.9, 0.1), main=1.0, busy=0.0, side=0.05))
            next_compile[0] = t + jitter(rng, 5.2, 0.1)
        else:
            parts.append(seg("other", 0.003, main=0.9, busy=0.3))
        comp = dict(busy=0.99, sm=0.83, tensor=0.6, dram=0.45, main=0.35, autograd=0.2)
        parts += [
            seg("data_wait", 0.002, main=0.6),
            seg("transfer", 0.001, main=0.5, busy=0.5, pcie_rx=3e9),
            seg("forward", jitter(rng, 0.045, 0.03), **comp),
            seg("backward", jitter(rng, 0.09, 0.03), **comp),
            seg("optimizer", 0.004, busy=0.99, sm=0.5, dram=0.8, main=0.6),
        ]
        return parts

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng)
    st = {}

    def facts(i, b, act):
        return base_gpu_facts(
            pid=pid,
            cuda_uuids=[g["uuid"]],
            compiled=True,
            parameters=354_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            loader_workers=4,
            batch_size=32,
            cores=26,
            loader_workers_saturate_cores=False,
            prefetch_factor=2,
            input_rank=2,
            tokens_per_example=1024.0,
            optimizer_impl="fused",
            flops_per_step=flops,
            operand_bytes_per_step=6.1e10,
            arithmetic_intensity=flops / 6.1e10,
            weight_byte_share=0.2,
            fp8_flop_share=0.0,
            conv_flop_share=0.0,
            achieved_flops=flops / 0.135,
            achieved_bytes_per_second=6.1e10 / 0.135,
            epoch=0,
            thread_cpu_seconds=cum(st, "cpu", 0.75),
            runqueue_wait_seconds=cum(st, "rq", 0.003),
            cuda_memory_total_bytes=node.spec["mem"],
            cuda_memory_reserved_bytes=int(31 * GiB),
            cuda_memory_allocated_bytes=int(6.2 * GiB),
            cuda_memory_peak_allocated_bytes=int(27.5 * GiB),
            cuda_alloc_retries=0,
            cuda_ooms=0,
        )

    job = dict(
        local_ranks=1,
        workers_per_rank=4,
        gpu_pid={"gpu0": pid},
        gpu_mem={"gpu0": 31.8 * GiB},
        batch_size=32,
        host_mem_used=44e9,
        rank_rss=11 * GiB,
        worker_rss=1.3 * GiB,
    )
    bg = lambda a: dict(workers=0.12)  # noqa: E731
    write_trace(
        os.path.join(out_dir, "compile_recompiles.jsonl"),
        node,
        "construct_blind_gpu3: compile_recompiles",
        segs,
        steps,
        job,
        rng,
        facts,
        bg,
    )


@scenario
def s3_latency_loader(out_dir):
    """1x A100 40GB (12 vCPUs): WebDataset-style loader reading small objects from S3 over HTTPS,
    4 workers each waiting ~80 ms per request: data wait ~85%, CPUs, disk and the 25 GbE NIC all
    nearly idle (95 MB/s). Latency, not any resource's peak: undetermined / data (more requests
    in flight is the fix)."""
    rng = random.Random(309)
    node = Node(
        rng,
        "a2-highgpu-1g-5",
        "Intel(R) Xeon(R) CPU @ 2.20GHz",
        12,
        6,
        1,
        None,
        ["avx", "avx2", "fma", "avx512f"],
        85 * 10**9,
        "A100_40",
        1,
        4.1e11,
        "measured here: numpy fp32 matmul 2048x2048, best of 0.5 s",
        None,
        [("sda", 200_000_000_000, 1.2e9, 60000.0)],
        [("ens4", 25000)],
        [],
        [("/", "ext4", "/dev/sda1", False, 200_000_000_000)],
    )
    g = node.gpus[0]
    pid = 8801
    flops = 6 * 86e6 * 128 * 197

    def step(k, t, rng):
        comp = dict(busy=0.99, sm=0.72, tensor=0.5, dram=0.5, main=0.7, autograd=0.4)
        return [
            seg("other", 0.003, main=0.9),
            seg("data_wait", jitter(rng, 0.52, 0.15), main=0.04, busy=0.0),
            seg("transfer", 0.004, main=0.5, busy=0.2, pcie_rx=5e9),
            seg("forward", jitter(rng, 0.028, 0.02), **comp),
            seg("backward", jitter(rng, 0.056, 0.02), **comp),
            seg("optimizer", 0.004, busy=0.98, sm=0.45, dram=0.8, main=0.8),
        ]

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng)
    st = {}

    def facts(i, b, act):
        return base_gpu_facts(
            pid=pid,
            cuda_uuids=[g["uuid"]],
            parameters=86_600_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            has_conv=True,
            conv_flop_share=0.02,
            input_rank=4,
            loader_workers=4,
            batch_size=128,
            cores=12,
            loader_workers_saturate_cores=False,
            prefetch_factor=2,
            optimizer_impl="fused",
            flops_per_step=flops,
            operand_bytes_per_step=3.3e10,
            arithmetic_intensity=flops / 3.3e10,
            weight_byte_share=0.12,
            fp8_flop_share=0.0,
            achieved_flops=flops / 0.084,
            achieved_bytes_per_second=3.3e10 / 0.084,
            epoch=0,
            thread_cpu_seconds=cum(st, "cpu", 0.12),
            runqueue_wait_seconds=cum(st, "rq", 0.001),
            cuda_memory_total_bytes=node.spec["mem"],
            cuda_memory_reserved_bytes=int(18 * GiB),
            cuda_memory_allocated_bytes=int(1.4 * GiB),
            cuda_memory_peak_allocated_bytes=int(16.1 * GiB),
            cuda_alloc_retries=0,
            cuda_ooms=0,
        )

    job = dict(
        local_ranks=1,
        workers_per_rank=4,
        gpu_pid={"gpu0": pid},
        gpu_mem={"gpu0": 18.7 * GiB},
        batch_size=128,
        host_mem_used=14e9,
        rank_rss=6 * GiB,
        worker_rss=0.9 * GiB,
        usable=12,
    )
    bg = lambda a: dict(
        workers=0.46,
        side=0.05,
        net_rx=95e6,
        net_tx=2.1e6,
        read_calls=9400.0,  # noqa: E731
        read_chars=95e6,
        job_read=0.0,
        worker_io=0.0,
    )
    stacks = stack_sampler(
        {
            "data_wait": (
                "worker",
                "_fetch",
                "data/s3_stream.py",
                41,
                "body = self.client.get_object(Bucket=b, Key=key)['Body'].read()",
            ),
        }
    )
    write_trace(
        os.path.join(out_dir, "s3_latency_loader.jsonl"),
        node,
        "construct_blind_gpu3: s3_latency_loader",
        segs,
        steps,
        job,
        rng,
        facts,
        bg,
        stacks_fn=stacks,
    )


@scenario
def tp_nvlink_exposed(out_dir):
    """8x H100 SXM, Megatron tensor parallel TP=8 of a 13B model, 16 micro-batches a step: the
    activations' all-reduces (42 MB each, 160 a micro-batch) are exposed, 37% of the step in the
    communication phase; NVLink runs ~48% of its both-directions peak while they run.
    inter_gpu_interconnect / communication."""
    rng = random.Random(310)
    node = dgx_h100(rng, "dgx-h100-12")
    pids = [30001 + 7 * k for k in range(8)]
    flops = 6 * 13e9 * 16 * 4096 / 8  # per GPU
    per_step_bytes = 2 * 7 / 8 * 42e6 * 160 * 16

    def step(k, t, rng):
        fwd, bwd, comm = jitter(rng, 0.50, 0.01), jitter(rng, 0.92, 0.01), jitter(rng, 0.88, 0.02)
        comp = dict(busy=0.99, sm=0.88, tensor=0.66, dram=0.4, main=0.75, autograd=0.5)
        bw = per_step_bytes / comm
        return [
            seg("other", 0.02, main=0.9, busy=0.2),
            seg("data_wait", 0.01, main=0.5),
            seg("transfer", 0.002, main=0.5, busy=0.3, pcie_rx=1e9),
            seg("forward", fwd, **comp),
            seg("backward", bwd, **comp),
            seg("communication", comm, busy=0.97, sm=0.16, dram=0.3, nvl_tx=bw, nvl_rx=bw, main=0.95, comm_threads=0.1),
            seg("optimizer", jitter(rng, 0.05, 0.03), busy=0.99, sm=0.5, dram=0.85, main=0.8),
        ]

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng)
    st = {}

    def facts(i, b, act):
        return base_gpu_facts(
            pid=pids[0],
            world_size=8,
            local_world_size=8,
            comm_backend="nccl",
            parameters=1_630_000_000,
            param_dtype="bfloat16",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            loader_workers=2,
            batch_size=1,
            cores=224,
            loader_workers_saturate_cores=False,
            prefetch_factor=2,
            input_rank=2,
            tokens_per_example=4096.0,
            optimizer_impl="fused",
            flops_per_step=flops,
            operand_bytes_per_step=1.6e12,
            arithmetic_intensity=flops / 1.6e12,
            weight_byte_share=0.25,
            fp8_flop_share=0.0,
            conv_flop_share=0.0,
            achieved_flops=flops / 1.42,
            achieved_bytes_per_second=1.6e12 / 1.42,
            epoch=0,
            gradient_accumulation=16,
            thread_cpu_seconds=cum(st, "cpu", 0.85),
            runqueue_wait_seconds=cum(st, "rq", 0.001),
            cuda_memory_total_bytes=node.spec["mem"],
            cuda_memory_reserved_bytes=int(71 * GiB),
            cuda_memory_allocated_bytes=int(29 * GiB),
            cuda_memory_peak_allocated_bytes=int(66 * GiB),
            cuda_alloc_retries=0,
            cuda_ooms=0,
        )

    ranks = identities(8, 0, 8, node.hostname, node.gpus, pids[0], job="megatron-13b-tp8")
    job = dict(
        local_ranks=8,
        workers_per_rank=2,
        gpu_pid={g["dev"]: pids[k] for k, g in enumerate(node.gpus)},
        gpu_mem_all=72 * GiB,
        batch_size=16,
        host_mem_used=410e9,
        rank_rss=22 * GiB,
        worker_rss=1.0 * GiB,
    )
    bg = lambda a: dict(workers=0.05, side=0.3)  # noqa: E731
    write_trace(
        os.path.join(out_dir, "tp_nvlink_exposed.jsonl"),
        node,
        "construct_blind_gpu3: tp_nvlink_exposed",
        segs,
        steps,
        job,
        rng,
        facts,
        bg,
        ranks=ranks,
    )


@scenario
def cpu_membw_elementwise(out_dir):
    """CPU-only 2x Xeon 8380 (80 cores/160 threads, 16 DDR4-3200 channels = 409.6 GB/s, resctrl
    MBM): a grid surrogate model dominated by huge elementwise ops (GELU, LayerNorm, residual adds
    on 3 GB activations), 80 torch threads: DRAM at ~86% of peak, FLOP/s 3% of peak, compute phases
    95%. cpu_memory_bandwidth / compute."""
    rng = random.Random(311)
    node = Node(
        rng,
        "cpu-node-21",
        "Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz",
        160,
        80,
        2,
        3400.0,
        ["avx", "avx2", "fma", "avx512f"],
        512 * 10**9,
        None,
        0,
        8.9e12,
        "measured here: numpy fp32 matmul 4096x4096, best of 0.5 s",
        409.6e9,
        [("nvme0n1", 1_920_000_000_000, 7.0e9, 1.0e6)],
        [("eno1", 25000)],
        [],
        [("/", "ext4", "/dev/nvme0n1p2", False, 1_900_000_000_000)],
    )
    pid = 71002
    flops = 2.1e11

    def step(k, t, rng):
        comp = dict(main=1.0, side=76.0, membw=352e9)
        return [
            seg("other", 0.006, main=1.0),
            seg("data_wait", 0.03, main=0.8, workers=1.6, side=1.0, membw=20e9),
            seg("transfer", 0.0, main=0.5),
            seg("forward", jitter(rng, 0.36, 0.02), **comp),
            seg("backward", jitter(rng, 0.69, 0.02), **comp),
            seg("optimizer", jitter(rng, 0.021, 0.03), main=1.0, side=60.0, membw=300e9),
        ]

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng)
    st = {}

    def facts(i, b, act):
        return {
            "device": "cpu",
            "pid": pid,
            "ddp": False,
            "loader_workers": 2,
            "pin_memory": False,
            "persistent_workers": True,
            "prefetch_factor": 2,
            "batch_size": 8,
            "cores": 160,
            "loader_workers_saturate_cores": False,
            "input_rank": 4,
            "optimizer_closure": False,
            "timed_step_share": 1.0,
            "compiled": False,
            "has_conv": False,
            "parameters": 21_000_000,
            "param_dtype": "float32",
            "fsdp": False,
            "sharded": False,
            "offloading": False,
            "optimizer_impl": "foreach",
            "flops_per_step": flops,
            "operand_bytes_per_step": 3.4e11,
            "arithmetic_intensity": flops / 3.4e11,
            "weight_byte_share": 0.002,
            "compute_dtype": "float32",
            "fp8_flop_share": 0.0,
            "conv_flop_share": 0.0,
            "achieved_flops": flops / 1.05,
            "achieved_bytes_per_second": 3.4e11 / 1.05,
            "epoch": 2,
            "thread_cpu_seconds": cum(st, "cpu", 0.99),
            "runqueue_wait_seconds": cum(st, "rq", 0.001),
        }

    job = dict(
        local_ranks=1,
        workers_per_rank=2,
        batch_size=8,
        host_mem_used=160e9,
        rank_rss=118 * GiB,
        worker_rss=3.1 * GiB,
        usable=160,
    )
    write_trace(
        os.path.join(out_dir, "cpu_membw_elementwise.jsonl"),
        node,
        "construct_blind_gpu3: cpu_membw_elementwise",
        segs,
        steps,
        job,
        rng,
        facts,
    )


@scenario
def balanced_nothing_saturated(out_dir):
    """1x H100: a small multi-modal model whose step is spread over every stage (data 22%, transfer
    8%, compute 34%, optimizer 14%, other 22%) with GPU SM ~25%, DRAM ~20%, CPU, PCIe and disk all
    far from their peaks. No single resource limits: undetermined (compute the largest stage)."""
    rng = random.Random(312)
    node = vm_h100_1g(rng, "a3-h100-1g-2")
    g = node.gpus[0]
    pid = 50550
    flops = 6 * 220e6 * 64 * 300

    def step(k, t, rng):
        comp = dict(busy=0.96, sm=0.55, tensor=0.22, dram=0.35, main=0.8, autograd=0.4)
        return [
            seg("other", jitter(rng, 0.044, 0.05), main=0.7, busy=0.1, sm=0.02),
            seg("data_wait", jitter(rng, 0.044, 0.1), main=0.2, busy=0.0),
            seg("transfer", jitter(rng, 0.016, 0.05), main=0.5, busy=0.4, pcie_rx=14e9),
            seg("forward", jitter(rng, 0.024, 0.03), **comp),
            seg("backward", jitter(rng, 0.044, 0.03), **comp),
            seg("optimizer", jitter(rng, 0.028, 0.03), busy=0.92, sm=0.3, dram=0.45, main=0.85),
        ]

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng)
    st = {}

    def facts(i, b, act):
        return base_gpu_facts(
            pid=pid,
            cuda_uuids=[g["uuid"]],
            parameters=221_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            has_conv=True,
            conv_flop_share=0.3,
            input_rank=4,
            loader_workers=8,
            batch_size=64,
            cores=26,
            loader_workers_saturate_cores=False,
            prefetch_factor=2,
            optimizer_impl="foreach",
            flops_per_step=flops,
            operand_bytes_per_step=2.2e10,
            arithmetic_intensity=flops / 2.2e10,
            weight_byte_share=0.18,
            fp8_flop_share=0.0,
            achieved_flops=flops / 0.068,
            achieved_bytes_per_second=2.2e10 / 0.068,
            epoch=1,
            thread_cpu_seconds=cum(st, "cpu", 0.62),
            runqueue_wait_seconds=cum(st, "rq", 0.002),
            cuda_memory_total_bytes=node.spec["mem"],
            cuda_memory_reserved_bytes=int(21 * GiB),
            cuda_memory_allocated_bytes=int(4.1 * GiB),
            cuda_memory_peak_allocated_bytes=int(18.3 * GiB),
            cuda_alloc_retries=0,
            cuda_ooms=0,
        )

    job = dict(
        local_ranks=1,
        workers_per_rank=8,
        gpu_pid={"gpu0": pid},
        gpu_mem={"gpu0": 21.8 * GiB},
        batch_size=64,
        host_mem_used=52e9,
        rank_rss=8 * GiB,
        worker_rss=1.5 * GiB,
    )
    bg = lambda a: dict(workers=3.1, side=0.3, disk_r=520e6, job_read=520e6, read_calls=1800.0)  # noqa: E731
    write_trace(
        os.path.join(out_dir, "balanced_nothing_saturated.jsonl"),
        node,
        "construct_blind_gpu3: balanced_nothing_saturated",
        segs,
        steps,
        job,
        rng,
        facts,
        bg,
    )


@scenario
def multinode_nic_degraded(out_dir):
    """4 nodes x 8 H100, 2x 200G HDR ports a node (2 rails), DDP of a 2.7B model with fp32
    gradients (10.8 GB a step): node 3's mlx5_1 trained at 50 Gb/s. Every ring through that rail
    runs at a quarter rate; all ranks (not only node 3's: ring all-reduce ends together) spend
    ~1.4 s a step in exposed communication (~69%). inter_node_interconnect / communication."""
    rng = random.Random(313)
    n_nodes = 4
    nodes = []
    for k in range(n_nodes):
        nd = Node(
            rng,
            f"h100-node-{k:02d}",
            "Intel(R) Xeon(R) Platinum 8480C",
            224,
            112,
            2,
            3800.0,
            ["avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"],
            2_063_000_000_000,
            "H100",
            8,
            9.8e12,
            "measured here: numpy fp32 matmul 4096x4096, best of 0.5 s",
            None,
            [("nvme2n1", 3_840_000_000_000, 7.0e9, 1.0e6), ("nvme0n1", 1_920_000_000_000, 7.0e9, 1.0e6)],
            [("enp170s0f1np1", 100000)],
            [("mlx5_0", 1, 200.0), ("mlx5_1", 1, 50.0 if k == 3 else 200.0)],
            [
                ("/", "ext4", "/dev/nvme0n1p2", False, 1_800_000_000_000),
                ("/raid", "ext4", "/dev/md0", False, 30_000_000_000_000),
            ],
        )
        nodes.append(nd)
    flops = 6 * 2.7e9 * 4 * 4096
    nic_bytes = 2 * 31 / 32 * 10.8e9 / 2  # each rail's share through each node's port, per step
    rng_t = random.Random(3131)

    def step(k, t, rng):
        fwd, bwd = jitter(rng, 0.178, 0.01), jitter(rng, 0.352, 0.01)
        exposed = jitter(rng, 1.38, 0.02)
        comm_total = exposed + 0.3
        rate = nic_bytes / comm_total
        comp = dict(busy=0.99, sm=0.85, tensor=0.6, dram=0.42, main=0.7, autograd=0.4)
        ib = {"mlx5_0/1": rate, "mlx5_1/1": rate}
        return [
            seg("other", 0.02, main=0.9, busy=0.1),
            seg("data_wait", 0.006, main=0.5),
            seg("transfer", 0.002, main=0.5, busy=0.3, pcie_rx=2e9),
            seg("forward", fwd, **comp),
            seg("backward", bwd, **dict(comp, ib={n: v * 0.3 / bwd for n, v in ib.items()}, nvl_tx=20e9, nvl_rx=20e9)),
            seg("communication", exposed, busy=0.96, sm=0.05, dram=0.05, ib=ib, nvl_tx=6e9, nvl_rx=6e9, main=0.97),
            seg("optimizer", jitter(rng, 0.045, 0.03), busy=0.99, sm=0.55, dram=0.85, main=0.8),
        ]

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng_t)
    # the ib activity is a dict: average it by hand
    for idx, nd in enumerate(nodes):
        st = {}
        pids = [40001 + 7 * j for j in range(8)]

        def facts(i, b, act, pids=pids, st=st, nd=nd):
            return base_gpu_facts(
                pid=pids[0],
                ddp=True,
                world_size=32,
                local_world_size=8,
                comm_backend="nccl",
                ddp_comm_timing="comm hook",
                ddp_buckets=433,
                comm_seconds_per_step=1.68,
                comm_exposed_seconds_per_step=1.38,
                comm_overlapped_seconds_per_step=0.3,
                comm_overlap_ratio=0.18,
                parameters=2_700_000_000,
                param_dtype="float32",
                autocast_dtype="bfloat16",
                compute_dtype="bfloat16",
                loader_workers=2,
                batch_size=4,
                cores=224,
                loader_workers_saturate_cores=False,
                prefetch_factor=2,
                input_rank=2,
                tokens_per_example=4096.0,
                optimizer_impl="fused",
                flops_per_step=flops,
                operand_bytes_per_step=1.9e11,
                arithmetic_intensity=flops / 1.9e11,
                weight_byte_share=0.4,
                fp8_flop_share=0.0,
                conv_flop_share=0.0,
                achieved_flops=flops / 0.53,
                achieved_bytes_per_second=1.9e11 / 0.53,
                epoch=0,
                thread_cpu_seconds=cum(st, "cpu", 0.85),
                runqueue_wait_seconds=cum(st, "rq", 0.001),
                cuda_memory_total_bytes=nd.spec["mem"],
                cuda_memory_reserved_bytes=int(68 * GiB),
                cuda_memory_allocated_bytes=int(33 * GiB),
                cuda_memory_peak_allocated_bytes=int(63 * GiB),
                cuda_alloc_retries=0,
                cuda_ooms=0,
            )

        # a node's IB: the degraded port caps the rail; its actual bytes equal the healthy ports'
        segs_node = []
        for s0, s1, ph, act, sid in segs:
            a2 = dict(act)
            ib = a2.pop("ib", None)
            if ib:
                a2["ib"] = ib
            segs_node.append((s0, s1, ph, a2, sid))

        def bg(a):
            return dict(workers=0.1, side=0.3)

        ranks = identities(8, idx, 32, nd.hostname, nd.gpus, pids[0], job="llm-2p7b-ddp")
        job = dict(
            local_ranks=8,
            workers_per_rank=2,
            gpu_pid={g["dev"]: pids[j] for j, g in enumerate(nd.gpus)},
            gpu_mem_all=68.5 * GiB,
            batch_size=4,
            host_mem_used=520e9,
            rank_rss=24 * GiB,
            worker_rss=1.2 * GiB,
        )
        write_trace(
            os.path.join(out_dir, f"multinode_nic_degraded.node{idx}.jsonl"),
            nd,
            f"construct_blind_gpu3: multinode_nic_degraded node {idx}",
            segs_node,
            steps,
            job,
            random.Random(4000 + idx),
            facts,
            bg,
            ranks=ranks,
        )


@scenario
def zero_offload_cpu_adam(out_dir):
    """1x A100 80GB on 2x EPYC 7742 (128 cores, 16 DDR4-3200 channels, resctrl MBM): DeepSpeed
    ZeRO-Offload of a 13B model, Adam stepping on the CPU over fp32 states (~30 bytes a parameter,
    390 GB a step at ~300 GB/s): the optimizer phase is ~48% of a 5.5 s step, DRAM at ~75% of peak
    throughout it, GPU idle then. cpu_memory_bandwidth / optimizer."""
    rng = random.Random(314)
    node = Node(
        rng,
        "a100-offload-1",
        "AMD EPYC 7742 64-Core Processor",
        256,
        128,
        2,
        3400.0,
        ["avx", "avx2", "fma"],
        1_081_000_000_000,
        "A100_80",
        1,
        4.2e12,
        "measured here: numpy fp32 matmul 4096x4096, best of 0.5 s",
        409.6e9,
        [("nvme0n1", 3_840_000_000_000, 7.0e9, 1.0e6)],
        [("enp129s0f0", 100000)],
        [],
        [("/", "ext4", "/dev/nvme0n1p2", False, 3_800_000_000_000)],
    )
    g = node.gpus[0]
    pid = 90210
    flops = 6 * 13e9 * 4 * 2048

    def step(k, t, rng):
        comp = dict(busy=0.99, sm=0.83, tensor=0.62, dram=0.38, main=0.8, autograd=0.4)
        return [
            seg("other", 0.05, main=0.9, busy=0.1),
            seg("data_wait", 0.01, main=0.5),
            seg("transfer", 0.002, main=0.5, busy=0.2, pcie_rx=2e9),
            seg("forward", jitter(rng, 0.92, 0.01), **comp),
            seg("backward", jitter(rng, 1.9, 0.01), **dict(comp, pcie_tx=13.7e9, membw=20e9, side=2.0)),
            seg("optimizer", jitter(rng, 1.95, 0.02), busy=0.05, sm=0.01, main=1.0, side=125.0, membw=305e9),
            seg("optimizer", jitter(rng, 0.62, 0.03), busy=0.4, sm=0.05, pcie_rx=21e9, main=1.0, side=3.0, membw=40e9),
        ]

    segs, steps = build_timeline(step, N_SAMPLES + 2, rng)
    st = {}

    def facts(i, b, act):
        return base_gpu_facts(
            pid=pid,
            cuda_uuids=[g["uuid"]],
            offloading=True,
            sharded=True,
            parameters=13_000_000_000,
            param_dtype="bfloat16",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            loader_workers=2,
            batch_size=4,
            cores=256,
            loader_workers_saturate_cores=False,
            prefetch_factor=2,
            input_rank=2,
            tokens_per_example=2048.0,
            flops_per_step=flops,
            operand_bytes_per_step=1.1e12,
            arithmetic_intensity=flops / 1.1e12,
            weight_byte_share=0.5,
            fp8_flop_share=0.0,
            conv_flop_share=0.0,
            achieved_flops=flops / 2.82,
            achieved_bytes_per_second=1.1e12 / 2.82,
            epoch=0,
            thread_cpu_seconds=cum(st, "cpu", 0.93),
            runqueue_wait_seconds=cum(st, "rq", 0.004),
            cuda_memory_total_bytes=node.spec["mem"],
            cuda_memory_reserved_bytes=int(62 * GiB),
            cuda_memory_allocated_bytes=int(27 * GiB),
            cuda_memory_peak_allocated_bytes=int(58 * GiB),
            cuda_alloc_retries=0,
            cuda_ooms=0,
        )

    job = dict(
        local_ranks=1,
        workers_per_rank=2,
        gpu_pid={"gpu0": pid},
        gpu_mem={"gpu0": 62.7 * GiB},
        batch_size=4,
        host_mem_used=560e9,
        rank_rss=236 * GiB,
        worker_rss=1.0 * GiB,
        usable=256,
    )
    bg = lambda a: dict(workers=0.05)  # noqa: E731
    write_trace(
        os.path.join(out_dir, "zero_offload_cpu_adam.jsonl"),
        node,
        "construct_blind_gpu3: zero_offload_cpu_adam",
        segs,
        steps,
        job,
        rng,
        facts,
        bg,
    )


# --------------------------------------------------------------------------------------------
# labels, written before the tool was run: (resource, stage) a performance engineer's
# intervention would prove
# --------------------------------------------------------------------------------------------

LABELS = {
    # per-step .item() syncs + logging on the main thread: other 46%, main thread a full core, GPU idle then
    "item_sync_logging": ("cpu_compute", "other"),
    # compute-bound (SM 0.9) with a blocking checkpoint 12% of the wall: the GPU's compute still limits
    "periodic_checkpoint": ("gpu_compute", "compute"),
    # other processes hold ~56 of 64 CPUs; the 12 loader workers starve; data wait 68%
    "cpu_hog_starves_loader": ("cpu_compute", "data"),
    # ~270 runnable threads on 32 CPUs from default intra-op and BLAS threads: CPU contention in compute
    "cpu_thread_oversubscription": ("cpu_compute", "compute"),
    # num_workers=0 and a Python tokenizer in collate: one core full, data wait 65%
    "hf_trainer_no_workers_tokenize": ("cpu_compute", "data"),
    # 4x L40S, no NVLink: fp32 gradient all-reduce through host memory, 51% of the step exposed
    "ddp_pcie_allreduce_4gpu": ("inter_gpu_interconnect", "communication"),
    # allocator retries (cache flush + sync) at 99% reserved / 77% peak allocated: fragmentation
    "allocator_fragmentation": ("gpu_memory", "compute"),
    # Dynamo recompiling on the main thread ~55% of the wall (in other), GPU idle then
    "compile_recompiles": ("cpu_compute", "other"),
    # remote object store latency with 4 workers: nothing busy; data wait 85%
    "s3_latency_loader": ("undetermined", "data"),
    # TP=8 activation all-reduces over NVLink exposed, 37% of the step
    "tp_nvlink_exposed": ("inter_gpu_interconnect", "communication"),
    # elementwise-dominated CPU model: DRAM 86% of its peak, FLOP/s 3%
    "cpu_membw_elementwise": ("cpu_memory_bandwidth", "compute"),
    # every stage 8-34%, no resource near its peak
    "balanced_nothing_saturated": ("undetermined", "compute"),
    # one 50G port among 200G rails on one of 4 nodes: every rank waits in the all-reduce (69%)
    "multinode_nic_degraded": ("inter_node_interconnect", "communication"),
    # CPU Adam over 13B fp32 states at ~75% of DRAM bandwidth: optimizer 48% of the step
    "zero_offload_cpu_adam": ("cpu_memory_bandwidth", "optimizer"),
}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: construct_blind_gpu3.py OUT_DIR", file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    for name, fn in SCENARIOS.items():
        fn(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
