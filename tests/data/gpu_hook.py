"""What the torch hook of each rank reports in one interval, for constructed GPU traces: its step
phases and its facts (the names and types of bottleneckd/model/facts.py, as torch/probe.py,
torch/counting.py, torch/collectives.py, torch/ddp_comm.py and torch/cuda_memory.py set them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bottleneckd.channel.ranks import merge
from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.sample import RankPhases, StepPhases

COMPUTE = ("forward", "backward", "optimizer")


@dataclass
class RankJob:
    """One rank's step: seconds per step, phase shares, and what the hook knows."""

    rank: int
    gpu_uuid: str  # "" for a CPU rank; the hook writes CUDA's UUID as GPU-<hex>, a MIG slice's too
    step: float  # seconds per step
    shares: dict[str, float]
    facts: dict[str, Any] = field(default_factory=dict)
    flops: float | None = None  # FLOP per step (counted once, reported from ROOFLINE_TICK on)
    intensity: float | None = None  # FLOP per operand byte


#: the hook counts one step's FLOPs and bytes early in the run (within 12 steps), then reports them
ROOFLINE_TICK = 2


def identity(r: RankJob, world: int, local: int, node: str, node_rank: int, job: str) -> RankIdentity:
    return RankIdentity(
        job=job,
        run=job,
        restart=0,
        rank=r.rank,
        local_rank=r.rank % local,
        world_size=world,
        local_world_size=local,
        node=node,
        node_rank=node_rank,
        gpu=r.gpu_uuid,
        pid=41000 + r.rank,
    )


def rank_phases(
    r: RankJob, tick: int, world: int, local: int, node: str, node_rank: int = 0, job: str = "job-1"
) -> RankPhases:
    steps = max(1, round(1.0 / r.step))
    wall = steps * r.step
    facts = dict(r.facts)
    facts["pid"] = 41000 + r.rank
    if r.flops is not None and r.intensity is not None and tick >= ROOFLINE_TICK:
        compute = sum(r.shares.get(k, 0.0) for k in COMPUTE) * r.step
        byts = r.flops / r.intensity
        facts.update(
            flops_per_step=r.flops,
            operand_bytes_per_step=byts,
            arithmetic_intensity=r.intensity,
            achieved_flops=r.flops / compute,
            achieved_bytes_per_second=byts / compute,
        )
    else:
        for k in ("compute_dtype", "fp8_flop_share", "conv_flop_share"):  # set with the counted step
            facts.pop(k, None)
    ph = StepPhases(steps, wall, {k: v * wall for k, v in r.shares.items()}, facts)
    return RankPhases(identity(r, world, local, node, node_rank, job), ph)


def job_report(
    ranks: list[RankJob], tick: int, world: int, local: int, node: str, node_rank: int = 0
) -> tuple[StepPhases | None, tuple[RankPhases, ...]]:
    """The sidecar's view of one interval: the job's phases merged over its ranks, and each rank's."""
    rp = [rank_phases(r, tick, world, local, node, node_rank) for r in ranks]
    return merge(list(rp)), tuple(sorted(rp, key=lambda x: x.identity.rank))


def cuda_facts(uuid: str, **extra: Any) -> dict[str, Any]:
    """The facts of a CUDA training process (probe.py at watch(), collectives.py for distributed runs)."""
    base: dict[str, Any] = {
        "device": "cuda",
        "epoch": 0,
        "param_dtype": "float32",
        "allow_tf32": False,
        "cudnn_allow_tf32": True,
        "cuda_uuids": (uuid,),
        "compiled": False,
        "has_conv": False,
        "input_rank": 2,
        "loader_workers": 4,
        "pin_memory": True,
        "persistent_workers": True,
        "prefetch_factor": 2,
        "batch_size": 8,
        "cores": 26,
        "loader_workers_saturate_cores": False,
        "mitigations": (),
    }
    base.update(extra)
    if base.get("loader_workers") is not None and base.get("cores"):
        base["loader_workers_saturate_cores"] = base["loader_workers"] >= base["cores"]
    return base


def ddp_facts(world: int, local: int, *, comm: float, exposed: float, buckets: int = 25) -> dict[str, Any]:
    """DDP over NCCL with bottleneckd's comm hook timing its all-reduce (ddp_comm.py)."""
    return {
        "ddp": True,
        "world_size": world,
        "local_world_size": local,
        "ddp_comm_timing": "comm hook",
        "comm_backend": "nccl",
        "ddp_buckets": buckets,
        "comm_seconds_per_step": comm,
        "comm_exposed_seconds_per_step": exposed,
        "comm_overlapped_seconds_per_step": max(0.0, comm - exposed),
        "comm_overlap_ratio": max(0.0, comm - exposed) / comm if comm else 0.0,
    }


def cuda_memory(
    total: int,
    *,
    reserved: float,
    peak: float,
    allocated: float,
    retries: int = 0,
    per_step: float = 0.0,
    ooms: int = 0,
) -> dict[str, Any]:
    """torch.cuda.memory_stats as cuda_memory.py reports it (shares of ``total``)."""
    out: dict[str, Any] = {
        "cuda_memory_total_bytes": total,
        "cuda_memory_reserved_bytes": int(reserved * total),
        "cuda_memory_peak_allocated_bytes": int(peak * total),
        "cuda_memory_allocated_bytes": int(allocated * total),
        "cuda_alloc_retries": retries,
        "cuda_alloc_retries_per_step": per_step,
    }
    if ooms:
        out["cuda_ooms"] = ooms
    return out
