"""Input pipeline: the step waits for the next batch (loader CPU, local disk, network storage)."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import BUSY, INPUT_HIGH, INPUT_MODERATE, fmt_s, headroom, pct, storage_evidence
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.peaks.resolve import PeakTable


def data_wait(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    p = w.phases
    if p is None:
        return []
    share = (p.share("data_wait") or 0.0) + (p.share("file_io") or 0.0)
    if share < INPUT_MODERATE:
        return []
    strength = min(1.0, share / INPUT_HIGH) * (0.95 if share >= INPUT_HIGH else 0.7)
    if p.facts.get("phase_source") == "py-spy":
        ev = [f"main thread waiting for the next batch in {pct(share)} of {p.steps} stack samples (py-spy)"]
    else:
        ev = [f"waiting for the next batch {pct(share)} of step time ({fmt_s(p.per_step('data_wait'))} per step over {p.steps} steps)"]
    head = headroom(share)
    cores = w.get("cpu_compute", "host", "cores") or 1.0
    workers = w.get("cpu_compute", "job", "worker_busy_cores")
    job = w.get("cpu_compute", "job", "busy_cores")
    host = w.get("cpu_compute", "host", "utilization")
    iowait = w.get("cpu_compute", "host", "iowait")
    disk_wait = w.get("cpu_compute", "job", "processes_in_disk_wait")
    s_util, s_ev, s_kind = storage_evidence(w)
    net = w.busiest("storage_network_bandwidth")
    n_workers = p.facts.get("loader_workers")
    out = []
    if net is not None and net[1] >= BUSY:
        out.append(Finding("storage_network_bandwidth", "data", strength * min(1.0, net[1] / 0.8),
                           tuple(ev + [f"network file system {net[0]} at {pct(net[1])} of the link"]), head))
    if s_util >= BUSY or (iowait or 0) >= 0.3 or (disk_wait or 0) >= 1.0:
        extra = [f"iowait {pct(iowait)}"] if iowait is not None else []
        if disk_wait:
            extra.append(f"{disk_wait:.1f} job processes in disk wait on average")
        if s_kind == "operations":
            extra.append("limited by operations per second, not bytes: small random reads")
        out.append(Finding("storage_bandwidth", "data", strength * max(0.6, min(1.0, max(s_util, (iowait or 0) * 2) / 0.8)),
                           tuple(ev + s_ev + extra), head))
    cpu_sat = max((job or 0.0) / cores, host or 0.0)
    cpu_ev = [f"job processes at {job:.2f} of {cores:.0f} cores" if job is not None else f"host CPU {pct(host)} busy"]
    if workers is not None:
        cpu_ev.append(f"DataLoader workers at {workers:.2f} cores" + (f" ({n_workers} workers)" if n_workers is not None else ""))
    if cpu_sat >= 0.8:
        out.append(Finding("cpu_compute", "data", strength * min(1.0, cpu_sat), tuple(ev + cpu_ev), head))
    elif not out:
        # waiting on data while neither the CPUs nor the disks are full: the pipeline is too serial
        why = "CPUs not saturated: too few loader workers or a serial step in the pipeline"
        out.append(Finding("cpu_compute", "data", strength * 0.7, tuple(ev + cpu_ev + [why]), head))
    return out
