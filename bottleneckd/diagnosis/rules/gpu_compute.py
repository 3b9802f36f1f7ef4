"""GPU compute vs GPU memory bandwidth (owned by the gpu engineer)."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import DRAM_PRACTICAL_MAX, SM_EFFICIENT, compute_share, pct, runs_on_gpu
from bottleneckd.model.units import fmt_value
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.peaks.resolve import PeakTable


def gpu_compute(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """GPU compute vs GPU memory bandwidth, told apart by SM/tensor/DRAM activity (GPM) or by
    achieved FLOP/s and bytes/s against the peaks (operand sizes, section 2.3)."""
    p = w.phases
    comp_share = compute_share(w)
    if comp_share is not None and comp_share < 0.5:
        return []
    facts = p.facts if p else {}
    if not runs_on_gpu(w):
        return []
    out: list[Finding] = []
    ev = [f"forward+backward+optimizer {pct(comp_share)} of step time"] if comp_share is not None else []
    flops, byts = facts.get("achieved_flops"), facts.get("achieved_bytes_per_second")
    sm = w.get("gpu_compute", None, "sm_activity")
    tensor = w.get("gpu_compute", None, "tensor_activity")
    busy = w.get("gpu_compute", None, "busy_fraction")
    dram = w.get("gpu_memory_bandwidth", None, "utilization")
    gev = list(ev)
    if busy is not None and busy >= 0.9 and sm is not None and sm < 0.5:
        gev.append(f"NVML 'GPU utilization' {pct(busy)} but SM activity only {pct(sm)}: kernels are small or serial, not compute-bound")
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
                           tuple(gev + [f"DRAM bandwidth {pct(dram)} of peak", f"SM activity {pct(sm)}, tensor activity {pct(tensor)}"]), None))
    elif b_ratio is not None and f_ratio is not None and b_ratio > f_ratio:
        out.append(Finding("gpu_memory_bandwidth", "compute", min(1.0, 0.5 + b_ratio),
                           tuple(gev + [f"achieved {fmt_value(byts, 'B/s')} = {pct(b_ratio)} of memory bandwidth vs {fmt_value(flops, 'FLOP/s')} = {pct(f_ratio)} of compute"]), None))
    if sm is not None and sm >= 0.5 and not out:
        tev = gev + [f"SM activity {pct(sm)}, tensor activity {pct(tensor)}, DRAM {pct(dram)}"]
        thr = [k.split(":", 1)[1] for (r, _, k), s in w.stats.items() if r == "gpu_compute" and k.startswith("throttle:") and s.mean >= 0.5]
        clock = w.get("gpu_compute", None, "sm_clock_ratio")
        if thr and clock is not None and clock < 0.9:
            tev.append(f"clocks throttled ({', '.join(thr)}): SM clock at {pct(clock)} of its maximum")
        out.append(Finding("gpu_compute", "compute", min(1.0, sm / SM_EFFICIENT), tuple(tev), None))
    elif sm is None and busy is not None and busy >= 0.8 and not out:
        out.append(Finding("gpu_compute", "compute", 0.5, tuple(gev + [f"GPU busy {pct(busy)} of the time (SM activity unknown: no GPM)"]), None))
    return out
