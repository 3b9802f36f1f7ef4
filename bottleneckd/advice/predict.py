"""What-if: the speed-up a mitigation would give, predicted from what was measured.

Each model is a pure function of the window's measured inputs (``diagnosis/step_inputs.py``), documented
with its formula and assumptions. It returns a ``Prediction``: the speed-up of a step (step time
now / predicted step time; for gradient accumulation, per example), an interval, the model's name
and its formula with the measured numbers in it; or, when an input was not measured, no figure and
the reason (unknown is not zero).

The interval is the model evaluated at both ends of its inputs' measured ranges (a phase's share
across the window's samples, a stack share's 95% Wilson interval) and, where a model rests on an
assumption that can go either way, at both ends of it (said in the model's docstring). It says how
far the measurement and the model's stated assumptions move the figure, not that the mitigation
will land inside it: ``verify=True`` measures it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from bottleneckd.diagnosis.step_inputs import Share, StepInputs
from bottleneckd.diagnosis.thresholds import INPUT_HIGH, NO_WORKERS
from bottleneckd.model.resources import Phase, Resource

#: the largest share of the step a model removes (a step cannot take no time); the same cap as the
#: verdict's headroom (diagnosis/rules/common.py), so a prediction never exceeds 100x
MAX_SHARE = 0.99
#: a recommendation predicted to gain less than this is ranked after the unknown ones: below it a
#: gain is within the noise verify=True accepts (its min_gain default, README)
MIN_PREDICTED_GAIN = 0.02
#: "do it less often": every this many steps (the knowledge base's wording for checkpoints, logging,
#: evaluation and per-step Python work); what the model assumes unless told otherwise
EVERY_N = 10
#: gradient accumulation and less frequent sync: micro-batches per sync (the hooks' default k)
SYNC_EVERY = 4
#: a stage that is the whole window is predicted from its least share over the window's samples when
#: that is at least this part of it; below, one odd interval (evaluation, an epoch's end) set it
STEADY_LOW = 0.5
#: "fewer or cheaper augmentations": the random augmentation's work assumed halved (one of two
#: transforms dropped, or each at half the cost); the high end drops it altogether
AUGMENT_CHEAPER = 2.0
#: echo factor assumed for data echoing (the hook's default, Choi et al. 2019's e = 2)
ECHO = 2
#: more workers for a loader that waits on latency (threads mostly idle): twice as many batches in
#: flight; a CPU-bound loader gets one more worker per idle core
LATENCY_WORKERS_FACTOR = 2
#: a loader whose workers (or, with none, the training thread) run or wait to run at least this much
#: of a core per worker is CPU-bound (its gain needs free cores); below it, it waits (latency).
#: Chosen: the half core diagnosis/thresholds.py's LOADER_BUSY_CORES takes as a loader's own CPU use
CPU_BOUND = 0.5


@dataclass(frozen=True)
class Prediction:
    speedup: float | None  # step time now / predicted step time (x); None: unknown
    low: float | None
    high: float | None
    model: str  # "amdahl", "loader pipeline", "roofline", ...
    formula: str  # with the measured numbers; for an unknown one, why
    #: unknown because it removes a stage that is all of the step as measured: more than any partial
    #: reduction of that stage gives, though by how much is not measured (``_amdahl_share``)
    removes_all: bool = False

    @property
    def known(self) -> bool:
        return self.speedup is not None

    @property
    def gain(self) -> float | None:
        return None if self.speedup is None else self.speedup - 1.0

    def text(self) -> str:
        if self.speedup is None:
            return f"predicted speed-up unknown: {self.formula}"
        return f"predicted x{self.speedup:.2f} (x{self.low:.2f} to x{self.high:.2f}; {self.model}: {self.formula})"

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}

    @staticmethod
    def from_json(d: Any) -> Prediction | None:
        if not isinstance(d, Mapping):
            return None
        try:
            return Prediction(**{k: d[k] for k in ("speedup", "low", "high", "model", "formula")})
        except (KeyError, TypeError):
            return None


def unknown(model: str, why: str) -> Prediction:
    return Prediction(None, None, None, model, why)


def known(model: str, point: float, a: float, b: float, formula: str) -> Prediction:
    lo, hi = min(a, b, point), max(a, b, point)
    return Prediction(point, lo, hi, model, formula)


#: pinned host-to-device copies run at this share of the link's peak per direction: 55.5 of 63 GB/s
#: on an H200's PCIe Gen5 x16 link, pageable ones at 20.4 GB/s (docs/measurements.md,
#: scripts/gpu_check.py): pinning speeds a copy by at most their ratio, 2.7x. A link slower than a
#: pageable copy's rate while copying is held by something else (many small copies' latency, the
#: step's queue), which pinning does not shorten more
PINNED_LINK_SHARE = 0.88
PAGEABLE_LINK_SHARE = 0.32


# --- the models ---------------------------------------------------------------------------------
def amdahl(p: float, s: float) -> float:
    """Amdahl's law: a fraction ``p`` of the step made ``s`` times faster (``s = inf``: removed):
    speed-up = 1 / ((1 - p) + p / s). ``p`` is capped at MAX_SHARE."""
    p = min(max(p, 0.0), MAX_SHARE)
    return 1.0 / ((1.0 - p) + (0.0 if math.isinf(s) else p / s))


def loader_step(
    step: float,
    d: float,
    workers: float,
    per_batch_cpu: float,
    cores_now: float,
    idle: float,
    new: float,
    fair: float | None = None,
) -> float:
    """Step time with ``new`` DataLoader workers (the loader pipeline model).

    The step's own work (all but the data wait) takes Tc = T (1 - d). With W >= 1 workers the
    loader runs beside the step: data-bound, it delivers one batch per step, so each worker spends
    b = W T of wall time per batch; with W = 0 the loading runs in the training thread during the
    data wait, b = d T. A batch costs c seconds of CPU (``per_batch_cpu``). With W' workers the
    pool delivers at most W'/b batches per second (concurrency: more batches in flight hide latency)
    and at most K/c by CPU, K the cores it can have: the ``cores_now`` the loading uses plus the
    ``idle`` ones, or, on cores crowded with runnable threads, its ``fair`` share of them (``fair_share``)
    when that is more. T' = max(Tc, 1 / min(W'/b, K/c)).

    Assumptions: a batch's work does not change; the new workers do not slow the training thread
    (true while idle cores remain, or while it mostly waits for data); prefetching keeps the queue full."""
    tc = step * (1.0 - d)
    b = workers * step if workers >= NO_WORKERS else d * step
    if b <= 0:
        return step
    rate = new / b
    if per_batch_cpu > 0:
        reach = max(cores_now + idle, fair or 0.0)
        rate = min(rate, reach / per_batch_cpu)
    return min(step, max(tc, 1.0 / rate)) if rate > 0 else step


def fair_share(cores: float | None, idle: float, per_thread: float, loading: float, new: float) -> float | None:
    """Cores ``new`` CPU-bound loader workers get when the scheduler gives every runnable thread an
    equal share (Linux CFS at equal weights): the job's loading threads (``loading`` of them, each
    getting ``per_thread`` of a core now) and everything else busy on the ``cores - idle`` cores
    count as (cores - idle) / per_thread such threads; with the loading moved to ``new`` workers
    there are that many less ``loading`` plus ``new``, each getting cores / threads (at most one).

    On cores crowded by other processes each new worker takes a share as the others do: one demo
    loader worker at a third of a core beside other processes gained x2.12 with a second (measured,
    issue 20), which "cores used now plus idle ones" put at x1.05. On cores the job's own workers fill,
    a further worker takes nothing new: 2 workers at 0.95 of a core each, 3 get 1.97 cores, not 1.9."""
    if cores is None or per_thread <= 0:
        return None
    threads = max(cores - idle, 0.0) / per_thread - loading + new
    return new * min(1.0, cores / threads) if threads > 0 else None


def roofline_time(flops: float, nbytes: float, peak: float, bandwidth: float) -> float:
    """The roofline's least time for a step: max(FLOP / peak FLOP/s, bytes / peak B/s)."""
    return max(flops / peak, nbytes / bandwidth)


def mixed_precision(i: StepInputs, dtype: str = "bfloat16") -> Prediction:
    """Mixed precision from the roofline and the dtype peaks (``faster_path``): operands halved at
    the high end (B' = B/2), none halved at the low end (autocast keeps activations and reductions
    in fp32 and adds casts)."""
    return faster_path(i, dtype, f"a {dtype} peak for this device (run 'bottleneckd calibrate')", (1.0, 0.5))


def tf32_matmuls(i: StepInputs) -> Prediction:
    """TF32 tensor cores for float32 matrix products: the same bytes, the TF32 path's peak."""
    return faster_path(i, "tf32", "a TF32 tensor-core peak for this device (Ampere or newer)", (1.0, 1.0))


def compile_model(i: StepInputs) -> Prediction:
    """torch.compile on a GPU-bound step: its fused kernels leave the matrix products' FLOPs as they
    are, so the most it can give is the compute phases at their FLOPs' time at the job's peak
    (F/P of the measured compute time Tc; not the roofline's bytes, which count every operator's
    unfused inputs and outputs, the very traffic fusion removes): Tc' >= F/P, Amdahl over the
    compute share. How much compiling removes is not measured here: unknown, with the bound and
    the published averages (x1.21 float32, x1.51 AMP over 163 models on an A100: the knowledge
    base's source)."""
    m = "FLOP bound"
    published = (
        "how much of it compiling removes is not measured (published averages: x1.21 in float32, x1.51 with AMP)"
    )
    if not (i.flops_per_step and i.compute_seconds and i.peak_flops):
        return unknown(m, f"the compute phases' FLOPs or the peak not known; {published}")
    floor = min(i.flops_per_step / i.peak_flops, i.compute_seconds)
    share = min(MAX_SHARE, i.compute_seconds / i.step)
    most = amdahl(share, i.compute_seconds / floor)
    return unknown(
        m,
        f"at most x{most:.2f}: the compute phases ({share:.0%} of the step) at the peak's rate for their FLOPs "
        f"({floor / i.compute_seconds:.0%} of their time now); {published}",
    )


def faster_path(i: StepInputs, path: str, what: str, byte_factors: tuple[float, float]) -> Prediction:
    """The compute phases on a faster math path, from the roofline.

    The roofline accounts for R = max(F/P, B/BW) of the measured compute time Tc (F, B: FLOP and
    operand bytes per step; P: the peak of the job's path; BW: memory bandwidth); e = R/Tc is the
    kernels' efficiency against it. On the new path R' = max(F/P', kB/BW) (k: ``byte_factors``,
    low end then high end). Low end: the rest of Tc is overhead the path does not change,
    Tc' = Tc (1 - e + e R'/R). High end where the GPU's kernels fill the compute phases: the new
    path's kernels are as efficient against its peak as the old ones against theirs, so the time the
    GPU runs kernels scales by R'/R and only the time it idles in the compute phases (g, NVML's busy
    fraction: launches, host work) stays, Tc' = Tc (g + (1 - g) R'/R) (on the H200 TF32 gave x5.26
    on an fp32 MLP at e = 0.75, where the fixed overhead alone allows x2.85: tensor-core kernels are
    no less efficient than the SIMT fp32 ones). On a CPU, where g is not measured, or where small
    kernels leave the SMs idle, the low end's overhead holds at both ends. The point is the mean of
    the two step times; Amdahl over the compute share Tc/T."""
    m = "roofline and dtype peaks"
    missing = [
        name
        for name, v in (
            ("FLOP per step (the roofline count)", i.flops_per_step),
            ("operand bytes per step", i.bytes_per_step),
            ("the compute phases' time", i.compute_seconds),
            ("the peak of the job's dtype path", i.peak_flops),
            (what, i.peak_flops_low.get(path)),
            ("the memory bandwidth peak", i.peak_bandwidth),
        )
        if not v
    ]
    if missing:
        return unknown(m, "not measured: " + ", ".join(missing))
    f, b, tc = i.flops_per_step or 0.0, i.bytes_per_step or 0.0, i.compute_seconds or 0.0
    p, p_new, bw = i.peak_flops or 0.0, i.peak_flops_low[path], i.peak_bandwidth or 0.0
    r = roofline_time(f, b, p, bw)
    e = min(1.0, r / tc)
    share = min(MAX_SHARE, tc / i.step)
    kernels = i.device == "cuda" and i.gpu_idle_in_compute is not None and i.gpu_kernels_fill is not False
    g = i.gpu_idle_in_compute or 0.0  # read only where ``kernels``

    def speed(k: float, same_efficiency: bool) -> float:
        ratio = roofline_time(f, k * b, p_new, bw) / r
        return amdahl(share, 1.0 / (g + (1.0 - g) * ratio if same_efficiency else 1.0 - e + e * ratio))

    lo, hi = speed(byte_factors[0], False), speed(byte_factors[1], kernels)
    point = 2.0 / (1.0 / hi + 1.0 / lo)  # the mean of the two step times
    ends = (
        f"kernels as efficient on the new path, the GPU idle {g:.0%} of the compute phases as now "
        "(high), or the roofline's gain alone (low)"
        if kernels
        else "the roofline's gain alone"
    )
    halved = ", operands halved (high) or not (low)" if byte_factors[0] != byte_factors[1] else ""
    return known(
        m,
        point,
        lo,
        hi,
        f"the roofline is {e:.0%} of the compute phases ({share:.0%} of the step); {path} peak "
        f"{p_new / p:.1f}x the current path's; {ends}{halved}",
    )


def _amdahl_share(model: str, s: Share, factor: float, what: str) -> Prediction:
    # removing all of the step leaves what was not measured; a window's high end alone there (attach's
    # stack-sampled shares) caps the high end, as amdahl() caps it. Where the share's low end over
    # the window's samples is below all of it, that end is the least the removal gives: the point;
    # unless it is under half of the share (one interval of evaluation or an epoch's end in the
    # window: the least is not the stage's own, STEADY_LOW)
    if math.isinf(factor) and s.value >= MAX_SHARE:
        if s.low >= MAX_SHARE or s.low < STEADY_LOW * s.value:
            why = f"{what} is {s.value:.0%} of the step: the time left without it is not measured"
            return Prediction(None, None, None, model, why, removes_all=s.low >= MAX_SHARE)
        least = amdahl(s.low, factor)
        return known(
            model,
            least,
            least,
            amdahl(s.high, factor),
            f"{what} {s.value:.0%} of the step, {s.low:.0%} at the window's least: removed, at least x{least:.2f} "
            "(the time left without it at the whole window's share is not measured; capped at "
            f"x{amdahl(1.0, factor):.0f})",
        )
    f = "removed" if math.isinf(factor) else f"{factor:g}x less of it"
    return known(
        model,
        amdahl(s.value, factor),
        amdahl(s.low, factor),
        amdahl(s.high, factor),
        f"{what} {s.value:.0%} of the step ({s.low:.0%} to {s.high:.0%}), {f}",
    )


def data_echoing(i: StepInputs, factor: int = ECHO) -> Prediction:
    """Data echoing from the data wait and the echo factor e: the loader makes 1/e of the batches.
    No workers: the loading is in the step, T' = T (1 - d) + d T / e (Amdahl). With workers the
    loader runs beside the step and, data-bound, takes T per batch: T' = max(T (1 - d), T / e).
    Speed-up of steps: an echoed step may do less for the model than a fresh one (Choi et al. 2019)."""
    d = i.stage_share((Phase.DATA_WAIT, Phase.FILE_IO))
    if (i.loader_workers or 0.0) < NO_WORKERS:
        return _amdahl_share("amdahl", d, factor, "data wait")

    def speed(x: float) -> float:
        return 1.0 / max(1.0 - min(x, MAX_SHARE), 1.0 / factor)

    return known(
        "loader pipeline",
        speed(d.value),
        speed(d.low),
        speed(d.high),
        f"data wait {d.value:.0%} of the step, the loader beside it makes 1/{factor} of the batches",
    )


#: the rest of the step (1 - data wait) a loader's workers are sized against is at least this: a step
#: that is all data wait sizes them by the free cores alone
MIN_REST = 0.02


def more_workers(i: StepInputs, new: float | None = None) -> Prediction:
    """More DataLoader workers from the per-batch loader CPU time and the free cores (``loader_step``).

    With W >= 1 workers a batch costs c = C_w T of CPU (C_w: the cores the workers use) and the
    loading has C_w cores now; with none it runs in the training thread: c = d T u and d u cores
    (u: the thread's busy fraction). The loader is CPU-bound when a worker (or the training thread)
    runs or waits to run CPU_BOUND of a core or more. W' defaults to W plus one per free core when
    CPU-bound (with none, one per core the loading can have: the free ones and the training
    thread's share it gives up, d u, rounded: fft_augment_inline's loading at 0.94 of a core beside
    1.01 free ones was offered 0 -> 1, predicted x1.03, where 0 -> 2 measured x1.53), else
    LATENCY_WORKERS_FACTOR times W (at least 1)."""
    m = "loader pipeline"
    w = i.loader_workers
    if w is None or i.idle_cores is None:
        return unknown(m, "not measured: the job's CPU use (loader workers and idle cores)")
    d = i.stage_share((Phase.DATA_WAIT, Phase.FILE_IO))
    if w >= NO_WORKERS:
        if i.worker_cores is None:
            return unknown(m, "not measured: the CPU the loader workers use")
        u, demand = i.worker_cores / w, max(i.worker_cores / w, i.worker_demand or 0.0)
    else:
        if i.main_cores is None:
            return unknown(m, "not measured: the training thread's CPU use")
        u, demand = i.main_cores, max(i.main_cores, i.main_demand or 0.0)
    cpu_bound = demand >= CPU_BOUND
    per = (u * w if w >= NO_WORKERS else d.value * u) * i.step  # the loading's CPU seconds per batch
    if new is None and not cpu_bound:
        new = max(1.0, w) * LATENCY_WORKERS_FACTOR
    elif new is None:
        new = w + max(1.0, math.floor(i.idle_cores)) if w >= NO_WORKERS else max(1.0, round(i.idle_cores + d.value * u))
        # no more than hide the loading behind the rest of the step: a batch's CPU time over the step
        # less its data wait, each worker a core (62 free cores offered "0 -> 62 workers" for a
        # loading that 6 hide)
        enough = math.ceil(per / (max(1.0 - d.value, MIN_REST) * i.step))
        new = min(new, max(w + 1.0, float(enough)))
    if new <= w:
        return unknown(m, f"{new:g} workers is not more than the {w:g} running")
    idle = i.idle_cores

    # the threads that stop loading: the workers, or the training thread's data-wait share of itself
    fair = fair_share(i.cores, idle, u, w if w >= NO_WORKERS else d.value, new)

    def speed(x: float) -> float:
        x = min(x, MAX_SHARE)
        cpu, cores = (u * w * i.step, u * w) if w >= NO_WORKERS else (x * i.step * u, x * u)
        # a loader that waits (latency) needs next to no CPU: only how many batches are in flight
        # limits it. Capping it by the cores it uses now plus the idle ones predicted no gain on a
        # busy machine (idle 0) for a 0 -> 2 worker change run --tune measured at x2.17
        return i.step / loader_step(i.step, x, w, cpu if cpu_bound else 0.0, cores, idle, new, fair)

    kind = "CPU-bound" if cpu_bound else "waiting (latency)"
    return known(
        m,
        speed(d.value),
        speed(d.low),
        speed(d.high),
        f"{w:g} -> {new:g} workers; data wait {d.value:.0%} of a {i.step * 1e3:.1f} ms step; loader {kind} "
        f"({per * 1e3:.1f} ms CPU per batch), {idle:.2f} free cores"
        + (
            f", {fair:.2f} cores as a fair share of crowded ones"
            if cpu_bound and fair and fair > per / i.step + idle  # more than the loading's cores now plus idle
            else ""
        ),
    )


def gradient_share(i: StepInputs) -> Share:
    """The communication phase's share of the step that is the gradients' all-reduce: all of it,
    unless DDP's comm hook timed the all-reduce apart (``gradient_comm``), which caps it (expert or
    tensor parallelism's collectives in the same phase are not the gradients')."""
    c = i.share(Phase.COMMUNICATION)
    g = i.gradient_comm
    return c if g is None else Share(min(c.value, g), min(c.low, g), min(c.high, g))


def other_collectives(i: StepInputs) -> Prediction:
    """Keeping the model's own collectives (expert parallelism's all-to-all, tensor parallelism's
    all-gathers) within a node: the communication phase less the gradients' all-reduce (DDP's comm
    hook timed it apart), o. At the high end it is removed (on NVLink, 18x an NDR port's bandwidth
    on an H100, it shrinks to a few percent of itself); at the low end nothing changes (the groups
    do not fit in a node); the point their geometric mean."""
    m = "amdahl"
    if i.gradient_comm is None:
        return unknown(m, "the gradients' all-reduce was not timed apart from the other collectives (DDP's comm hook)")
    o = max(0.0, i.share(Phase.COMMUNICATION).value - i.gradient_comm)
    hi = amdahl(o, math.inf)
    return known(
        m,
        math.sqrt(hi),
        1.0,
        hi,
        f"collectives other than the gradients' all-reduce {o:.0%} of the step: kept on a node's links, up to all "
        "of it removed (high), or none if the groups do not fit in a node (low)",
    )


def pinned_memory(i: StepInputs) -> Prediction:
    """Pinned host memory: the copies, t of the step at u of the link's peak while they run
    (``pcie_while_copying``; a pageable copy stages through the driver's pinned buffer, 32% of the
    peak measured), run at PINNED_LINK_SHARE of it: Amdahl over t with a factor PINNED_LINK_SHARE / u,
    u no lower than a pageable copy's rate (PAGEABLE_LINK_SHARE: the measured ratio caps it), and
    asynchronous copies beside the compute (``non_blocking=True``), which can hide more, not counted."""
    m = "amdahl"
    u = i.pcie_while_copying
    if u is None or u <= 0.0:
        return unknown(m, "not measured: the link's rate while the step copies (pcie_while_copying)")
    if u >= PINNED_LINK_SHARE:
        return unknown(m, f"the link at {u:.0%} of its peak while copying already, a pinned copy's rate")
    t, f = i.share(Phase.TRANSFER), PINNED_LINK_SHARE / max(u, PAGEABLE_LINK_SHARE)
    return known(
        m,
        amdahl(t.value, f),
        amdahl(t.low, f),
        amdahl(t.high, f),
        f"copies {t.value:.0%} of the step at {u:.0%} of the link's peak; pinned ones run at "
        f"{PINNED_LINK_SHARE:.0%} of it (measured on an H200): {f:.1f}x faster",
    )


def less_frequent_sync(i: StepInputs, k: int = SYNC_EVERY) -> Prediction:
    """Synchronise gradients every k steps, as the hook does it (gradient accumulation with DDP's
    ``no_sync``): the all-reduce and the optimizer step are paid once per k micro-batches; Amdahl over
    their share of the step with a factor k.

    The share counts the exposed communication and the optimizer. Where the all-reduce overlapped
    with backward runs on the cores backward needs (gloo on a CPU job with its cores full), that
    part costs the step too, by at most its time in flight: the high end counts all of it, the low
    end none, the point their geometric mean (its CPU cost, which bounds it, is not measured per
    step). Measured on the suite's four gloo DDP jobs with the all-reduce removed (no_sync on every
    step, k = infinity): x1.62, x1.65, x1.99, x2.06, each inside the [low, high] this gives for k =
    infinity (x1.28-x4.0, x1.36-x4.3, x1.42-x2.8, x1.29-x3.2)."""
    if i.sharded:
        return unknown(
            "amdahl",
            "parameters are sharded (FSDP): their all-gathers run at every micro-batch and only the "
            "gradients' reduce-scatter is skipped, whose share of the communication is not measured apart",
        )
    g, o = gradient_share(i), i.share(Phase.OPTIMIZER)
    base = Share(min(1.0, g.value + o.value), min(1.0, g.low + o.low), min(1.0, g.high + o.high))
    ov = i.comm_overlap_cost or 0.0
    what = "exposed communication and optimizer"
    if ov <= 0.0:
        return _amdahl_share("amdahl", base, k, what)
    with_ov = Share(min(1.0, base.value + ov), min(1.0, base.low + ov), min(1.0, base.high + ov))
    lo, hi = amdahl(base.value, k), amdahl(with_ov.value, k)
    return known(
        "amdahl",
        math.sqrt(lo * hi),
        amdahl(base.low, k),
        amdahl(with_ov.high, k),
        f"{what} {base.value:.0%} of the step ({base.low:.0%} to {base.high:.0%}), plus up to {ov:.0%} "
        f"for the all-reduce overlapped with backward on the same cores, {k:g}x less of it",
    )


def gradient_accumulation(i: StepInputs, k: int = SYNC_EVERY) -> Prediction:
    """Accumulate k micro-batches per optimizer step: on a DDP model the hook skips the all-reduce
    of the micro-steps (``no_sync``), so the model is ``less_frequent_sync``'s (per example)."""
    return less_frequent_sync(i, k)


#: communication volume per step of fully sharded data parallelism (parameters gathered for forward
#: and again for backward, gradients reduce-scattered: 3 x the parameters) over plain data parallelism
#: or optimizer-state sharding (one all-reduce: 2 x): Rajbhandari et al. 2020 (ZeRO), section 7
FULL_SHARD_COMM_FACTOR = 1.5
#: of that volume, the gradients' reduce-scatter (one of the three times the parameters): what a
#: gradient-compressing comm hook halves on a sharded model
FULL_SHARD_GRADIENT_SHARE = 1.0 / 3.0


def shard_less(i: StepInputs) -> Prediction:
    """Shard only the optimizer states (ZeRO-1, FSDP's NO_SHARD or DDP) where parameters are sharded:
    the bytes communicated per step fall from 3 to 2 times the parameters; a bandwidth-bound
    collective takes that much less time (Amdahl with FULL_SHARD_COMM_FACTOR on the exposed
    communication). Needs the unsharded parameters and gradients to fit in each rank's memory."""
    if not i.sharded:
        return unknown("amdahl", "the parameters are not sharded here")
    p = _amdahl_share("amdahl", i.share(Phase.COMMUNICATION), FULL_SHARD_COMM_FACTOR, "exposed communication")
    return Prediction(
        p.speedup, p.low, p.high, p.model, p.formula + " (3x the parameters' bytes a step become 2x; if memory allows)"
    )


def gradient_compression(i: StepInputs, kind: str = "fp16") -> Prediction:
    """16-bit gradient all-reduce (a DDP comm hook): half the bytes. A bandwidth-bound all-reduce
    takes half the time (the point and high end: Amdahl with a factor 2 on the exposed
    communication); a latency-bound one gains nothing (the low end, x1). PowerSGD: unknown."""
    if kind == "powersgd":
        return unknown("amdahl", "PowerSGD's time depends on its rank and the layers' shapes, not measured here")
    c = gradient_share(i)
    if i.sharded:  # FSDP: only the gradients' reduce-scatter, a third of the volume (ZeRO), is compressed
        factor = 1.0 / (1.0 - FULL_SHARD_GRADIENT_SHARE * 0.5)
        p = _amdahl_share("amdahl", c, factor, "exposed communication (a third of it the gradients', halved)")
    else:
        p = _amdahl_share("amdahl", c, 2.0, "exposed communication")
    return Prediction(p.speedup, 1.0, p.high, p.model, p.formula + "; x1 if the all-reduce is latency-bound")


def other_lines(i: StepInputs, kind: str, every: int = EVERY_N) -> Prediction:
    """Do it every ``every`` steps: the share of the step on the lines of ``kind`` (the "other"
    stage's share times the share of its stack samples on such lines) shrinks by ``every``."""
    m = "amdahl over stack samples"
    line = i.other_lines.get(kind)
    if line is None:
        return unknown(m, f"not measured: too few stack samples of the other stage ({i.other_samples})")
    o = i.share(Phase.OTHER)
    s = Share(o.value * line.value, o.low * line.low, o.high * line.high)
    what = "the hottest function" + (f" {i.hottest}" if i.hottest else "") if kind == "hottest_function" else kind
    what = "lines reading device tensors on the host (.item(), .cpu())" if kind == "host_sync" else what
    return _amdahl_share(m, s, every, f"{what}: {line.value:.0%} of the other stage's stack samples,")


def host_syncs(i: StepInputs) -> Prediction:
    """Synchronisations read every N steps, where they are: on the other stage's lines that read a
    device tensor on the host (``.item()`` in a logging line, a metric's ``.cpu()``), or in the gaps
    they leave inside the compute phases (``host_gaps``); the larger of the two where both are
    measured (a lower bound: the two are different time, but the compute phases' gaps may be the
    launches a removed sync still leaves, which ``host_gaps`` already halves at its low end). The
    lines' samples count the host waiting there for the GPU's queued work too: an upper bound of
    what reading them every N steps saves."""
    gaps, line = host_gaps(i), i.other_lines.get("host_sync")
    if line is None or line.value <= 0.0:  # no synchronising line seen in the other stage
        return gaps
    lines = other_lines(i, "host_sync")
    return lines if gaps.speedup is None or (lines.speedup or 0.0) >= gaps.speedup else gaps


#: a smaller model, as section 5's baseline means it: half the width. The compute phases' FLOPs fall
#: by SMALLER_MODEL_LOW (products with one dimension halved; half the layers or the batch) to
#: SMALLER_MODEL_HIGH (every hidden-to-hidden product with both halved)
SMALLER_MODEL_LOW, SMALLER_MODEL_HIGH = 2.0, 4.0


def _half_or_all(model: str, share: float, factor: float, formula: str) -> Prediction:
    """Amdahl over ``share`` of the step made ``factor`` times faster at the high end, over half of
    it at the low end; the point their geometric mean."""
    hi, lo = amdahl(share, factor), amdahl(share / 2.0, factor)
    return known(model, math.sqrt(hi * lo), lo, hi, formula)


def host_gaps(i: StepInputs) -> Prediction:
    """Removing what holds the GPU back between its kernels inside the compute phases (a
    synchronisation per tensor, host work between launches): the GPU's idle share of the interval
    there, g (``gpu_one.compute_idle``), removed at the high end (Amdahl); half of it at the low end
    (a synchronisation removed still leaves the host's launches for the kernels after it to catch
    up); the point their geometric mean. Only where the host limits the step (MODEL_RESOURCES): a
    GPU that idles little there gains little. Only where the kernels fill the GPU while they run
    (``gpu_one.kernels_fill``): between small kernels the gaps are their launches, which CUDA graphs
    remove and removing a sync does not."""
    m = "amdahl"
    if i.gpu_idle_in_compute is None:
        return unknown(m, "not measured: the GPU's busy fraction (NVML) beside compute phases that hold the step")
    if i.gpu_kernels_fill is None:
        return unknown(
            m,
            "whether the GPU's gaps are synchronisations or the launches of small kernels is not measured "
            "(SM activity: GPM, a dcgm-exporter)",
        )
    if not i.gpu_kernels_fill:
        return unknown(
            m,
            "the kernels are small (SM activity under half of the busy time): the gaps between them are their "
            "launches, which removing a synchronisation does not shorten",
        )
    g = min(i.gpu_idle_in_compute, MAX_SHARE)
    return _half_or_all(
        m,
        g,
        math.inf,
        f"the GPU idles {g:.0%} of the interval between kernels inside the compute phases: half of that removed "
        "(low) or all (high)",
    )


def launch_gaps(i: StepInputs) -> Prediction:
    """CUDA graphs on a step whose host launches its kernels one by one: the GPU's idle share of the
    interval between kernels inside the compute phases, g (``gpu_one.compute_idle``), is the
    launches' (and the host's Python between them); a graph replays them at once. All of it removed
    at the high end (Amdahl), half at the low end (the host still runs the step's Python and the
    graph's own replay); the point their geometric mean (NVIDIA's guide: often 1.2-3x on
    launch-bound workloads, the knowledge base's source). Only where the host limits the step
    (MODEL_RESOURCES) and the kernels are small (``gpu_one.kernels_fill`` false): between kernels that
    fill the GPU the gaps are synchronisations (``host_gaps``), which a graph cannot hold."""
    m = "amdahl"
    if i.gpu_idle_in_compute is None:
        return unknown(m, "not measured: the GPU's busy fraction (NVML) beside compute phases that hold the step")
    if i.gpu_kernels_fill is None:
        return unknown(
            m,
            "whether the GPU's gaps are the launches of small kernels or synchronisations is not measured "
            "(SM activity: GPM, a dcgm-exporter)",
        )
    if i.gpu_kernels_fill:
        return unknown(
            m,
            "the kernels fill the GPU while they run: the gaps between them are the host's synchronisations, which "
            "a graph cannot hold (removing the syncs is predicted)",
        )
    g = min(i.gpu_idle_in_compute, MAX_SHARE)
    return _half_or_all(
        m,
        g,
        math.inf,
        f"the GPU idles {g:.0%} of the interval between kernels inside the compute phases, its launches' gaps: "
        "half of that removed (low) or all (high)",
    )


def restore_link(i: StepInputs) -> Prediction:
    """The degraded port back at the rate of its siblings, r times its own: the exposed
    communication c made r times faster at the high end (all of it the port's transfer), half of
    it at the low end (latency and the other nodes' links keep the rest); Amdahl, the point their
    geometric mean."""
    m = "amdahl"
    if not i.link_rate_ratio:
        return unknown(m, "no port of the node runs below the others' rate")
    c = i.share(Phase.COMMUNICATION).value
    return _half_or_all(
        m,
        c,
        i.link_rate_ratio,
        f"exposed communication {c:.0%} of the step, its port {i.link_rate_ratio:.2g}x faster at its siblings' rate: "
        "half of it the port's transfer (low) or all (high)",
    )


def cores_back(i: StepInputs) -> Prediction:
    """The cores other processes hold given back to the job (moved, limited, or the job on cores of
    its own): its threads run whenever they are runnable. Two ends. The least: only the run-queue
    wait of the thread that paces the step goes, q = its running-or-waiting share less its running
    share, T' = T (1 - q): the busiest loader worker where the step waits for data its workers load,
    else the training thread. The most: the job's threads as a whole run what they ask for, busy +
    waiting cores instead of busy, up to the cores the job may use and the cores the others held:
    x min(cores, busy + waiting, busy + outside) / busy. The point their geometric mean. Assumes
    the job's run-queue wait is for the other processes: it is modelled only where they hold at
    least OUTSIDE_BUSY cores while the job's threads wait (``outside_cores``). Measured on the
    suite's other_processes job (one busy loop per core outside the job) with the busy loops
    stopped: x1.90 (3 interleaved runs a side, ``python scripts/eval.py --only other_processes``),
    predicted x1.69 (x1.66-x1.71) under run and x1.63 under attach."""
    m = "cpu share"
    if i.outside_cores is None or not i.busy_cores or i.waiting_cores is None:
        return unknown(m, "the job's threads do not wait for a CPU behind other processes (or it is not measured)")
    busy, wait, out = i.busy_cores, i.waiting_cores, i.outside_cores
    most = max(1.0, min(i.cores or busy + wait, busy + wait, busy + out) / busy)
    pacer, q = _pacing_wait(i)
    least = 1.0 / (1.0 - min(q, MAX_SHARE)) if q is not None else most
    return known(
        m,
        math.sqrt(least * most),
        least,
        most,
        f"the job's threads run {busy:.2f} cores and wait for {wait:.2f} more while other processes hold "
        f"{out:.2f}"
        + (f" (on the host: {', '.join(i.outside_processes)})" if i.outside_processes else "")
        + f": given back, the job runs up to x{most:.2f} of its CPU time"
        + (f"; {pacer} waits {q:.0%} of the time (x{least:.2f} without it)" if q is not None else ""),
    )


def balance_ranks(i: StepInputs) -> Prediction:
    """The ranks' work even: each rank busy as long as their mean, so the straggler's lag behind
    the mean, b of the step (``straggler_balance``), no longer holds the others in their
    collectives. The most: all of it, T' = T (1 - b); the least: half (the work does not split
    evenly, or a part of it is the straggler's alone). The point is the most: an even split's
    step. Measured on the suite's straggler_uneven job (2 gloo ranks, a global batch of 2048 split
    256 / 1792, split 1024 / 1024): x1.49 and x1.63 (10 s runs), predicted x1.62 under run."""
    m = "even ranks"
    b = i.straggler_balance
    if b is None:
        return unknown(m, "no rank's own extra work holds the others in their collectives (or the ranks do not report)")
    b = min(b, MAX_SHARE)
    return known(
        m,
        1.0 / (1.0 - b),
        1.0 / (1.0 - b / 2),
        1.0 / (1.0 - b),
        f"the straggler is busy {b:.0%} of the step longer than the ranks' mean: with the work even the others "
        "stop waiting for it (all of it: high; half: low)",
    )


def _pacing_wait(i: StepInputs) -> tuple[str, float | None]:
    """The thread that paces the step and the share of the time it waits on a run queue: the busiest
    loader worker where the step waits for data (INPUT_HIGH) its workers load, else the training thread."""
    d = i.share(Phase.DATA_WAIT).value
    if (i.loader_workers or 0.0) >= NO_WORKERS and d >= INPUT_HIGH:
        running = i.worker_max_cores
        if running is None and i.worker_cores is not None and i.loader_workers:
            running = i.worker_cores / i.loader_workers  # the mean worker's, where the busiest is not read
        if running is None or i.worker_demand is None:
            return "the busiest loader worker", None
        return "the busiest loader worker", max(0.0, i.worker_demand - running)
    if i.main_cores is None or i.main_demand is None:
        return "the training thread", None
    return "the training thread", max(0.0, i.main_demand - i.main_cores)


def smaller_model(i: StepInputs) -> Prediction:
    """On a CPU, half the width: Amdahl over the compute phases (forward, backward, optimizer) made
    SMALLER_MODEL_LOW (the low end) to SMALLER_MODEL_HIGH (the high end) times faster, the point at
    their geometric mean. Measured on the suite's compute-bound CPU jobs (2026-12-02 record): width
    halved x2.42 (MLP; predicted x2.63), x2.54 (channels halved, conv net; x2.74), x2.27 (BERT;
    x2.77), x2.87 (Lightning MLP; x2.54), x2.70 (MLP with evaluation; x2.51); half the layers x1.84
    and half the batch beside an unchanged all-reduce x1.72 (each at the model's low end); the LSTM's
    x5.09 is above it (its recurrence's cost falls faster than its FLOPs)."""
    if i.device != "cpu":
        return unknown(
            "amdahl",
            "on an accelerator the compute phases do not scale with the FLOPs (kernels under the roofline, "
            "launch and memory limits): measure it (verify=True, compare)",
        )
    c = i.stage_share((Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER))
    mid = math.sqrt(SMALLER_MODEL_LOW * SMALLER_MODEL_HIGH)
    return known(
        "amdahl",
        amdahl(c.value, mid),
        amdahl(c.low, SMALLER_MODEL_LOW),
        amdahl(c.high, SMALLER_MODEL_HIGH),
        f"forward, backward and optimizer {c.value:.0%} of the step ({c.low:.0%} to {c.high:.0%}) at half the "
        f"width: {SMALLER_MODEL_LOW:g}x to {SMALLER_MODEL_HIGH:g}x fewer FLOPs",
    )


#: an optimizer with a smaller state (8-bit Adam, Dettmers et al. 2021): Adam's step on an fp32
#: parameter reads the parameter, its gradient and two moments and writes the parameter and the
#: moments, 7 x 4 = 28 bytes; with 8-bit moments 4 + 4 + 1 + 1 + 4 + 1 + 1 = 16. A memory-bound
#: optimizer phase is made at most 28/16 = 1.75x faster, the rest of the step untouched
SMALL_STATE_FACTOR = 28.0 / 16.0
#: the resources for which the time models of a mitigation hold; for the others it is unknown (a
#: smaller optimizer state relieves memory capacity through what the freed memory allows, a larger
#: batch or model, which no model of the step predicts)
MODEL_RESOURCES: dict[str, frozenset[str]] = {
    "small_state_optimizer": frozenset({Resource.GPU_MEMORY_BANDWIDTH, Resource.CPU_MEMORY_BANDWIDTH}),
    # the host: between the kernels inside the compute phases, or on the other stage's lines that synchronise
    "avoid_host_syncs": frozenset({Resource.CPU_COMPUTE}),
    # the host's launches: where the host limits the step
    "cuda_graphs": frozenset({Resource.CPU_COMPUTE}),
}


def _optimizer_ceiling(i: StepInputs, unmeasured: str) -> tuple[Share, float] | Prediction:
    """A mitigation acting on the optimizer phase alone gains at most that phase's share: the phase's
    share and that ceiling, or the Prediction where that is all that can be said (the optimizer not
    timed; or a ceiling of MIN_PREDICTED_GAIN or more, said with what of the phase it removes,
    ``unmeasured``, not being measured)."""
    if Phase.OPTIMIZER not in i.shares:
        return unknown("amdahl", "the optimizer step was not timed: its share of the step is not known")
    o = i.share(Phase.OPTIMIZER)
    ceiling = amdahl(o.high, math.inf)
    if ceiling - 1.0 >= MIN_PREDICTED_GAIN:
        return unknown(
            "amdahl",
            f"at most x{ceiling:.2f} (the optimizer step, {o.value:.0%} of the step, removed); how much of it "
            f"{unmeasured} is not measured: measure it (verify=True, compare)",
        )
    return o, ceiling


def fused_optimizer(i: StepInputs) -> Prediction:
    """A fused optimizer step acts on the optimizer phase alone (``_optimizer_ceiling``): how much of
    the phase it saves (launches per parameter, passes over the state) is not measured, so below
    MIN_PREDICTED_GAIN the ceiling is the prediction (at most), which ranks it after the unknown ones."""
    found = _optimizer_ceiling(i, "a fused step saves")
    if isinstance(found, Prediction):
        return found
    o, ceiling = found
    return known(
        "amdahl",
        ceiling,
        1.0,
        ceiling,
        f"at most the optimizer step, {o.value:.0%} of the step ({o.low:.0%} to {o.high:.0%}), removed",
    )


def small_state_optimizer(i: StepInputs) -> Prediction:
    """A smaller optimizer state acts on the optimizer phase alone, so it gains at most that phase's
    share (an 8-bit optimizer on a step whose time is in decoding or the model's own weight reads
    does nothing for them). Only that ceiling is known (whether the phase is memory-bound is not):
    below MIN_PREDICTED_GAIN it is the prediction (Amdahl over the phase made SMALL_STATE_FACTOR
    faster, the high end the phase removed) and ranks it after the unknown ones; above, unknown
    with the ceiling said (``_optimizer_ceiling``)."""
    found = _optimizer_ceiling(i, "is the state's memory traffic")
    if isinstance(found, Prediction):
        return found
    o, ceiling = found
    return known(
        "amdahl",
        amdahl(o.value, SMALL_STATE_FACTOR),
        amdahl(o.low, SMALL_STATE_FACTOR),
        ceiling,
        f"the optimizer step {o.value:.0%} of the step ({o.low:.0%} to {o.high:.0%}), its memory traffic "
        f"{SMALL_STATE_FACTOR:.2f}x less with 8-bit moments; the rest of the step unchanged",
    )


def cache_preprocessing(i: StepInputs) -> Prediction:
    """Precompute or cache deterministic preprocessing: the data stage is removed (Amdahl with an
    infinite factor on the data wait; assumes reading the cache costs nothing next to the step)."""
    return _amdahl_share("amdahl", i.stage_share((Phase.DATA_WAIT, Phase.FILE_IO)), math.inf, "data wait")


def simplify_augmentation(i: StepInputs, cheaper: float = AUGMENT_CHEAPER) -> Prediction:
    """Cheaper random augmentation: the share r of the data stage's stack samples in code that draws
    random numbers (``data_random``) made ``cheaper`` times faster, the rest of the data stage kept:
    the stage becomes f = 1 - r (1 - 1/cheaper) of what it was. No workers: the loading is in the
    step, T' = T (1 - d) + d f T (Amdahl). With workers the loader runs beside the step and, data-bound,
    takes T per batch: T' = max(T (1 - d), f T). The low end keeps the stage's low share; the high
    end drops the augmentation altogether (cheaper = inf). Unknown without stack samples of the data
    stage read for random draws (py-spy under run and attach)."""
    r = i.data_random
    if r is None:
        return unknown(
            "amdahl",
            "not measured: which share of the data stage is random augmentation (stack samples of the loader)",
        )
    d = i.stage_share((Phase.DATA_WAIT, Phase.FILE_IO))

    def stage_left(c: float) -> float:
        return 1.0 - r * (1.0 - (0.0 if math.isinf(c) else 1.0 / c))

    def speed(x: float, c: float) -> float:
        x = min(x, MAX_SHARE)
        if (i.loader_workers or 0.0) < NO_WORKERS:
            return 1.0 / ((1.0 - x) + x * stage_left(c))
        return 1.0 / max(1.0 - x, stage_left(c))

    where = "in the step" if (i.loader_workers or 0.0) < NO_WORKERS else "beside the step (workers)"
    return known(
        "amdahl" if where == "in the step" else "loader pipeline",
        speed(d.value, cheaper),
        speed(d.low, cheaper),
        speed(d.high, math.inf),
        f"data wait {d.value:.0%} of the step, loading {where}; random augmentation {r:.0%} of the loader's "
        f"stack samples made {cheaper:g}x cheaper (high end: dropped)",
    )


def cache_locally(i: StepInputs) -> Prediction:
    """Serve the data from local RAM (or a local disk that keeps up) where storage limits the loader.

    Between two bounds. The least: the loading keeps the CPU it uses now, c per batch (the workers'
    cores times the step, or the training thread's busy time beyond the step's own work), and only
    the wait for the device goes: T' = max(Tc, c / W) with W >= 1 workers, Tc + c with none (Tc =
    T (1 - d)). That CPU includes the read calls' own, which reading from RAM does not need, so
    the gain is at least this. The most: the data wait removed (Amdahl, reads that cost nothing).
    The point is their geometric mean, the middle on a log scale. Measured on the suite's storage
    jobs served from RAM (docs/eval-results/20261202T0046-cbe6ef09a0.json): x8.79 with 2 workers
    (bounds x4.6-x26.9, point x11.2), x9.55 with 2 workers (x4.3-x31.2, x11.6), x12.58 with none
    (x1.95-x23.0, x6.7)."""
    m = "storage wait removed"
    d = i.stage_share((Phase.DATA_WAIT, Phase.FILE_IO))
    whole = d.value >= MAX_SHARE  # the step all wait (attach's stack samples): the most is not measured
    w = i.loader_workers
    if w is None:
        return unknown(m, "not measured: the DataLoader's workers")
    if w >= NO_WORKERS:
        if i.worker_cores is None:
            return unknown(m, "not measured: the CPU the loader workers use")
        cpu = i.worker_cores * i.step

        def least_step(x: float) -> float:
            return max(i.step * (1.0 - x), cpu / w)
    else:
        if i.main_cores is None:
            return unknown(m, "not measured: the training thread's CPU use")
        main = i.main_cores

        def least_step(x: float) -> float:
            return i.step * (1.0 - x) + max(0.0, main - (1.0 - x)) * i.step

        cpu = least_step(d.value) - i.step * (1.0 - d.value)
    least = i.step / least_step(d.value)
    most = amdahl(d.value, math.inf)
    if whole:  # what is left without the wait is not measured: the least is the prediction, the most capped
        return known(
            m,
            least,
            least,
            most,
            f"data wait {d.value:.0%} of the step: at least x{least:.2f} (the loading keeps its "
            f"{cpu * 1e3:.1f} ms CPU per batch with {w:g} workers); the most is not measured (capped at x{most:.0f})",
        )
    return known(
        m,
        math.sqrt(least * most),
        min(least, i.step / least_step(d.low)),
        amdahl(d.high, math.inf),
        f"data wait {d.value:.0%} of a {i.step * 1e3:.1f} ms step; at least x{least:.2f} (the loading keeps its "
        f"{cpu * 1e3:.1f} ms CPU per batch with {w:g} workers), at most x{most:.2f} (the wait removed); "
        "the point is their geometric mean",
    )


Model = Callable[[StepInputs], Prediction]
#: the models by knowledge-base id; the others are unknown with the reason in ``NO_MODEL``
MODELS: dict[str, Model] = {
    "more_loader_workers": more_workers,
    "hide_loader_latency": more_workers,
    "data_echoing": data_echoing,
    "mixed_precision": mixed_precision,
    "tf32_matmuls": tf32_matmuls,
    "less_frequent_sync": less_frequent_sync,
    "larger_batch": gradient_accumulation,
    "gradient_compression": gradient_compression,
    "shard_less": shard_less,
    "smaller_model": smaller_model,
    "checkpoint_less_often": lambda i: other_lines(i, "checkpoint"),
    "log_less_often": lambda i: other_lines(i, "logging"),
    "evaluate_less_often": lambda i: other_lines(i, "evaluation"),
    "per_step_python_work": lambda i: other_lines(i, "hottest_function"),
    "cache_preprocessing": cache_preprocessing,
    "simplify_augmentation": simplify_augmentation,
    "cache_locally": cache_locally,
    "small_state_optimizer": small_state_optimizer,
    "fused_optimizer": fused_optimizer,
    "avoid_host_syncs": host_syncs,
    "restore_link": restore_link,
    "local_model_parallel": other_collectives,
    "isolate_cores": cores_back,
    "balance_ranks": balance_ranks,
    "pinned_memory": pinned_memory,
    "compile_model": compile_model,
    "cuda_graphs": launch_gaps,
}
#: the models of a faster math path for the GPU's kernels (the roofline and dtype peaks)
FASTER_KERNELS = frozenset({"mixed_precision", "tf32_matmuls"})
NO_MODEL = (
    "no model from the measured step (its gain is in how much work it removes): measure it (verify=True, compare)"
)


def has_model(mitigation_id: str, resource: str | None = None) -> bool:
    """A model predicts the mitigation's gain where it addresses ``resource`` (given its inputs)."""
    held = MODEL_RESOURCES.get(mitigation_id)
    return mitigation_id in MODELS and (held is None or resource is None or resource in held)


def predict(mitigation_id: str, inputs: StepInputs | None, resource: str | None = None) -> Prediction:
    """The prediction for a knowledge-base mitigation on the window's inputs, where it addresses
    ``resource`` (unknown where its model does not hold for that resource: MODEL_RESOURCES)."""
    if inputs is None:
        return unknown("none", "no step phases measured yet (the torch hook's timings, or stack samples)")
    held = MODEL_RESOURCES.get(mitigation_id)
    if held is not None and resource is not None and resource not in held:
        return unknown("none", f"for {resource}: {NO_MODEL}")
    if mitigation_id in FASTER_KERNELS and resource == Resource.CPU_COMPUTE and inputs.device == "cuda":
        return unknown(
            "none",
            "the host limits this GPU step (its launches, its Python): faster kernels leave the host's time as it is, "
            "so the step gains little or nothing; measure it (verify=True, compare)",
        )
    model = MODELS.get(mitigation_id)
    return model(inputs) if model else unknown("none", NO_MODEL)


def predict_hook(hook: str, params: Mapping[str, Any], inputs: StepInputs | None) -> Prediction:
    """The prediction for a mitigation the hook applies, with its own parameters (for trials)."""
    if inputs is None:
        return unknown("none", "no step phases measured yet (the torch hook's timings, or stack samples)")
    if hook == "dataloader_settings":
        n = params.get("num_workers")
        return more_workers(inputs, float(n)) if n is not None else unknown("none", "num_workers unchanged")
    if hook == "mixed_precision":
        return mixed_precision(inputs, str(params.get("dtype", "bfloat16")))
    if hook == "data_echoing":
        return data_echoing(inputs, int(params.get("factor", ECHO)))
    if hook == "less_frequent_sync":
        return less_frequent_sync(inputs, int(params.get("k", SYNC_EVERY)))
    if hook == "gradient_accumulation":
        return gradient_accumulation(inputs, int(params.get("k", SYNC_EVERY)))
    if hook == "ddp_comm_hook":
        return gradient_compression(inputs, str(params.get("kind", "fp16")))
    return unknown("none", NO_MODEL)
