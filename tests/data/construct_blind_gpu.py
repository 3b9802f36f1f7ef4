#!/usr/bin/env python3
"""Blind test traces for `bottleneckd analyze`: labelled GPU training jobs, written on 2026-12-05
by an engineer who had read docs/trace-format.md and model/facts.py only, not the rules, as an
outside evaluator would (tests/test_gpu_blind.py holds the labels and what each exposed).

    python tests/data/construct_blind_gpu.py OUT_DIR   ->  OUT_DIR/<scenario>.jsonl"""

from __future__ import annotations

import hashlib
import json
import os
import random

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "blind_gpu_traces")
T0 = 1796100000.0
N = 45  # samples per trace

# --------------------------------------------------------------------------- GPU models
GPU = {
    "H100": dict(
        name="NVIDIA H100 80GB HBM3",
        mem=85520809984,
        bf16=989e12,
        tf32=494.5e12,
        fp32=67e12,
        fp64=34e12,
        fp8=1979e12,
        dram=3.35e12,
        pcie_gen=5,
        nvl_links=18,
        nvl=900e9,
        max_mhz=1980,
        tdp=700,
    ),
    "H200": dict(
        name="NVIDIA H200",
        mem=150754820096,
        bf16=989e12,
        tf32=494.5e12,
        fp32=67e12,
        fp64=34e12,
        fp8=1979e12,
        dram=4.8e12,
        pcie_gen=5,
        nvl_links=18,
        nvl=900e9,
        max_mhz=1980,
        tdp=700,
    ),
    "A100": dict(
        name="NVIDIA A100-SXM4-80GB",
        mem=85899345920,
        bf16=312e12,
        tf32=156e12,
        fp32=19.5e12,
        fp64=9.7e12,
        fp8=None,
        dram=2.039e12,
        pcie_gen=4,
        nvl_links=12,
        nvl=600e9,
        max_mhz=1410,
        tdp=400,
    ),
}
PCIE = {5: 63.015e9, 4: 31.508e9}


def uuid(i: int, tag: str) -> str:
    h = hashlib.sha1(f"{tag}/{i}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def jitter(x, rel=0.03, lo=None, hi=None):
    if x is None:
        return None
    y = x * (1 + random.uniform(-rel, rel))
    if lo is not None:
        y = max(lo, y)
    if hi is not None:
        y = min(hi, y)
    return y


# --------------------------------------------------------------------------- header
def header(sc):
    g = GPU[sc["gpu"]]
    ngpu = sc.get("ngpu", 1)
    tag = sc["name"]
    gpus = []
    for i in range(ngpu):
        gpus.append(
            {
                "index": i,
                "name": g["name"],
                "uuid": uuid(i, tag),
                "memory_total_bytes": g["mem"],
                "pcie_max_generation": g["pcie_gen"],
                "pcie_max_width": 16,
                "nvlink_active_links": g["nvl_links"] if ngpu > 1 else 0,
                "gpm_supported": sc.get("gpm", True),
            }
        )
    cores = sc.get("cores", 32)
    nics = [{"name": "eth0", "speed_mbps": 25000, "operstate": "up"}]
    ib = []
    if sc.get("ib"):
        ib = [{"device": "mlx5_0", "port": 1, "rate_gbps": 200.0, "state": "ACTIVE"}]
    machine = {
        "hostname": sc.get("host", "gpu-node-01"),
        "cpu": {
            "model": "Intel(R) Xeon(R) Platinum 8480+",
            "logical_cores": cores,
            "physical_cores": cores,
            "sockets": 1 if cores <= 56 else 2,
            "max_mhz": 3800.0,
            "flags": ["avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"],
        },
        "memory_total_bytes": sc.get("host_mem", 512 * 2**30),
        "gpus": gpus,
        "block_devices": [
            {
                "name": "nvme0n1",
                "size_bytes": 3840755982336,
                "rotational": False,
                "model": "SAMSUNG MZQL23T8HCLS",
                "transport": "nvme",
                "pcie_generation": 4,
            }
        ],
        "nics": nics,
        "ib_ports": ib,
        "mounts": [{"mountpoint": "/", "fstype": "ext4", "source": "/dev/nvme0n1p1", "network": False}],
        "unknown": {},
    }
    peaks = []

    def pk(res, dev, metric, value, unit, origin="catalog", source="datasheet"):
        peaks.append(
            {
                "resource": res,
                "device": dev,
                "metric": metric,
                "value": value,
                "unit": unit,
                "origin": origin if value is not None else "unknown",
                "source": source,
                "catalog_value": value if origin == "catalog" else None,
            }
        )

    for i in range(ngpu):
        d = f"gpu{i}"
        pk("gpu_compute", d, "fp16_bf16_tensor_dense", g["bf16"], "FLOP/s")
        pk("gpu_compute", d, "tf32_tensor_dense", g["tf32"], "FLOP/s")
        pk("gpu_compute", d, "fp32", g["fp32"], "FLOP/s")
        pk("gpu_compute", d, "fp64", g["fp64"], "FLOP/s")
        if g["fp8"]:
            pk("gpu_compute", d, "fp8_tensor_dense", g["fp8"], "FLOP/s")
        pk("gpu_memory", d, "capacity", float(g["mem"]), "B", "detected", "NVML memory info (total)")
        pk("gpu_memory_bandwidth", d, "dram_bandwidth", g["dram"], "B/s")
        if ngpu > 1:
            pk(
                "inter_gpu_interconnect",
                d,
                "nvlink_total",
                g["nvl"],
                "B/s",
                "detected",
                f"{g['nvl_links']} active NVLink links",
            )
        else:
            pk("inter_gpu_interconnect", d, "nvlink_total", None, "B/s", "unknown", "only one GPU")
        pk(
            "cpu_gpu_interconnect",
            d,
            "pcie_per_direction",
            PCIE[g["pcie_gen"]],
            "B/s",
            "detected",
            f"gen {g['pcie_gen']} x16",
        )
    pk("cpu_compute", "cpu", "fp32_matmul", 3.5e12, "FLOP/s", "calibrated", "numpy fp32 matmul")
    pk("cpu_memory", "host", "capacity", float(machine["memory_total_bytes"]), "B", "detected", "/proc/meminfo")
    pk("cpu_memory_bandwidth", "host", "dram_bandwidth", 250e9, "B/s", "calibrated", "streaming copy")
    pk(
        "inter_node_interconnect",
        "eth0",
        "ethernet_per_direction",
        25000 / 8 * 1e6,
        "B/s",
        "detected",
        "/sys/class/net/eth0/speed",
    )
    if ib:
        pk(
            "inter_node_interconnect",
            "mlx5_0/1",
            "infiniband_per_direction",
            25e9,
            "B/s",
            "detected",
            "/sys/class/infiniband/mlx5_0/ports/1/rate = 200 Gb/s",
        )
    pk("storage_capacity", "nvme0n1", "capacity", 3840755982336.0, "B", "detected", "/sys/block")
    pk("storage_bandwidth", "nvme0n1", "sequential_read", 7.0e9, "B/s", "catalog", "NVMe gen4 product sheet")
    pk("storage_bandwidth", "nvme0n1", "random_read_4k_iops", 1.0e6, "IO/s", "catalog", "NVMe gen4 product sheet")
    pk("storage_network_bandwidth", "-", "link", None, "B/s", "unknown", "no network file system is mounted")
    return {
        "type": "header",
        "format": "bottleneckd.trace",
        "version": 1,
        "created": T0,
        "interval": 1.0,
        "machine": machine,
        "peaks": peaks,
        "meta": {"constructed": f"blind test: {tag}"},
    }


# --------------------------------------------------------------------------- samples
def gpu_readings(sc, i, gs):
    """gs: per-GPU state dict (sm, tensor, dram, busy, mem_used, pcie_rx, pcie_tx, nvl, clock, throttle, procs)"""
    g = GPU[sc["gpu"]]
    d = f"gpu{i}"
    r = []
    sm = gs.get("sm")
    busy = jitter(gs.get("busy", sm), 0.02, 0, 1)
    r.append(["gpu_compute", d, "busy_fraction", busy, "ratio"])
    if sm is None:
        why = "DCGM profiling metrics unavailable (no dcgm-exporter / GPM not supported)"
        for m in ("sm_activity", "sm_occupancy", "tensor_activity"):
            r.append(["gpu_compute", d, m, None, "ratio", why])
        r.append(
            [
                "gpu_compute",
                d,
                "utilization",
                None,
                "ratio",
                "SM activity unknown; busy_fraction is a time fraction, not load",
            ]
        )
    else:
        smj = jitter(sm, 0.02, 0, 1)
        r.append(["gpu_compute", d, "sm_activity", smj, "ratio"])
        r.append(["gpu_compute", d, "sm_occupancy", jitter(gs.get("occ", sm * 0.4), 0.03, 0, 1), "ratio"])
        r.append(["gpu_compute", d, "tensor_activity", jitter(gs.get("tensor", 0.0), 0.03, 0, 1), "ratio"])
        r.append(["gpu_compute", d, "fp32_activity", jitter(gs.get("fp32", 0.02), 0.03, 0, 1), "ratio"])
        r.append(["gpu_compute", d, "utilization", smj, "ratio"])
    clock = gs.get("clock", 1.0)
    r.append(["gpu_compute", d, "sm_clock", round(g["max_mhz"] * jitter(clock, 0.01, 0, 1)), "MHz"])
    r.append(["gpu_compute", d, "sm_clock_ratio", jitter(clock, 0.01, 0, 1), "ratio"])
    r.append(["gpu_compute", d, "power", jitter(gs.get("power", 80 + (g["tdp"] - 80) * (sm or busy or 0)), 0.03), "W"])
    thr = gs.get("throttle", {})
    for k in ("sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"):
        r.append(["gpu_compute", d, f"throttle:{k}", 1.0 if thr.get(k) else 0.0, "bool"])
    r.append(["gpu_compute", d, "up", 1.0, "bool"])
    # memory bandwidth
    dram = gs.get("dram")
    if dram is None and sm is None:
        r.append(["gpu_memory_bandwidth", d, "utilization", None, "ratio", "DRAM activity needs DCGM/GPM"])
        r.append(["gpu_memory_bandwidth", d, "throughput", None, "B/s", "DRAM activity needs DCGM/GPM"])
        r.append(
            ["gpu_memory_bandwidth", d, "memory_busy_fraction", jitter(gs.get("membusy", 0.4), 0.03, 0, 1), "ratio"]
        )
    else:
        dj = jitter(dram or 0.0, 0.03, 0, 1)
        r.append(["gpu_memory_bandwidth", d, "utilization", dj, "ratio"])
        r.append(["gpu_memory_bandwidth", d, "throughput", dj * g["dram"], "B/s"])
        r.append(
            ["gpu_memory_bandwidth", d, "memory_busy_fraction", jitter(gs.get("membusy", dj), 0.03, 0, 1), "ratio"]
        )
    r.append(["gpu_memory_bandwidth", d, "peak", g["dram"], "B/s"])
    # memory capacity
    used = jitter(gs.get("mem_used", 0.0), 0.002, 0, g["mem"])
    r.append(["gpu_memory", d, "used", used, "B"])
    r.append(["gpu_memory", d, "utilization", used / g["mem"], "ratio"])
    r.append(["gpu_memory", d, "peak", float(g["mem"]), "B"])
    for pid, b in gs.get("procs", {}).items():
        r.append(["gpu_memory", d, f"process_bytes:{pid}", float(b), "B"])
    # PCIe (rx = host to device, as NVML counts it at the GPU)
    pcap = PCIE[g["pcie_gen"]]
    rx = jitter(gs.get("pcie_rx", 0.2e9), 0.04, 0)
    tx = jitter(gs.get("pcie_tx", 0.1e9), 0.04, 0)
    r.append(["cpu_gpu_interconnect", d, "throughput", max(rx, tx), "B/s"])
    r.append(["cpu_gpu_interconnect", d, "utilization", max(rx, tx) / pcap, "ratio"])
    r.append(["cpu_gpu_interconnect", d, "peak", pcap, "B/s"])
    r.append(["cpu_gpu_interconnect", d, "rx_bytes_per_second", rx, "B/s"])
    r.append(["cpu_gpu_interconnect", d, "tx_bytes_per_second", tx, "B/s"])
    r.append(["cpu_gpu_interconnect", d, "link_generation", float(g["pcie_gen"]), "gen"])
    r.append(["cpu_gpu_interconnect", d, "link_width", 16.0, "lanes"])
    # NVLink
    if sc.get("ngpu", 1) > 1:
        nv = jitter(gs.get("nvl", 0.0), 0.04, 0, 1)
        r.append(["inter_gpu_interconnect", d, "throughput", nv * g["nvl"], "B/s"])
        r.append(["inter_gpu_interconnect", d, "utilization", nv, "ratio"])
        r.append(["inter_gpu_interconnect", d, "peak", g["nvl"], "B/s"])
        r.append(["inter_gpu_interconnect", d, "tx_bytes_per_second", nv * g["nvl"] / 2, "B/s"])
        r.append(["inter_gpu_interconnect", d, "rx_bytes_per_second", nv * g["nvl"] / 2, "B/s"])
    else:
        r.append(["inter_gpu_interconnect", d, "throughput", 0.0, "B/s"])
        r.append(["inter_gpu_interconnect", d, "utilization", None, "ratio", "peak unknown: only one GPU"])
        r.append(["inter_gpu_interconnect", d, "peak", None, "B/s", "unknown"])
    return r


def host_readings(sc, hs):
    cores = sc.get("cores", 32)
    r = []
    per = hs["per_core"]  # list of busy ratios (len == cores)
    per = [jitter(x, 0.04, 0, 1) for x in per]
    for i, b in enumerate(per):
        r.append(["cpu_compute", f"cpu{i}", "busy", b, "ratio"])
    busy = sum(per)
    r.append(["cpu_compute", "host", "utilization", busy / cores, "ratio"])
    r.append(["cpu_compute", "host", "busy_cores", busy, "cores"])
    r.append(["cpu_compute", "host", "cores", float(cores), "cores"])
    r.append(["cpu_compute", "host", "iowait", jitter(hs.get("iowait", 0.0), 0.05, 0, 1), "ratio"])
    r.append(["cpu_compute", "host", "pressure_some", jitter(hs.get("cpu_psi", 0.01), 0.05, 0, 1), "ratio"])
    job = hs.get("job")
    if job:
        main = jitter(job["main"], 0.02, 0)
        wk = [jitter(w, 0.02, 0) for w in job.get("workers", [])]
        ranks = job.get("ranks", 1)
        rank_cores = main * ranks + job.get("side", 0.0)
        r.append(["cpu_compute", "job", "busy_cores", rank_cores + sum(wk), "cores"])
        r.append(["cpu_compute", "job", "main_busy_cores", main, "cores"])
        r.append(["cpu_compute", "job", "rank_busy_cores", rank_cores, "cores"])
        r.append(["cpu_compute", "job", "worker_busy_cores", sum(wk), "cores"])
        r.append(["cpu_compute", "job", "worker_max_busy_cores", max(wk) if wk else 0.0, "cores"])
        r.append(["cpu_compute", "job", "workers", float(len(wk)), "count"])
        r.append(["cpu_compute", "job", "ranks", float(ranks), "count"])
        r.append(["cpu_compute", "job", "processes", float(ranks + len(wk)), "count"])
        r.append(["cpu_compute", "job", "usable_cores", float(cores), "cores"])
        r.append(["cpu_compute", "job", "processes_in_disk_wait", float(job.get("dwait", 0)), "count"])
    mem_total = sc.get("host_mem", 512 * 2**30)
    used = jitter(hs.get("mem_used", 60 * 2**30), 0.005, 0, mem_total)
    r.append(["cpu_memory", "host", "used", used, "B"])
    r.append(["cpu_memory", "host", "utilization", used / mem_total, "ratio"])
    r.append(["cpu_memory", "host", "peak", float(mem_total), "B"])
    r.append(["cpu_memory", "host", "available", mem_total - used, "B"])
    r.append(["cpu_memory", "host", "swap_in_bytes_per_second", 0.0, "B/s"])
    r.append(["cpu_memory", "host", "swap_out_bytes_per_second", 0.0, "B/s"])
    r.append(["cpu_memory", "host", "pressure_some", 0.0, "ratio"])
    why = "no memory-bandwidth counters: resctrl MBM is not mounted at /sys/fs/resctrl"
    r.append(["cpu_memory_bandwidth", "host", "throughput", None, "B/s", why])
    r.append(["cpu_memory_bandwidth", "host", "utilization", None, "ratio", why])
    r.append(["cpu_memory_bandwidth", "host", "peak", 250e9, "B/s"])
    # storage
    rd = jitter(hs.get("disk_read", 1e6), 0.04, 0)
    ops = rd / hs.get("io_size", 131072)
    r.append(["storage_bandwidth", "nvme0n1", "throughput", rd, "B/s"])
    r.append(["storage_bandwidth", "nvme0n1", "read_bytes_per_second", rd, "B/s"])
    r.append(
        ["storage_bandwidth", "nvme0n1", "write_bytes_per_second", jitter(hs.get("disk_write", 2e6), 0.1, 0), "B/s"]
    )
    r.append(["storage_bandwidth", "nvme0n1", "operations_per_second", ops, "IO/s"])
    r.append(["storage_bandwidth", "nvme0n1", "read_operations_per_second", ops, "IO/s"])
    r.append(["storage_bandwidth", "nvme0n1", "byte_utilization", rd / 7e9, "ratio"])
    r.append(["storage_bandwidth", "nvme0n1", "operation_utilization", ops / 1e6, "ratio"])
    r.append(["storage_bandwidth", "nvme0n1", "utilization", max(rd / 7e9, ops / 1e6), "ratio"])
    r.append(["storage_bandwidth", "nvme0n1", "busy", jitter(hs.get("disk_busy", 0.01), 0.03, 0, 1), "ratio"])
    r.append(["storage_bandwidth", "nvme0n1", "peak", 7e9, "B/s"])
    r.append(["storage_bandwidth", "nvme0n1", "queue_depth", jitter(hs.get("qd", 0.0), 0.1, 0), "requests"])
    r.append(["storage_bandwidth", "nvme0n1", "in_flight", round(hs.get("qd", 0.0)), "requests"])
    r.append(["storage_capacity", "/", "used", 1.2e12, "B"])
    r.append(["storage_capacity", "/", "utilization", 1.2e12 / 3.78e12, "ratio"])
    r.append(["storage_capacity", "/", "peak", 3.78e12, "B"])
    r.append(["storage_capacity", "/", "free", 3.78e12 - 1.2e12, "B"])
    # network
    eth = jitter(hs.get("eth", 2e6), 0.05, 0)
    r.append(["inter_node_interconnect", "eth0", "throughput", eth, "B/s"])
    r.append(["inter_node_interconnect", "eth0", "utilization", eth / 3.125e9, "ratio"])
    r.append(["inter_node_interconnect", "eth0", "peak", 3.125e9, "B/s"])
    r.append(["inter_node_interconnect", "eth0", "tx_bytes_per_second", eth, "B/s"])
    r.append(["inter_node_interconnect", "eth0", "rx_bytes_per_second", eth * 0.9, "B/s"])
    if sc.get("ib"):
        ib = jitter(hs.get("ib", 0.0), 0.03, 0, 1)
        r.append(["inter_node_interconnect", "mlx5_0/1", "throughput", ib * 25e9, "B/s"])
        r.append(["inter_node_interconnect", "mlx5_0/1", "utilization", ib, "ratio"])
        r.append(["inter_node_interconnect", "mlx5_0/1", "peak", 25e9, "B/s"])
        r.append(["inter_node_interconnect", "mlx5_0/1", "tx_bytes_per_second", ib * 25e9, "B/s"])
        r.append(["inter_node_interconnect", "mlx5_0/1", "rx_bytes_per_second", ib * 25e9 * 0.99, "B/s"])
    return r


def phases_block(step, steps, facts, rel=0.03, extra=None):
    """step: seconds per phase of one step; steps: steps in the interval"""
    ph = {k: jitter(v, rel, 0) * steps for k, v in step.items()}
    out = {"steps": steps, "wall_seconds": sum(ph.values()), "phases": ph, "facts": dict(facts)}
    if extra:
        out.update(extra)
    return out


def write(sc, out=OUT):
    random.seed(sc["name"])
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, sc["name"] + ".jsonl")
    with open(path, "w") as f:
        f.write(json.dumps(header(sc)) + "\n")
        t = T0
        for k in range(N):
            t += 1.0 + random.uniform(-0.004, 0.004)
            readings = []
            for i, gs in enumerate(sc["gpus"]):
                readings += gpu_readings(sc, i, gs)
            readings += host_readings(sc, sc["host_state"])
            s = {"type": "sample", "t": t, "interval": jitter(1.0, 0.004)}
            s["readings"] = readings
            facts = dict(sc["facts"])
            if "facts_fn" in sc:
                facts.update(sc["facts_fn"](k))
            if sc.get("ranks"):
                ranks = []
                tot = {}
                for rk, rs in enumerate(sc["ranks"]):
                    rf = dict(facts)
                    rf.update(rs.get("facts", {}))
                    rf["pid"] = 41000 + rk
                    rf["cuda_uuids"] = [rs["uuid"]]
                    pb = phases_block(rs["step"], sc["steps"], rf)
                    ranks.append({"identity": rs["identity"], "phases": pb})
                    for p, v in pb["phases"].items():
                        tot[p] = tot.get(p, 0.0) + v
                # the interval's phases: summed over the ranks (the doc does not say; sum as reports add)
                s["phases"] = {
                    "steps": sc["steps"] * len(ranks),
                    "wall_seconds": sum(tot.values()),
                    "phases": tot,
                    "facts": dict(facts, pid=41000, cuda_uuids=[sc["ranks"][0]["uuid"]]),
                }
                s["ranks"] = ranks
            else:
                s["phases"] = phases_block(sc["step"], sc["steps"], facts)
            s["samplers"] = {
                "gpu": [True, 0.004, ""],
                "cpu_compute": [True, 0.003, ""],
                "cpu_memory": [True, 0.002, ""],
                "storage": [True, 0.0005, ""],
                "inter_node": [True, 0.0002, ""],
            }
            f.write(json.dumps(s) + "\n")
    return path


# --------------------------------------------------------------------------- scenarios
def cores_busy(cores, busy_list):
    """per-core busy ratios: the listed ones first, the rest ~2% (OS noise)"""
    out = list(busy_list) + [0.02] * (cores - len(busy_list))
    return out[:cores]


def roofline(flops, bytes_, compute_s):
    return {
        "flops_per_step": flops,
        "operand_bytes_per_step": bytes_,
        "arithmetic_intensity": flops / bytes_,
        "achieved_flops": flops / compute_s,
        "achieved_bytes_per_second": bytes_ / compute_s,
    }


BASE_FACTS = {
    "device": "cuda",
    "epoch": 0,
    "compiled": False,
    "has_conv": False,
    "input_rank": 2,
    "optimizer_closure": False,
    "timed_step_share": 1.0,
    "allow_tf32": False,
    "cudnn_allow_tf32": True,
    "fsdp": False,
    "sharded": False,
    "offloading": False,
    "optimizer_impl": "fused",
    "pin_memory": True,
    "persistent_workers": True,
    "prefetch_factor": 2,
    "ddp": False,
    "world_size": 1,
    "local_world_size": 1,
    # the brief's "dtype": not a declared fact (param_dtype / compute_dtype / autocast_dtype are)
    "dtype": "bfloat16",
}


def F(**kw):
    d = dict(BASE_FACTS)
    d.update(kw)
    return d


SC = []

# 1. GPU compute-bound: bf16 LLM, SM .95, tensor high, fwd+bwd 95%
step1 = {"data_wait": 0.004, "transfer": 0.003, "forward": 0.158, "backward": 0.317, "optimizer": 0.013, "other": 0.005}
SC.append(
    dict(
        name="01_gpu_compute",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.95,
                occ=0.35,
                tensor=0.78,
                dram=0.32,
                busy=1.0,
                mem_used=62e9,
                pcie_rx=0.3e9,
                pcie_tx=0.05e9,
                procs={4242: 62e9},
                power=690,
            )
        ],
        host_state=dict(
            per_core=cores_busy(32, [0.95, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]),
            job=dict(main=0.95, workers=[0.1] * 8),
        ),
        step=step1,
        steps=2,
        facts=F(
            pid=4242,
            loader_workers=8,
            batch_size=8,
            cores=32,
            parameters=1_300_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            tokens_per_example=2048.0,
            cuda_uuids=[uuid(0, "01_gpu_compute")],
            cuda_memory_total_bytes=85520809984,
            cuda_memory_allocated_bytes=52_000_000_000,
            cuda_memory_reserved_bytes=60_000_000_000,
            **roofline(2.83e14, 4.7e11, 0.475),
        ),
    )
)

# 2. GPU memory-bandwidth-bound: elementwise/normalisation heavy
step2 = {"data_wait": 0.003, "transfer": 0.004, "forward": 0.09, "backward": 0.19, "optimizer": 0.012, "other": 0.004}
SC.append(
    dict(
        name="02_gpu_membw",
        gpu="H200",
        cores=32,
        gpus=[
            dict(
                sm=0.88,
                occ=0.6,
                tensor=0.06,
                dram=0.90,
                busy=1.0,
                mem_used=70e9,
                pcie_rx=0.4e9,
                procs={5151: 70e9},
                power=600,
            )
        ],
        host_state=dict(per_core=cores_busy(32, [0.9] + [0.1] * 6), job=dict(main=0.9, workers=[0.1] * 6)),
        step=step2,
        steps=3,
        facts=F(
            pid=5151,
            loader_workers=6,
            batch_size=64,
            cores=32,
            parameters=85_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            has_conv=False,
            input_rank=3,
            cuda_uuids=[uuid(0, "02_gpu_membw")],
            weight_byte_share=0.03,
            **roofline(3.0e13, 1.18e12, 0.28),
        ),  # intensity ~25 FLOP/B, 4.2 TB/s operand bytes
    )
)

# 3a. input-bound: 4 loader workers each at a full core, 8-core host, data_wait 70%
step3 = {"data_wait": 0.140, "transfer": 0.004, "forward": 0.016, "backward": 0.032, "optimizer": 0.004, "other": 0.004}
SC.append(
    dict(
        name="03a_input_cpu_4workers",
        gpu="A100",
        cores=8,
        host_mem=64 * 2**30,
        gpus=[
            dict(
                sm=0.24,
                occ=0.1,
                tensor=0.12,
                dram=0.08,
                busy=0.3,
                mem_used=22e9,
                pcie_rx=0.6e9,
                procs={6161: 22e9},
                power=120,
            )
        ],
        host_state=dict(
            per_core=[1.0, 1.0, 1.0, 1.0, 0.35, 0.15, 0.05, 0.05],
            job=dict(main=0.3, workers=[1.0] * 4),
            cpu_psi=0.05,
            mem_used=20 * 2**30,
        ),
        step=step3,
        steps=5,
        facts=F(
            pid=6161,
            loader_workers=4,
            batch_size=256,
            cores=8,
            parameters=25_600_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            has_conv=True,
            input_rank=4,
            conv_flop_share=0.97,
            cuda_uuids=[uuid(0, "03a_input_cpu_4workers")],
            loader_workers_saturate_cores=False,
            **roofline(3.15e12, 6e10, 0.048),
        ),
    )
)
# 3b. input-bound, host saturated: 7 loader workers each at a full core on 8 cores
SC.append(
    dict(
        name="03b_input_cpu_saturated",
        gpu="A100",
        cores=8,
        host_mem=64 * 2**30,
        gpus=[
            dict(
                sm=0.24,
                occ=0.1,
                tensor=0.12,
                dram=0.08,
                busy=0.3,
                mem_used=22e9,
                pcie_rx=0.6e9,
                procs={6262: 22e9},
                power=120,
            )
        ],
        host_state=dict(per_core=[0.99] * 8, job=dict(main=0.5, workers=[0.97] * 7), cpu_psi=0.45, mem_used=30 * 2**30),
        step=step3,
        steps=5,
        facts=F(
            pid=6262,
            loader_workers=7,
            batch_size=256,
            cores=8,
            parameters=25_600_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            has_conv=True,
            input_rank=4,
            conv_flop_share=0.97,
            cuda_uuids=[uuid(0, "03b_input_cpu_saturated")],
            loader_workers_saturate_cores=False,
            **roofline(3.15e12, 6e10, 0.048),
        ),
    )
)

# 4. Host-to-device transfer-bound: pageable memory, transfer 60%, PCIe rx near peak
step4 = {"data_wait": 0.004, "transfer": 0.060, "forward": 0.010, "backward": 0.020, "optimizer": 0.003, "other": 0.003}
SC.append(
    dict(
        name="04_h2d_pcie",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.3,
                occ=0.12,
                tensor=0.15,
                dram=0.15,
                busy=0.45,
                mem_used=40e9,
                pcie_rx=52e9,
                pcie_tx=0.3e9,
                procs={7373: 40e9},
                power=250,
            )
        ],
        host_state=dict(per_core=cores_busy(32, [1.0] + [0.25] * 8), job=dict(main=1.0, workers=[0.25] * 8)),
        step=step4,
        steps=10,
        facts=F(
            pid=7373,
            loader_workers=8,
            pin_memory=False,
            batch_size=32,
            cores=32,
            parameters=30_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            has_conv=True,
            input_rank=5,
            conv_flop_share=0.9,
            cuda_uuids=[uuid(0, "04_h2d_pcie")],
            **roofline(2.0e12, 1.2e11, 0.03),
        ),
    )
)


# multi-rank helpers
def identity(rank, world, local_world, node, node_rank, gpu_uuid):
    return {
        "job": "job-blind",
        "run": "job-blind",
        "restart": 0,
        "rank": rank,
        "local_rank": rank % local_world,
        "world_size": world,
        "local_world_size": local_world,
        "node": node,
        "node_rank": node_rank,
        "gpu": gpu_uuid,
        "pid": 41000 + rank % local_world,
        "pod": "",
        "namespace": "",
    }


# 5. Multi-node DDP: 2 nodes x 8 H100, one 200 Gb/s IB port per node near peak; comm 50% exposed
step5 = {
    "data_wait": 0.005,
    "transfer": 0.005,
    "forward": 0.14,
    "backward": 0.30,
    "communication": 0.50,
    "optimizer": 0.035,
    "other": 0.015,
}
name5 = "05_multinode_ib"
SC.append(
    dict(
        name=name5,
        gpu="H100",
        ngpu=8,
        cores=64,
        ib=True,
        host="node-a",
        gpus=[
            dict(
                sm=0.45,
                occ=0.2,
                tensor=0.33,
                dram=0.2,
                busy=0.9,
                mem_used=55e9,
                nvl=0.12,
                pcie_rx=3.1e9,
                pcie_tx=3.1e9,
                procs={41000 + i: 55e9},
                power=380,
            )
            for i in range(8)
        ],
        host_state=dict(
            per_core=cores_busy(64, [0.9] * 8 + [0.1] * 32), job=dict(main=0.9, ranks=8, workers=[0.1] * 32), ib=0.94
        ),
        ranks=[
            dict(identity=identity(r, 16, 8, "node-a", 0, uuid(r, name5)), uuid=uuid(r, name5), step=step5)
            for r in range(8)
        ],
        steps=1,
        facts=F(
            loader_workers=4,
            batch_size=8,
            cores=8,
            parameters=1_300_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            ddp=True,
            world_size=16,
            local_world_size=8,
            comm_backend="nccl",
            ddp_comm_timing="comm hook",
            ddp_buckets=104,
            comm_seconds_per_step=0.72,
            comm_exposed_seconds_per_step=0.50,
            comm_overlapped_seconds_per_step=0.22,
            comm_overlap_ratio=0.306,
            tokens_per_example=2048.0,
            **roofline(1.3e14, 2.2e11, 0.44),
        ),
    )
)

# 6. Single node 8 x A100 DDP, all-reduce on NVLink near peak, comm 45% exposed
step6 = {
    "data_wait": 0.003,
    "transfer": 0.003,
    "forward": 0.06,
    "backward": 0.12,
    "communication": 0.16,
    "optimizer": 0.01,
    "other": 0.004,
}
name6 = "06_nvlink_allreduce"
SC.append(
    dict(
        name=name6,
        gpu="A100",
        ngpu=8,
        cores=64,
        gpus=[
            dict(
                sm=0.5,
                occ=0.25,
                tensor=0.35,
                dram=0.35,
                busy=0.95,
                mem_used=48e9,
                nvl=0.86,
                pcie_rx=0.2e9,
                procs={41000 + i: 48e9},
                power=300,
            )
            for i in range(8)
        ],
        host_state=dict(
            per_core=cores_busy(64, [0.9] * 8 + [0.1] * 16), job=dict(main=0.9, ranks=8, workers=[0.1] * 16)
        ),
        ranks=[
            dict(identity=identity(r, 8, 8, "gpu-node-01", 0, uuid(r, name6)), uuid=uuid(r, name6), step=step6)
            for r in range(8)
        ],
        steps=3,
        facts=F(
            loader_workers=2,
            batch_size=16,
            cores=8,
            parameters=2_700_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            ddp=True,
            world_size=8,
            local_world_size=8,
            comm_backend="nccl",
            ddp_comm_timing="comm hook",
            ddp_buckets=210,
            comm_seconds_per_step=0.22,
            comm_exposed_seconds_per_step=0.16,
            comm_overlapped_seconds_per_step=0.06,
            comm_overlap_ratio=0.27,
            **roofline(2.5e13, 1.0e11, 0.18),
        ),
    )
)

# 7. GPU memory capacity: 99% used, batch 1, allocator retries every step
step7 = {"data_wait": 0.002, "transfer": 0.001, "forward": 0.11, "backward": 0.24, "optimizer": 0.05, "other": 0.03}
SC.append(
    dict(
        name="07_gpu_memory_capacity",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.55,
                occ=0.2,
                tensor=0.35,
                dram=0.4,
                busy=0.92,
                mem_used=84.7e9,
                pcie_rx=0.05e9,
                procs={8484: 84.7e9},
                power=420,
            )
        ],
        host_state=dict(per_core=cores_busy(32, [0.9, 0.05, 0.05]), job=dict(main=0.9, workers=[0.05] * 2)),
        step=step7,
        steps=2,
        facts=F(
            pid=8484,
            loader_workers=2,
            batch_size=1,
            cores=32,
            parameters=7_000_000_000,
            param_dtype="bfloat16",
            compute_dtype="bfloat16",
            tokens_per_example=4096.0,
            cuda_uuids=[uuid(0, "07_gpu_memory_capacity")],
            cuda_memory_total_bytes=85520809984,
            cuda_memory_reserved_bytes=84_100_000_000,
            cuda_memory_allocated_bytes=82_500_000_000,
            cuda_memory_peak_allocated_bytes=84_000_000_000,
            cuda_alloc_retries=900,
            cuda_alloc_retries_per_step=4.0,
            cuda_ooms=0,
            cuda_expandable_segments=False,
            **roofline(1.72e14, 9.0e11, 0.35),
        ),
        facts_fn=lambda k: {"cuda_alloc_retries": 900 + 8 * k},
    )
)

# 8. CPU launch-bound: many tiny kernels, NVML util ~30%, SM .08, main thread at a full core
step8 = {
    "data_wait": 0.0005,
    "transfer": 0.0003,
    "forward": 0.0090,
    "backward": 0.0140,
    "optimizer": 0.0020,
    "other": 0.0005,
}
SC.append(
    dict(
        name="08_launch_bound",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.07,
                occ=0.02,
                tensor=0.01,
                dram=0.02,
                busy=0.30,
                mem_used=3e9,
                pcie_rx=0.05e9,
                procs={9595: 3e9},
                power=140,
            )
        ],
        host_state=dict(per_core=cores_busy(32, [1.0, 0.05]), job=dict(main=1.0, workers=[0.05])),
        step=step8,
        steps=38,
        facts=F(
            pid=9595,
            loader_workers=1,
            batch_size=32,
            cores=32,
            parameters=2_000_000,
            param_dtype="float32",
            compute_dtype="float32",
            allow_tf32=True,
            optimizer_impl="for-loop",
            input_rank=2,
            cuda_uuids=[uuid(0, "08_launch_bound")],
            **roofline(1.2e10, 8.0e8, 0.023),
        ),
    )
)

# 9. Storage-bound: data_wait 80%, NVMe reads near the device peak, iowait high
step9 = {"data_wait": 0.40, "transfer": 0.005, "forward": 0.030, "backward": 0.060, "optimizer": 0.003, "other": 0.002}
SC.append(
    dict(
        name="09_storage_bound",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.15,
                occ=0.06,
                tensor=0.1,
                dram=0.05,
                busy=0.2,
                mem_used=25e9,
                pcie_rx=0.7e9,
                procs={1010: 25e9},
                power=130,
            )
        ],
        host_state=dict(
            per_core=cores_busy(32, [0.25] * 9),
            iowait=0.35,
            job=dict(main=0.25, workers=[0.2] * 8, dwait=8),
            disk_read=6.6e9,
            disk_busy=1.0,
            qd=64,
            io_size=1 << 20,
        ),
        step=step9,
        steps=2,
        facts=F(
            pid=1010,
            loader_workers=8,
            batch_size=512,
            cores=32,
            parameters=86_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            has_conv=False,
            input_rank=4,
            cuda_uuids=[uuid(0, "09_storage_bound")],
            **roofline(9.0e12, 9e10, 0.09),
        ),
    )
)

# 10. Straggler: 4 ranks on one node, rank 2 does 40% more fwd/bwd (longer sequences), others wait
name10 = "10_straggler_rank2"
fast = {
    "data_wait": 0.005,
    "transfer": 0.005,
    "forward": 0.10,
    "backward": 0.20,
    "communication": 0.155,
    "optimizer": 0.02,
    "other": 0.01,
}
slow = {
    "data_wait": 0.005,
    "transfer": 0.005,
    "forward": 0.14,
    "backward": 0.28,
    "communication": 0.035,
    "optimizer": 0.02,
    "other": 0.01,
}
SC.append(
    dict(
        name=name10,
        gpu="H100",
        ngpu=4,
        cores=64,
        gpus=[
            dict(
                sm=(0.93 if i == 2 else 0.66),
                occ=0.3,
                tensor=(0.7 if i == 2 else 0.5),
                dram=0.3,
                busy=1.0,
                mem_used=(70e9 if i == 2 else 60e9),
                nvl=0.1,
                procs={41000 + i: (70e9 if i == 2 else 60e9)},
                power=(680 if i == 2 else 480),
            )
            for i in range(4)
        ],
        host_state=dict(
            per_core=cores_busy(64, [0.9] * 4 + [0.15] * 16), job=dict(main=0.9, ranks=4, workers=[0.15] * 16)
        ),
        ranks=[
            dict(
                identity=identity(r, 4, 4, "gpu-node-01", 0, uuid(r, name10)),
                uuid=uuid(r, name10),
                step=(slow if r == 2 else fast),
                facts=({"tokens_per_example": 5734.0} if r == 2 else {"tokens_per_example": 4096.0}),
            )
            for r in range(4)
        ],
        steps=2,
        facts=F(
            loader_workers=4,
            batch_size=8,
            cores=16,
            parameters=1_300_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            ddp=True,
            world_size=4,
            local_world_size=4,
            comm_backend="nccl",
            ddp_comm_timing="comm hook",
            ddp_buckets=52,
            comm_seconds_per_step=0.2,
            comm_exposed_seconds_per_step=0.155,
            comm_overlapped_seconds_per_step=0.045,
            comm_overlap_ratio=0.22,
            **roofline(2.1e14, 4e11, 0.3),
        ),
    )
)

# 11. Healthy but unremarkable: nothing near peak, phases balanced
step11 = {
    "data_wait": 0.030,
    "transfer": 0.020,
    "forward": 0.027,
    "backward": 0.053,
    "optimizer": 0.030,
    "other": 0.040,
}
SC.append(
    dict(
        name="11_balanced_unremarkable",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.5,
                occ=0.2,
                tensor=0.3,
                dram=0.3,
                busy=0.6,
                mem_used=30e9,
                pcie_rx=8e9,
                procs={1111: 30e9},
                power=350,
            )
        ],
        host_state=dict(
            per_core=cores_busy(32, [0.6] + [0.4] * 4),
            job=dict(main=0.6, workers=[0.4] * 4),
            disk_read=0.8e9,
            disk_busy=0.15,
            qd=2,
        ),
        step=step11,
        steps=5,
        facts=F(
            pid=1111,
            loader_workers=4,
            batch_size=128,
            cores=32,
            parameters=120_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            cuda_uuids=[uuid(0, "11_balanced_unremarkable")],
            **roofline(2.0e13, 1.0e11, 0.08),
        ),
    )
)

# 12. No DCGM: SM/tensor/DRAM activity unknown, only NVML utilization; compute-bound job like 1
SC.append(
    dict(
        name="12_no_dcgm_compute",
        gpu="H100",
        cores=32,
        gpm=False,
        gpus=[dict(sm=None, busy=1.0, membusy=0.35, mem_used=62e9, pcie_rx=0.3e9, procs={1212: 62e9}, power=690)],
        host_state=dict(per_core=cores_busy(32, [0.95] + [0.1] * 8), job=dict(main=0.95, workers=[0.1] * 8)),
        step=step1,
        steps=2,
        facts=F(
            pid=1212,
            loader_workers=8,
            batch_size=8,
            cores=32,
            parameters=1_300_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            tokens_per_example=2048.0,
            cuda_uuids=[uuid(0, "12_no_dcgm_compute")],
            **roofline(2.83e14, 4.7e11, 0.475),
        ),
    )
)

# 13. compute-bound job sharing its GPU with another process (two pids' process_bytes)
SC.append(
    dict(
        name="13_gpu_cotenant",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.97,
                occ=0.4,
                tensor=0.75,
                dram=0.35,
                busy=1.0,
                mem_used=74e9,
                pcie_rx=0.3e9,
                procs={1313: 62e9, 7777: 12e9},
                power=695,
            )
        ],
        host_state=dict(per_core=cores_busy(32, [0.95, 0.6] + [0.1] * 8), job=dict(main=0.95, workers=[0.1] * 8)),
        step={
            "data_wait": 0.004,
            "transfer": 0.003,
            "forward": 0.24,
            "backward": 0.48,
            "optimizer": 0.02,
            "other": 0.005,
        },
        steps=1,
        facts=F(
            pid=1313,
            loader_workers=8,
            batch_size=8,
            cores=32,
            parameters=1_300_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            tokens_per_example=2048.0,
            cuda_uuids=[uuid(0, "13_gpu_cotenant")],
            **roofline(2.83e14, 4.7e11, 0.72),
        ),
    )
)

# 14a. thermal/power throttling: compute-bound but SM clocks held at 55%
SC.append(
    dict(
        name="14a_thermal_throttle",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.96,
                occ=0.35,
                tensor=0.78,
                dram=0.2,
                busy=1.0,
                mem_used=62e9,
                pcie_rx=0.3e9,
                procs={1414: 62e9},
                clock=0.55,
                throttle={"hw_thermal": True, "sw_thermal": True},
                power=450,
            )
        ],
        host_state=dict(per_core=cores_busy(32, [0.95] + [0.1] * 8), job=dict(main=0.95, workers=[0.1] * 8)),
        step={k: (v * 1.8 if k in ("forward", "backward") else v) for k, v in step1.items()},
        steps=1,
        facts=F(
            pid=1414,
            loader_workers=8,
            batch_size=8,
            cores=32,
            parameters=1_300_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            tokens_per_example=2048.0,
            cuda_uuids=[uuid(0, "14a_thermal_throttle")],
            **roofline(2.83e14, 4.7e11, 0.855),
        ),
    )
)

# 14b. fp32 without TF32 on an H100: SM busy, tensor cores idle, near the fp32 (non-tensor) peak
SC.append(
    dict(
        name="14b_fp32_no_tf32",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.96,
                occ=0.45,
                tensor=0.0,
                fp32=0.85,
                dram=0.25,
                busy=1.0,
                mem_used=50e9,
                pcie_rx=0.3e9,
                procs={1415: 50e9},
                power=600,
            )
        ],
        host_state=dict(per_core=cores_busy(32, [0.95] + [0.1] * 8), job=dict(main=0.95, workers=[0.1] * 8)),
        step={
            "data_wait": 0.004,
            "transfer": 0.003,
            "forward": 0.33,
            "backward": 0.66,
            "optimizer": 0.02,
            "other": 0.005,
        },
        steps=1,
        facts=F(
            pid=1415,
            loader_workers=8,
            batch_size=32,
            cores=32,
            parameters=350_000_000,
            param_dtype="float32",
            compute_dtype="float32",
            allow_tf32=False,
            dtype="float32",
            cuda_uuids=[uuid(0, "14b_fp32_no_tf32")],
            **roofline(5.5e13, 5.5e11, 0.99),
        ),
    )
)

# 14c. the job's GPU is one of 8 on the node; the other 7 idle (a single-GPU job on a shared HGX box)
SC.append(
    dict(
        name="14c_one_of_eight_compute",
        gpu="H100",
        ngpu=8,
        cores=64,
        gpus=[
            dict(
                sm=0.95,
                occ=0.35,
                tensor=0.78,
                dram=0.32,
                busy=1.0,
                mem_used=62e9,
                pcie_rx=0.3e9,
                procs={1416: 62e9},
                power=690,
            )
        ]
        + [
            dict(sm=0.0, occ=0.0, tensor=0.0, dram=0.0, busy=0.0, mem_used=0.6e9, pcie_rx=0.0, pcie_tx=0.0, power=70)
            for _ in range(7)
        ],
        host_state=dict(per_core=cores_busy(64, [0.95] + [0.1] * 8), job=dict(main=0.95, workers=[0.1] * 8)),
        step=step1,
        steps=2,
        facts=F(
            pid=1416,
            loader_workers=8,
            batch_size=8,
            cores=64,
            parameters=1_300_000_000,
            param_dtype="float32",
            autocast_dtype="bfloat16",
            compute_dtype="bfloat16",
            tokens_per_example=2048.0,
            cuda_uuids=[uuid(0, "14c_one_of_eight_compute")],
            **roofline(2.83e14, 4.7e11, 0.475),
        ),
    )
)

if __name__ == "__main__":
    import sys

    for sc in SC:
        print(write(sc, sys.argv[1] if len(sys.argv) > 1 else OUT))
