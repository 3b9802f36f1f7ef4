#!/usr/bin/env python3
"""Blind traces, second round (2026-12-05): labelled GPU (and CPU) training traces for `bottleneckd
analyze`, written from docs/trace-format.md, model/facts.py, model/resources.py, the README and the
samplers' reading names only (not diagnosis/ or advice/). Helpers adapted from
tests/data/construct_blind_gpu.py; tests/test_gpu_blind.py holds the labels it checks.

    python tests/data/construct_blind_gpu2.py OUT_DIR   ->  OUT_DIR/<scenario>.jsonl

Each scenario: ~40 samples at 1 s. Labels in LABELS at the bottom (what an engineer's intervention
would prove)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys

T0 = 1796200000.0
N = 40

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


def uuid(i, tag, prefix="GPU"):
    h = hashlib.sha1(f"{tag}/{i}".encode()).hexdigest()
    return f"{prefix}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def J(x, rel=0.03, lo=None, hi=None):
    if x is None:
        return None
    y = x * (1 + random.uniform(-rel, rel))
    if lo is not None:
        y = max(lo, y)
    if hi is not None:
        y = min(hi, y)
    return y


# ------------------------------------------------------------------------------------- header
def header(sc):
    tag = sc["name"]
    cores = sc.get("cores", 32)
    gpus, peaks = [], []

    def pk(res, dev, metric, value, unit, origin="catalog", source="datasheet", **extra):
        peaks.append(
            dict(
                resource=res,
                device=dev,
                metric=metric,
                value=value,
                unit=unit,
                origin=origin if value is not None else "unknown",
                source=source,
                catalog_value=value if origin == "catalog" else None,
                **extra,
            )
        )

    if sc.get("gpu"):
        g = GPU[sc["gpu"]]
        ngpu = sc.get("ngpu", 1)
        mig = sc.get("mig")  # (profile, compute_frac, mem_frac, mem_bytes)
        for i in range(ngpu):
            if mig:
                label = f"gpu0.mig{i}"
                gpus.append(
                    dict(
                        index=i,
                        name=f"{g['name']} MIG {mig[0]}",
                        uuid=uuid(i, tag, "MIG"),
                        memory_total_bytes=mig[3],
                        pcie_max_generation=None,
                        pcie_max_width=None,
                        nvlink_active_links=0,
                        gpm_supported=sc.get("gpm", True),
                        label=label,
                        mig_fractions=[mig[1], mig[2]],
                    )
                )
            else:
                gpus.append(
                    dict(
                        index=i,
                        name=g["name"],
                        uuid=uuid(i, tag),
                        memory_total_bytes=g["mem"],
                        pcie_max_generation=g["pcie_gen"],
                        pcie_max_width=16,
                        nvlink_active_links=g["nvl_links"] if ngpu > 1 else 0,
                        gpm_supported=sc.get("gpm", True),
                    )
                )
        for gi in gpus:
            d = gi.get("label") or f"gpu{gi['index']}"
            cf = mig[1] if mig else 1.0
            mf = mig[2] if mig else 1.0
            note = f" x {cf:.3f} (this MIG slice's share)" if mig else ""
            pk("gpu_compute", d, "fp16_bf16_tensor_dense", g["bf16"] * cf, "FLOP/s", source="datasheet" + note)
            pk("gpu_compute", d, "tf32_tensor_dense", g["tf32"] * cf, "FLOP/s", source="datasheet" + note)
            pk("gpu_compute", d, "fp32", g["fp32"] * cf, "FLOP/s", source="datasheet" + note)
            pk("gpu_compute", d, "fp64", g["fp64"] * cf, "FLOP/s", source="datasheet" + note)
            if g["fp8"]:
                pk("gpu_compute", d, "fp8_tensor_dense", g["fp8"] * cf, "FLOP/s", source="datasheet" + note)
            pk(
                "gpu_memory",
                d,
                "capacity",
                float(gi["memory_total_bytes"]),
                "B",
                "detected",
                "NVML memory info (total)",
            )
            pk("gpu_memory_bandwidth", d, "dram_bandwidth", g["dram"] * mf, "B/s", source="datasheet" + note)
            if ngpu > 1 and not mig:
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
                pk("inter_gpu_interconnect", d, "nvlink_total", None, "B/s", "unknown", "no active NVLink")
            if mig:
                pk(
                    "cpu_gpu_interconnect",
                    d,
                    "pcie",
                    None,
                    "B/s",
                    "unknown",
                    "PCIe link generation/width not reported by NVML",
                )
            else:
                pk(
                    "cpu_gpu_interconnect",
                    d,
                    "pcie_per_direction",
                    PCIE[g["pcie_gen"]],
                    "B/s",
                    "detected",
                    f"gen {g['pcie_gen']} x16",
                )
    else:
        why = "NVML unavailable: NVML could not start: NVML Shared Library Not Found"
        for res, unit in (
            ("gpu_compute", "FLOP/s"),
            ("gpu_memory", "B"),
            ("gpu_memory_bandwidth", "B/s"),
            ("inter_gpu_interconnect", "B/s"),
            ("cpu_gpu_interconnect", "B/s"),
        ):
            pk(res, "-", "-", None, unit, "unknown", why)

    nics = [dict(name="eth0", speed_mbps=sc.get("eth_mbps", 25000), operstate="up")]
    ib = [dict(device=f"mlx5_{j}", port=1, rate_gbps=rate, state="ACTIVE") for j, rate in enumerate(sc.get("ib", []))]
    mounts = [dict(mountpoint="/", fstype="ext4", source="/dev/nvme0n1p1", network=False)]
    for m in sc.get("nfs", []):
        mounts.append(dict(mountpoint=m, fstype="nfs4", source=f"filer01:{m}", network=True))
    mem_total = sc.get("host_mem", 512 * 2**30)
    machine = dict(
        hostname=sc.get("host", "gpu-node-01"),
        cpu=dict(
            model="Intel(R) Xeon(R) Platinum 8480+",
            logical_cores=cores,
            physical_cores=cores,
            sockets=1 if cores <= 56 else 2,
            max_mhz=3800.0,
            flags=["avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"],
        ),
        memory_total_bytes=mem_total,
        gpus=gpus,
        block_devices=[
            dict(
                name="nvme0n1",
                size_bytes=3840755982336,
                rotational=False,
                model="SAMSUNG MZQL23T8HCLS",
                transport="nvme",
                pcie_generation=4,
            )
        ],
        nics=nics,
        ib_ports=ib,
        mounts=mounts,
        unknown={} if gpus else {"gpus": "NVML unavailable: NVML could not start: NVML Shared Library Not Found"},
    )
    pk("cpu_compute", "cpu", "fp32_matmul", sc.get("cpu_peak", 3.5e12), "FLOP/s", "calibrated", "numpy fp32 matmul")
    pk("cpu_memory", "host", "capacity", float(mem_total), "B", "detected", "/proc/meminfo MemTotal")
    pk("cpu_memory_bandwidth", "host", "dram_bandwidth", 250e9, "B/s", "calibrated", "streaming copy")
    eth_peak = sc.get("eth_mbps", 25000) / 8 * 1e6
    pk(
        "inter_node_interconnect",
        "eth0",
        "ethernet_per_direction",
        eth_peak,
        "B/s",
        "detected",
        f"/sys/class/net/eth0/speed = {sc.get('eth_mbps', 25000)} Mb/s; line rate / 8",
    )
    for p in ib:
        pk(
            "inter_node_interconnect",
            f"{p['device']}/1",
            "infiniband_per_direction",
            p["rate_gbps"] / 8 * 1e9,
            "B/s",
            "detected",
            f"/sys/class/infiniband/{p['device']}/ports/1/rate = {p['rate_gbps']:g} Gb/s",
        )
    fastest = max([eth_peak] + [p["rate_gbps"] / 8 * 1e9 for p in ib])
    pk("storage_capacity", "nvme0n1", "capacity", 3840755982336.0, "B", "detected", "/sys/block")
    pk("storage_bandwidth", "nvme0n1", "sequential_read", 7.0e9, "B/s", "catalog", "NVMe gen4 product sheet")
    pk("storage_bandwidth", "nvme0n1", "random_read_4k_iops", 1.0e6, "IO/s", "catalog", "NVMe gen4 product sheet")
    if sc.get("nfs"):
        for m in sc["nfs"]:
            pk(
                "storage_network_bandwidth",
                m,
                "link",
                fastest,
                "B/s",
                "detected",
                f"nfs4 mount from filer01:{m}: bounded by the fastest local link",
            )
    else:
        pk("storage_network_bandwidth", "-", "link", None, "B/s", "unknown", "no network file system is mounted")
    return dict(
        type="header",
        format="bottleneckd.trace",
        version=1,
        created=T0,
        interval=1.0,
        machine=machine,
        peaks=peaks,
        meta=dict(constructed=f"blind round 3: {tag}: {sc['desc']}"),
    )


# ------------------------------------------------------------------------------------- readings
def gpu_readings(sc, gi, gs):
    g = GPU[sc["gpu"]]
    d = gi.get("label") or f"gpu{gi['index']}"
    mig = sc.get("mig")
    mem_total = gi["memory_total_bytes"]
    r = []
    sm = gs.get("sm")
    busy = J(gs.get("busy", sm), 0.02, 0, 1)
    r.append(["gpu_compute", d, "busy_fraction", busy, "ratio"])
    dram = gs.get("dram")
    r.append(
        ["gpu_memory_bandwidth", d, "memory_busy_fraction", J(gs.get("membusy", dram or 0.3), 0.03, 0, 1), "ratio"]
    )
    src = sc.get("activity_source", "GPM")
    if sm is None:
        why = "GPM not supported on this GPU (Hopper or later needed); no dcgm-exporter answered"
        for m in (
            "sm_activity",
            "sm_occupancy",
            "tensor_activity",
            "fp32_activity",
            "fp16_activity",
            "fp64_activity",
            "integer_activity",
        ):
            r.append(["gpu_compute", d, m, None, "ratio", why])
        r.append(
            [
                "gpu_compute",
                d,
                "utilization",
                None,
                "ratio",
                f"SM activity unknown ({why}); busy_fraction is a time fraction, not load",
            ]
        )
    else:
        smj = J(sm, 0.02, 0, 1)
        r.append(["gpu_compute", d, "sm_activity", smj, "ratio"])
        r.append(["gpu_compute", d, "sm_occupancy", J(gs.get("occ", sm * 0.4), 0.03, 0, 1), "ratio"])
        r.append(["gpu_compute", d, "tensor_activity", J(gs.get("tensor", 0.0), 0.03, 0, 1), "ratio"])
        r.append(["gpu_compute", d, "fp32_activity", J(gs.get("fp32", 0.03), 0.03, 0, 1), "ratio"])
        r.append(["gpu_compute", d, "fp16_activity", J(gs.get("fp16", 0.02), 0.03, 0, 1), "ratio"])
        r.append(["gpu_compute", d, "fp64_activity", 0.0, "ratio"])
        r.append(["gpu_compute", d, "integer_activity", J(gs.get("int", 0.05), 0.03, 0, 1), "ratio"])
        r.append(["gpu_compute", d, "utilization", smj, "ratio"])
        r.append(["gpu_compute", d, f"activity_source:{src}", 1.0, "bool"])
    clock = gs.get("clock", 1.0)
    cj = J(clock, 0.01, 0, 1)
    r.append(["gpu_compute", d, "sm_clock", float(round(g["max_mhz"] * cj)), "MHz"])
    r.append(["gpu_compute", d, "sm_clock_ratio", cj, "ratio"])
    tdp = g["tdp"] * (mig[1] if mig else 1)
    if "power" in gs and gs["power"] is None:
        r.append(["gpu_compute", d, "power", None, "W", "not supported"])
    else:
        r.append(["gpu_compute", d, "power", J(gs.get("power", 80 + (tdp - 80) * (sm or busy or 0)), 0.02), "W"])
    thr = gs.get("throttle", {})
    for k in (
        "gpu_idle",
        "applications_clocks_setting",
        "sw_power_cap",
        "hw_slowdown",
        "sync_boost",
        "sw_thermal",
        "hw_thermal",
        "hw_power_brake",
        "display_clocks_setting",
    ):
        r.append(["gpu_compute", d, f"throttle:{k}", 1.0 if thr.get(k) else 0.0, "bool"])
    if sm is not None or dram is not None:
        dj = J(dram or 0.0, 0.03, 0, 1)
        peak = g["dram"] * (mig[2] if mig else 1)
        r.append(["gpu_memory_bandwidth", d, "utilization", dj, "ratio"])
        r.append(["gpu_memory_bandwidth", d, "throughput", dj * peak, "B/s"])
        r.append(["gpu_memory_bandwidth", d, "peak", peak, "B/s"])
    else:
        why = "DRAM bandwidth unknown (GPM not supported; no dcgm-exporter)"
        r.append(["gpu_memory_bandwidth", d, "utilization", None, "ratio", why])
        r.append(["gpu_memory_bandwidth", d, "throughput", None, "B/s", why])
        r.append(["gpu_memory_bandwidth", d, "peak", g["dram"], "B/s"])
    used = J(gs.get("mem_used", 1e9), 0.002, 0, mem_total)
    r.append(["gpu_memory", d, "used", used, "B"])
    r.append(["gpu_memory", d, "utilization", used / mem_total, "ratio"])
    r.append(["gpu_memory", d, "peak", float(mem_total), "B"])
    for pid, b in gs.get("procs", {}).items():
        r.append(["gpu_memory", d, f"process_bytes:{pid}", float(b), "B"])
    if "job" in gs:
        r.append(["gpu_compute", d, "job_process", float(gs["job"]), "bool"])
    rx = J(gs.get("pcie_rx", 0.2e9), 0.04, 0)
    tx = J(gs.get("pcie_tx", 0.1e9), 0.04, 0)
    if mig:
        r.append(["cpu_gpu_interconnect", d, "throughput", max(rx, tx), "B/s"])
        r.append(["cpu_gpu_interconnect", d, "utilization", None, "ratio", "peak unknown; run 'bottleneckd calibrate'"])
        r.append(["cpu_gpu_interconnect", d, "peak", None, "B/s", "unknown"])
    else:
        pcap = PCIE[g["pcie_gen"]]
        r.append(["cpu_gpu_interconnect", d, "throughput", max(rx, tx), "B/s"])
        r.append(["cpu_gpu_interconnect", d, "utilization", max(rx, tx) / pcap, "ratio"])
        r.append(["cpu_gpu_interconnect", d, "peak", pcap, "B/s"])
    r.append(["cpu_gpu_interconnect", d, "tx_bytes_per_second", tx, "B/s"])
    r.append(["cpu_gpu_interconnect", d, "rx_bytes_per_second", rx, "B/s"])
    nolink = "not reported for this device (a MIG slice, or not supported)"
    r.append(
        ["cpu_gpu_interconnect", d, "link_generation", None if mig else float(g["pcie_gen"]), "gen"]
        + ([nolink] if mig else [])
    )
    r.append(["cpu_gpu_interconnect", d, "link_width", None if mig else 16.0, "lanes"] + ([nolink] if mig else []))
    if sc.get("ngpu", 1) > 1 and not mig:
        nv = J(gs.get("nvl", 0.0), 0.04, 0, 1)
        r.append(["inter_gpu_interconnect", d, "throughput", nv * g["nvl"], "B/s"])
        r.append(["inter_gpu_interconnect", d, "utilization", nv, "ratio"])
        r.append(["inter_gpu_interconnect", d, "peak", g["nvl"], "B/s"])
        r.append(["inter_gpu_interconnect", d, "tx_bytes_per_second", nv * g["nvl"] / 2, "B/s"])
        r.append(["inter_gpu_interconnect", d, "rx_bytes_per_second", nv * g["nvl"] / 2, "B/s"])
    else:
        r.append(["inter_gpu_interconnect", d, "throughput", None, "B/s", "no active NVLink on this GPU"])
        r.append(["inter_gpu_interconnect", d, "utilization", None, "ratio", "no active NVLink on this GPU"])
        r.append(["inter_gpu_interconnect", d, "peak", None, "B/s", "unknown"])
    r.append(["gpu_compute", d, "up", 1.0, "bool"])
    return r


def host_readings(sc, hs):
    cores = sc.get("cores", 32)
    r = []
    per = [J(x, 0.04, 0, 1) for x in hs["per_core"]]
    for i, b in enumerate(per):
        r.append(["cpu_compute", f"cpu{i}", "busy", b, "ratio"])
    busy = sum(per)
    r.append(["cpu_compute", "host", "utilization", busy / cores, "ratio"])
    r.append(["cpu_compute", "host", "busy_cores", busy, "cores"])
    r.append(["cpu_compute", "host", "cores", float(cores), "cores"])
    r.append(["cpu_compute", "host", "iowait", J(hs.get("iowait", 0.002), 0.05, 0, 1), "ratio"])
    r.append(["cpu_compute", "host", "pressure_some", J(hs.get("cpu_psi", 0.01), 0.05, 0, 1), "ratio"])
    job = hs["job"]
    main = J(job["main"], 0.02, 0, 1)
    ranks = job.get("ranks", 1)
    wk = [J(w, 0.02, 0, 1) for w in job.get("workers", [])]
    side = job.get("side", 0.1)
    autograd = job.get("autograd", 0.0)
    rank_cores = (main + side + autograd) * ranks
    r.append(["cpu_compute", "job", "busy_cores", rank_cores + sum(wk), "cores"])
    r.append(["cpu_compute", "job", "rank_busy_cores", rank_cores, "cores"])
    r.append(["cpu_compute", "job", "worker_busy_cores", sum(wk), "cores"])
    r.append(["cpu_compute", "job", "launcher_busy_cores", 0.0, "cores"])
    if wk:
        r.append(["cpu_compute", "job", "worker_max_busy_cores", max(wk), "cores"])
    else:
        r.append(["cpu_compute", "job", "worker_max_busy_cores", None, "cores", "no loader workers"])
    r.append(["cpu_compute", "job", "main_busy_cores", main, "cores"])
    r.append(["cpu_compute", "job", "launch_thread_cores", min(1.0, main + autograd), "cores"])
    r.append(["cpu_compute", "job", "rank_side_thread_cores", side * ranks + autograd * ranks, "cores"])
    r.append(["cpu_compute", "job", "comm_thread_cores", J(job.get("comm", 0.02), 0.05, 0), "cores"])
    r.append(["cpu_compute", "job", "hottest_thread_busy", max(main, autograd), "cores"])
    if wk:
        r.append(["cpu_compute", "job", "worker_hottest_thread_busy", max(wk), "cores"])
    else:
        r.append(["cpu_compute", "job", "worker_hottest_thread_busy", None, "cores", "no loader workers"])
    rq = job.get("rq", 0.0)
    r.append(["cpu_compute", "job", "main_thread_demand", min(1.0, main + rq), "cores"])
    r.append(["cpu_compute", "job", "hottest_thread_demand", min(1.0, max(main, autograd) + rq), "cores"])
    if wk:
        r.append(["cpu_compute", "job", "worker_max_demand", min(1.0, max(wk) + rq), "cores"])
    else:
        r.append(["cpu_compute", "job", "worker_max_demand", None, "cores", "no loader workers"])
    r.append(["cpu_compute", "job", "runqueue_wait_cores", rq * (ranks + len(wk)), "cores"])
    r.append(["cpu_compute", "job", "usable_cores", float(job.get("usable", cores)), "cores"])
    r.append(["cpu_compute", "job", "processes", float(ranks + len(wk)), "count"])
    r.append(["cpu_compute", "job", "ranks", float(ranks), "count"])
    r.append(["cpu_compute", "job", "workers", float(len(wk)), "count"])
    r.append(["cpu_compute", "job", "processes_in_disk_wait", float(job.get("dwait", 0)), "count"])
    r.append(["cpu_compute", "job", "threads_in_disk_wait", float(job.get("dwait", 0)), "count"])
    r.append(["cpu_compute", "job", "pressure_some", J(hs.get("cpu_psi", 0.01), 0.05, 0, 1), "ratio"])
    r.append(["cpu_compute", "sidecar", "busy_cores", 0.02, "cores"])
    # memory
    mem_total = sc.get("host_mem", 512 * 2**30)
    used = J(hs.get("mem_used", 60 * 2**30), 0.003, 0, mem_total)
    r.append(["cpu_memory", "host", "used", used, "B"])
    r.append(["cpu_memory", "host", "utilization", used / mem_total, "ratio"])
    r.append(["cpu_memory", "host", "peak", float(mem_total), "B"])
    r.append(["cpu_memory", "host", "available", mem_total - used, "B"])
    r.append(["cpu_memory", "host", "swap_in_bytes_per_second", J(hs.get("swap_in", 0.0), 0.1, 0), "B/s"])
    r.append(["cpu_memory", "host", "swap_out_bytes_per_second", J(hs.get("swap_out", 0.0), 0.1, 0), "B/s"])
    r.append(["cpu_memory", "host", "pressure_some", J(hs.get("mem_psi", 0.0), 0.05, 0, 1), "ratio"])
    r.append(["cpu_memory", "host", "pressure_full", J(hs.get("mem_psi_full", 0.0), 0.05, 0, 1), "ratio"])
    rss = J(hs.get("rss", 20 * 2**30), 0.003, 0)
    r.append(["cpu_memory", "job", "resident_bytes", rss, "B"])
    r.append(["cpu_memory", "job", "rank_resident_bytes", rss * 0.6, "B"])
    r.append(["cpu_memory", "job", "worker_resident_bytes", rss * 0.4, "B"])
    r.append(["cpu_memory", "job", "launcher_resident_bytes", 50e6, "B"])
    why = "no memory-bandwidth counters: resctrl MBM is not mounted at /sys/fs/resctrl"
    r.append(["cpu_memory_bandwidth", "host", "throughput", None, "B/s", why])
    r.append(["cpu_memory_bandwidth", "host", "utilization", None, "ratio", why])
    r.append(["cpu_memory_bandwidth", "host", "peak", 250e9, "B/s"])
    # local storage
    rd = J(hs.get("disk_read", 1e6), 0.04, 0)
    wr = J(hs.get("disk_write", 2e6), 0.04, 0)
    io = hs.get("io_size", 131072)
    ops = (rd + wr) / io
    r.append(["storage_bandwidth", "nvme0n1", "throughput", rd + wr, "B/s"])
    r.append(["storage_bandwidth", "nvme0n1", "read_bytes_per_second", rd, "B/s"])
    r.append(["storage_bandwidth", "nvme0n1", "write_bytes_per_second", wr, "B/s"])
    r.append(["storage_bandwidth", "nvme0n1", "operations_per_second", ops, "IO/s"])
    r.append(["storage_bandwidth", "nvme0n1", "read_operations_per_second", rd / io, "IO/s"])
    r.append(["storage_bandwidth", "nvme0n1", "byte_utilization", (rd + wr) / 7e9, "ratio"])
    r.append(["storage_bandwidth", "nvme0n1", "operation_utilization", ops / 1e6, "ratio"])
    r.append(["storage_bandwidth", "nvme0n1", "utilization", max((rd + wr) / 7e9, ops / 1e6), "ratio"])
    r.append(["storage_bandwidth", "nvme0n1", "busy", J(hs.get("disk_busy", 0.01), 0.03, 0, 1), "ratio"])
    r.append(["storage_bandwidth", "nvme0n1", "peak", 7e9, "B/s"])
    qd = hs.get("qd", 0.0)
    r.append(["storage_bandwidth", "nvme0n1", "queue_depth", J(qd, 0.1, 0), "requests"])
    r.append(["storage_bandwidth", "nvme0n1", "in_flight", float(round(qd)), "requests"])
    r.append(["storage_bandwidth", "host", "pressure_some", J(hs.get("io_psi", 0.0), 0.05, 0, 1), "ratio"])
    r.append(["storage_bandwidth", "host", "pressure_full", J(hs.get("io_psi", 0.0) * 0.5, 0.05, 0, 1), "ratio"])
    jr = hs.get("job_read", rd)
    r.append(["storage_bandwidth", "job", "read_calls_per_second", J(jr / 262144 + 10, 0.05, 0), "1/s"])
    r.append(["storage_bandwidth", "job", "read_chars_per_second", J(jr, 0.04, 0), "B/s"])
    r.append(["storage_bandwidth", "job", "read_bytes_per_second", J(hs.get("job_read_disk", rd), 0.04, 0), "B/s"])
    r.append(["storage_bandwidth", "job", "write_bytes_per_second", wr, "B/s"])
    r.append(["storage_bandwidth", "job", "pressure_some", J(hs.get("io_psi", 0.0), 0.05, 0, 1), "ratio"])
    r.append(["storage_bandwidth", "job", "pressure_full", J(hs.get("io_psi", 0.0) * 0.5, 0.05, 0, 1), "ratio"])
    r.append(["storage_capacity", "/", "used", 1.2e12, "B"])
    r.append(["storage_capacity", "/", "utilization", 1.2e12 / 3.78e12, "ratio"])
    r.append(["storage_capacity", "/", "peak", 3.78e12, "B"])
    r.append(["storage_capacity", "/", "free", 3.78e12 - 1.2e12, "B"])
    for m in sc.get("nfs", []):
        nb = J(hs.get("nfs", 0.0), 0.04, 0)
        peak = max([sc.get("eth_mbps", 25000) / 8 * 1e6] + [x / 8 * 1e9 for x in sc.get("ib", [])])
        r.append(["storage_network_bandwidth", m, "throughput", nb, "B/s"])
        r.append(["storage_network_bandwidth", m, "utilization", nb / peak, "ratio"])
        r.append(["storage_network_bandwidth", m, "peak", peak, "B/s"])
    # network
    eth_peak = sc.get("eth_mbps", 25000) / 8 * 1e6
    erx = J(hs.get("eth_rx", 2e6), 0.04, 0)
    etx = J(hs.get("eth_tx", 2e6), 0.04, 0)
    r.append(["inter_node_interconnect", "eth0", "throughput", max(erx, etx), "B/s"])
    r.append(["inter_node_interconnect", "eth0", "utilization", max(erx, etx) / eth_peak, "ratio"])
    r.append(["inter_node_interconnect", "eth0", "peak", eth_peak, "B/s"])
    r.append(["inter_node_interconnect", "eth0", "tx_bytes_per_second", etx, "B/s"])
    r.append(["inter_node_interconnect", "eth0", "rx_bytes_per_second", erx, "B/s"])
    for j, rate in enumerate(sc.get("ib", [])):
        name = f"mlx5_{j}/1"
        peak = rate / 8 * 1e9
        bps = J(hs.get("ib_bytes", [0.0] * 8)[j], 0.03, 0, peak)
        r.append(["inter_node_interconnect", name, "throughput", bps, "B/s"])
        r.append(["inter_node_interconnect", name, "utilization", bps / peak, "ratio"])
        r.append(["inter_node_interconnect", name, "peak", peak, "B/s"])
    return r


def phases_block(step, steps, facts, rel=0.03):
    ph = {k: J(v, rel, 0) * steps for k, v in step.items()}
    return {"steps": steps, "wall_seconds": sum(ph.values()), "phases": ph, "facts": dict(facts)}


def identity(rank, world, local_world, node, node_rank, gpu_uuid, job="job-b3"):
    return dict(
        job=job,
        run=job,
        restart=0,
        rank=rank,
        local_rank=rank % local_world,
        world_size=world,
        local_world_size=local_world,
        node=node,
        node_rank=node_rank,
        gpu=gpu_uuid,
        pid=41000 + rank % local_world,
        pod="",
        namespace="",
    )


def write(sc, out):
    random.seed(sc["name"])
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, sc["name"] + ".jsonl")
    h = header(sc)
    with open(path, "w") as f:
        f.write(json.dumps(h) + "\n")
        t = T0
        for k in range(sc.get("n", N)):
            t += 1.0 + random.uniform(-0.004, 0.004)
            readings = []
            gpus = h["machine"]["gpus"]
            for gi, gs in zip(gpus, sc["gpus"](k) if callable(sc.get("gpus")) else sc.get("gpus", [])):
                readings += gpu_readings(sc, gi, gs)
            hs = sc["host_state"](k) if callable(sc["host_state"]) else sc["host_state"]
            readings += host_readings(sc, hs)
            s = {"type": "sample", "t": t, "interval": J(1.0, 0.004), "readings": readings}
            facts = dict(sc["facts"])
            if sc.get("ranks"):
                ranks, tot = [], {}
                for rk, rs in enumerate(sc["ranks"]):
                    rf = dict(facts)
                    rf.update(rs.get("facts", {}))
                    rf["pid"] = 41000 + rs["identity"]["local_rank"]
                    rf["cuda_uuids"] = [rs["identity"]["gpu"]]
                    pb = phases_block(rs["step"], sc["steps"], rf)
                    ranks.append({"identity": rs["identity"], "phases": pb})
                    for p, v in pb["phases"].items():
                        tot[p] = tot.get(p, 0.0) + v
                s["phases"] = {
                    "steps": sc["steps"] * len(ranks),
                    "wall_seconds": sum(tot.values()),
                    "phases": tot,
                    "facts": dict(facts, pid=41000, cuda_uuids=[sc["ranks"][0]["identity"]["gpu"]]),
                }
                s["ranks"] = ranks
            elif callable(sc.get("phases")):
                s["phases"] = sc["phases"](k, facts)
            else:
                s["phases"] = phases_block(sc["step"], sc["steps"], facts)
            if sc.get("stacks"):
                s["stacks"] = sc["stacks"](k)
            smp = {
                "cpu_compute": [True, 0.003, ""],
                "cpu_memory": [True, 0.002, ""],
                "cpu_memory_bandwidth": [True, 0.0001, ""],
                "storage": [True, 0.0005, ""],
                "inter_node": [True, 0.0002, ""],
            }
            if gpus:
                smp["gpu"] = [True, 0.004, ""]
            if sc.get("nfs"):
                smp["storage_network"] = [True, 0.0003, ""]
            if sc.get("stacks"):
                smp["stacks"] = [True, 0.012, ""]
            s["samplers"] = smp
            f.write(json.dumps(s) + "\n")
    return path


# ------------------------------------------------------------------------------------- scenarios
def cores_busy(cores, busy):
    return (list(busy) + [0.02] * cores)[:cores]


def roofline(flops, bytes_, compute_s):
    return dict(
        flops_per_step=flops,
        operand_bytes_per_step=bytes_,
        arithmetic_intensity=flops / bytes_,
        achieved_flops=flops / compute_s,
        achieved_bytes_per_second=bytes_ / compute_s,
    )


BASE = dict(
    device="cuda",
    epoch=1,
    compiled=False,
    has_conv=False,
    input_rank=2,
    optimizer_closure=False,
    timed_step_share=1.0,
    allow_tf32=False,
    cudnn_allow_tf32=True,
    fsdp=False,
    sharded=False,
    offloading=False,
    optimizer_impl="fused",
    pin_memory=True,
    persistent_workers=True,
    prefetch_factor=2,
    ddp=False,
    world_size=1,
    local_world_size=1,
    param_dtype="float32",
    autocast_dtype="bfloat16",
    compute_dtype="bfloat16",
)


def F(**kw):
    d = dict(BASE)
    d.update(kw)
    return {k: v for k, v in d.items() if v is not None}


SC = []

# 1. FSDP, 8 x H100, communication fully overlapped, SM ~0.9 ---------------------------------------
n1 = "b3_01_fsdp_overlapped_compute"
st1 = dict(
    data_wait=0.003, transfer=0.002, forward=0.20, backward=0.41, communication=0.006, optimizer=0.02, other=0.006
)
SC.append(
    dict(
        name=n1,
        desc="FSDP (full shard) 7B on 8xH100, all-gather/reduce-scatter hidden behind compute; SM 0.9",
        gpu="H100",
        ngpu=8,
        cores=96,
        gpus=[
            dict(
                sm=0.90,
                occ=0.35,
                tensor=0.72,
                dram=0.38,
                busy=1.0,
                mem_used=71e9,
                nvl=0.42,
                pcie_rx=0.2e9,
                procs={41000 + i: 71e9},
                job=1,
                power=680,
            )
            for i in range(8)
        ],
        host_state=dict(
            per_core=cores_busy(96, [0.95] * 8 + [0.6] * 8 + [0.1] * 32),
            job=dict(main=0.95, autograd=0.6, ranks=8, workers=[0.1] * 32, comm=0.8),
        ),
        ranks=[dict(identity=identity(r, 8, 8, "gpu-node-01", 0, uuid(r, n1)), step=st1) for r in range(8)],
        steps=1,
        facts=F(
            loader_workers=4,
            batch_size=2,
            cores=12,
            parameters=6_700_000_000,
            fsdp=True,
            sharded=True,
            ddp=True,
            world_size=8,
            local_world_size=8,
            comm_backend="nccl",
            comm_seconds_per_step=0.31,
            comm_exposed_seconds_per_step=0.006,
            comm_overlapped_seconds_per_step=0.304,
            comm_overlap_ratio=0.98,
            tokens_per_example=4096.0,
            **roofline(3.3e14, 6.0e11, 0.61),
        ),
    )
)

# 2. DDP 8 GPUs, rank 5's DataLoader slow --------------------------------------------------------
n2 = "b3_02_ddp_rank5_loader_straggler"
fast2 = dict(
    data_wait=0.004, transfer=0.004, forward=0.09, backward=0.19, communication=0.25, optimizer=0.012, other=0.005
)
slow2 = dict(
    data_wait=0.222, transfer=0.004, forward=0.09, backward=0.19, communication=0.032, optimizer=0.012, other=0.005
)
SC.append(
    dict(
        name=n2,
        desc="DDP 8xH100 ResNet-style; rank 5's loader (2 workers vs 8, bad shard with big JPEGs) 40% data_wait; others wait in all-reduce",
        gpu="H100",
        ngpu=8,
        cores=96,
        gpus=[
            dict(
                sm=0.45,
                occ=0.2,
                tensor=0.35,
                dram=0.25,
                busy=0.62,
                mem_used=40e9,
                nvl=0.08,
                pcie_rx=1.2e9,
                procs={41000 + i: 40e9},
                job=1,
                power=380,
            )
            for i in range(8)
        ],
        host_state=dict(
            per_core=cores_busy(96, [0.8] * 8 + [0.45] * 49 + [1.0] * 2 + [0.3] * 8),
            job=dict(main=0.8, autograd=0.3, ranks=8, workers=[0.45] * 49 + [1.0, 1.0]),
        ),
        ranks=[
            dict(
                identity=identity(r, 8, 8, "gpu-node-01", 0, uuid(r, n2)),
                step=slow2 if r == 5 else fast2,
                facts=dict(
                    loader_workers=2 if r == 5 else 7,
                    comm_exposed_seconds_per_step=0.032 if r == 5 else 0.25,
                    comm_seconds_per_step=0.042 if r == 5 else 0.26,
                    comm_overlapped_seconds_per_step=0.01,
                    comm_overlap_ratio=0.24 if r == 5 else 0.04,
                ),
            )
            for r in range(8)
        ],
        steps=2,
        facts=F(
            loader_workers=7,
            batch_size=64,
            cores=12,
            parameters=25_600_000,
            has_conv=True,
            input_rank=4,
            conv_flop_share=0.95,
            ddp=True,
            world_size=8,
            local_world_size=8,
            comm_backend="nccl",
            ddp_comm_timing="comm hook",
            ddp_buckets=4,
            **roofline(7.9e11, 3e10, 0.28),
        ),
    )
)

# 3. per-step .item() / logging: other 45%, main thread at a full core, GPU busy ~50% ------------------
st3 = dict(data_wait=0.002, transfer=0.002, forward=0.030, backward=0.060, optimizer=0.012, other=0.090)


def stacks3(k):
    # py-spy at 2 Hz under `run`: 2 stack samples an interval, ~45% of them in the other stage
    cyc = [
        [
            [
                "other",
                "main",
                "log_step",
                "train.py",
                141,
                'logger.info(f"step {step} loss {loss.item():.4f} ...")',
                1,
                None,
                False,
            ],
            ["backward", "main", "train_step", "train.py", 120, "loss.backward()", 1, None, False],
        ],
        [
            [
                "other",
                "main",
                "MetricTracker.update",
                "metrics.py",
                58,
                "self.acc += (pred.argmax(-1) == y).float().mean().item()",
                1,
                None,
                False,
            ],
            ["forward", "main", "train_step", "train.py", 117, "out = model(x)", 1, None, False],
        ],
        [
            [
                "other",
                "main",
                "log_step",
                "train.py",
                146,
                "wandb.log({k: v.item() for k, v in stats.items()})",
                1,
                None,
                False,
            ],
            ["backward", "main", "train_step", "train.py", 120, "loss.backward()", 1, None, False],
        ],
        [
            ["backward", "main", "train_step", "train.py", 120, "loss.backward()", 1, None, False],
            [
                "other",
                "main",
                "log_step",
                "train.py",
                141,
                'logger.info(f"step {step} loss {loss.item():.4f} ...")',
                1,
                None,
                False,
            ],
        ],
        [
            ["forward", "main", "train_step", "train.py", 117, "out = model(x)", 1, None, False],
            ["optimizer", "main", "train_step", "train.py", 123, "optimizer.step()", 1, None, False],
        ],
    ]
    return {"source": "py-spy", "rate_hz": 2.0, "rows": cyc[k % len(cyc)]}


SC.append(
    dict(
        name="b3_03_host_sync_logging_other",
        desc="1xH100, per-step loss.item()/metric .item() syncs and Python logging; other 45%; main thread 1 core; GPU busy ~50%",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.42,
                occ=0.18,
                tensor=0.3,
                dram=0.2,
                busy=0.5,
                mem_used=30e9,
                pcie_rx=0.3e9,
                procs={3303: 30e9},
                job=1,
                power=320,
            )
        ],
        host_state=dict(per_core=cores_busy(32, [1.0, 0.1, 0.1, 0.1, 0.1]), job=dict(main=1.0, workers=[0.1] * 4)),
        step=st3,
        steps=5,
        stacks=stacks3,
        facts=F(
            pid=3303,
            loader_workers=4,
            batch_size=64,
            cores=32,
            parameters=120_000_000,
            tokens_per_example=512.0,
            cuda_uuids=[uuid(0, "b3_03_host_sync_logging_other")],
            **roofline(1.8e13, 1.2e11, 0.102),
        ),
    )
)

SC.append(
    dict(
        SC[-1],
        name="b3_03b_host_sync_other_nostacks",
        stacks=None,
        desc="as b3_03, hook phases only (watch() beside `bottleneckd record`): no stack samples",
    )
)

# 3c. diagnostic variant of 3: the same job with 'other' a little over half the step (0.110 s of 0.216 s)
SC.append(
    dict(
        SC[-2],
        name="b3_03c_host_sync_other_51pct",
        step=dict(st3, other=0.110),
        desc="as b3_03 (stacks too), other 51% instead of 46%: does the other-stage rule fire above 50%?",
    )
)

# 4. periodic checkpoints: every 10th sample no steps, storage writes near peak; else compute-bound --------
st4 = dict(data_wait=0.004, transfer=0.003, forward=0.155, backward=0.315, optimizer=0.015, other=0.008)


def gpus4(k):
    ck = k % 10 == 9
    return [
        dict(
            sm=0.02 if ck else 0.95,
            occ=0.01 if ck else 0.35,
            tensor=0.0 if ck else 0.78,
            dram=0.01 if ck else 0.33,
            busy=0.05 if ck else 1.0,
            mem_used=62e9,
            pcie_rx=0.05e9,
            pcie_tx=3.5e9 if ck else 0.05e9,
            procs={4404: 62e9},
            job=1,
            power=110 if ck else 690,
        )
    ]


def host4(k):
    ck = k % 10 == 9
    return dict(
        per_core=cores_busy(32, [1.0 if ck else 0.95] + [0.1] * 8),
        job=dict(main=1.0 if ck else 0.95, workers=[0.1] * 8),
        disk_write=6.3e9 if ck else 2e6,
        disk_busy=1.0 if ck else 0.01,
        qd=32 if ck else 0,
        io_size=1 << 20,
        iowait=0.05 if ck else 0.002,
        io_psi=0.3 if ck else 0.0,
    )


def phases4(k, facts):
    if k % 10 == 9:
        return None  # no step ended in this interval: the hook sent no report
    if k % 10 == 0 and k > 0:  # the step that held the checkpoint ends here: its other phase holds it
        pb = phases_block(st4, 1, facts)
        pb["phases"]["other"] += 1.05
        pb["wall_seconds"] += 1.05
        return pb
    return phases_block(st4, 2, facts)


SC.append(
    dict(
        name="b3_04_periodic_checkpoint_compute",
        desc="1xH100 bf16 LLM compute-bound; every 10th second torch.save of 6 GB to local NVMe (writes ~6.3 GB/s), no steps then",
        gpu="H100",
        cores=32,
        gpus=gpus4,
        host_state=host4,
        phases=phases4,
        facts=F(
            pid=4404,
            loader_workers=8,
            batch_size=8,
            cores=32,
            parameters=1_300_000_000,
            tokens_per_example=2048.0,
            cuda_uuids=[uuid(0, "b3_04_periodic_checkpoint_compute")],
            **roofline(2.83e14, 4.7e11, 0.47),
        ),
    )
)

# 5. LayerNorm/elementwise fp32 model on A100: DRAM 0.85, tensor 0 (A100: via dcgm-exporter) ------------------
SC.append(
    dict(
        name="b3_05_a100_fp32_elementwise_membw",
        desc="1xA100 fp32 LayerNorm/GELU/elementwise-heavy model, no autocast; DCGM DRAM_ACTIVE 0.85, tensor 0",
        gpu="A100",
        cores=32,
        gpm=False,
        activity_source="dcgm-exporter",
        gpus=[
            dict(
                sm=0.82,
                occ=0.55,
                tensor=0.0,
                fp32=0.22,
                dram=0.85,
                busy=1.0,
                mem_used=50e9,
                pcie_rx=0.2e9,
                procs={5505: 50e9},
                job=1,
                power=330,
            )
        ],
        host_state=dict(per_core=cores_busy(32, [0.9] + [0.1] * 6), job=dict(main=0.9, workers=[0.1] * 6)),
        step=dict(data_wait=0.003, transfer=0.003, forward=0.10, backward=0.20, optimizer=0.015, other=0.004),
        steps=3,
        facts=F(
            pid=5505,
            loader_workers=6,
            batch_size=64,
            cores=32,
            parameters=60_000_000,
            input_rank=3,
            autocast_dtype=None,
            compute_dtype="float32",
            weight_byte_share=0.05,
            cuda_uuids=[uuid(0, "b3_05_a100_fp32_elementwise_membw")],
            **roofline(1.2e12, 5.2e11, 0.30),
        ),
    )
)

# 6. transfer-bound with pinned memory: PCIe 85% while copying, big inputs re-sent every step ---------------
SC.append(
    dict(
        name="b3_06_pinned_h2d_transfer",
        desc="1xH100 gen5; pinned loader; 4.4 GB float32 input volume per step (the same static conditioning tensors re-sent each step); transfer 55%, PCIe rx 85% while copying",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.32,
                occ=0.12,
                tensor=0.2,
                dram=0.2,
                busy=0.45,
                mem_used=45e9,
                pcie_rx=0.85 * 0.55 * 63.015e9,
                pcie_tx=0.3e9,
                procs={6606: 45e9},
                job=1,
                power=300,
            )
        ],
        host_state=dict(
            per_core=cores_busy(32, [0.7, 0.35] + [0.3] * 8),
            job=dict(main=0.7, side=0.35, workers=[0.3] * 8),
            mem_used=120 * 2**30,
        ),
        step=dict(data_wait=0.003, transfer=0.0825, forward=0.020, backward=0.040, optimizer=0.003, other=0.0015),
        steps=7,
        facts=F(
            pid=6606,
            loader_workers=8,
            batch_size=16,
            cores=32,
            parameters=40_000_000,
            input_rank=5,
            has_conv=True,
            conv_flop_share=0.85,
            pin_memory=True,
            cuda_uuids=[uuid(0, "b3_06_pinned_h2d_transfer")],
            **roofline(4.0e12, 2.0e11, 0.06),
        ),
    )
)

# 7. dataloading from NFS: data_wait 75%, NIC rx near peak, local disk idle --------------------------------
SC.append(
    dict(
        name="b3_07_nfs_dataloading",
        desc="1xH100, ImageNet-style shards read from NFS over 100GbE (eth0 rx ~11.6 GB/s of 12.5), local NVMe idle; data_wait 75%",
        gpu="H100",
        cores=32,
        eth_mbps=100000,
        nfs=["/mnt/datasets"],
        gpus=[
            dict(
                sm=0.2,
                occ=0.08,
                tensor=0.15,
                dram=0.08,
                busy=0.25,
                mem_used=30e9,
                pcie_rx=1.5e9,
                procs={7707: 30e9},
                job=1,
                power=180,
            )
        ],
        host_state=dict(
            per_core=cores_busy(32, [0.3] + [0.3] * 16),
            job=dict(main=0.3, workers=[0.3] * 16, dwait=10),
            iowait=0.12,
            io_psi=0.45,
            eth_rx=11.6e9,
            eth_tx=0.2e9,
            nfs=11.5e9,
            job_read=11.5e9,
            job_read_disk=0.0,
            disk_read=0.5e6,
        ),
        step=dict(data_wait=0.375, transfer=0.01, forward=0.035, backward=0.07, optimizer=0.006, other=0.004),
        steps=2,
        facts=F(
            pid=7707,
            loader_workers=16,
            batch_size=512,
            cores=32,
            parameters=86_000_000,
            input_rank=4,
            cuda_uuids=[uuid(0, "b3_07_nfs_dataloading")],
            **roofline(9e12, 9e10, 0.105),
        ),
    )
)

# 8. host memory pressure: swap in/out high, PSI memory high, job RSS near host total, data_wait high -------------
SC.append(
    dict(
        name="b3_08_host_memory_swap",
        desc="1xA100 node with 128 GB RAM; dataset cached in RAM by 12 workers (RSS 124 GB); swapping 600 MB/s; PSI mem some 0.55; data_wait 60%",
        gpu="A100",
        cores=32,
        gpm=False,
        activity_source="dcgm-exporter",
        host_mem=128 * 2**30,
        gpus=[
            dict(
                sm=0.3,
                occ=0.1,
                tensor=0.2,
                dram=0.1,
                busy=0.38,
                mem_used=40e9,
                pcie_rx=0.5e9,
                procs={8808: 40e9},
                job=1,
                power=150,
            )
        ],
        host_state=dict(
            per_core=cores_busy(32, [0.45] + [0.25] * 12),
            job=dict(main=0.45, workers=[0.25] * 12, dwait=9),
            mem_used=126.5 * 2**30,
            rss=124 * 2**30,
            swap_in=6.0e8,
            swap_out=4.5e8,
            mem_psi=0.55,
            mem_psi_full=0.3,
            iowait=0.15,
            disk_read=6.0e8,
            disk_write=4.5e8,
            io_size=4096,
            disk_busy=0.9,
            qd=12,
            io_psi=0.5,
            job_read=0.05e9,
            job_read_disk=0.0,
        ),
        step=dict(data_wait=0.30, transfer=0.006, forward=0.06, backward=0.12, optimizer=0.008, other=0.006),
        steps=2,
        facts=F(
            pid=8808,
            loader_workers=12,
            batch_size=256,
            cores=32,
            parameters=25_600_000,
            has_conv=True,
            input_rank=4,
            conv_flop_share=0.96,
            cuda_uuids=[uuid(0, "b3_08_host_memory_swap")],
            **roofline(3.1e12, 6e10, 0.18),
        ),
    )
)


# 9. attach mode (py-spy): main thread mostly waits for data -------------------------------------------
def phases9(k, facts):
    sh = dict(data_wait=0.78, transfer=0.02, forward=0.06, backward=0.10, optimizer=0.02, other=0.02)
    return {
        "steps": 2,
        "wall_seconds": 1.0,
        "phases": {p: J(v, 0.05, 0) for p, v in sh.items()},
        "facts": dict(phase_source="py-spy", stack_samples=2, other_idle_share=0.0, ddp=False),
    }


def stacks9(k):
    return {
        "source": "py-spy",
        "rate_hz": 2.0,
        "rows": [
            r
            for r in [
                ["data_wait", "main", None, None, None, None, 2 if k % 5 else 1, None, False],
                ["backward", "main", "train", "train.py", 77, "loss.backward()", 0 if k % 5 else 1, None, False],
                [
                    "data_wait",
                    "worker",
                    "ImageFolderX.__getitem__",
                    "data.py",
                    41,
                    "img = Image.open(path).convert('RGB')",
                    1,
                    False,
                    False,
                ],
                [
                    "data_wait",
                    "worker",
                    "ImageFolderX.__getitem__",
                    "data.py",
                    44,
                    "img = self.transform(img)",
                    1,
                    True,
                    False,
                ],
            ]
            if r[6] > 0
        ],
    }


SC.append(
    dict(
        name="b3_09_attach_data_wait",
        desc="bottleneckd attach --pid to a 1xH100 job: py-spy stacks, main thread in DataLoader __next__ ~78%; 6 workers each at a full core of 32",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.18,
                occ=0.07,
                tensor=0.12,
                dram=0.06,
                busy=0.22,
                mem_used=20e9,
                pcie_rx=0.8e9,
                procs={9909: 20e9},
                job=1,
                power=170,
            )
        ],
        host_state=dict(per_core=cores_busy(32, [0.25] + [0.98] * 6), job=dict(main=0.25, workers=[0.98] * 6)),
        phases=phases9,
        stacks=stacks9,
        facts=dict(),
    )
)

# 10. multi-node DDP, node-a's mlx5_3 trained down to 200 Gb/s ------------------------------------------
n10 = "b3_10_degraded_ib_link"
st10 = dict(
    data_wait=0.004, transfer=0.004, forward=0.12, backward=0.25, communication=0.26, optimizer=0.02, other=0.01
)


def sc10(node, nr, rates, ib_bytes):
    return dict(
        name=f"{n10}_{node}",
        desc=f"2 nodes x 8 H100 DDP, rail-optimised 8x400G IB; {node}; node-a's mlx5_3 trained down to 200G",
        gpu="H100",
        ngpu=8,
        cores=96,
        ib=rates,
        host=node,
        gpus=[
            dict(
                sm=0.55,
                occ=0.22,
                tensor=0.4,
                dram=0.25,
                busy=0.92,
                mem_used=60e9,
                nvl=0.15,
                pcie_rx=1.0e9,
                pcie_tx=1.0e9,
                procs={41000 + i: 60e9},
                job=1,
                power=420,
            )
            for i in range(8)
        ],
        host_state=dict(
            per_core=cores_busy(96, [0.9] * 8 + [0.1] * 32),
            job=dict(main=0.9, autograd=0.4, ranks=8, workers=[0.1] * 32, comm=0.5),
            ib_bytes=ib_bytes,
        ),
        ranks=[
            dict(identity=identity(nr * 8 + r, 16, 8, node, nr, uuid(r, f"{n10}_{node}")), step=st10) for r in range(8)
        ],
        steps=1,
        facts=F(
            loader_workers=4,
            batch_size=8,
            cores=12,
            parameters=1_500_000_000,
            ddp=True,
            world_size=16,
            local_world_size=8,
            comm_backend="nccl",
            ddp_comm_timing="comm hook",
            ddp_buckets=60,
            comm_seconds_per_step=0.40,
            comm_exposed_seconds_per_step=0.26,
            comm_overlapped_seconds_per_step=0.14,
            comm_overlap_ratio=0.35,
            tokens_per_example=2048.0,
            **roofline(1.1e14, 2.2e11, 0.37),
        ),
    )


SC.append(sc10("node-a", 0, [400.0] * 3 + [200.0] + [400.0] * 4, [22e9] * 3 + [24.2e9] + [22e9] * 4))
SC.append(sc10("node-b", 1, [400.0] * 8, [22e9] * 8))

# 11. power-capped H100 fleet, sw_power_cap active, clocks 70%, compute-bound -------------------------------
SC.append(
    dict(
        name="b3_11_power_capped_compute",
        desc="1xH100 with an admin power limit of 500 W; sw_power_cap active, SM clock 70% of max; SM 0.96, tensor 0.8",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.96,
                occ=0.36,
                tensor=0.8,
                dram=0.3,
                busy=1.0,
                mem_used=64e9,
                pcie_rx=0.3e9,
                procs={1111: 64e9},
                job=1,
                power=498,
                clock=0.70,
                throttle={"sw_power_cap": True},
            )
        ],
        host_state=dict(per_core=cores_busy(32, [0.95] + [0.1] * 8), job=dict(main=0.95, workers=[0.1] * 8)),
        step=dict(data_wait=0.004, transfer=0.003, forward=0.22, backward=0.45, optimizer=0.018, other=0.006),
        steps=1,
        facts=F(
            pid=1111,
            loader_workers=8,
            batch_size=8,
            cores=32,
            parameters=1_300_000_000,
            tokens_per_example=2048.0,
            cuda_uuids=[uuid(0, "b3_11_power_capped_compute")],
            **roofline(2.83e14, 4.7e11, 0.67),
        ),
    )
)

# 12. MIG 1g.10gb slice, compute-bound -----------------------------------------------------------------
n12 = "b3_12_mig_1g10gb_compute"
SC.append(
    dict(
        name=n12,
        desc="one H100 MIG 1g.10gb slice (1/7 of SMs, 1/8 memory) visible in the container; BERT-base bf16 fine-tune compute-bound",
        gpu="H100",
        cores=8,
        mig=("1g.10gb", 1 / 7, 1 / 8, 10468982784),
        gpus=[
            dict(
                sm=0.93,
                occ=0.4,
                tensor=0.7,
                dram=0.35,
                busy=1.0,
                mem_used=8.9e9,
                pcie_rx=0.15e9,
                procs={1212: 8.9e9},
                job=1,
                power=None,
            )
        ],
        host_state=dict(per_core=cores_busy(8, [0.9, 0.15, 0.15]), job=dict(main=0.9, workers=[0.15] * 2)),
        step=dict(data_wait=0.003, transfer=0.002, forward=0.12, backward=0.24, optimizer=0.01, other=0.005),
        steps=2,
        facts=F(
            pid=1212,
            loader_workers=2,
            batch_size=32,
            cores=8,
            parameters=110_000_000,
            tokens_per_example=512.0,
            cuda_uuids=[uuid(0, n12, "MIG")],
            **roofline(1.3e13, 8.0e10, 0.36),
        ),
    )
)

# 13. CPU-only job, 16 cores, loader workers saturating cores ------------------------------------------
SC.append(
    dict(
        name="b3_13_cpu_only_loader_saturated",
        desc="CPU-only training (no GPUs), 16 cores; 16 loader workers doing JPEG decode + augmentation each near a core; data_wait 70%",
        gpu=None,
        cores=16,
        host_mem=64 * 2**30,
        cpu_peak=1.2e12,
        host_state=dict(
            per_core=[0.98] * 16,
            cpu_psi=0.55,
            job=dict(main=0.6, side=0.3, workers=[0.82] * 16, rq=0.15, usable=16),
            mem_used=30 * 2**30,
            rss=24 * 2**30,
        ),
        step=dict(data_wait=0.56, transfer=0.004, forward=0.07, backward=0.15, optimizer=0.01, other=0.006),
        steps=1,
        facts=dict(
            device="cpu",
            pid=1313,
            epoch=1,
            loader_workers=16,
            pin_memory=False,
            persistent_workers=True,
            prefetch_factor=2,
            batch_size=64,
            cores=16,
            loader_workers_saturate_cores=True,
            has_conv=True,
            input_rank=4,
            parameters=11_700_000,
            param_dtype="float32",
            compute_dtype="float32",
            ddp=False,
            **roofline(1.4e11, 4e9, 0.22),
        ),
    )
)

# 14. MoE expert parallel over 2 nodes: all-to-all 40% exposed; gradient all-reduce small ---------------------
n14 = "b3_14_moe_alltoall"
st14 = dict(
    data_wait=0.003, transfer=0.003, forward=0.14, backward=0.26, communication=0.29, optimizer=0.02, other=0.01
)


def sc14(node, nr):
    return dict(
        name=f"{n14}_{node}",
        desc=f"2 nodes x 8 H100 MoE (64 experts, EP=16) all-to-all over 8x400G IB; {node}; a2a exposed 40% of step; DDP grad all-reduce small",
        gpu="H100",
        ngpu=8,
        cores=96,
        ib=[400.0] * 8,
        host=node,
        gpus=[
            dict(
                sm=0.5,
                occ=0.2,
                tensor=0.36,
                dram=0.3,
                busy=0.9,
                mem_used=70e9,
                nvl=0.2,
                pcie_rx=1.0e9,
                pcie_tx=1.0e9,
                procs={41000 + i: 70e9},
                job=1,
                power=400,
            )
            for i in range(8)
        ],
        host_state=dict(
            per_core=cores_busy(96, [0.9] * 8 + [0.1] * 32),
            job=dict(main=0.9, autograd=0.4, ranks=8, workers=[0.1] * 32, comm=0.6),
            ib_bytes=[33e9] * 8,
        ),
        ranks=[
            dict(identity=identity(nr * 8 + r, 16, 8, node, nr, uuid(r, f"{n14}_{node}")), step=st14) for r in range(8)
        ],
        steps=1,
        facts=F(
            loader_workers=4,
            batch_size=8,
            cores=12,
            parameters=14_000_000_000,
            ddp=True,
            world_size=16,
            local_world_size=8,
            comm_backend="nccl",
            ddp_comm_timing="comm hook",
            ddp_buckets=8,
            comm_seconds_per_step=0.03,
            comm_exposed_seconds_per_step=0.01,
            comm_overlapped_seconds_per_step=0.02,
            comm_overlap_ratio=0.67,
            tokens_per_example=4096.0,
            **roofline(1.5e14, 4e11, 0.40),
        ),
    )


SC.append(sc14("node-a", 0))
SC.append(sc14("node-b", 1))

# 15. the trip: for-loop optimizer launch-bound, optimizer 50% of the step; GPU idle between tiny kernels -------
SC.append(
    dict(
        name="b3_15_forloop_optimizer_launch_bound",
        desc="1xH100, 350M params in 1,100 tensors, AdamW foreach=False (for-loop): optimizer 50% of step; main thread 1 core; SM 0.35 overall",
        gpu="H100",
        cores=32,
        gpus=[
            dict(
                sm=0.36,
                occ=0.12,
                tensor=0.3,
                dram=0.25,
                busy=0.85,
                mem_used=30e9,
                pcie_rx=0.2e9,
                procs={1515: 30e9},
                job=1,
                power=300,
            )
        ],
        host_state=dict(
            per_core=cores_busy(32, [1.0, 0.15, 0.15, 0.15, 0.15]), job=dict(main=1.0, autograd=0.5, workers=[0.15] * 4)
        ),
        step=dict(data_wait=0.003, transfer=0.003, forward=0.055, backward=0.11, optimizer=0.175, other=0.004),
        steps=3,
        facts=F(
            pid=1515,
            loader_workers=4,
            batch_size=16,
            cores=32,
            parameters=350_000_000,
            optimizer_impl="for-loop",
            tokens_per_example=1024.0,
            cuda_uuids=[uuid(0, "b3_15_forloop_optimizer_launch_bound")],
            **roofline(3.4e13, 2.4e11, 0.34),
        ),
    )
)

LABELS = {
    "b3_01_fsdp_overlapped_compute": "gpu_compute / compute",
    "b3_02_ddp_rank5_loader_straggler": "straggler rank 5, data (cpu_compute of its loader)",
    "b3_03_host_sync_logging_other": "cpu_compute / other; top: remove per-step host syncs / Python logging",
    "b3_03b_host_sync_other_nostacks": "cpu_compute / other (or undetermined with a reason); top: host syncs / per-step Python work",
    "b3_03c_host_sync_other_51pct": "cpu_compute / other (diagnostic variant of b3_03)",
    "b3_04_periodic_checkpoint_compute": "gpu_compute / compute (checkpoint regime noted)",
    "b3_05_a100_fp32_elementwise_membw": "gpu_memory_bandwidth / compute",
    "b3_06_pinned_h2d_transfer": "cpu_gpu_interconnect / transfer; top: keep data on GPU / send less (not pin memory)",
    "b3_07_nfs_dataloading": "storage_network_bandwidth / data",
    "b3_08_host_memory_swap": "cpu_memory / data",
    "b3_09_attach_data_wait": "cpu_compute (or undetermined) / data",
    "b3_10_degraded_ib_link": "inter_node_interconnect / communication; top: fix the degraded link",
    "b3_11_power_capped_compute": "gpu_compute / compute (power cap not blamed as throttle)",
    "b3_12_mig_1g10gb_compute": "gpu_compute / compute",
    "b3_13_cpu_only_loader_saturated": "cpu_compute / data",
    "b3_14_moe_alltoall": "inter_node_interconnect / communication; top not gradient compression",
    "b3_15_forloop_optimizer_launch_bound": "cpu_compute / optimizer; top: fused/foreach optimizer",
}

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "blind_gpu2")
    for sc in SC:
        print(write(sc, out))
    with open(os.path.join(out, "labels.json"), "w") as f:
        json.dump(LABELS, f, indent=1)
