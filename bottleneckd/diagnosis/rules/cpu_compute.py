"""CPU training whose step is mostly forward/backward/optimizer: CPU compute, CPU memory
bandwidth, per-operator overhead, or (when the job's CPUs are not busy) whatever the step waits on.

With peaks known, achieved FLOP/s and bytes/s against them decide (operand sizes, section 2.3).
With none known (a fresh machine), arithmetic intensity against the lowest ridge point of any
current CPU or GPU (data/ridge_points.json, peaks.json) decides the memory side, and the job's own
CPU figures decide whether it computes at all: a verdict of cpu_compute needs the job's processes
near the cores they may use, or one thread at ~100% of its core (a serial or GIL-bound step).
"""

from __future__ import annotations

from dataclasses import replace

from bottleneckd.diagnosis.ridge import lowest_ridge, smallest_last_level_cache
from bottleneckd.diagnosis.rules.common import (
    MIN_DRAM_BYTES,
    NEAR_PEAK_FLOOR,
    CpuState,
    comm_cost,
    compute_share,
    cpu_state,
    io_wait,
    pct,
    runs_on_gpu,
)
from bottleneckd.diagnosis.rules.stack_comm import stack_comm
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED
from bottleneckd.model.units import fmt_value
from bottleneckd.peaks.resolve import PeakTable

#: the hook counts one step's FLOPs and bytes at its 3rd step and reports them with the next report;
#: past this many steps without them the counting failed, and the rule goes on without
ROOFLINE_STEPS = 12
#: untimed DDP (attach): the ranks' CPU outside their main threads at most this share of theirs means
#: the all-reduce (gloo reduces in threads of its own) takes little of the cores
SIDE_THREADS_SMALL = 0.10
#: attach: stack samples after which an operator mix still unknown (no recognised operator in
#: forward) is taken as not low-intensity
STACK_SAMPLES = 24


def cpu_compute(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """The findings of _cpu_compute, weighed by how much of the step the compute stage takes: a
    step half in compute and half waiting for data on the same CPU is the data stage's as much as
    compute's, and the input rule's finding (scored by its share) decides."""
    out = _cpu_compute(w, peaks)
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
        # backward's time includes an all-reduce run on the same cores (gloo on CPU): that part is
        # communication's, not compute's
        share = max(0.0, share - cost.overlapped_share)
        out = [
            replace(
                f,
                evidence=f.evidence
                + (
                    f"of which {pct(cost.overlapped_share)} of the step is the all-reduce overlapped "
                    "with backward on the same cores",
                ),
            )
            for f in out
        ]
    if share is None or share >= 0.8:
        return out
    k = share / 0.8
    return [replace(f, score=f.score * k) for f in out]


def _cpu_compute(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    p = w.phases
    comp_share = compute_share(w)
    if comp_share is not None and comp_share < 0.5:
        return []
    if runs_on_gpu(w):
        return []
    facts = p.facts if p else {}
    cpu = cpu_state(w)
    if comp_share is None:
        return []  # no step phases (start-up, or no hook and no stacks): which stage is busy is unknown
    cev = (
        [f"forward+backward+optimizer {pct(comp_share)} of step time"] if comp_share is not None else []
    ) + cpu.describe()
    if not cpu.busy_evidence:
        return _waiting(w, cpu, cev, facts)
    ranks = max(cpu.ranks, int(facts.get("world_size") or 1))
    # DDP's all-reduce runs inside backward: timed only through its comm hook. Without DDP (FSDP,
    # explicit all_reduce) the collectives are Python calls the hook times: any time seen counts.
    if facts.get("ddp"):
        # the comm hook's timing (run), or what the stacks and the backend's threads show (attach)
        timed = facts.get("ddp_comm_timing") == "comm hook" or stack_comm(w) is not None
    else:
        timed = bool(p and (p.share("communication") or 0.0) > 0.0)
    if (ranks > 1 or facts.get("ddp")) and not timed:
        side = w.get("cpu_compute", "job", "rank_side_thread_cores")
        rank_busy = w.get("cpu_compute", "job", "rank_busy_cores")
        if side is not None and rank_busy and side <= SIDE_THREADS_SMALL * rank_busy:
            # gloo reduces in threads of its own: with the ranks' CPU almost all in their main
            # threads, the all-reduce takes little of the cores, and the main threads compute
            cev.append(
                f"the ranks' threads other than their main ones (where gloo reduces) at {side:.2f} of their {rank_busy:.2f} "
                "cores: the all-reduce takes little CPU; the main threads compute"
            )
        else:
            seen = (
                f"; the ranks' threads other than their main ones (gloo's reduction, or intra-op threads) use {side:.2f} of "
                f"their {rank_busy:.2f} cores"
                if side is not None and rank_busy
                else ""
            )
            why = (
                f"{ranks} ranks whose gradient communication is not timed here (DDP runs it inside backward){seen}: compute and "
                "communication cannot be told apart; time it (bottleneckd's DDP communication hook, under run) or compare a step "
                "under no_sync()"
            )
            return [Finding(UNDETERMINED, "compute", 0.6, tuple(cev + [why]), None)]
    flops, byts = facts.get("achieved_flops"), facts.get("achieved_bytes_per_second")
    peak_c = peaks.value("cpu_compute", "cpu")
    peak_b = peaks.value("cpu_memory_bandwidth", "host")
    f_ratio = flops / peak_c if flops is not None and peak_c else None
    b_ratio = byts / peak_b if byts is not None and peak_b else None
    if f_ratio is not None and b_ratio is not None:
        cev.append(
            f"achieved {fmt_value(flops, 'FLOP/s')} = {pct(f_ratio)} of compute peak, {fmt_value(byts, 'B/s')} = {pct(b_ratio)} of memory bandwidth"
        )
        ai = facts.get("arithmetic_intensity")
        if ai is not None and peak_c and peak_b:
            cev.append(f"arithmetic intensity {ai:.1f} FLOP/byte vs ridge point {peak_c / peak_b:.1f}")
        if max(f_ratio, b_ratio) < NEAR_PEAK_FLOOR:
            cev.append(
                "neither FLOP/s nor bytes/s is near its peak: per-operator overhead (Python, small ops) limits the step"
            )
            return [Finding("cpu_compute", "compute", 0.6, tuple(cev), None)]
        if b_ratio > f_ratio:
            return [Finding("cpu_memory_bandwidth", "compute", min(1.0, 0.55 + b_ratio), tuple(cev), None)]
        return [Finding("cpu_compute", "compute", min(1.0, 0.55 + f_ratio), tuple(cev), None)]
    mbw = w.get("cpu_memory_bandwidth", "host", "utilization")
    if facts.get(
        "flops_unknown"
    ):  # counted, but not all of the step's FLOPs: no intensity, the peak-free evidence decides
        cev.append(f"FLOPs per step unknown ({facts['flops_unknown']}): no arithmetic intensity")
    if (
        mbw is None
        and peak_b is None
        and facts.get("arithmetic_intensity") is None
        and facts.get("phase_source") != "py-spy"
        and "parameters" in facts
        and w.steps_seen <= ROOFLINE_STEPS
    ):
        why = (
            "compute or memory bandwidth: no peak is known here and the hook has not yet counted one step's FLOPs and "
            f"bytes (it does so early in the run; {w.steps_seen} steps so far)"
        )
        return [Finding(UNDETERMINED, "compute", 0.6, tuple(cev + [why]), None)]
    if (
        mbw is None
        and peak_b is None
        and facts.get("phase_source") == "py-spy"
        and facts.get("low_intensity_op_share") is None
        and w.steps_seen <= STACK_SAMPLES
    ):
        why = (
            "compute or memory bandwidth: no peak is known here and too few forward stack samples name their operators yet "
            f"({w.steps_seen} stack samples so far)"
        )
        return [Finding(UNDETERMINED, "compute", 0.6, tuple(cev + [why]), None)]
    if mbw is not None and mbw >= 0.6:
        return [
            Finding(
                "cpu_memory_bandwidth",
                "compute",
                min(1.0, mbw / 0.8),
                tuple(cev + [f"memory bandwidth {pct(mbw)} of peak"]),
                None,
            )
        ]
    ai = facts.get("arithmetic_intensity")
    ridge = lowest_ridge()
    if ai is not None and ridge is not None and ai < ridge.flop_per_byte and peak_b is None:
        # bytes per core-second the job actually ran: on a shared machine the job gets a fraction
        # of a core, and its bytes/s shrinks with it while its intensity does not
        ran = max(cpu.busy if cpu.busy is not None else (cpu.host or 0.0) * cpu.cores, 0.05)
        per_core = byts / min(ran, cpu.cores) if byts is not None else None
        step_bytes = facts.get("operand_bytes_per_step")
        llc = smallest_last_level_cache()
        in_cache = step_bytes is not None and llc is not None and step_bytes < llc
        if in_cache:
            cev.append(
                f"arithmetic intensity {ai:.2f} FLOP/byte but {fmt_value(step_bytes, 'B')} of operands per step fit in the "
                f"last-level cache of any current CPU ({fmt_value(llc, 'B')}): not DRAM-bound; per-operator overhead "
                "(Python, small ops) limits the step"
            )
            return [Finding("cpu_compute", "compute", 0.6, tuple(cev), None)]
        if per_core is not None and per_core >= MIN_DRAM_BYTES:
            cev.append(
                f"arithmetic intensity {ai:.2f} FLOP/byte, below the lowest ridge point of any current CPU or GPU "
                f"({ridge.flop_per_byte:.1f}, {ridge.part}): the memory-bandwidth side of every roofline"
            )
            cev.append(
                f"achieved {fmt_value(byts, 'B/s')} of operands, {fmt_value(per_core, 'B/s')} per core it ran on "
                "(memory bandwidth peak unknown here)"
            )
            return [
                Finding(
                    "cpu_memory_bandwidth",
                    "compute",
                    0.55 + 0.3 * (1 - ai / ridge.flop_per_byte),
                    tuple(cev),
                    None,
                    {"arithmetic_intensity": ai, "lowest_ridge": ridge.flop_per_byte},
                )
            ]
        if per_core is not None:
            cev.append(
                f"arithmetic intensity {ai:.2f} FLOP/byte but only {fmt_value(per_core, 'B/s')} of operands per core: too little traffic to "
                "fill any machine's memory bandwidth; per-operator overhead (Python, small ops) limits the step"
            )
            return [Finding("cpu_compute", "compute", 0.6, tuple(cev), None)]
    low = facts.get("low_intensity_op_share")
    if low is not None and low >= 0.6:
        cev.append(
            f"{pct(low)} of forward stack samples in normalisation/elementwise operators: bytes moved, few multiply-adds (operand size, section 2.3)"
        )
        return [Finding("cpu_memory_bandwidth", "compute", 0.5 + 0.3 * low, tuple(cev), None)]
    if ai is not None and ridge is not None and ai >= ridge.flop_per_byte:
        cev.append(
            f"arithmetic intensity {ai:.1f} FLOP/byte, at or above the lowest ridge point of current machines ({ridge.flop_per_byte:.1f})"
        )
    if cpu.serial and not cpu.saturated:
        cev.append(
            "one thread running or waiting to run a full core's worth of time (other processes take the rest of the cores): "
            "a serial (GIL-bound or single-threaded) step"
            if cpu.contended
            else "one thread at a full core while the other cores idle: a serial (GIL-bound or single-threaded) step"
        )
    busy = (cpu.busy / cpu.cores) if cpu.busy is not None else (cpu.host or 0.0)
    return [
        Finding(
            "cpu_compute", "compute", 0.55 + 0.35 * min(1.0, max(busy, 1.0 if cpu.serial else 0.0)), tuple(cev), None
        )
    ]


def _waiting(w: WindowStats, cpu: CpuState, cev: list[str], facts: dict) -> list[Finding]:
    """Compute phases dominate the step but no CPU of the job is busy: it waits inside them."""
    world = facts.get("world_size") or 1
    local = facts.get("local_world_size") or world
    ranks = max(cpu.ranks, int(world) if world else 1)
    io, io_ev = io_wait(w)
    if ranks > 1 or facts.get("ddp"):
        resource = "inter_node_interconnect" if world > local else "inter_gpu_interconnect"
        ev = cev + [
            f"{ranks} ranks whose processes are not busy inside forward/backward: backward waits on the gradient "
            "all-reduce (DDP runs it inside backward, so no communication phase is timed)"
        ]
        return [Finding(resource, "communication", 0.6, tuple(ev), None)]
    if io:
        return [Finding("storage_bandwidth", "compute", 0.55 * max(0.8, io), tuple(cev + io_ev), None)]
    why = (
        "the step is in forward/backward/optimizer but neither the job's processes nor any of its threads is near a full "
        "core, and no storage wait is seen: it waits on something no sampler measures (a lock, a sleep, another process)"
    )
    return [Finding(UNDETERMINED, "compute", 0.6, tuple(cev + [why]), None)]
