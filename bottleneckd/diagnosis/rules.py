"""The rules: pure functions of one window's statistics. Each returns findings with evidence.

Thresholds come from FINDINGS.md: input-bound at >=5% (moderate) and >=20% (high) of step time
waiting for data (TensorFlow's input-pipeline analyzer); SM activity >=0.8 for an efficient GPU
job (DCGM); DRAM activity ~0.8 is the practical maximum; communication >10% of step time
(PyTorch profiler); memory over 90% of capacity.
"""

from __future__ import annotations

from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.model.units import fmt_value
from bottleneckd.diagnosis.window import WindowStats

INPUT_MODERATE = 0.05
INPUT_HIGH = 0.20
COMM_HIGH = 0.10
SM_EFFICIENT = 0.80
DRAM_PRACTICAL_MAX = 0.80
CAPACITY_HIGH = 0.90
BUSY = 0.60
NEAR_PEAK_FLOOR = 0.04  # achieved rate below 4% of both peaks: overhead-bound, not roofline-bound


def _pct(x: float | None) -> str:
    return "unknown" if x is None else f"{x * 100:.0f}%"


def _headroom(share: float | None) -> float | None:
    if share is None or share >= 0.99:
        return None
    return 1.0 / (1.0 - share)


def _storage_evidence(w: WindowStats) -> tuple[float, list[str], str | None]:
    """How busy the busiest local disk is, and whether by operations or bytes."""
    best = w.busiest("storage_bandwidth")
    if best is None:
        busy = w.get("storage_bandwidth", None, "busy")
        return (busy or 0.0) * 0.8, ([f"disk busy {_pct(busy)} of the time (no peak known)"] if busy else []), None
    dev, util = best
    ops = w.get("storage_bandwidth", dev, "operation_utilization")
    byts = w.get("storage_bandwidth", dev, "byte_utilization")
    ev = [f"{dev}: {fmt_value(w.get('storage_bandwidth', dev, 'operations_per_second'), 'IO/s')} = {_pct(ops)} of its 4 KiB-read IOPS peak, "
          f"{fmt_value(w.get('storage_bandwidth', dev, 'throughput'), 'B/s')} = {_pct(byts)} of its byte bandwidth"]
    kind = "operations" if (ops or 0) > (byts or 0) else "bytes"
    return util, ev, kind


def data_wait(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    p = w.phases
    if p is None:
        return []
    share = (p.share("data_wait") or 0.0) + (p.share("file_io") or 0.0)
    if share < INPUT_MODERATE:
        return []
    strength = min(1.0, share / INPUT_HIGH) * (0.95 if share >= INPUT_HIGH else 0.7)
    if p.facts.get("phase_source") == "py-spy":
        ev = [f"main thread waiting for the next batch in {_pct(share)} of {p.steps} stack samples (py-spy)"]
    else:
        ev = [f"waiting for the next batch {_pct(share)} of step time ({fmt_s(p.per_step('data_wait'))} per step over {p.steps} steps)"]
    head = _headroom(share)
    cores = w.get("cpu_compute", "host", "cores") or 1.0
    workers = w.get("cpu_compute", "job", "worker_busy_cores")
    job = w.get("cpu_compute", "job", "busy_cores")
    host = w.get("cpu_compute", "host", "utilization")
    iowait = w.get("cpu_compute", "host", "iowait")
    disk_wait = w.get("cpu_compute", "job", "processes_in_disk_wait")
    s_util, s_ev, s_kind = _storage_evidence(w)
    net = w.busiest("storage_network_bandwidth")
    n_workers = p.facts.get("loader_workers")
    out = []
    if net is not None and net[1] >= BUSY:
        out.append(Finding("storage_network_bandwidth", "data", strength * min(1.0, net[1] / 0.8),
                           tuple(ev + [f"network file system {net[0]} at {_pct(net[1])} of the link"]), head))
    if s_util >= BUSY or (iowait or 0) >= 0.3 or (disk_wait or 0) >= 1.0:
        extra = [f"iowait {_pct(iowait)}"] if iowait is not None else []
        if disk_wait:
            extra.append(f"{disk_wait:.1f} job processes in disk wait on average")
        if s_kind == "operations":
            extra.append("limited by operations per second, not bytes: small random reads")
        out.append(Finding("storage_bandwidth", "data", strength * max(0.6, min(1.0, max(s_util, (iowait or 0) * 2) / 0.8)),
                           tuple(ev + s_ev + extra), head))
    cpu_sat = max((job or 0.0) / cores, host or 0.0)
    cpu_ev = [f"job processes at {job:.2f} of {cores:.0f} cores" if job is not None else f"host CPU {_pct(host)} busy"]
    if workers is not None:
        cpu_ev.append(f"DataLoader workers at {workers:.2f} cores" + (f" ({n_workers} workers)" if n_workers is not None else ""))
    if cpu_sat >= 0.8:
        out.append(Finding("cpu_compute", "data", strength * min(1.0, cpu_sat), tuple(ev + cpu_ev), head))
    elif not out:
        # waiting on data while neither the CPUs nor the disks are full: the pipeline is too serial
        why = "CPUs not saturated: too few loader workers or a serial step in the pipeline"
        out.append(Finding("cpu_compute", "data", strength * 0.7, tuple(ev + cpu_ev + [why]), head))
    return out


def fmt_s(x: float | None) -> str:
    from bottleneckd.model.units import fmt_seconds

    return fmt_seconds(x)


def transfer(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    p = w.phases
    share = p.share("transfer") if p else None
    pcie = w.busiest("cpu_gpu_interconnect")
    sm = w.get("gpu_compute", None, "sm_activity")
    score, ev = 0.0, []
    if share is not None and share >= INPUT_HIGH:
        score = min(1.0, share / 0.4)
        ev.append(f"host-to-device copies {_pct(share)} of step time")
    if pcie is not None and pcie[1] >= BUSY and (sm is None or sm < 0.3):
        score = max(score, min(1.0, pcie[1]))
        ev.append(f"{pcie[0]} PCIe at {_pct(pcie[1])} of its peak per direction" + (f" while SM activity is {_pct(sm)}" if sm is not None else ""))
    return [Finding("cpu_gpu_interconnect", "transfer", score, tuple(ev), _headroom(share))] if score else []


def communication(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    p = w.phases
    share = p.share("communication") if p else None
    nic = w.busiest("inter_node_interconnect")
    nvl = w.busiest("inter_gpu_interconnect")
    out = []
    base_ev = [f"gradient communication {_pct(share)} of step time"] if share is not None and share >= COMM_HIGH else []
    base = min(1.0, (share or 0.0) / 0.3) if base_ev else 0.0
    world = (p.facts.get("world_size") if p else None) or 1
    local = (p.facts.get("local_world_size") if p else None) or world
    if nic is not None and (nic[1] >= BUSY or (base and world > local)):
        out.append(Finding("inter_node_interconnect", "communication", max(base, min(1.0, nic[1])),
                           tuple(base_ev + [f"{nic[0]} at {_pct(nic[1])} of its line rate"]), _headroom(share)))
    if nvl is not None and nvl[1] >= BUSY or (base and not out):
        ev = base_ev + ([f"{nvl[0]} inter-GPU link at {_pct(nvl[1])} of its peak"] if nvl else [])
        if base and not out and world > 1 and world == local:
            ev.append(f"{world} ranks on one node")
        out.append(Finding("inter_gpu_interconnect", "communication", max(base, min(1.0, nvl[1] if nvl else 0.0)), tuple(ev), _headroom(share)))
    return out


def compute(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """GPU or CPU compute vs memory bandwidth, told apart by SM/tensor/DRAM activity (GPM) or by
    achieved FLOP/s and bytes/s against the peaks (operand sizes, section 2.3)."""
    p = w.phases
    comp_share = None
    if p is not None:
        comp_share = sum(p.share(k) or 0.0 for k in ("forward", "backward", "optimizer", "gpu_wait"))
        if comp_share < 0.5:
            return []
    facts = p.facts if p else {}
    out: list[Finding] = []
    on_gpu = facts.get("device", "cuda" if w.devices("gpu_compute") else "cpu").startswith("cuda")
    ev = [f"forward+backward+optimizer {_pct(comp_share)} of step time"] if comp_share is not None else []
    flops, byts = facts.get("achieved_flops"), facts.get("achieved_bytes_per_second")
    if on_gpu and w.devices("gpu_compute"):
        sm = w.get("gpu_compute", None, "sm_activity")
        tensor = w.get("gpu_compute", None, "tensor_activity")
        busy = w.get("gpu_compute", None, "busy_fraction")
        dram = w.get("gpu_memory_bandwidth", None, "utilization")
        gev = list(ev)
        if busy is not None and busy >= 0.9 and sm is not None and sm < 0.5:
            gev.append(f"NVML 'GPU utilization' {_pct(busy)} but SM activity only {_pct(sm)}: kernels are small or serial, not compute-bound")
            main = w.get("cpu_compute", "job", "main_busy_cores")
            if main is not None and main >= 0.85:
                return [Finding("cpu_compute", "compute", 0.7, tuple(gev + [f"training process main thread at {main:.2f} cores: kernel launches limit the step"]), None)]
            return [Finding("gpu_compute", "compute", 0.4, tuple(gev), None)]
        peak_c = max((x.value for x in peaks.for_resource("gpu_compute") if x.value), default=None)
        peak_b = max((x.value for x in peaks.for_resource("gpu_memory_bandwidth") if x.value), default=None)
        f_ratio = flops / peak_c if flops is not None and peak_c else None
        b_ratio = byts / peak_b if byts is not None and peak_b else None
        if dram is not None and dram >= 0.6 and (sm is None or dram >= (tensor or 0)):
            out.append(Finding("gpu_memory_bandwidth", "compute", min(1.0, dram / DRAM_PRACTICAL_MAX),
                               tuple(gev + [f"DRAM bandwidth {_pct(dram)} of peak", f"SM activity {_pct(sm)}, tensor activity {_pct(tensor)}"]), None))
        elif b_ratio is not None and f_ratio is not None and b_ratio > f_ratio:
            out.append(Finding("gpu_memory_bandwidth", "compute", min(1.0, 0.5 + b_ratio),
                               tuple(gev + [f"achieved {fmt_value(byts, 'B/s')} = {_pct(b_ratio)} of memory bandwidth vs {fmt_value(flops, 'FLOP/s')} = {_pct(f_ratio)} of compute"]), None))
        if sm is not None and sm >= 0.5 and not out:
            tev = gev + [f"SM activity {_pct(sm)}, tensor activity {_pct(tensor)}, DRAM {_pct(dram)}"]
            thr = [k.split(":", 1)[1] for (r, _, k), s in w.stats.items() if r == "gpu_compute" and k.startswith("throttle:") and s.mean >= 0.5]
            clock = w.get("gpu_compute", None, "sm_clock_ratio")
            if thr and clock is not None and clock < 0.9:
                tev.append(f"clocks throttled ({', '.join(thr)}): SM clock at {_pct(clock)} of its maximum")
            out.append(Finding("gpu_compute", "compute", min(1.0, sm / SM_EFFICIENT), tuple(tev), None))
        elif sm is None and busy is not None and busy >= 0.8 and not out:
            out.append(Finding("gpu_compute", "compute", 0.5, tuple(gev + [f"GPU busy {_pct(busy)} of the time (SM activity unknown: no GPM)"]), None))
        return out
    # CPU training
    cores = w.get("cpu_compute", "host", "cores") or 1.0
    main = w.get("cpu_compute", "job", "main_busy_cores")
    host = w.get("cpu_compute", "host", "utilization")
    mbw = w.get("cpu_memory_bandwidth", "host", "utilization")
    peak_c = peaks.value("cpu_compute", "cpu")
    peak_b = peaks.value("cpu_memory_bandwidth", "host")
    f_ratio = flops / peak_c if flops is not None and peak_c else None
    b_ratio = byts / peak_b if byts is not None and peak_b else None
    cev = list(ev)
    if main is not None:
        cev.append(f"training process at {main:.2f} of {cores:.0f} cores")
    elif host is not None:
        cev.append(f"host CPU {_pct(host)} busy")
    if f_ratio is not None and b_ratio is not None:
        cev.append(f"achieved {fmt_value(flops, 'FLOP/s')} = {_pct(f_ratio)} of compute peak, {fmt_value(byts, 'B/s')} = {_pct(b_ratio)} of memory bandwidth")
        ai = facts.get("arithmetic_intensity")
        if ai is not None and peak_c and peak_b:
            cev.append(f"arithmetic intensity {ai:.1f} FLOP/byte vs ridge point {peak_c / peak_b:.1f}")
        if max(f_ratio, b_ratio) < NEAR_PEAK_FLOOR:
            cev.append("neither FLOP/s nor bytes/s is near its peak: per-operator overhead (Python, small ops) limits the step")
            return [Finding("cpu_compute", "compute", 0.6, tuple(cev), None)]
        if b_ratio > f_ratio:
            return [Finding("cpu_memory_bandwidth", "compute", min(1.0, 0.55 + b_ratio), tuple(cev), None)]
        return [Finding("cpu_compute", "compute", min(1.0, 0.55 + f_ratio), tuple(cev), None)]
    if mbw is not None and mbw >= 0.6:
        return [Finding("cpu_memory_bandwidth", "compute", min(1.0, mbw / 0.8), tuple(cev + [f"memory bandwidth {_pct(mbw)} of peak"]), None)]
    low = facts.get("low_intensity_op_share")
    if low is not None and low >= 0.6:
        cev.append(f"{_pct(low)} of forward stack samples in normalisation/elementwise operators: bytes moved, few multiply-adds (operand size, section 2.3)")
        return [Finding("cpu_memory_bandwidth", "compute", 0.5 + 0.3 * low, tuple(cev), None)]
    busy = max((main or 0.0) / cores, host or 0.0)
    if comp_share is not None or busy >= 0.8:
        return [Finding("cpu_compute", "compute", 0.55 + 0.35 * min(1.0, busy), tuple(cev), None)]
    return []


def _capacity_score(used: float) -> float:
    """Capacity nearly full limits what the job can do next (a larger batch, a cached dataset, a
    checkpoint) and risks failure: 90% used scores 0.75, 95% and more scores 1."""
    return 0.0 if used < CAPACITY_HIGH else min(1.0, 0.75 + (used - CAPACITY_HIGH) * 5)


def capacity(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    out = []
    g = w.busiest("gpu_memory")
    if g is not None and g[1] >= CAPACITY_HIGH:
        out.append(Finding("gpu_memory", "compute", _capacity_score(g[1]), (f"{g[0]} memory {_pct(g[1])} full (peak {_pct(w.get('gpu_memory', g[0], 'utilization', 'max'))})",)))
    c = w.get("cpu_memory", "host", "utilization")
    swap = (w.get("cpu_memory", "host", "swap_in_bytes_per_second") or 0) + (w.get("cpu_memory", "host", "swap_out_bytes_per_second") or 0)
    psi = w.get("cpu_memory", "host", "pressure_some")
    if (c is not None and c >= CAPACITY_HIGH) or swap > 1e6 or (psi or 0) > 0.1:
        ev = [f"host memory {_pct(c)} used"]
        if swap > 0:
            ev.append(f"swapping {fmt_value(swap, 'B/s')}")
        if psi:
            ev.append(f"memory pressure stalls {_pct(psi)} of the time")
        rss = w.get("cpu_memory", "job", "resident_bytes")
        if rss:
            ev.append(f"job resident memory {fmt_value(rss, 'B')}")
        out.append(Finding("cpu_memory", "data", min(1.0, _capacity_score(c or 0.0) + (0.5 if swap > 1e6 else 0) + (psi or 0)), tuple(ev)))
    s = w.busiest("storage_capacity")
    if s is not None and s[1] >= 0.95:
        out.append(Finding("storage_capacity", "other", _capacity_score(s[1] - 0.05), (f"{s[0]} {_pct(s[1])} full, {fmt_value(w.get('storage_capacity', s[0], 'free'), 'B')} free",)))
    return out


def machine_only(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """Without step phases: the SageMaker-style rules on utilization alone."""
    if w.phases is not None:
        return []
    out = []
    gpu_busy = w.get("gpu_compute", None, "busy_fraction")
    cpu = w.get("cpu_compute", "host", "utilization")
    iowait = w.get("cpu_compute", "host", "iowait")
    s_util, s_ev, s_kind = _storage_evidence(w)
    if gpu_busy is not None and gpu_busy < 0.1:
        if cpu is not None and cpu > 0.9:
            out.append(Finding("cpu_compute", "data", 0.75, (f"GPU busy {_pct(gpu_busy)} while CPUs are {_pct(cpu)} busy",)))
        if (iowait or 0) > 0.5 or s_util >= BUSY:
            out.append(Finding("storage_bandwidth", "data", 0.75, tuple([f"GPU busy {_pct(gpu_busy)} with iowait {_pct(iowait)}"] + s_ev)))
    elif gpu_busy is None:
        if s_util >= BUSY or (iowait or 0) > 0.3:
            out.append(Finding("storage_bandwidth", "data", 0.6 * max(0.6, min(1.0, s_util / 0.8)), tuple(s_ev + [f"iowait {_pct(iowait)}"])))
    nic = w.busiest("inter_node_interconnect")
    if nic is not None and nic[1] >= BUSY:
        out.append(Finding("inter_node_interconnect", "communication", min(1.0, nic[1]), (f"{nic[0]} at {_pct(nic[1])} of its line rate",)))
    nvl = w.busiest("inter_gpu_interconnect")
    if nvl is not None and nvl[1] >= BUSY:
        out.append(Finding("inter_gpu_interconnect", "communication", min(1.0, nvl[1]), (f"{nvl[0]} at {_pct(nvl[1])} of its peak",)))
    net = w.busiest("storage_network_bandwidth")
    if net is not None and net[1] >= BUSY:
        out.append(Finding("storage_network_bandwidth", "data", min(1.0, net[1]), (f"network file system {net[0]} at {_pct(net[1])} of the link",)))
    return out


RULES = (data_wait, transfer, communication, compute, capacity, machine_only)
