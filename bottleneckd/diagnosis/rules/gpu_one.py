"""One GPU of the job judged: compute vs memory bandwidth vs launch/host overhead, or undetermined.

- SM and pipe activity and DRAM bandwidth from GPM (Hopper and later) or a dcgm-exporter's
  profiling fields: DRAM against the *busiest* pipe (tensor, FP32, FP16, FP64, integer), so an
  fp32 job with no tensor-core use is not memory-bound at DRAM 60% and SM 95%. Without SM
  activity (dcgm-exporter's default counters have none) a busy pipe shows the SMs at work, but an
  idle tensor pipe does not show them idle (fp32 runs on other pipes).
- The roofline (achieved FLOP/s and operand bytes/s, section 2.3) of the rank on this GPU against
  the peak of its own path (peaks/select.py), with the near-peak floor: below 4% of both peaks the
  step is bound by overhead, not by the roofline.
- Launch overhead: the threads that launch the rank's kernels (its main thread and the autograd
  engine's device threads, which run backward on CUDA) near a core while the SMs are mostly idle;
  a step replayed from CUDA graphs (fact ``cuda_graphs``) has no per-kernel launch cost to blame.
  (A main thread spinning inside a CUDA synchronisation also reads busy: the floor is only applied
  while the SMs are mostly idle, where that cannot be the explanation.)
- The GPU idle through much of a step that the compute phases hold (kernels running under
  GPU_BUSY of the phases' time, the SMs not busy): the GPU waits on something inside forward and
  backward.
  PCIe copies whose time at the link's peak covers much of that idle time name the interconnect
  (activations offloaded to host memory, a model streamed in); else the launching threads at a
  full core name the host (Python, recompilation, launches); else undetermined, with what would tell.
- The SMs busy while kernels run, but the GPU idle HOST_GAPS of the interval or more inside the
  compute phases while the launching threads are at a full core: the host holds it back between
  kernels (synchronisations per tensor, Python between launches), which SM activity, a time
  average, does not show; judged before the SMs' activity names GPU compute.
- Without any of those (no GPM, no dcgm-exporter, no hook: attach on an A100), NVML's busy
  fraction says only that some kernel ran: it reads ~100% for compute-bound, memory-bound and
  tiny-kernel jobs alike. NVML's memory-busy fraction near the practical DRAM maximum names memory
  bandwidth (a heuristic, scored below measured activity); otherwise the GPU is undetermined,
  with what would tell.

The decisions run in order (``DECISIONS``); the first that names a finding decides.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from bottleneckd.diagnosis.rules.common import compute_share, headroom, pct, stack_samples
from bottleneckd.diagnosis.thresholds import (
    CLOCK_THROTTLED,
    COMPUTE_STAGE,
    COPIES_EXPLAIN_IDLE,
    DRAM_PRACTICAL_MAX,
    GPU_BUSY,
    GPU_BUSY_NO_GPM,
    GPU_DRAM_BUSY,
    HOST_GAPS,
    LOW_SM,
    NEAR_PEAK_FLOOR,
    NVML_MEMORY_BUSY_HIGH,
    ONE_CORE,
    SM_EFFICIENT,
    THROTTLED,
)
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED, Resource, Stage
from bottleneckd.model.units import fmt_value
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.peaks.select import ComputePeak, compute_peak

PIPES = ("tensor_activity", "fp32_activity", "fp16_activity", "fp64_activity", "integer_activity")

# --- scores: chosen, not measured -----------------------------------------------------------------

#: below the roofline's floor with the launching threads at a full core: kernel launches / host Python
HOST_OVERHEAD_SCORE = 0.75
#: undetermined (below the floor without that evidence; activity that nothing measures): the
#: classifier's ACTIVE, so that a rule seeing its own stage (data wait, communication) still wins
UNDETERMINED_SCORE = 0.5
#: no activity measured: the roofline with the job's own peak, 0.5 plus the achieved share of the nearer peak
ROOFLINE_BASE = 0.5
#: NVML's memory-busy time fraction alone names memory bandwidth less firmly than measured DRAM activity
NVML_MEMORY_BUSY_SCORE = 0.6
WHAT_WOULD_TELL = (
    "SM and DRAM activity would tell: GPM (Hopper and later), a dcgm-exporter's profiling fields "
    "(BOTTLENECKD_DCGM_URL), or the hook's roofline (bottleneckd run, or watch() in the script)"
)


@dataclass(frozen=True, kw_only=True)
class GpuCase:
    """One GPU of the job over the window: its activity, and the roofline of the rank on it."""

    w: WindowStats
    dev: str
    gev: list[str]  # the evidence every finding of this GPU starts with
    facts: Mapping[str, Any]  # the facts of the rank on this GPU (the job's without rank reports)
    sm: float | None
    busy: float | None  # NVML 'GPU utilization': share of time a kernel runs
    #: the same over the intervals the phases' steps ran in (``WindowStats.over_phases``): the figure
    #: set beside the phases' shares (a checkpoint running after the last step ended is in no phase)
    step_busy: float | None
    mem_busy: float | None  # NVML's memory-busy fraction: share of time device memory is read or written
    dram: float | None
    pipes: dict[str, float]
    source: str  # where the activity came from, for the evidence ("" GPM or none, " (dcgm-exporter)")
    main: float | None  # the busiest rank's main thread, cores
    launch: float | None  # its main thread and autograd device threads together, cores
    flops: Any
    byts: Any
    cpk: ComputePeak
    f_ratio: float | None
    b_ratio: float | None

    @property
    def busiest(self) -> tuple[str, float] | None:
        return max(self.pipes.items(), key=lambda kv: kv[1]) if self.pipes else None

    @property
    def active(self) -> float | None:
        """The SMs' activity: SM activity, else a busy pipe's (an idle pipe shows nothing)."""
        if self.sm is not None:
            return self.sm
        b = self.busiest
        return b[1] if b is not None and b[1] >= LOW_SM else None

    @property
    def measured(self) -> bool:
        return self.sm is not None or bool(self.pipes) or self.dram is not None

    @property
    def act(self) -> str:
        pipes = "".join(f", {k} {pct(v)}" for k, v in self.pipes.items()) if self.pipes else ""
        return f"SM activity {pct(self.sm)}{pipes}, DRAM {pct(self.dram)}{self.source}"

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


def gpu_case(w: WindowStats, peaks: PeakTable, dev: str, facts: Mapping[str, Any], gev: list[str]) -> GpuCase:
    g = w.get
    flops, byts = facts.get("achieved_flops"), facts.get("achieved_bytes_per_second")
    cpk = compute_peak(peaks, dev, facts)  # the peak of the rank's own path
    bw = peaks.get(Resource.GPU_MEMORY_BANDWIDTH, dev)
    peak_b = bw.value if bw is not None else None
    return GpuCase(
        w=w,
        dev=dev,
        gev=gev,
        facts=facts,
        sm=g(Resource.GPU_COMPUTE, dev, "sm_activity"),
        busy=g(Resource.GPU_COMPUTE, dev, "busy_fraction"),
        step_busy=w.over_phases(Resource.GPU_COMPUTE, dev, "busy_fraction"),
        mem_busy=g(Resource.GPU_MEMORY_BANDWIDTH, dev, "memory_busy_fraction"),
        dram=g(Resource.GPU_MEMORY_BANDWIDTH, dev, "utilization"),
        pipes={k.split("_")[0]: v for k in PIPES if (v := g(Resource.GPU_COMPUTE, dev, k)) is not None},
        source=" (dcgm-exporter)" if g(Resource.GPU_COMPUTE, dev, "activity_source:dcgm-exporter") else "",
        main=g(Resource.CPU_COMPUTE, "job", "main_busy_cores"),
        launch=g(Resource.CPU_COMPUTE, "job", "launch_thread_cores"),
        flops=flops,
        byts=byts,
        cpk=cpk,
        f_ratio=flops / cpk.value if flops is not None and cpk.value else None,
        b_ratio=byts / peak_b if byts is not None and peak_b else None,
    )


def one_gpu(w: WindowStats, peaks: PeakTable, dev: str, facts: Mapping[str, Any], gev: list[str]) -> list[Finding]:
    """The finding for GPU ``dev``, judged with ``facts`` of the rank that runs on it."""
    c = gpu_case(w, peaks, dev, facts, gev)
    for decide in DECISIONS:
        found = decide(c)
        if found is not None:
            return [found]
    return []


def _compute(resource: Resource, score: float, ev: list[str]) -> Finding:
    return Finding(resource=resource, stage=Stage.COMPUTE, score=score, evidence=tuple(ev))


def _dram_bound(c: GpuCase) -> Finding | None:
    """DRAM busy, and busier than the busiest pipe (else the SMs): memory bandwidth."""
    busiest = c.busiest
    rival = busiest[1] if busiest is not None else (c.sm or 0.0)
    if not (c.dram is not None and c.dram >= GPU_DRAM_BUSY and c.dram >= rival):
        return None
    why = f"DRAM bandwidth {pct(c.dram)} of the theoretical peak" + (
        f", above the busiest pipe ({busiest[0]} {pct(busiest[1])})" if busiest else ""
    )
    return _compute(Resource.GPU_MEMORY_BANDWIDTH, min(1.0, c.dram / DRAM_PRACTICAL_MAX), c.gev + [why, c.act] + c.roof)


def _overhead_bound(c: GpuCase) -> Finding | None:
    """The SMs mostly idle while kernels run (small or serial kernels), or the roofline's floor with
    the SMs not busy: host-side launch overhead when the launching threads are at a full core (and
    the step is not replayed from CUDA graphs), else undetermined."""
    sm_idle, below_floor, busy = c.sm_idle, c.below_floor, c.busy
    if not ((sm_idle and busy is not None and busy >= GPU_BUSY) or (below_floor and (c.active is None or sm_idle))):
        return None
    ev = c.gev + c.roof + ([c.act] if c.measured else [])
    if busy is not None and sm_idle:
        ev.append(f"NVML 'GPU utilization' {pct(busy)} but SM activity only {pct(c.sm)}: kernels are small or serial")
    if below_floor:
        ev.append(
            f"neither FLOP/s nor bytes/s is near its peak (both under {pct(NEAR_PEAK_FLOOR)}): overhead, not the "
            "roofline, limits the step"
        )
    return _the_launching_host(
        c,
        ev,
        graphs="the idle SMs are small kernels, synchronisation or host work between replays (a profiler trace "
        "would tell)",
        bound="kernel launches / host-side Python limit the step",
        otherwise="launch latency, synchronisation or tiny kernels; a profiler trace would tell which",
    )


def _the_launching_host(c: GpuCase, ev: list[str], *, graphs: str, bound: str, otherwise: str) -> Finding:
    """The GPU waits on its host: a step replayed from CUDA graphs has no launches to blame
    (undetermined, ``graphs`` said); the threads that launch the kernels at a full core are the
    host's CPU (``bound`` said); else undetermined (``otherwise`` said)."""
    host = c.launch if c.launch is not None else c.main
    who = (
        f"main thread {c.main:.2f} + autograd device threads {host - c.main:.2f} of a core"
        if c.launch is not None and c.main is not None and host is not None and c.launch > c.main
        else "main thread"
    )
    if c.facts.get("cuda_graphs"):
        ev.append(f"the step replays CUDA graphs: no per-kernel launch cost; {graphs}")
        return _compute(UNDETERMINED, UNDETERMINED_SCORE, ev)
    if host is not None and host >= ONE_CORE:
        ev.append(f"the threads that launch the kernels at {host:.2f} of a core ({who}): {bound}")
        return _compute(Resource.CPU_COMPUTE, HOST_OVERHEAD_SCORE, ev)
    ev.append(
        "kernel-launching threads' CPU "
        + ("unknown" if host is None else f"at {host:.2f} of a core ({who}), not saturated")
        + f": {otherwise}"
    )
    return _compute(UNDETERMINED, UNDETERMINED_SCORE, ev)


def _host_gaps(c: GpuCase) -> Finding | None:
    """The GPU idle HOST_GAPS or more of the interval inside the compute phases, the launching
    threads at a full core, the step not replayed from CUDA graphs, the kernels filling the GPU
    while they run (``kernels_fill``, where SM activity is measured) and the idle not explained by
    PCIe copies: the host's CPU limits the step between the kernels."""
    found, busy = compute_idle(c.w, c.step_busy), c.step_busy
    host = c.launch if c.launch is not None else c.main
    if found is None or busy is None or c.facts.get("cuda_graphs") or kernels_fill(c.sm, c.busy) is False:
        return None  # small kernels' gaps are their launches: _overhead_bound's, or _idle_in_compute's
    comp, idle = found
    if idle < HOST_GAPS or host is None or host < ONE_CORE:
        return None
    copies = pcie_copy_share(c.w, c.dev)
    if copies is not None and copies >= COPIES_EXPLAIN_IDLE * idle:
        return None  # copies: _idle_in_compute's, where the SMs are not busy
    ev = c.gev + [
        f"{pct(comp)} of the step in forward/backward/optimizer, yet kernels ran only {pct(busy)} of the time: the "
        f"GPU idles {pct(idle)} of it between kernels inside the phases",
        *([c.act] if c.measured else []),
        *c.roof,
    ]
    if c.sm is not None and c.busy:
        ev.append(
            f"SM activity {pct(c.sm)} is a time average: {pct(min(1.0, c.sm / c.busy))} while kernels run, so the "
            "kernels fill the GPU; the gaps between them are the host's"
        )
    host_finding = _the_launching_host(
        c,
        ev,
        graphs="",
        bound="the host holds the GPU back between kernels (a synchronisation per tensor such as .item() or "
        ".tolist() draining the queue, or Python between launches)",
        otherwise="",
    )
    return replace(host_finding, headroom=headroom(idle, stack_samples(c.w)))  # the gaps are what a fed GPU removes


def _sm_busy(c: GpuCase) -> Finding | None:
    """The SMs busy (or, without SM activity, a pipe): GPU compute, with the clocks' throttling as evidence."""
    active = c.active
    if not (active is not None and active >= LOW_SM):
        return None
    tev = c.gev + [c.act] + c.roof
    thr = [
        k.split(":", 1)[1]
        for (r, d, k), s in c.w.stats.items()
        if r == Resource.GPU_COMPUTE and d == c.dev and k.startswith("throttle:") and s.mean >= THROTTLED
    ]
    clock = c.w.get(Resource.GPU_COMPUTE, c.dev, "sm_clock_ratio")
    if thr and clock is not None and clock < CLOCK_THROTTLED:
        tev.append(f"clocks throttled ({', '.join(thr)}): SM clock at {pct(clock)} of its maximum")
    if c.below_floor:
        tev.append(
            f"the SMs read active but the kernels reach under {pct(NEAR_PEAK_FLOOR)} of both the FLOP and the "
            "bandwidth peak: too few rows per kernel to fill the GPU (a small batch)"
        )
    return _compute(Resource.GPU_COMPUTE, min(1.0, active / SM_EFFICIENT), tev)


def pcie_copy_share(w: WindowStats, dev: str) -> float | None:
    """The share of the interval the GPU's PCIe link would spend copying at its peak per direction
    with its two directions taking turns (save_on_cpu: forward's copies out, backward's back in):
    tx + rx over the peak. PCIe is full duplex, so where the two overlap the time is as little as
    the larger one's; copies run below the peak, so where they do not it is longer: an estimate."""
    tx = w.get(Resource.CPU_GPU_INTERCONNECT, dev, "tx_bytes_per_second")
    rx = w.get(Resource.CPU_GPU_INTERCONNECT, dev, "rx_bytes_per_second")
    peak = w.get(Resource.CPU_GPU_INTERCONNECT, dev, "peak")
    if tx is None or rx is None or not peak:
        return None
    return min(1.0, (tx + rx) / peak)


def compute_idle(w: WindowStats, busy: float | None) -> tuple[float, float] | None:
    """The compute phases' share of the step and the share of the interval the GPU idles within them
    (the phases less the time kernels ran, NVML's busy fraction: a lower bound, kernels outside the
    phases counted as in them), where the phases hold COMPUTE_STAGE of the step; else None. From
    stack samples (attach) the phases are the host thread's: in them while the GPU idles, it works
    or waits there on something other than the GPU. ``busy``: NVML's busy fraction over the
    intervals the phases' steps ran in (``WindowStats.over_phases``), so that a checkpoint or an
    evaluation running after the last step ended (in no phase yet) does not count as idle inside
    them; None where the steps do not cover those intervals (``steps_cover_readings``: the GPU idle
    then may be a longer step's)."""
    comp = compute_share(w)
    if busy is None or comp is None or comp < COMPUTE_STAGE or not w.steps_cover_readings:
        return None  # a step still running beside the last ones: its time is in the readings, not the phases
    return comp, max(0.0, comp - busy)


def idle_in_compute(w: WindowStats, busy: float | None) -> tuple[float, float] | None:
    """``compute_idle`` where the GPU runs kernels under GPU_BUSY of the phases' time; else None."""
    found = compute_idle(w, busy)
    return found if found is not None and busy is not None and busy < GPU_BUSY * found[0] else None


def kernels_fill(sm: float | None, busy: float | None) -> bool | None:
    """Whether the kernels fill the GPU while they run: SM activity (a time average) over the busy
    fraction at LOW_SM or more; None where either is not measured. Small kernels leave the SMs
    idle while running, and the gaps between them are their launches."""
    if sm is None or not busy:
        return None
    return sm / busy >= LOW_SM


def _idle_in_compute(c: GpuCase) -> Finding | None:
    """The GPU idle through much of the compute phases (see ``idle_in_compute``), the SMs not busy:
    it waits there on copies over PCIe or on the host (see the module's docstring). Where no SM
    activity is measured the hook's roofline decides first (``_roofline``), and a step replayed
    from CUDA graphs has no launches to blame (undetermined)."""
    found = idle_in_compute(c.w, c.step_busy)
    active = c.active
    if found is None or (active is not None and active >= LOW_SM):
        return None
    if c.sm is None and c.f_ratio is not None and c.b_ratio is not None:
        return None  # the roofline's to judge
    comp, idle = found
    ev = c.gev + (
        [f"{pct(comp)} of the step in forward/backward/optimizer, yet kernels ran only {pct(c.step_busy)} of the time"]
        + ([c.act] if c.measured else [])
        + c.roof
    )
    copies = pcie_copy_share(c.w, c.dev)
    if copies is not None and copies >= COPIES_EXPLAIN_IDLE * idle:
        ev.append(
            f"PCIe moved {pct(copies)} of one direction's peak in both directions together: copies taking turns "
            f"would hold the link {pct(copies)} of the time at its peak, against the GPU idle {pct(idle)} of it "
            "inside the compute phases; they wait on host-device copies (activations or parameters kept in host "
            "memory)"
        )
        return _compute(Resource.CPU_GPU_INTERCONNECT, HOST_OVERHEAD_SCORE, ev)
    return _the_launching_host(
        c,
        ev,
        graphs="a profiler trace would tell what it waits on",
        bound="host-side work inside the compute phases (Python, recompilation, kernel launches) keeps the GPU waiting",
        otherwise=(f"PCIe copies about {pct(copies)} of the time; " if copies is not None else "")
        + "the GPU waits on synchronisation, I/O or another process inside the phases; a profiler trace "
        "(torch.profiler, Nsight Systems) would tell which",
    )


def _roofline(c: GpuCase) -> Finding | None:
    """No SM activity measured: the roofline with the rank's own peak decides. Where it is measured
    and low (the decisions above passed: not launch-bound, DRAM not busy), the nearer of two low
    roofline ratios does not make a GPU whose SMs mostly idle compute- or memory-bound."""
    if c.f_ratio is None or c.b_ratio is None or c.sm is not None:
        return None
    busy = f"; GPU busy {pct(c.busy)} of the time (NVML)" if c.busy is not None else ""
    unmeasured = [
        f"SM activity not measured ({_why_unmeasured(c)}): the roofline with the job's own peak decides{busy}"
    ]
    if c.b_ratio > c.f_ratio:
        return _compute(Resource.GPU_MEMORY_BANDWIDTH, min(1.0, ROOFLINE_BASE + c.b_ratio), c.gev + c.roof + unmeasured)
    return _compute(Resource.GPU_COMPUTE, min(1.0, ROOFLINE_BASE + c.f_ratio), c.gev + c.roof + unmeasured)


def _nvml_memory_busy(c: GpuCase) -> Finding | None:
    """Nothing measures the SMs or DRAM: NVML's memory-busy fraction near the practical DRAM
    maximum (memory in use nearly whenever a kernel runs) names memory bandwidth."""
    if c.measured or c.busy is None or c.busy < GPU_BUSY_NO_GPM:
        return None
    if c.mem_busy is None or c.mem_busy < NVML_MEMORY_BUSY_HIGH:
        return None
    return _compute(
        Resource.GPU_MEMORY_BANDWIDTH,
        NVML_MEMORY_BUSY_SCORE,
        c.gev
        + c.roof
        + [
            f"GPU busy {pct(c.busy)} of the time (NVML: some kernel running, however few SMs it uses)",
            f"device memory read or written {pct(c.mem_busy)} of the time (NVML's memory-busy fraction, a time "
            "fraction, not bandwidth): memory is in use nearly whenever a kernel runs",
            f"SM and DRAM activity unknown ({_why_unmeasured(c)}); {WHAT_WOULD_TELL}",
        ],
    )


def _busy_unmeasured(c: GpuCase) -> Finding | None:
    """A GPU busy most of the time whose SM activity nothing measures: compute-bound, memory-bound
    and launch-bound GPUs all read busy ~100%, so which limits it is undetermined."""
    if c.sm is not None or c.busy is None or c.busy < GPU_BUSY_NO_GPM:
        return None
    seen = [f"GPU busy {pct(c.busy)} of the time (NVML: some kernel running, however few SMs it uses)"]
    if c.mem_busy is not None:
        seen.append(f"device memory busy {pct(c.mem_busy)} of the time (NVML)")
    if c.measured:
        seen.append(f"{c.act}: the pipes measured are low; those not measured may be the busy ones")
    return _compute(
        UNDETERMINED,
        UNDETERMINED_SCORE,
        c.gev
        + c.roof
        + seen
        + [
            f"compute-bound, memory-bound and launch-bound GPUs all read busy ~100%: which limits {c.dev} is "
            f"undetermined ({_why_unmeasured(c)}); {WHAT_WOULD_TELL}"
        ],
    )


def _why_unmeasured(c: GpuCase) -> str:
    return c.w.notes.get((Resource.GPU_COMPUTE, c.dev, "sm_activity"), "") or "SM activity unknown"


#: the decisions in order; the first that names a finding decides
DECISIONS: tuple[Callable[[GpuCase], Finding | None], ...] = (
    _dram_bound,
    _overhead_bound,
    _host_gaps,
    _sm_busy,
    _idle_in_compute,
    _roofline,
    _nvml_memory_busy,
    _busy_unmeasured,
)
