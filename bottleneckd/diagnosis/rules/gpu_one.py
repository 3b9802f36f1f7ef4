"""One GPU of the job judged: compute vs memory bandwidth vs launch/host overhead, or undetermined.

- SM and pipe activity and DRAM bandwidth from GPM (Hopper and later) or a dcgm-exporter's
  profiling fields: DRAM against the *busiest* pipe (tensor, FP32, FP16, FP64, integer), so an
  fp32 job with no tensor-core use is not memory-bound at DRAM 60% and SM 95%.
- The roofline (achieved FLOP/s and operand bytes/s, section 2.3) of the rank on this GPU
  against the peak of its own path (peaks/select.py), with the near-peak floor: below 4% of both
  peaks the step is bound by overhead, not by the roofline.
- Launch overhead: the threads that launch the rank's kernels (its main thread and the autograd
  engine's device thread, which runs backward on CUDA) near a core while the SMs are mostly idle;
  a step replayed from CUDA graphs has no per-kernel launch cost (fact ``cuda_graphs``).
- Without any of those (no GPM, no dcgm-exporter, no hook: attach on an A100), NVML's busy
  fraction says only that some kernel ran: it reads ~100% for compute-bound, memory-bound and
  tiny-kernel jobs alike. NVML's memory-busy fraction near the practical DRAM maximum names memory
  bandwidth; otherwise the GPU is undetermined, with what would tell.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bottleneckd.diagnosis.rules.common import DRAM_PRACTICAL_MAX, NEAR_PEAK_FLOOR, ONE_CORE, SM_EFFICIENT, pct
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED
from bottleneckd.model.units import fmt_value
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.peaks.select import compute_peak

PIPES = ("tensor_activity", "fp32_activity", "fp16_activity", "fp64_activity", "integer_activity")
LOW_SM = 0.5  # SM (or busiest pipe) activity below this: the SMs are mostly idle
DRAM_BOUND = 0.6  # DRAM activity at or above this, and above every pipe, names memory bandwidth
#: NVML's memory-busy time fraction at or above this (DCGM's practical DRAM maximum, DRAM_PRACTICAL_MAX):
#: device memory in use nearly whenever a kernel runs. A time fraction, not bandwidth: a heuristic
#: standing in for DRAM activity where nothing measures it, scored below what GPM or DCGM evidence gets
NVML_MEMORY_BUSY_HIGH = DRAM_PRACTICAL_MAX
NVML_MEMORY_BUSY_SCORE = 0.6
#: the score of "undetermined" for a GPU whose activity nothing measures: the classifier's ACTIVE
#: (0.5), so that a rule that does see its stage (data wait, communication) still wins
UNKNOWN_ACTIVITY_SCORE = 0.5
WHAT_WOULD_TELL = (
    "SM and DRAM activity would tell: GPM (Hopper and later), a dcgm-exporter's profiling fields "
    "(BOTTLENECKD_DCGM_URL), or the hook's roofline (bottleneckd run, or watch() in the script)"
)


def one_gpu(w: WindowStats, peaks: PeakTable, dev: str, facts: Mapping[str, Any], gev: list[str]) -> list[Finding]:
    """The finding for GPU ``dev``, with ``facts`` of the rank that runs on it."""
    g = w.get
    sm, busy = g("gpu_compute", dev, "sm_activity"), g("gpu_compute", dev, "busy_fraction")
    dram = g("gpu_memory_bandwidth", dev, "utilization")
    pipes = {k.split("_")[0]: v for k in PIPES if (v := g("gpu_compute", dev, k)) is not None}
    busiest = max(pipes.items(), key=lambda kv: kv[1]) if pipes else None
    source = " (dcgm-exporter)" if g("gpu_compute", dev, "activity_source:dcgm-exporter") else ""
    act = (
        f"SM activity {pct(sm)}"
        + ("".join(f", {k} {pct(v)}" for k, v in pipes.items()) if pipes else "")
        + f", DRAM {pct(dram)}{source}"
    )
    measured = sm is not None or busiest is not None or dram is not None
    roof, f_ratio, b_ratio = _roofline(peaks, dev, facts)

    rival = busiest[1] if busiest is not None else (sm or 0.0)  # what DRAM must outdo: the busiest pipe, else the SMs
    if dram is not None and dram >= DRAM_BOUND and dram >= rival:
        why = f"DRAM bandwidth {pct(dram)} of the theoretical peak" + (
            f", above the busiest pipe ({busiest[0]} {pct(busiest[1])})" if busiest else ""
        )
        return [
            Finding("gpu_memory_bandwidth", "compute", min(1.0, dram / DRAM_PRACTICAL_MAX), (*gev, why, act, *roof))
        ]
    # the SMs' activity; without SM activity (dcgm-exporter's default counters) a busy pipe shows the
    # SMs at work, but an idle tensor pipe does not show them idle (fp32 runs on other pipes)
    active = sm if sm is not None else (busiest[1] if busiest is not None and busiest[1] >= LOW_SM else None)
    sm_idle = sm is not None and sm < LOW_SM
    below_floor = f_ratio is not None and b_ratio is not None and max(f_ratio, b_ratio) < NEAR_PEAK_FLOOR
    if (sm_idle and busy is not None and busy >= 0.6) or (below_floor and (active is None or sm_idle)):
        return [_overhead(w, gev + roof + ([act] if measured else []), facts, busy, sm, sm_idle, below_floor)]
    if active is not None and active >= LOW_SM:
        tev = [*gev, act, *roof]
        thr = [
            k.split(":", 1)[1]
            for (r, d, k), s in w.stats.items()
            if r == "gpu_compute" and d == dev and k.startswith("throttle:") and s.mean >= 0.5
        ]
        clock = g("gpu_compute", dev, "sm_clock_ratio")
        if thr and clock is not None and clock < 0.9:
            tev.append(f"clocks throttled ({', '.join(thr)}): SM clock at {pct(clock)} of its maximum")
        return [Finding("gpu_compute", "compute", min(1.0, active / SM_EFFICIENT), tuple(tev))]
    if f_ratio is not None and b_ratio is not None:  # no activity measured: the roofline with the job's own peak
        if b_ratio > f_ratio:
            return [Finding("gpu_memory_bandwidth", "compute", min(1.0, 0.5 + b_ratio), (*gev, *roof))]
        return [Finding("gpu_compute", "compute", min(1.0, 0.5 + f_ratio), (*gev, *roof))]
    if busy is not None and busy >= 0.8 and not measured:
        return [_nvml_only(w, dev, gev + roof, busy)]
    if busy is not None and busy >= 0.8 and sm is None:  # some fields measured, none of them decides
        return [
            Finding(
                UNDETERMINED,
                "compute",
                UNKNOWN_ACTIVITY_SCORE,
                (
                    *gev,
                    act,
                    *roof,
                    f"GPU busy {pct(busy)} of the time, but the pipes measured are low and SM activity is unknown: "
                    f"the pipes not measured may be the busy ones; {WHAT_WOULD_TELL}",
                ),
            )
        ]
    return []


def _roofline(peaks: PeakTable, dev: str, facts: Mapping[str, Any]) -> tuple[list[str], float | None, float | None]:
    """The rank's achieved rates against the peaks of its own path: (evidence, FLOP ratio, byte ratio)."""
    flops, byts = facts.get("achieved_flops"), facts.get("achieved_bytes_per_second")
    cpk = compute_peak(peaks, dev, facts)
    bw = peaks.get("gpu_memory_bandwidth", dev)
    peak_b = bw.value if bw is not None else None
    f_ratio = flops / cpk.value if flops is not None and cpk.value else None
    b_ratio = byts / peak_b if byts is not None and peak_b else None
    if f_ratio is not None and b_ratio is not None:
        return (
            [
                f"achieved {fmt_value(flops, 'FLOP/s')} = {pct(f_ratio)} of the {cpk.path} peak ({cpk.why}), "
                f"{fmt_value(byts, 'B/s')} = {pct(b_ratio)} of memory bandwidth"
            ],
            f_ratio,
            b_ratio,
        )
    if flops is not None and cpk.value is None:
        return [f"roofline not used: {cpk.why}"], None, None
    return [], None, None


def _overhead(
    w: WindowStats,
    ev: list[str],
    facts: Mapping[str, Any],
    busy: float | None,
    active: float | None,
    sm_idle: bool,
    below_floor: bool,
) -> Finding:
    """Kernels run but the SMs idle (or neither roofline rate is near its peak): the host's launch
    path when its threads are near a core, else undetermined with what would tell."""
    main = w.get("cpu_compute", "job", "main_busy_cores")
    launch = w.get("cpu_compute", "job", "launch_thread_cores")
    host = launch if launch is not None else main
    if busy is not None and sm_idle:
        ev.append(f"NVML 'GPU utilization' {pct(busy)} but SM activity only {pct(active)}: kernels are small or serial")
    if below_floor:
        ev.append(
            f"neither FLOP/s nor bytes/s is near its peak (both under {pct(NEAR_PEAK_FLOOR)}): overhead, not the "
            "roofline, limits the step"
        )
    who = (
        f"main thread {main:.2f} + autograd device threads {host - main:.2f} of a core"
        if launch is not None and main is not None and launch - main >= 0.05
        else "main thread"
    )
    if facts.get("cuda_graphs"):
        ev.append(
            "the step replays CUDA graphs: no per-kernel launch cost; the idle SMs are small kernels, "
            "synchronisation or host work between replays (a profiler trace would tell)"
        )
        return Finding(UNDETERMINED, "compute", 0.5, tuple(ev))
    if host is not None and host >= ONE_CORE:
        ev.append(
            f"the threads that launch the kernels at {host:.2f} of a core ({who}): kernel launches / "
            "host-side Python limit the step"
        )
        return Finding("cpu_compute", "compute", 0.75, tuple(ev))
    ev.append(
        "kernel-launching threads' CPU "
        + ("unknown" if host is None else f"at {host:.2f} of a core ({who}), not saturated")
        + ": launch latency, synchronisation or tiny kernels; a profiler trace would tell which"
    )
    return Finding(UNDETERMINED, "compute", 0.5, tuple(ev))


def _nvml_only(w: WindowStats, dev: str, ev: list[str], busy: float) -> Finding:
    """Only NVML's busy and memory-busy time fractions for this GPU."""
    mem = w.get("gpu_memory_bandwidth", dev, "memory_busy_fraction")
    why_sm = w.notes.get(("gpu_compute", dev, "sm_activity"), "")
    seen = f"GPU busy {pct(busy)} of the time (NVML: some kernel running, however few SMs it uses)"
    if mem is not None and mem >= NVML_MEMORY_BUSY_HIGH:
        return Finding(
            "gpu_memory_bandwidth",
            "compute",
            NVML_MEMORY_BUSY_SCORE,
            (
                *ev,
                seen,
                f"device memory read or written {pct(mem)} of the time (NVML's memory-busy fraction, a time "
                "fraction, not bandwidth): memory is in use nearly whenever a kernel runs",
                f"SM and DRAM activity unknown ({why_sm or 'no GPM'}); {WHAT_WOULD_TELL}",
            ),
        )
    mem_ev = [f"device memory busy {pct(mem)} of the time (NVML)"] if mem is not None else []
    return Finding(
        UNDETERMINED,
        "compute",
        UNKNOWN_ACTIVITY_SCORE,
        (
            *ev,
            seen,
            *mem_ev,
            f"compute-bound, memory-bound and launch-bound GPUs all read busy ~100%: which limits {dev} is "
            f"undetermined ({why_sm or 'SM activity unknown'}); {WHAT_WOULD_TELL}",
        ),
    )
