"""GPU memory capacity: what the job's tensors need, not what the caching allocator keeps.

NVML's "used" is what PyTorch's caching allocator has reserved; it keeps freed blocks for reuse, and
90-95% of HBM reserved is routine for a job whose tensors need half of it. So:

- with the hook's allocator figures (torch/cuda_memory.py), the GPU's memory limits the job when
  its tensors themselves fill it (peak allocated >= 90% of the GPU), when cudaMalloc fails and the
  allocator frees its cache and retries (``num_alloc_retries``: each is a cache flush on the
  critical path), or when the job has hit out-of-memory errors; a full cache with room in it is
  said as such, and is no finding;
- without them, NVML's figure on the job's own GPUs (never another tenant's) is evidence of a
  secondary pressure at most: it cannot tell a full cache from full tensors.

Each rank's own figures judge its own GPU (its facts); the job's finding is the strongest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from bottleneckd.diagnosis.job_gpus import window_job_gpus
from bottleneckd.diagnosis.rules.common import pct
from bottleneckd.diagnosis.thresholds import CAPACITY_HIGH
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import Resource, Stage
from bottleneckd.model.units import fmt_value
from bottleneckd.peaks.resolve import PeakTable

#: the score of NVML's used memory alone: below the classifier's ACTIVE (0.5), a secondary pressure
#: at most, since a caching allocator's reserve reads the same as tensors that fill the GPU
NVML_ONLY_SCORE = 0.45
#: allocation retries per step at or above this: the allocator flushes its cache in every step
RETRIES_EVERY_STEP = 1.0
RETRY_SCORE = 0.8  # retrying at all: memory is short and it costs time (cache flushes, a device synchronisation)
OOM_SCORE = 0.75  # out-of-memory errors thrown (and caught) in this run


#: the tensors at CAPACITY_HIGH of the GPU score 0.75, rising 5 per unit of share: 95% and more scores 1
#: (as capacity.py scores host memory)
AT_CAPACITY_HIGH = 0.75
PER_SHARE = 5
#: retries add up to this much above RETRY_SCORE, full at RETRIES_EVERY_STEP
RETRY_RANGE = 0.2


def capacity_score(used: float) -> float:
    """Capacity nearly full limits what the job can do next (a larger batch) and risks failure:
    90% used scores 0.75, 95% and more scores 1."""
    return 0.0 if used < CAPACITY_HIGH else min(1.0, AT_CAPACITY_HIGH + (used - CAPACITY_HIGH) * PER_SHARE)


def gpu_memory(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    jg = window_job_gpus(w, peaks)
    views = {r.rank: r.facts for r in w.ranks}
    job_facts: Mapping[str, Any] = w.phases.facts if w.phases else {}
    rank_on = {d: r for r, d in sorted(jg.ranks, reverse=True)}  # a GPU's lowest rank
    out: list[Finding] = []
    for dev in jg.devices:
        r = rank_on.get(dev)
        facts = views.get(r, job_facts) if r is not None else job_facts
        where = f"{dev}" + (f" (rank {r})" if r is not None and len(jg.devices) > 1 else "")
        f = _hook(facts, where) if facts.get("cuda_memory_total_bytes") else _nvml(w, dev, where)
        if f is not None:
            out.append(f)
    if not jg.known and out:
        out = [replace(f, evidence=(*f.evidence, jg.note)) for f in out]
    return sorted(out, key=lambda f: -f.score)[:1]


def fragmented(facts: Mapping[str, Any]) -> bool | None:
    """Allocation retries while the tensors' peak stays under CAPACITY_HIGH of the GPU's memory and
    the caching allocator holds that much or more: the free memory is cached in blocks of the wrong
    sizes (fragmentation), not short. None where the hook's allocator figures are not reported."""
    total = facts.get("cuda_memory_total_bytes")
    peak, reserved = facts.get("cuda_memory_peak_allocated_bytes"), facts.get("cuda_memory_reserved_bytes")
    retries = facts.get("cuda_alloc_retries_per_step")
    if not total or peak is None or reserved is None or retries is None:
        return None
    return bool(retries) and float(peak) / float(total) < CAPACITY_HIGH <= float(reserved) / float(total)


def _hook(facts: Mapping[str, Any], where: str) -> Finding | None:
    total = float(facts["cuda_memory_total_bytes"])
    peak = float(facts.get("cuda_memory_peak_allocated_bytes") or 0.0)
    reserved = float(facts.get("cuda_memory_reserved_bytes") or 0.0)
    retries = facts.get("cuda_alloc_retries_per_step")
    ooms = int(facts.get("cuda_ooms") or 0)
    share = peak / total if total else 0.0
    ev = [
        f"{where}: the job's tensors peak at {fmt_value(peak, 'B')} = {pct(share)} of its {fmt_value(total, 'B')}; "
        f"the caching allocator holds {fmt_value(reserved, 'B')} ({pct(reserved / total if total else None)})"
    ]
    score = capacity_score(share)
    if retries:
        score = max(score, min(1.0, RETRY_SCORE + RETRY_RANGE * min(1.0, retries / RETRIES_EVERY_STEP)))
        held = reserved / total if total else 0.0
        ev.append(
            f"cudaMalloc failed and the allocator freed its cache and retried {retries:.2g} times per step: "
            + (
                f"the tensors never held more than {pct(share)} of the memory while the allocator held {pct(held)}: "
                "the free memory is cached in blocks of the wrong sizes (fragmentation, as with batches of "
                "varying shapes), not short; each retry costs the step time"
                if fragmented(facts)
                else "memory is short, and each retry costs the step time"
            )
        )
    if ooms:
        score = max(score, OOM_SCORE)
        ev.append(f"{ooms} CUDA out-of-memory error{'s' if ooms > 1 else ''} thrown in this run")
    if not score:
        return None
    return Finding(resource=Resource.GPU_MEMORY, stage=Stage.COMPUTE, score=score, evidence=tuple(ev))


def _nvml(w: WindowStats, dev: str, where: str) -> Finding | None:
    used = w.get(Resource.GPU_MEMORY, dev, "utilization")
    if used is None or used < CAPACITY_HIGH:
        return None
    peak = w.get(Resource.GPU_MEMORY, dev, "utilization", "max")
    return Finding(
        resource=Resource.GPU_MEMORY,
        stage=Stage.COMPUTE,
        score=min(NVML_ONLY_SCORE, capacity_score(used)),
        evidence=(
            f"{where} memory {pct(used)} used (NVML; peak {pct(peak)})",
            "NVML counts what PyTorch's caching allocator keeps reserved, not what the tensors need: without the "
            "hook's allocator figures this is not shown to limit the job",
        ),
    )
