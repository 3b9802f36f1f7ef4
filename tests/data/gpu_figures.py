"""The nodes, GPU figures and hook helpers of the held-out GPU situations (tests/data/gpu_scenarios.py).

Figures follow what the counters read on such jobs: GPM's SM activity counts SMs with a warp
resident (memory-bound elementwise kernels keep it high; NCCL's spinning kernels add to it), its
tensor activity stays well under SM activity even for GEMM-heavy steps (60-75% on a good bf16
transformer step), DRAM activity is a fraction of the theoretical peak (DCGM: ~0.8 is the practical
maximum); NVML's busy fraction is the share of time any kernel ran (~100% for any GPU-bound job);
PCIe and NVLink rates are averages over the 1 s interval, so a link busy only while copying or
communicating reads its rate times that share; a pageable host-to-device copy runs at ~20-25 GB/s
on PCIe gen5 x16 (it stages through a pinned bounce buffer), a pinned one at ~50-55; ring all-reduce
moves 2(n-1)/n of the gradient bytes each way per GPU; an H100 SXM draws ~650-700 W when its
tensor cores are busy, ~70 W idle at 345 MHz.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from bottleneckd.model.sample import StepPhases
from tests.data.gpu_hook import RankJob, cuda_facts
from tests.data.gpu_node import GIB, GpuFigures, JobCpu, Node, NodeSpec, Tick

H100_MEM = 81559 * 2**20  # NVML's total for an H100 80GB HBM3
H200_MEM = 143771 * 2**20
A100_MEM = 81920 * 2**20
L4_MEM = 23034 * 2**20

H100_1 = NodeSpec(
    hostname="a3-h100-1g-7",
    gpu_name="NVIDIA H100 80GB HBM3",
    gpus=1,
    memory_total=H100_MEM,
    gpm=True,
    nvlink_links=0,
    cores=26,
    max_sm_clock=1980,
    host_memory=234 * GIB,
)
H100_8 = NodeSpec(
    hostname="hgx-h100-03",
    gpu_name="NVIDIA H100 80GB HBM3",
    gpus=8,
    memory_total=H100_MEM,
    gpm=True,
    nvlink_links=18,
    cores=224,
    max_sm_clock=1980,
    ib_ports=8,
)
H200_1 = NodeSpec(
    hostname="h200-vm-2",
    gpu_name="NVIDIA H200",
    gpus=1,
    memory_total=H200_MEM,
    gpm=True,
    nvlink_links=0,
    cores=44,
    max_sm_clock=1980,
    host_memory=512 * GIB,
)
A100_8 = NodeSpec(
    hostname="dgx-a100-11",
    gpu_name="NVIDIA A100-SXM4-80GB",
    gpus=8,
    memory_total=A100_MEM,
    gpm=False,
    nvlink_links=12,
    cores=256,
    max_sm_clock=1410,
    pcie=(4, 16),
    ib_ports=8,
)
L4_1 = NodeSpec(
    hostname="g2-standard-8-4",
    gpu_name="NVIDIA L4",
    gpus=1,
    memory_total=L4_MEM,
    gpm=False,
    nvlink_links=0,
    cores=8,
    max_sm_clock=2040,
    pcie=(4, 16),
    host_memory=32 * GIB,
)
H100_MIG = NodeSpec(
    hostname="h100-mig-5",
    gpu_name="NVIDIA H100 80GB HBM3 MIG 3g.40gb",
    gpus=2,
    memory_total=40 * GIB,
    gpm=True,
    nvlink_links=0,
    cores=64,
    max_sm_clock=1980,
    mig=(3 / 7, 0.5),
)

JOB = 41000  # rank r's PID is JOB + r
TENANT = 52000  # another tenant's PIDs
POWER_CAP = 0x4
HW_SLOWDOWN, SW_THERMAL, HW_THERMAL = 0x8, 0x20, 0x40


@dataclass
class Hook:
    ranks: list[RankJob] = field(default_factory=list)
    world: int = 1
    local: int = 1
    phases: StepPhases | None = None  # attach: the stack sampler's phases instead of the hook's


@dataclass(frozen=True, kw_only=True)
class Scenario:
    node: NodeSpec
    resource: str
    stage: str
    what: str
    why: str
    top: tuple[str, ...]  # what a performance engineer would do first (any of these)
    tick: Callable[[Node, int], tuple[Tick, Hook | None]]
    job_pids: set[int] = field(default_factory=lambda: {JOB})
    other_pids: set[int] = field(default_factory=set)  # other tenants' PIDs we can see
    straggler: int | None = None


def idle_gpu(other: int | None = None) -> GpuFigures:
    return GpuFigures(mem_used=0.006, power=71.0, clock_ratio=0.174, other_pid=other)


def tenant_gpu(pid: int, nvlink: float = 0.0) -> GpuFigures:
    """Another tenant's training: busy, full, hot (and its all-reduce on NVLink, when it has one)."""
    return GpuFigures(
        busy=1.0,
        mem_busy=0.45,
        sm=0.88,
        occupancy=0.4,
        tensor=0.55,
        fp32=0.1,
        dram=0.4,
        mem_used=0.97,
        power=640.0,
        clock_ratio=0.93,
        other_pid=pid,
        nvlink=nvlink,
    )


def compute_gpu(pid: int | None = JOB, **kw: float) -> GpuFigures:
    """A bf16 GEMM-heavy step: SMs busy, tensor pipe 60%+, DRAM moderate."""
    g = GpuFigures(
        busy=1.0,
        mem_busy=0.42,
        sm=0.93,
        occupancy=0.30,
        tensor=0.62,
        fp32=0.06,
        fp16=0.03,
        integer=0.08,
        dram=0.38,
        mem_used=0.92,
        pcie_rx=0.6e9,
        pcie_tx=0.05e9,
        power=655.0,
        clock_ratio=0.92,
        job_pid=pid,
    )
    for k, v in kw.items():
        setattr(g, k, v)
    return g


def job_cpu(**kw: float) -> JobCpu:
    """A GPU training process: async launches (main thread ~half a core, the autograd thread less),
    4 loader workers with little to do."""
    j = JobCpu(
        rank_busy=1.3, workers=4, worker_busy=0.6, worker_max=0.17, main=0.45, launch=0.78, hottest=0.45, usable=26.0
    )
    for k, v in kw.items():
        setattr(j, k, v)
    return j


COMPUTE_SHARES = {
    "data_wait": 0.005,
    "transfer": 0.004,
    "forward": 0.30,
    "backward": 0.60,
    "optimizer": 0.065,
    "other": 0.026,
}


def one_rank(
    node: Node, step: float, shares: dict[str, float], flops: float | None, intensity: float | None, **facts: object
) -> Hook:
    u = node.uuid(0).replace("MIG-", "GPU-")  # the hook writes CUDA's UUID as GPU-<hex>, a MIG slice's too
    return Hook([RankJob(0, u, step, dict(shares), cuda_facts(u, **facts), flops, intensity)])


def ranks_on(
    node: Node,
    n: int,
    step: float,
    shares: dict[str, float],
    flops: float | None,
    intensity: float | None,
    facts: dict[str, object],
    per_rank: Callable[[int], dict] | None = None,
) -> list[RankJob]:
    out = []
    for r in range(n):
        u = node.uuid(r)
        extra = per_rank(r) if per_rank else {}
        sh = dict(extra.pop("shares", shares))
        out.append(RankJob(r, u, extra.pop("step", step), sh, cuda_facts(u, **{**facts, **extra}), flops, intensity))
    return out
