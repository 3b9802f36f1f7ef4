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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bottleneckd.diagnosis.rules.common import compute_share, pct, runs_on_gpu
from bottleneckd.diagnosis.thresholds import (
    CLOCK_THROTTLED,
    COMPUTE_STAGE,
    DRAM_PRACTICAL_MAX,
    GPU_BUSY,
    GPU_BUSY_NO_GPM,
    GPU_DRAM_BUSY,
    LOW_SM,
    NEAR_PEAK_FLOOR,
    ONE_CORE,
    SM_EFFICIENT,
    THROTTLED,
)
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED
from bottleneckd.model.units import fmt_value
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.peaks.select import ComputePeak, compute_peak

PIPES = ("tensor_activity", "fp32_activity", "fp16_activity", "fp64_activity", "integer_activity")

# --- scores: chosen, not measured -----------------------------------------------------------------

#: below the roofline's floor with the main thread at a full core: kernel launches / host Python
HOST_OVERHEAD_SCORE = 0.75
#: below the floor without that evidence: launch latency, synchronisation or tiny kernels (undetermined)
UNDETERMINED_SCORE = 0.5
#: no GPM: the roofline with the job's own peak, 0.5 plus the achieved share of the nearer peak
ROOFLINE_BASE = 0.5
#: no GPM, no roofline: a GPU busy most of the time
BUSY_NO_GPM_SCORE = 0.5


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
            "which GPUs are the job's is unknown (no CUDA UUIDs from the hook, no NVML process list): "
            "every GPU considered",
        )
    mine = [d for d, v in known.items() if v > 0]
    if not mine:
        return devs, "no job process in NVML's process lists (another PID namespace?): every GPU considered"
    return mine, ""


def gpu_compute(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """The family: each of the job's GPUs decided on its own (``_one_gpu``)."""
    comp_share = compute_share(w)
    if comp_share is not None and comp_share < COMPUTE_STAGE:
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
        out += _one_gpu(_gpu_case(w, peaks, dev, base + ([f"on {dev}"] if several else [])))
    return out


@dataclass(frozen=True, kw_only=True)
class GpuCase:
    """One GPU of the job over the window: its activity and the roofline of the job's path."""

    w: WindowStats
    dev: str
    gev: list[str]  # the evidence every finding of this GPU starts with
    sm: float | None
    busy: float | None  # NVML 'GPU utilization': share of time a kernel runs
    dram: float | None
    pipes: dict[str, float]
    main: float | None  # the training process's main thread, cores
    flops: Any
    byts: Any
    cpk: ComputePeak
    f_ratio: float | None
    b_ratio: float | None

    @property
    def busiest(self) -> tuple[str, float] | None:
        return max(self.pipes.items(), key=lambda kv: kv[1]) if self.pipes else None

    @property
    def act(self) -> str:
        pipes = "".join(f", {k} {pct(v)}" for k, v in self.pipes.items()) if self.pipes else ""
        return f"SM activity {pct(self.sm)}{pipes}, DRAM {pct(self.dram)}"

    @property
    def roof(self) -> list[str]:
        if self.f_ratio is not None and self.b_ratio is not None:
            return [
                f"achieved {fmt_value(self.flops, 'FLOP/s')} = {pct(self.f_ratio)} of the {self.cpk.path} peak "
                f"({self.cpk.why}), {fmt_value(self.byts, 'B/s')} = {pct(self.b_ratio)} of memory bandwidth"
            ]
        if self.flops is not None and self.cpk.value is None:
            return [f"roofline not used: {self.cpk.why}"]
        return []

    @property
    def sm_idle(self) -> bool:
        return self.sm is not None and self.sm < LOW_SM

    @property
    def below_floor(self) -> bool:
        """Neither FLOP/s nor bytes/s near its peak (the roofline's floor)."""
        return (
            self.f_ratio is not None and self.b_ratio is not None and max(self.f_ratio, self.b_ratio) < NEAR_PEAK_FLOOR
        )


def _gpu_case(w: WindowStats, peaks: PeakTable, dev: str, gev: list[str]) -> GpuCase:
    facts = w.phases.facts if w.phases else {}
    g = w.get
    flops, byts = facts.get("achieved_flops"), facts.get("achieved_bytes_per_second")
    cpk = compute_peak(peaks, dev, facts)  # the peak of the job's own path
    bw = peaks.get("gpu_memory_bandwidth", dev)
    peak_b = bw.value if bw is not None else None
    return GpuCase(
        w=w,
        dev=dev,
        gev=gev,
        sm=g("gpu_compute", dev, "sm_activity"),
        busy=g("gpu_compute", dev, "busy_fraction"),
        dram=g("gpu_memory_bandwidth", dev, "utilization"),
        pipes={k.split("_")[0]: v for k in PIPES if (v := g("gpu_compute", dev, k)) is not None},
        main=g("cpu_compute", "job", "main_busy_cores"),
        flops=flops,
        byts=byts,
        cpk=cpk,
        f_ratio=flops / cpk.value if flops is not None and cpk.value else None,
        b_ratio=byts / peak_b if byts is not None and peak_b else None,
    )


def _one_gpu(c: GpuCase) -> list[Finding]:
    for decide in DECISIONS:
        found = decide(c)
        if found is not None:
            return [found]
    return []


def _compute(resource: str, score: float, ev: list[str]) -> Finding:
    return Finding(resource=resource, stage="compute", score=score, evidence=tuple(ev))


def _dram_bound(c: GpuCase) -> Finding | None:
    """DRAM busy, and busier than the busiest pipe (else the SMs): memory bandwidth."""
    busiest = c.busiest
    rival = busiest[1] if busiest is not None else (c.sm or 0.0)
    if not (c.dram is not None and c.dram >= GPU_DRAM_BUSY and c.dram >= rival):
        return None
    why = f"DRAM bandwidth {pct(c.dram)} of the theoretical peak" + (
        f", above the busiest pipe ({busiest[0]} {pct(busiest[1])})" if busiest else ""
    )
    return _compute("gpu_memory_bandwidth", min(1.0, c.dram / DRAM_PRACTICAL_MAX), c.gev + [why, c.act] + c.roof)


def _overhead_bound(c: GpuCase) -> Finding | None:
    """The SMs mostly idle while kernels run (small or serial kernels), or the roofline's floor with
    the SMs not busy: host-side overhead when the main thread is at a full core, else undetermined."""
    sm_idle, below_floor, busy, main = c.sm_idle, c.below_floor, c.busy, c.main
    if not ((sm_idle and busy is not None and busy >= GPU_BUSY) or (below_floor and (c.sm is None or sm_idle))):
        return None
    ev = c.gev + c.roof + [c.act] if c.sm is not None else c.gev + c.roof
    if busy is not None and sm_idle:
        ev.append(f"NVML 'GPU utilization' {pct(busy)} but SM activity only {pct(c.sm)}: kernels are small or serial")
    if below_floor:
        ev.append(
            f"neither FLOP/s nor bytes/s is near its peak (both under {pct(NEAR_PEAK_FLOOR)}): overhead, not the "
            "roofline, limits the step"
        )
    if main is not None and main >= ONE_CORE:
        ev.append(
            f"the training process's main thread at {main:.2f} of a core: kernel launches / host-side Python limit the "
            "step"
        )
        return _compute("cpu_compute", HOST_OVERHEAD_SCORE, ev)
    ev.append(
        "main thread CPU "
        + ("unknown" if main is None else f"at {main:.2f} of a core, not saturated")
        + ": launch latency, synchronisation or tiny kernels; a profiler trace would tell which"
    )
    return _compute(UNDETERMINED, UNDETERMINED_SCORE, ev)


def _sm_busy(c: GpuCase) -> Finding | None:
    """The SMs busy: GPU compute, with the clocks' throttling as evidence."""
    if not (c.sm is not None and c.sm >= LOW_SM):
        return None
    tev = c.gev + [c.act] + c.roof
    thr = [
        k.split(":", 1)[1]
        for (r, d, k), s in c.w.stats.items()
        if r == "gpu_compute" and d == c.dev and k.startswith("throttle:") and s.mean >= THROTTLED
    ]
    clock = c.w.get("gpu_compute", c.dev, "sm_clock_ratio")
    if thr and clock is not None and clock < CLOCK_THROTTLED:
        tev.append(f"clocks throttled ({', '.join(thr)}): SM clock at {pct(clock)} of its maximum")
    return _compute("gpu_compute", min(1.0, c.sm / SM_EFFICIENT), tev)


def _roofline(c: GpuCase) -> Finding | None:
    """No GPM: the roofline with the job's own peak decides."""
    if c.f_ratio is None or c.b_ratio is None:
        return None
    if c.b_ratio > c.f_ratio:
        return _compute("gpu_memory_bandwidth", min(1.0, ROOFLINE_BASE + c.b_ratio), c.gev + c.roof)
    return _compute("gpu_compute", min(1.0, ROOFLINE_BASE + c.f_ratio), c.gev + c.roof)


def _busy_without_gpm(c: GpuCase) -> Finding | None:
    """No SM activity and no roofline: a GPU busy most of the time is taken as compute-bound."""
    if c.sm is None and c.busy is not None and c.busy >= GPU_BUSY_NO_GPM:
        return _compute(
            "gpu_compute",
            BUSY_NO_GPM_SCORE,
            c.gev + c.roof + [f"GPU busy {pct(c.busy)} of the time (SM activity unknown: no GPM)"],
        )
    return None


#: the decisions in order; the first that names a finding decides
DECISIONS: tuple[Callable[[GpuCase], Finding | None], ...] = (
    _dram_bound,
    _overhead_bound,
    _sm_busy,
    _roofline,
    _busy_without_gpm,
)
