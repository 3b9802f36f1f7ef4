"""Shared by the rule families: formatting, the step's compute share, whether the job runs on a
GPU. The evidence helpers are in cpu_state.py (the job's CPUs), storage.py (storage waits, no peak
needed) and comm_cost.py (the timed communication); the thresholds in diagnosis/thresholds.py, each
with its source.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bottleneckd.diagnosis.job_gpus import least_busy
from bottleneckd.diagnosis.job_gpus import runs_on_gpu as _runs_on_gpu
from bottleneckd.diagnosis.thresholds import (
    BUSY,
    CAPACITY_HIGH,
    COMM_HIGH,
    CPU_STALL,
    DRAM_PRACTICAL_MAX,
    HEADROOM_MAX_SHARE,
    IDLE_COVERS_OTHER,
    INPUT_HIGH,
    INPUT_MODERATE,
    MIN_DRAM_BYTES,
    NEAR_PEAK_FLOOR,
    ONE_CORE,
    SATURATED,
    SHARED_COMM_HIGH,
    SM_EFFICIENT,
)
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import Phase, Stage
from bottleneckd.model.units import fmt_seconds
from bottleneckd.peaks.resolve import PeakTable

__all__ = [  # the thresholds the rule families have always imported from here
    "BUSY",
    "CAPACITY_HIGH",
    "COMM_HIGH",
    "CPU_STALL",
    "DRAM_PRACTICAL_MAX",
    "INPUT_HIGH",
    "INPUT_MODERATE",
    "MIN_DRAM_BYTES",
    "NEAR_PEAK_FLOOR",
    "ONE_CORE",
    "SATURATED",
    "SHARED_COMM_HIGH",
    "SM_EFFICIENT",
    "compute_share",
    "fmt_s",
    "headroom",
    "pct",
    "runs_on_gpu",
    "stack_samples",
]


def pct(x: float | None) -> str:
    return "unknown" if x is None else f"{x * 100:.0f}%"


#: k of n stack samples in a stage count as (k + JEFFREYS) / (n + 1) of the step: the Jeffreys
#: estimate of a binomial share, never exactly all of it (4 of 4 samples -> 90%, 10x)
JEFFREYS = 0.5


def headroom(share: float | None, samples: int | None = None) -> float | None:
    """Step speed-up if a removable stage holding ``share`` of the step vanished (Figure 15's
    vertical line), the share taken as at most HEADROOM_MAX_SHARE (100x). ``samples``: the share
    was counted from that many stack samples (attach)."""
    if share is None:
        return None
    if samples:
        share = (share * samples + JEFFREYS) / (samples + 1)
    return 1.0 / (1.0 - min(share, HEADROOM_MAX_SHARE))


def stack_samples(w: WindowStats) -> int | None:
    """How many stack samples the window's phase shares were counted from (None: timed steps)."""
    p = w.phases
    return p.steps if p is not None and p.sampled else None


def fmt_s(x: float | None) -> str:
    return fmt_seconds(x)


def compute_share(w: WindowStats) -> float | None:
    """forward+backward+optimizer+gpu_wait as a share of step time; None without phases. A GPU job's
    optimizer offloaded to the CPU is not its compute stage's (rules/offload.py judges it)."""
    p = w.phases
    if p is None:
        return None
    phases = (Phase.FORWARD, Phase.BACKWARD, Phase.GPU_WAIT) + (() if offloaded(w) else (Phase.OPTIMIZER,))
    return sum(p.share(k) or 0.0 for k in phases)


def data_share(w: WindowStats) -> float | None:
    """data_wait+file_io (the data stage) as a share of step time; None without phases."""
    p = w.phases
    if p is None:
        return None
    return (p.share(Phase.DATA_WAIT) or 0.0) + (p.share(Phase.FILE_IO) or 0.0)


def cuda_timed(w: WindowStats) -> bool:
    """The step's phases were timed by the hook's CUDA events (the GPU's timeline), not sampled
    from the host's stacks."""
    p = w.phases
    return p is not None and not p.sampled and p.facts.get("device") == "cuda"


def offloaded(w: WindowStats) -> bool:
    """The hook timed a GPU job whose optimizer state is offloaded to the CPU."""
    return cuda_timed(w) and bool(w.phases is not None and w.phases.facts.get("offloading"))


def runs_on_gpu(w: WindowStats, peaks: PeakTable | None = None) -> bool:
    """The job trains on a GPU this host samples (diagnosis/job_gpus.py: the device fact, else the
    job seen on one of the node's GPUs; a job on no GPU of a shared GPU node is a CPU job)."""
    return _runs_on_gpu(w, peaks)


def other_share(w: WindowStats) -> float | None:
    """The "other" stage's share of the step: its phase and the step time no phase accounts for."""
    p = w.phases
    if p is None or p.wall_seconds <= 0 or not p.steps:
        return None
    named = sum(v for k, v in p.phases.items() if k != Phase.OTHER)
    return max(
        0.0,
        min(
            1.0,
            (p.phases.get(Phase.OTHER, 0.0) + max(0.0, p.wall_seconds - named - p.phases.get(Phase.OTHER, 0.0)))
            / p.wall_seconds,
        ),
    )


def stage_share(w: WindowStats, stage: Stage) -> float | None:
    """A stage's share of the step (None without timed or sampled steps): data (data wait and file
    I/O), compute (``compute_share``), other (``other_share``), and the transfer, communication and
    optimizer stages their phase's (the optimizer's is also the compute stage's, unless offloaded)."""
    if w.phases is None or not w.phases.steps:
        return None
    if stage == Stage.DATA:
        return data_share(w)
    if stage == Stage.COMPUTE:
        return compute_share(w)
    if stage == Stage.OTHER:
        return other_share(w)
    return w.phases.share(Phase(stage.value)) or 0.0


def arithmetic_intensity(facts: Mapping[str, Any]) -> float | None:
    """FLOP per operand byte: the hook's ``arithmetic_intensity``, else its ``flops_per_step`` over
    ``operand_bytes_per_step`` (a trace that carries the two counts and not their ratio)."""
    ai = facts.get("arithmetic_intensity")
    if isinstance(ai, (int, float)) and not isinstance(ai, bool):
        return float(ai)
    f, b = facts.get("flops_per_step"), facts.get("operand_bytes_per_step")
    if isinstance(f, (int, float)) and isinstance(b, (int, float)) and f > 0 and b > 0:
        return float(f) / float(b)
    return None


def gpu_idles_through(
    w: WindowStats, peaks: PeakTable | None, stage: Stage, besides: tuple[Stage, ...]
) -> tuple[str, float] | None:
    """The job's least busy GPU and its busy fraction over the steps' intervals, where it idles through
    ``stage``: its idle time beyond the ``besides`` stages' shares (host stages it idles through too)
    at least IDLE_COVERS_OTHER of the stage's share, that share INPUT_HIGH of the step or more. The
    stage is then host work the GPU waits for, serial with its own (a data wait, blocking copies,
    Python between the steps); None otherwise."""
    share = stage_share(w, stage)
    least = least_busy(w, peaks, over_steps=True)
    if share is None or least is None or share < INPUT_HIGH:
        return None
    beyond = 1.0 - least[1] - sum(stage_share(w, s) or 0.0 for s in besides)
    return least if beyond >= IDLE_COVERS_OTHER * share else None
