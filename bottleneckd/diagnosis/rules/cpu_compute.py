"""CPU compute vs CPU memory bandwidth on CPU training."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import NEAR_PEAK_FLOOR, compute_share, pct, runs_on_gpu
from bottleneckd.model.units import fmt_value
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.peaks.resolve import PeakTable


def cpu_compute(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """CPU training: CPU compute vs DRAM bandwidth vs per-operator overhead, from achieved FLOP/s
    and bytes/s against the peaks (operand sizes, section 2.3) or the memory-bandwidth sampler."""
    p = w.phases
    comp_share = compute_share(w)
    if comp_share is not None and comp_share < 0.5:
        return []
    facts = p.facts if p else {}
    if runs_on_gpu(w):
        return []
    ev = [f"forward+backward+optimizer {pct(comp_share)} of step time"] if comp_share is not None else []
    flops, byts = facts.get("achieved_flops"), facts.get("achieved_bytes_per_second")
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
        cev.append(f"host CPU {pct(host)} busy")
    if f_ratio is not None and b_ratio is not None:
        cev.append(f"achieved {fmt_value(flops, 'FLOP/s')} = {pct(f_ratio)} of compute peak, {fmt_value(byts, 'B/s')} = {pct(b_ratio)} of memory bandwidth")
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
        return [Finding("cpu_memory_bandwidth", "compute", min(1.0, mbw / 0.8), tuple(cev + [f"memory bandwidth {pct(mbw)} of peak"]), None)]
    low = facts.get("low_intensity_op_share")
    if low is not None and low >= 0.6:
        cev.append(f"{pct(low)} of forward stack samples in normalisation/elementwise operators: bytes moved, few multiply-adds (operand size, section 2.3)")
        return [Finding("cpu_memory_bandwidth", "compute", 0.5 + 0.3 * low, tuple(cev), None)]
    busy = max((main or 0.0) / cores, host or 0.0)
    if comp_share is not None or busy >= 0.8:
        return [Finding("cpu_compute", "compute", 0.55 + 0.35 * min(1.0, busy), tuple(cev), None)]
    return []
