"""GPU compute vs GPU memory bandwidth vs launch/host overhead, decided per GPU of the job.

- The job's GPUs: those whose UUID the hook reports (``cuda_uuids``), else those where NVML's
  process lists show a process of the job (``job_process``); other tenants' GPUs are left out.
  Unknown (no hook, no process lists, another PID namespace): every GPU, said in the evidence.
- GPM (Hopper and later): DRAM bandwidth against the *busiest* pipe (tensor, FP32, FP16, FP64,
  integer), so an fp32 job with no tensor-core use is not memory-bound at DRAM 60% and SM 95%.
- The roofline (achieved FLOP/s and operand bytes/s, section 2.3) against the peak of the path
  the job runs (peaks/select.py: autocast dtype, parameter dtype, allow_tf32, fp64), with the
  near-peak floor: below 4% of both peaks the step is bound by overhead, not by the roofline; with
  the host main thread's own CPU as evidence this is named as kernel launches / host-side Python.
  (A main thread spinning inside a CUDA synchronisation also reads busy: the floor is only
  applied while the GPU's SMs are mostly idle, where that cannot be the explanation.)
"""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import (
    DRAM_PRACTICAL_MAX,
    NEAR_PEAK_FLOOR,
    ONE_CORE,
    SM_EFFICIENT,
    compute_share,
    pct,
    runs_on_gpu,
)
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED
from bottleneckd.model.units import fmt_value
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.peaks.select import compute_peak

PIPES = ("tensor_activity", "fp32_activity", "fp16_activity", "fp64_activity", "integer_activity")
LOW_SM = 0.5  # SM activity below this: the SMs are mostly idle


def _uuid_key(u: str | None) -> str:
    return (u or "").split("-", 1)[-1].lower()  # "GPU-<hex>" / "MIG-<hex>": compare the identity, not the prefix


def job_gpus(w: WindowStats, peaks: PeakTable) -> tuple[list[str], str]:
    """The GPUs the job runs on (the CUDA UUIDs its hook reports, else its processes in NVML's
    process lists), and a note when that is not known."""
    devs = w.devices("gpu_compute")
    uuids = (w.phases.facts.get("cuda_uuids") if w.phases else None) or ()
    if uuids:
        of = {p.device: _uuid_key(p.uuid) for p in peaks.for_resource("gpu_compute") if p.uuid}
        mine = [d for d in devs if of.get(d) in {_uuid_key(u) for u in uuids}]
        if mine:
            return mine, ""
    seen = {d: w.get("gpu_compute", d, "job_process") for d in devs}
    known = {d: v for d, v in seen.items() if v is not None}
    if not known:
        return (
            devs,
            "which GPUs are the job's is unknown (no CUDA UUIDs from the hook, no NVML process list): every GPU considered",
        )
    mine = [d for d, v in known.items() if v > 0]
    if not mine:
        return devs, "no job process in NVML's process lists (another PID namespace?): every GPU considered"
    return mine, ""


def gpu_compute(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    comp_share = compute_share(w)
    if comp_share is not None and comp_share < 0.5:
        return []
    if not runs_on_gpu(w):
        return []
    devs, note = job_gpus(w, peaks)
    base = [f"forward+backward+optimizer {pct(comp_share)} of step time"] if comp_share is not None else []
    if note:
        base.append(note)
    several = len(w.devices("gpu_compute")) > 1
    out: list[Finding] = []
    for dev in devs:
        out += _one_gpu(w, peaks, dev, base + ([f"on {dev}"] if several else []))
    return out


def _one_gpu(w: WindowStats, peaks: PeakTable, dev: str, gev: list[str]) -> list[Finding]:
    facts = w.phases.facts if w.phases else {}
    g = w.get
    sm, busy = g("gpu_compute", dev, "sm_activity"), g("gpu_compute", dev, "busy_fraction")
    dram = g("gpu_memory_bandwidth", dev, "utilization")
    pipes = {k.split("_")[0]: v for k in PIPES if (v := g("gpu_compute", dev, k)) is not None}
    busiest = max(pipes.items(), key=lambda kv: kv[1]) if pipes else None
    main = g("cpu_compute", "job", "main_busy_cores")
    act = (
        f"SM activity {pct(sm)}"
        + ("".join(f", {k} {pct(v)}" for k, v in pipes.items()) if pipes else "")
        + f", DRAM {pct(dram)}"
    )

    # the roofline with the peak of the job's own path, and its floor
    flops, byts = facts.get("achieved_flops"), facts.get("achieved_bytes_per_second")
    cpk = compute_peak(peaks, dev, facts)
    bw = peaks.get("gpu_memory_bandwidth", dev)
    peak_b = bw.value if bw is not None else None
    f_ratio = flops / cpk.value if flops is not None and cpk.value else None
    b_ratio = byts / peak_b if byts is not None and peak_b else None
    roof = []
    if f_ratio is not None and b_ratio is not None:
        roof = [
            f"achieved {fmt_value(flops, 'FLOP/s')} = {pct(f_ratio)} of the {cpk.path} peak ({cpk.why}), "
            f"{fmt_value(byts, 'B/s')} = {pct(b_ratio)} of memory bandwidth"
        ]
    elif flops is not None and cpk.value is None:
        roof = [f"roofline not used: {cpk.why}"]

    rival = busiest[1] if busiest is not None else (sm or 0.0)  # what DRAM must outdo: the busiest pipe, else the SMs
    if dram is not None and dram >= 0.6 and dram >= rival:
        why = f"DRAM bandwidth {pct(dram)} of the theoretical peak" + (
            f", above the busiest pipe ({busiest[0]} {pct(busiest[1])})" if busiest else ""
        )
        return [
            Finding(
                "gpu_memory_bandwidth",
                "compute",
                min(1.0, dram / DRAM_PRACTICAL_MAX),
                tuple(gev + [why, act] + roof),
                None,
            )
        ]
    sm_idle = sm is not None and sm < LOW_SM
    below_floor = f_ratio is not None and b_ratio is not None and max(f_ratio, b_ratio) < NEAR_PEAK_FLOOR
    if (sm_idle and busy is not None and busy >= 0.6) or (below_floor and (sm is None or sm_idle)):
        ev = gev + roof + [act] if sm is not None else gev + roof
        if busy is not None and sm_idle:
            ev.append(f"NVML 'GPU utilization' {pct(busy)} but SM activity only {pct(sm)}: kernels are small or serial")
        if below_floor:
            ev.append(
                f"neither FLOP/s nor bytes/s is near its peak (both under {pct(NEAR_PEAK_FLOOR)}): overhead, not the roofline, limits the step"
            )
        if main is not None and main >= ONE_CORE:
            ev.append(
                f"the training process's main thread at {main:.2f} of a core: kernel launches / host-side Python limit the step"
            )
            return [Finding("cpu_compute", "compute", 0.75, tuple(ev), None)]
        ev.append(
            "main thread CPU "
            + ("unknown" if main is None else f"at {main:.2f} of a core, not saturated")
            + ": launch latency, synchronisation or tiny kernels; a profiler trace would tell which"
        )
        return [Finding(UNDETERMINED, "compute", 0.5, tuple(ev), None)]

    if sm is not None and sm >= LOW_SM:
        tev = gev + [act] + roof
        thr = [
            k.split(":", 1)[1]
            for (r, d, k), s in w.stats.items()
            if r == "gpu_compute" and d == dev and k.startswith("throttle:") and s.mean >= 0.5
        ]
        clock = g("gpu_compute", dev, "sm_clock_ratio")
        if thr and clock is not None and clock < 0.9:
            tev.append(f"clocks throttled ({', '.join(thr)}): SM clock at {pct(clock)} of its maximum")
        return [Finding("gpu_compute", "compute", min(1.0, sm / SM_EFFICIENT), tuple(tev), None)]
    if f_ratio is not None and b_ratio is not None:  # no GPM: the roofline with the job's own peak decides
        if b_ratio > f_ratio:
            return [Finding("gpu_memory_bandwidth", "compute", min(1.0, 0.5 + b_ratio), tuple(gev + roof), None)]
        return [Finding("gpu_compute", "compute", min(1.0, 0.5 + f_ratio), tuple(gev + roof), None)]
    if sm is None and busy is not None and busy >= 0.8:
        return [
            Finding(
                "gpu_compute",
                "compute",
                0.5,
                tuple(gev + roof + [f"GPU busy {pct(busy)} of the time (SM activity unknown: no GPM)"]),
                None,
            )
        ]
    return []
