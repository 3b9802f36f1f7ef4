"""CPU training whose step is mostly forward/backward/optimizer: CPU compute, CPU memory
bandwidth, per-operator overhead, or (when the job's CPUs are not busy) whatever the step waits on
(``compute_wait.py``).

With peaks known, achieved FLOP/s and bytes/s against them decide (operand sizes, section 2.3).
With none known (a fresh machine), arithmetic intensity against the lowest ridge point of any
current CPU or GPU (data/ridge_points.json, peaks.json) decides the memory side, and the job's own
CPU figures decide whether it computes at all: a verdict of cpu_compute needs the job's processes
near the cores they may use, or one thread at ~100% of its core (a serial or GIL-bound step).

The family is a chain of decisions (``DECISIONS``), each a small function of the window's case
that names a finding or passes; the first that names one decides, ``_busy_cores`` closes the chain.
A decision may add the evidence it read to ``ev`` before passing (the later finding carries it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from bottleneckd.diagnosis.ridge import lowest_ridge, smallest_last_level_cache
from bottleneckd.diagnosis.rules.comm_cost import comm_cost
from bottleneckd.diagnosis.rules.common import arithmetic_intensity, compute_share, pct, runs_on_gpu
from bottleneckd.diagnosis.rules.compute_wait import waiting_inside_compute
from bottleneckd.diagnosis.rules.cpu_state import CpuState, cpu_state
from bottleneckd.diagnosis.rules.stack_comm import stack_comm
from bottleneckd.diagnosis.thresholds import (
    COMPUTE_FULL,
    COMPUTE_STAGE,
    DRAM_PRACTICAL_MAX,
    LOW_INTENSITY_OPS,
    MEMBW_BUSY,
    MIN_DRAM_BYTES,
    NEAR_PEAK_FLOOR,
    ONE_CORE,
    OUTSIDE_BUSY,
    RIDGE_MARGIN,
    ROOFLINE_STEPS,
    SIDE_THREADS_SMALL,
    STACK_SAMPLES,
)
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED, Phase, Resource, Stage
from bottleneckd.model.units import fmt_value
from bottleneckd.peaks.resolve import PeakTable

# --- scores: chosen, not measured (they rank this family's findings against the others') --------

#: per-operator overhead (neither rate near its peak, operands in cache, too little traffic), and a
#: compute stage whose resource cannot be named yet: a middle strength
OVERHEAD_SCORE = 0.6
UNDETERMINED_SCORE = 0.6
#: the roofline with known peaks: 0.55 plus the achieved share of the nearer peak
ROOFLINE_BASE = 0.55
#: no peak known, intensity below the lowest ridge point: 0.55 plus up to 0.3, the further below it
RIDGE_BASE = 0.55
RIDGE_RANGE = 0.3
#: attach: normalisation/elementwise operators in the forward stacks: 0.5 plus 0.3 of their share
LOW_OPS_BASE = 0.5
LOW_OPS_RANGE = 0.3
#: busy CPUs: 0.55 plus up to 0.35 by how full the cores are (a serial step counts as full)
BUSY_BASE = 0.55
BUSY_RANGE = 0.35
#: the cores the job ran on, at least (bytes per core-second of a job that barely ran)
MIN_CORES_RAN = 0.05


def cpu_compute(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """The compute stage's finding, weighed by how much of the step the compute stage takes: a
    step half in compute and half waiting for data on the same CPU is the data stage's as much as
    compute's, and the input rule's finding (scored by its share) decides."""
    return _weighed_by_compute_share(w, _compute_stage(w, peaks))


def _weighed_by_compute_share(w: WindowStats, out: list[Finding]) -> list[Finding]:
    """Scale the findings by compute's share of the step (full at COMPUTE_FULL); the all-reduce run
    inside backward on the same cores (gloo on CPU) is communication's share, not compute's."""
    share = compute_share(w)
    cost = comm_cost(w)
    sc = stack_comm(w)
    if share is not None and sc is not None and sc.taken_from_compute:
        # attach: the samples in which backward waited on the all-reduce, and the CPU gloo's
        # threads took from it, are communication's
        share = max(0.0, share - sc.taken_from_compute)
        out = [
            replace(f, evidence=f.evidence + (f"of which {pct(sc.taken_from_compute)} of the step is communication's",))
            for f in out
        ]
    if share is not None and cost is not None and cost.shares_cores and cost.overlapped_share:
        share = max(0.0, share - cost.overlapped_share)
        note = (
            f"of which {pct(cost.overlapped_share)} of the step is the all-reduce overlapped with backward on the "
            "same cores"
        )
        out = [replace(f, evidence=f.evidence + (note,)) for f in out]
    if share is None or share >= COMPUTE_FULL:
        return out
    k = share / COMPUTE_FULL
    return [replace(f, score=f.score * k) for f in out]


@dataclass(frozen=True, kw_only=True)
class CpuCase:
    """A CPU job's window in its compute stage: what the decisions read."""

    w: WindowStats
    facts: Mapping[str, Any]
    cpu: CpuState
    peak_c: float | None  # the CPU's compute peak (FLOP/s), when known
    peak_b: float | None  # the host's memory-bandwidth peak (B/s), when known

    @property
    def flops(self) -> Any:
        return self.facts.get("achieved_flops")

    @property
    def byts(self) -> Any:
        return self.facts.get("achieved_bytes_per_second")

    @property
    def ai(self) -> float | None:
        return arithmetic_intensity(self.facts)

    @property
    def mbw(self) -> float | None:
        return self.w.get(Resource.CPU_MEMORY_BANDWIDTH, "host", "utilization")

    @property
    def ranks(self) -> int:
        return max(self.cpu.ranks, int(self.facts.get("world_size") or 1))


def _in_compute_stage(w: WindowStats, peaks: PeakTable | None = None) -> bool:
    """A CPU job (no GPU of its own) whose step is mostly compute. Without step phases (start-up,
    or no hook and no stacks) which stage is busy is unknown: no finding."""
    share = compute_share(w)
    return share is not None and not share < COMPUTE_STAGE and not runs_on_gpu(w, peaks)


def _compute_stage(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    if not _in_compute_stage(w, peaks):
        return []
    p = w.phases
    facts = p.facts if p else {}
    c = CpuCase(
        w=w,
        facts=facts,
        cpu=cpu_state(w),
        peak_c=peaks.value(Resource.CPU_COMPUTE, "cpu"),
        peak_b=peaks.value(Resource.CPU_MEMORY_BANDWIDTH, "host"),
    )
    ev = [f"forward+backward+optimizer {pct(compute_share(w))} of step time"] + c.cpu.describe()
    if not c.cpu.busy_evidence:
        return waiting_inside_compute(w, c.cpu, ev, facts)
    for decide in DECISIONS:
        found = decide(c, ev)
        if found is not None:
            return [found]
    return [_busy_cores(c, ev)]


def _compute(resource: Resource, score: float, ev: list[str], figures: dict[str, float] | None = None) -> Finding:
    return Finding(resource=resource, stage=Stage.COMPUTE, score=score, evidence=tuple(ev), figures=figures or {})


def _untimed_ddp(c: CpuCase, ev: list[str]) -> Finding | None:
    """Several ranks whose gradient communication is not timed: compute and communication cannot be
    told apart, unless the ranks' CPU is almost all in their main threads (gloo reduces in threads of
    its own: the all-reduce takes little of the cores, and the main threads compute)."""
    facts, p = c.facts, c.w.phases
    # DDP's all-reduce runs inside backward: timed only through its comm hook. Without DDP (FSDP,
    # explicit all_reduce) the collectives are Python calls the hook times: any time seen counts.
    if facts.get("ddp"):
        # the comm hook's timing (run), or what the stacks and the backend's threads show (attach)
        timed = facts.get("ddp_comm_timing") == "comm hook" or stack_comm(c.w) is not None
    else:
        timed = bool(p and (p.share(Phase.COMMUNICATION) or 0.0) > 0.0)
    if not (c.ranks > 1 or facts.get("ddp")) or timed:
        return None
    side = c.w.get(Resource.CPU_COMPUTE, "job", "rank_side_thread_cores")
    rank_busy = c.w.get(Resource.CPU_COMPUTE, "job", "rank_busy_cores")
    if side is not None and rank_busy and side <= SIDE_THREADS_SMALL * rank_busy:
        ev.append(
            f"the ranks' threads other than their main ones (where gloo reduces) at {side:.2f} of their "
            f"{rank_busy:.2f} cores: the all-reduce takes little CPU; the main threads compute"
        )
        return None
    seen = (
        f"; the ranks' threads other than their main ones (gloo's reduction, or intra-op threads) use {side:.2f} of "
        f"their {rank_busy:.2f} cores"
        if side is not None and rank_busy
        else ""
    )
    why = (
        f"{c.ranks} ranks whose gradient communication is not timed here (DDP runs it inside backward){seen}: compute "
        "and communication cannot be told apart; time it (bottleneckd's DDP communication hook, under run) or compare "
        "a step under no_sync()"
    )
    return _compute(UNDETERMINED, UNDETERMINED_SCORE, ev + [why])


def _roofline_against_peaks(c: CpuCase, ev: list[str]) -> Finding | None:
    """Both peaks known and the hook's achieved FLOP/s and bytes/s: the nearer peak names the
    resource, unless neither rate is near its peak (per-operator overhead); memory bandwidth only
    where the intensity is more than RIDGE_MARGIN below the ridge point, or below every machine's."""
    flops, byts, peak_c, peak_b = c.flops, c.byts, c.peak_c, c.peak_b
    f_ratio = flops / peak_c if flops is not None and peak_c else None
    b_ratio = byts / peak_b if byts is not None and peak_b else None
    if f_ratio is None or b_ratio is None or not peak_c or not peak_b:
        return None
    ev.append(
        f"achieved {fmt_value(flops, 'FLOP/s')} = {pct(f_ratio)} of compute peak, {fmt_value(byts, 'B/s')} = "
        f"{pct(b_ratio)} of memory bandwidth"
    )
    ridge = peak_c / peak_b
    if c.ai is not None:
        ev.append(f"arithmetic intensity {c.ai:.1f} FLOP/byte vs ridge point {ridge:.1f}")
    if max(f_ratio, b_ratio) < NEAR_PEAK_FLOOR:
        ev.append(
            "neither FLOP/s nor bytes/s is near its peak: per-operator overhead (Python, small ops) limits the step"
        )
        return _compute(Resource.CPU_COMPUTE, OVERHEAD_SCORE, ev)
    # b_ratio / f_ratio is the ridge point over the intensity
    lowest = lowest_ridge()
    if b_ratio > f_ratio * RIDGE_MARGIN or (
        b_ratio > f_ratio and c.ai is not None and lowest and c.ai < lowest.flop_per_byte
    ):
        return _compute(Resource.CPU_MEMORY_BANDWIDTH, min(1.0, ROOFLINE_BASE + b_ratio), ev)
    if b_ratio > f_ratio:
        ev.append(
            f"intensity within {RIDGE_MARGIN:g}x below the ridge point (a measured ridge point moves that much between "
            "calibrations): the roofline does not tell compute from memory bandwidth here; the busy cores name compute"
        )
    return _compute(Resource.CPU_COMPUTE, min(1.0, ROOFLINE_BASE + f_ratio), ev)


def _note_flops_unknown(c: CpuCase, ev: list[str]) -> Finding | None:
    """Counted, but not all of the step's FLOPs: no intensity; the peak-free evidence decides."""
    if c.facts.get("flops_unknown"):
        ev.append(f"FLOPs per step unknown ({c.facts['flops_unknown']}): no arithmetic intensity")
    return None


def _awaiting_counted_step(c: CpuCase, ev: list[str]) -> Finding | None:
    """run, no memory-bandwidth reading: the hook has not yet reported one step's FLOPs and bytes
    (it does within ROOFLINE_STEPS): compute or memory bandwidth is not guessed."""
    f = c.facts
    if (
        c.mbw is None
        and c.ai is None
        and f.get("phase_source") != "py-spy"
        and "parameters" in f
        and c.w.steps_seen <= ROOFLINE_STEPS
    ):
        why = (
            "compute or memory bandwidth: no sampler reads the memory bandwidth here and the hook has not yet counted "
            f"one step's FLOPs and bytes (it does so early in the run; {c.w.steps_seen} steps so far)"
        )
        return _compute(UNDETERMINED, UNDETERMINED_SCORE, ev + [why])
    return None


def _awaiting_operator_mix(c: CpuCase, ev: list[str]) -> Finding | None:
    """attach, no memory-bandwidth reading: too few forward stack samples have named their operators yet."""
    if (
        c.mbw is None
        and c.facts.get("phase_source") == "py-spy"
        and c.facts.get("low_intensity_op_share") is None
        and c.w.steps_seen <= STACK_SAMPLES
    ):
        why = (
            "compute or memory bandwidth: no sampler reads the memory bandwidth here and too few forward stack samples "
            f"name their operators yet ({c.w.steps_seen} stack samples so far)"
        )
        return _compute(UNDETERMINED, UNDETERMINED_SCORE, ev + [why])
    return None


def _memory_bandwidth_busy(c: CpuCase, ev: list[str]) -> Finding | None:
    """The memory-bandwidth sampler (a known peak) reads the host's DRAM busy."""
    mbw = c.mbw
    if mbw is not None and mbw >= MEMBW_BUSY:
        return _compute(
            Resource.CPU_MEMORY_BANDWIDTH,
            min(1.0, mbw / DRAM_PRACTICAL_MAX),
            ev + [f"memory bandwidth {pct(mbw)} of peak"],
        )
    return None


def _below_lowest_ridge(c: CpuCase, ev: list[str]) -> Finding | None:
    """The roofline undecided (a peak unknown), intensity below the lowest ridge point of any
    current machine: DRAM-bound, unless the step's operands fit in any last-level cache or the
    traffic per core the job ran on is too little to fill any machine's memory bandwidth (then
    per-operator overhead)."""
    ai, ridge, cpu, byts = c.ai, lowest_ridge(), c.cpu, c.byts
    if not (ai is not None and ridge is not None and ai < ridge.flop_per_byte):
        return None
    # bytes per core-second the job actually ran: on a shared machine the job gets a fraction of a
    # core, and its bytes/s shrinks with it while its intensity does not
    ran = max(cpu.busy if cpu.busy is not None else (cpu.host or 0.0) * cpu.cores, MIN_CORES_RAN)
    per_core = byts / min(ran, cpu.cores) if byts is not None else None
    step_bytes = c.facts.get("operand_bytes_per_step")
    llc = smallest_last_level_cache()
    if step_bytes is not None and llc is not None and step_bytes < llc:
        ev.append(
            f"arithmetic intensity {ai:.2f} FLOP/byte but {fmt_value(step_bytes, 'B')} of operands per step fit in the "
            f"last-level cache of any current CPU ({fmt_value(llc, 'B')}): not DRAM-bound; per-operator overhead "
            "(Python, small ops) limits the step"
        )
        return _compute(Resource.CPU_COMPUTE, OVERHEAD_SCORE, ev)
    if per_core is not None and per_core >= MIN_DRAM_BYTES:
        ev.append(
            f"arithmetic intensity {ai:.2f} FLOP/byte, below the lowest ridge point of any current CPU or GPU "
            f"({ridge.flop_per_byte:.1f}, {ridge.part}): the memory-bandwidth side of every roofline"
        )
        ev.append(
            f"achieved {fmt_value(byts, 'B/s')} of operands, {fmt_value(per_core, 'B/s')} per core it ran on"
            + (" (memory bandwidth peak unknown here)" if c.peak_b is None else "")
        )
        score = RIDGE_BASE + RIDGE_RANGE * (1 - ai / ridge.flop_per_byte)
        return _compute(
            Resource.CPU_MEMORY_BANDWIDTH, score, ev, {"arithmetic_intensity": ai, "lowest_ridge": ridge.flop_per_byte}
        )
    if per_core is not None:
        ev.append(
            f"arithmetic intensity {ai:.2f} FLOP/byte but only {fmt_value(per_core, 'B/s')} of operands per core: too "
            "little traffic to fill any machine's memory bandwidth; per-operator overhead (Python, small ops) limits "
            "the step"
        )
        return _compute(Resource.CPU_COMPUTE, OVERHEAD_SCORE, ev)
    return None


def _low_intensity_operators(c: CpuCase, ev: list[str]) -> Finding | None:
    """attach: most forward stack samples in normalisation/elementwise operators."""
    low = c.facts.get("low_intensity_op_share")
    if low is not None and low >= LOW_INTENSITY_OPS:
        ev.append(
            f"{pct(low)} of forward stack samples in normalisation/elementwise operators: bytes moved, few "
            "multiply-adds (operand size, section 2.3)"
        )
        return _compute(Resource.CPU_MEMORY_BANDWIDTH, LOW_OPS_BASE + LOW_OPS_RANGE * low, ev)
    return None


def _busy_cores(c: CpuCase, ev: list[str]) -> Finding:
    """What is left: the job's cores busy (or one thread at a full core) computing."""
    ai, ridge, cpu = c.ai, lowest_ridge(), c.cpu
    if ai is not None and ridge is not None and ai >= ridge.flop_per_byte:
        ev.append(
            f"arithmetic intensity {ai:.1f} FLOP/byte, at or above the lowest ridge point of current machines "
            f"({ridge.flop_per_byte:.1f})"
        )
    if cpu.serial and not cpu.saturated:
        # the thread may run less than a core and wait for the rest (cpu.hot counts both); the cores
        # are idle only where nothing outside the job holds them either
        runs = max(cpu.main or 0.0, cpu.hottest or 0.0) >= ONE_CORE
        others = cpu.waits_behind_others or (cpu.outside or 0.0) >= OUTSIDE_BUSY
        ev.append(
            "one thread at a full core while the other cores idle: a serial (GIL-bound or single-threaded) step"
            if runs and not others
            else "one thread running or waiting to run a full core's worth of time"
            + (" (other processes take the rest of the cores)" if others else "")
            + ": a serial (GIL-bound or single-threaded) step"
        )
    busy = (cpu.busy / cpu.cores) if cpu.busy is not None else (cpu.host or 0.0)
    score = BUSY_BASE + BUSY_RANGE * min(1.0, max(busy, 1.0 if cpu.serial else 0.0))
    if ai is None and not c.facts.get("flops_unknown"):
        # said, not scored: a lower score let DDP's all-reduce outrank the compute that halving the
        # batch proved (ddp_compute under attach, tests/test_stack_comm.py); busy cores name compute
        # right on 16 of the suite's 17 compute-stage CPU jobs under attach, grad_accumulation (a
        # skinny GEMM streaming its weights, memory bandwidth) the one they cannot tell
        ev.append(
            "arithmetic intensity unknown (no FLOP or byte count: attach has no hook; `bottleneckd run` counts "
            "them): busy cores name compute, and cannot tell it from waiting on memory bandwidth"
        )
    return _compute(Resource.CPU_COMPUTE, score, ev)


#: the decisions in order; the first that names a finding decides, else ``_busy_cores``
DECISIONS: tuple[Callable[[CpuCase, list[str]], Finding | None], ...] = (
    _untimed_ddp,
    _roofline_against_peaks,
    _note_flops_unknown,
    _awaiting_counted_step,
    _awaiting_operator_mix,
    _memory_bandwidth_busy,
    _below_lowest_ridge,
    _low_intensity_operators,
)
