"""Without step phases: the SageMaker-style rules on utilization alone."""

from __future__ import annotations

from bottleneckd.diagnosis.job_gpus import job_busiest
from bottleneckd.diagnosis.rules.common import BUSY, io_wait, pct, storage_evidence
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.peaks.resolve import PeakTable


def machine_only(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """Without step phases: the SageMaker-style rules on utilization alone."""
    if w.phases is not None:
        return []
    out = []
    busiest_gpu = job_busiest(w, peaks, "gpu_compute", "busy_fraction")  # the job's GPUs, not another tenant's
    gpu_busy = busiest_gpu[1] if busiest_gpu else None
    cpu = w.get("cpu_compute", "host", "utilization")
    iowait = w.get("cpu_compute", "host", "iowait")
    s_util, s_ev, s_kind = storage_evidence(w)
    io, io_ev = io_wait(w)  # peak-free: threads in disk wait, I/O stalls, disk busy time
    if gpu_busy is not None and gpu_busy < 0.1:
        if cpu is not None and cpu > 0.9:
            out.append(
                Finding("cpu_compute", "data", 0.75, (f"GPU busy {pct(gpu_busy)} while CPUs are {pct(cpu)} busy",))
            )
        if (iowait or 0) > 0.5 or s_util >= BUSY or io >= 0.5:
            out.append(
                Finding(
                    "storage_bandwidth",
                    "data",
                    0.75,
                    tuple([f"GPU busy {pct(gpu_busy)} with iowait {pct(iowait)}"] + s_ev + io_ev),
                )
            )
    elif gpu_busy is None:
        if s_util >= BUSY or (iowait or 0) > 0.3 or io >= 0.5:
            out.append(
                Finding(
                    "storage_bandwidth",
                    "data",
                    0.6 * max(0.6, min(1.0, max(s_util / 0.8, io))),
                    tuple(s_ev + io_ev + ([f"iowait {pct(iowait)}"] if iowait is not None else [])),
                )
            )
    nic = w.busiest("inter_node_interconnect")
    if nic is not None and nic[1] >= BUSY:
        out.append(
            Finding(
                "inter_node_interconnect",
                "communication",
                min(1.0, nic[1]),
                (f"{nic[0]} at {pct(nic[1])} of its line rate",),
            )
        )
    nvl = job_busiest(w, peaks, "inter_gpu_interconnect")
    if nvl is not None and nvl[1] >= BUSY:
        out.append(
            Finding(
                "inter_gpu_interconnect", "communication", min(1.0, nvl[1]), (f"{nvl[0]} at {pct(nvl[1])} of its peak",)
            )
        )
    net = w.busiest("storage_network_bandwidth")
    if net is not None and net[1] >= BUSY:
        out.append(
            Finding(
                "storage_network_bandwidth",
                "data",
                min(1.0, net[1]),
                (f"network file system {net[0]} at {pct(net[1])} of the link",),
            )
        )
    return out
