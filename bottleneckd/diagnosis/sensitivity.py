"""The figure each threshold is compared with (``Threshold.statistic``), computed from a window by
the rules' own helpers, and a run's figures summarised over its training windows: what the
sensitivity table of ``docs/thresholds.md`` puts beside each threshold (``scripts/eval.py`` records
them from each run's trace; ``scripts/thresholds_table.py`` writes the table).

A figure the window does not have (no GPU, no peak, no step phases) is ``None`` and left out.
"""

from __future__ import annotations

import re
import statistics
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from bottleneckd.diagnosis.classify import findings, largest_utilization
from bottleneckd.diagnosis.job_gpus import job_busiest, largest_other_process, window_job_gpus
from bottleneckd.diagnosis.pipeline import Pipeline
from bottleneckd.diagnosis.rules.capacity import job_memory_share
from bottleneckd.diagnosis.rules.comm_cost import comm_cost
from bottleneckd.diagnosis.rules.common import (
    arithmetic_intensity,
    compute_share,
    other_share,
    runs_on_gpu,
    stage_share,
)
from bottleneckd.diagnosis.rules.communication import usual_port_rate
from bottleneckd.diagnosis.rules.cpu_compute import MIN_CORES_RAN
from bottleneckd.diagnosis.rules.cpu_state import cpu_state
from bottleneckd.diagnosis.rules.gpu_one import compute_idle, idle_in_compute, pcie_copy_share
from bottleneckd.diagnosis.rules.storage import io_wait, storage_signs
from bottleneckd.diagnosis.rules.transfer import link_while_copying
from bottleneckd.diagnosis.straggler import busy_excess, excess, find_straggler, intervals, rank_figures
from bottleneckd.diagnosis.thresholds import REGISTRY, STRAGGLER_LAST
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.links import rdma_port
from bottleneckd.model.resources import UNDETERMINED, Phase, Resource
from bottleneckd.model.sample import Sample
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.peaks.select import compute_peak

Figure = Callable[[WindowStats, PeakTable], "float | None"]

LINKS_AND_DISKS = (
    Resource.STORAGE_BANDWIDTH,
    Resource.STORAGE_NETWORK_BANDWIDTH,
    Resource.INTER_NODE_INTERCONNECT,
    Resource.INTER_GPU_INTERCONNECT,
    Resource.CPU_GPU_INTERCONNECT,
)


def _share(*names: str) -> Figure:
    def f(w: WindowStats, peaks: PeakTable) -> float | None:
        p = w.phases
        if p is None or not p.steps:
            return None
        return sum(p.share(n) or 0.0 for n in names)

    return f


def _fact(name: str) -> Figure:
    def f(w: WindowStats, peaks: PeakTable) -> float | None:
        v = w.phases.facts.get(name) if w.phases else None
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    return f


def _get(resource: str, device: str | None, metric: str) -> Figure:
    return lambda w, peaks: w.get(resource, device, metric)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _cpu_busy_share(w: WindowStats, peaks: PeakTable) -> float | None:
    cpu = cpu_state(w)
    return cpu.busy / cpu.cores if cpu.busy is not None else cpu.host


def _comm_cost_share(w: WindowStats, peaks: PeakTable) -> float | None:
    cost = comm_cost(w)
    return cost.share if cost is not None else None


def _disk_busy(w: WindowStats, peaks: PeakTable) -> float | None:
    d = storage_signs(w).busy_dev
    return d[1] if d is not None else None


def _device_utilization(w: WindowStats, peaks: PeakTable) -> float | None:
    found = [b[1] for r in LINKS_AND_DISKS if (b := w.busiest(r)) is not None]
    return max(found) if found else None


def _nfs_over_local(w: WindowStats, peaks: PeakTable) -> float | None:
    nfs = w.busiest(Resource.STORAGE_NETWORK_BANDWIDTH, "throughput")
    if nfs is None:
        return None
    local = sum(
        s.mean
        for (r, d, m), s in w.stats.items()
        if r == Resource.STORAGE_BANDWIDTH and m == "read_bytes_per_second" and d not in ("job", "host")
    )
    return nfs[1] / max(local, 1.0)


def _nfs_over_nic(w: WindowStats, peaks: PeakTable) -> float | None:
    """The busiest network file system's bytes over the busiest NIC's busier direction's."""
    nfs = w.busiest(Resource.STORAGE_NETWORK_BANDWIDTH, "throughput")
    nic = w.busiest(Resource.INTER_NODE_INTERCONNECT)
    if nfs is None or nic is None:
        return None
    tx = w.get(Resource.INTER_NODE_INTERCONNECT, nic[0], "tx_bytes_per_second") or 0.0
    rx = w.get(Resource.INTER_NODE_INTERCONNECT, nic[0], "rx_bytes_per_second") or 0.0
    return nfs[1] / max(tx, rx) if max(tx, rx) > 0 else None


def _roofline_peak_ratio(w: WindowStats, peaks: PeakTable) -> float | None:
    """The nearer of the achieved FLOP/s and bytes/s to its peak (CPU, or the job's first GPU)."""
    facts = w.phases.facts if w.phases else {}
    flops, byts = facts.get("achieved_flops"), facts.get("achieved_bytes_per_second")
    devs = window_job_gpus(w, peaks).devices if runs_on_gpu(w, peaks) else ()
    if devs:
        dev = devs[0]
        peak_c = compute_peak(peaks, dev, facts).value
        bw = peaks.get(Resource.GPU_MEMORY_BANDWIDTH, dev)
        peak_b = bw.value if bw is not None else None
    else:
        peak_c, peak_b = peaks.value(Resource.CPU_COMPUTE, "cpu"), peaks.value(Resource.CPU_MEMORY_BANDWIDTH, "host")
    f, b = _ratio(flops, peak_c), _ratio(byts, peak_b)
    return max(f, b) if f is not None and b is not None else None


def _ridge_over_intensity(w: WindowStats, peaks: PeakTable) -> float | None:
    """A CPU job's ridge point (its peaks' FLOP/s over bytes/s) over the step's arithmetic intensity."""
    ai = arithmetic_intensity(w.phases.facts) if w.phases else None
    peak_c, peak_b = peaks.value(Resource.CPU_COMPUTE, "cpu"), peaks.value(Resource.CPU_MEMORY_BANDWIDTH, "host")
    if runs_on_gpu(w, peaks) or not ai or not peak_c or not peak_b:
        return None
    return peak_c / peak_b / float(ai)


def _operand_bytes_per_core(w: WindowStats, peaks: PeakTable) -> float | None:
    """As the CPU rule computes it: achieved operand bytes/s per core the job ran on."""
    byts = w.phases.facts.get("achieved_bytes_per_second") if w.phases else None
    if byts is None:
        return None
    cpu = cpu_state(w)
    ran = max(cpu.busy if cpu.busy is not None else (cpu.host or 0.0) * cpu.cores, MIN_CORES_RAN)
    return float(byts) / min(ran, cpu.cores)


def _memory_used(w: WindowStats, peaks: PeakTable) -> float | None:
    found = [
        v
        for v in (w.get(Resource.CPU_MEMORY, "host", "utilization"), w.get(Resource.GPU_MEMORY, None, "utilization"))
        if v
    ]
    return max(found) if found else None


def _swap(w: WindowStats, peaks: PeakTable) -> float | None:
    i = w.get(Resource.CPU_MEMORY, "host", "swap_in_bytes_per_second")
    o = w.get(Resource.CPU_MEMORY, "host", "swap_out_bytes_per_second")
    return None if i is None and o is None else (i or 0.0) + (o or 0.0)


def _throttle(w: WindowStats, peaks: PeakTable) -> float | None:
    found = [s.mean for (r, _, m), s in w.stats.items() if r == Resource.GPU_COMPUTE and m.startswith("throttle:")]
    return max(found) if found else None


def _copy_over_idle(w: WindowStats, peaks: PeakTable) -> float | None:
    """The PCIe copy-time estimate of the job's first GPU over its idle share inside the compute
    phases (where that case applies: gpu_one.idle_in_compute)."""
    for dev in window_job_gpus(w, peaks).devices:
        copies = pcie_copy_share(w, dev)
        found = idle_in_compute(w, w.over_phases(Resource.GPU_COMPUTE, dev, "busy_fraction"))
        if copies is not None and found is not None and found[1] > 0:
            return copies / found[1]
    return None


def _idle_in_compute(w: WindowStats, peaks: PeakTable) -> float | None:
    """The share of the interval the job's first GPU idles inside the compute phases (gpu_one.compute_idle)."""
    for dev in window_job_gpus(w, peaks).devices:
        found = compute_idle(w, w.over_phases(Resource.GPU_COMPUTE, dev, "busy_fraction"))
        if found is not None:
            return found[1]
    return None


def _slow_port_bytes(w: WindowStats, peaks: PeakTable) -> float | None:
    """The busiest InfiniBand port's bytes/s over the median of the usual-rate ports', where it runs
    below their rate (rules/communication.py degraded_port)."""
    ports = {
        d: (
            s.mean,
            w.get(Resource.INTER_NODE_INTERCONNECT, d, "throughput"),
            w.get(Resource.INTER_NODE_INTERCONNECT, d, "peak"),
        )
        for (r, d, m), s in w.stats.items()
        if r == Resource.INTER_NODE_INTERCONNECT and m == "utilization" and rdma_port(d)
    }
    usual = usual_port_rate(w)[0]
    if not ports or not usual:
        return None
    port = max(ports, key=lambda d: ports[d][0])
    rails = sorted(b for _, b, rate in ports.values() if b is not None and rate and round(rate) == round(usual))
    mine = ports[port][1]
    if mine is None or not rails or not rails[len(rails) // 2] or round(ports[port][2] or usual) >= round(usual):
        return None
    return mine / rails[len(rails) // 2]


def _stage_share(w: WindowStats, peaks: PeakTable) -> float | None:
    """The share of the step of the strongest finding's stage (what headroom() is given)."""
    fs = findings(w, peaks)
    return stage_share(w, fs[0].stage) if fs else None


def _score(rank: int) -> Figure:
    def f(w: WindowStats, peaks: PeakTable) -> float | None:
        fs = findings(w, peaks)
        return fs[rank].score if len(fs) > rank else None

    return f


def _largest_utilization(w: WindowStats, peaks: PeakTable) -> float | None:
    lu = largest_utilization(w)
    return lu[2] if lu is not None else None


def _missing_flops_ratio(w: WindowStats, peaks: PeakTable) -> float | None:
    """From the hook's ``flops_unknown`` text ("up to 4.4e+05x the FLOPs counted in ..."): the FLOPs
    operators with no formula could hide, over those counted; known only when it reached the threshold."""
    text = w.phases.facts.get("flops_unknown") if w.phases else None
    m = re.match(r"up to ([0-9.e+-]+|inf)x", str(text)) if text else None
    return float(m.group(1)) if m else None


#: statistic name -> its figure in one window
def _link_while_communicating(w: WindowStats, peaks: PeakTable) -> float | None:
    """The job's busiest inter-GPU link over the interval, over the communication's share."""
    link = job_busiest(w, peaks, Resource.INTER_GPU_INTERCONNECT)
    share = w.phases.share(Phase.COMMUNICATION) if w.phases else None
    return link[1] / share if link is not None and share else None


WINDOW_STATISTICS: dict[str, Figure] = {
    "data_share": _share(Phase.DATA_WAIT, Phase.FILE_IO),
    "transfer_share": _share(Phase.TRANSFER),
    "comm_share": _share(Phase.COMMUNICATION),
    "comm_cost_share": _comm_cost_share,
    "compute_share": lambda w, peaks: compute_share(w),
    "other_share": lambda w, peaks: other_share(w),
    "cpu_busy_share": _cpu_busy_share,
    "hottest_thread": lambda w, peaks: cpu_state(w).hot,
    "cpu_pressure": lambda w, peaks: cpu_state(w).pressure,
    "runqueue_wait_cores": lambda w, peaks: cpu_state(w).waiting,
    "outside_busy_cores": lambda w, peaks: cpu_state(w).outside,
    "usable_core_shortfall": lambda w, peaks: (
        None if (st := cpu_state(w)).host_cores is None else max(0.0, st.host_cores - st.cores)
    ),
    "outside_process_top_cores": lambda w, peaks: max((c for _, c in cpu_state(w).outside_named), default=None),
    "loader_workers": lambda w, peaks: cpu_state(w).n_workers,
    "job_busy_cores": lambda w, peaks: cpu_state(w).busy,
    "threads_in_disk_wait": lambda w, peaks: storage_signs(w).d,
    "io_pressure": lambda w, peaks: storage_signs(w).psi,
    "iowait": lambda w, peaks: storage_signs(w).iowait,
    "disk_busy": _disk_busy,
    "job_read_bytes_per_second": lambda w, peaks: storage_signs(w).reads,
    "read_miss_ratio": lambda w, peaks: _ratio(storage_signs(w).reads, storage_signs(w).chars),
    "bytes_per_read_call": lambda w, peaks: _ratio(storage_signs(w).reads, storage_signs(w).calls),
    "device_utilization": _device_utilization,
    "nfs_over_local_reads": _nfs_over_local,
    "nfs_over_nic_bytes": _nfs_over_nic,
    "job_write_bytes_per_second": _get(Resource.STORAGE_BANDWIDTH, "job", "write_bytes_per_second"),
    "other_idle_share": _fact("other_idle_share"),
    "roofline_peak_ratio": _roofline_peak_ratio,
    "ridge_over_intensity": _ridge_over_intensity,
    "operand_bytes_per_core": _operand_bytes_per_core,
    "cpu_memory_bandwidth_utilization": _get(Resource.CPU_MEMORY_BANDWIDTH, "host", "utilization"),
    "low_intensity_op_share": _fact("low_intensity_op_share"),
    "steps_seen": lambda w, peaks: float(w.steps_seen),
    "rank_side_thread_share": lambda w, peaks: _ratio(
        w.get(Resource.CPU_COMPUTE, "job", "rank_side_thread_cores"),
        w.get(Resource.CPU_COMPUTE, "job", "rank_busy_cores"),
    ),
    "sm_activity": _get(Resource.GPU_COMPUTE, None, "sm_activity"),
    "gpu_dram_utilization": _get(Resource.GPU_MEMORY_BANDWIDTH, None, "utilization"),
    "gpu_busy_fraction": _get(Resource.GPU_COMPUTE, None, "busy_fraction"),
    "pcie_while_copying": lambda w, peaks: None if (c := link_while_copying(w, peaks)) is None else c[1],
    "gpu_memory_busy_fraction": _get(Resource.GPU_MEMORY_BANDWIDTH, None, "memory_busy_fraction"),
    "gpu_throttle_share": _throttle,
    "pcie_copy_over_gpu_idle": _copy_over_idle,
    "gpu_idle_in_compute": _idle_in_compute,
    "job_memory_share": lambda w, peaks: job_memory_share(w),
    "co_tenant_bytes": lambda w, peaks: max(
        (b for dev in window_job_gpus(w, peaks).devices if (b := largest_other_process(w, dev)) is not None),
        default=None,
    ),
    "ports_at_usual_rate": lambda w, peaks: float(usual_port_rate(w)[1]) or None,
    "slow_port_bytes_over_rails": _slow_port_bytes,
    "sm_clock_ratio": _get(Resource.GPU_COMPUTE, None, "sm_clock_ratio"),
    "memory_used": _memory_used,
    "storage_used": _get(Resource.STORAGE_CAPACITY, None, "utilization"),
    "swap_bytes_per_second": _swap,
    "memory_pressure": _get(Resource.CPU_MEMORY, "host", "pressure_some"),
    "host_cpu_utilization": _get(Resource.CPU_COMPUTE, "host", "utilization"),
    "io_wait_score": lambda w, peaks: io_wait(w)[0],
    "verdict_stage_share": _stage_share,
    "comm_thread_cores": _get(Resource.CPU_COMPUTE, "job", "comm_thread_cores"),
    "optimizer_share": _share(Phase.OPTIMIZER),
    "link_while_communicating": _link_while_communicating,
    "data_over_comm": lambda w, peaks: _ratio(
        _share(Phase.DATA_WAIT, Phase.FILE_IO)(w, peaks), _share(Phase.COMMUNICATION)(w, peaks)
    ),
    "top_score": _score(0),
    "second_score": _score(1),
    "largest_utilization": _largest_utilization,
    "missing_flops_ratio": _missing_flops_ratio,
}

#: figures of the run as a whole (the run's verdict over its windows, the ranks' stragglers)
RUN_STATISTICS = (
    "dominant_held_intervals",
    "undetermined_over_dominant",
    "straggler_excess",
    "straggler_busy_excess",
    "straggler_slowest_share",
    "straggler_last_share",
    "straggler_contention_share",
)


def summary(values: list[float]) -> dict[str, Any]:
    """median, min, max and last of a figure over the windows that had it, and how many did."""
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "last": values[-1],
        "windows": len(values),
    }


def _stragglers(recent: Iterable[Sample]) -> dict[str, float] | None:
    """The slowest rank's figures over the recent intervals (what find_straggler judges)."""
    window = intervals(recent)
    figs = rank_figures(window)
    if len(figs) <= 1 or not window:
        return None
    top = max(figs, key=lambda f: f.busy)
    n = len(window)
    out = {
        "straggler_excess": excess(top, figs),
        "straggler_busy_excess": busy_excess(top, figs),
        "straggler_slowest_share": top.slowest / n,
        "straggler_last_share": top.last_arrival / n,
    }
    found = find_straggler(recent)
    if found is not None and found.contention is not None and found.step_time_lost > 0:
        out["straggler_contention_share"] = found.contention / found.step_time_lost
    return out


def replay_statistics(peaks: PeakTable, samples: Iterable[Sample]) -> dict[str, dict[str, Any]]:
    """Replay a run's samples through the pipeline; each statistic over the windows in which
    training steps were reported (start-up and tear-down left out)."""
    pipeline = Pipeline(peaks)
    values: dict[str, list[float]] = {}
    held: dict[str, float] = {}
    interval = 0.0
    recent: deque[Sample] = deque(maxlen=STRAGGLER_LAST)
    for sample in samples:
        snap = pipeline(sample)
        w = snap.stats
        if sample.ranks:
            recent.append(sample)
        if w.phases is None or not w.phases.steps:
            continue
        interval = max(interval, sample.interval)
        held[snap.verdict.resource] = held.get(snap.verdict.resource, 0.0) + sample.interval
        for name, figure in WINDOW_STATISTICS.items():
            v = figure(w, peaks)
            if v is not None:
                values.setdefault(name, []).append(float(v))
        for name, v in (_stragglers(recent) or {}).items():
            values.setdefault(name, []).append(v)
    determined = {r: s for r, s in held.items() if r != UNDETERMINED}
    if determined and interval > 0:
        longest = max(determined.values())
        values["dominant_held_intervals"] = [longest / interval]
        values["undetermined_over_dominant"] = [held.get(UNDETERMINED, 0.0) / longest]
    return {name: summary(v) for name, v in values.items() if v}


def unknown_statistics() -> list[str]:
    """Statistics named by a registered threshold that nothing here computes (a test keeps it empty)."""
    known = set(WINDOW_STATISTICS) | set(RUN_STATISTICS)
    return sorted({t.statistic for t in REGISTRY.values() if t.statistic and t.statistic not in known})
