"""The held-out GPU situations (tests/data/construct_gpu.py writes their traces), each with the label
a GPU performance engineer gives it and why.

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
from tests.data.gpu_hook import RankJob, cuda_facts, cuda_memory, ddp_facts
from tests.data.gpu_node import GIB, GpuFigures, HostFigures, JobCpu, Node, NodeSpec, Tick

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


# --- (a) bf16 autocast transformer, compute-bound, H100 with GPM ---------------------------------


def a_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    mem = cuda_memory(H100_MEM, reserved=0.90, peak=0.71, allocated=0.45)
    hook = one_rank(
        node,
        0.335,
        COMPUTE_SHARES,
        1.47e14,
        400.0,
        parameters=1_300_000_000,
        autocast_dtype="bfloat16",
        compute_dtype="bfloat16",
        batch_size=8,
        **mem,
    )
    return Tick([compute_gpu()], job_cpu(), HostFigures(cpu_util=0.07)), hook


# --- (b) memory-bandwidth-bound: normalisation and elementwise heavy, H100 --------------------------


def b_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    g = compute_gpu(
        mem_busy=0.88,
        sm=0.86,
        occupancy=0.62,
        tensor=0.08,
        fp32=0.22,
        fp16=0.12,
        integer=0.15,
        dram=0.81,
        power=520.0,
        clock_ratio=0.98,
    )
    mem = cuda_memory(H100_MEM, reserved=0.80, peak=0.64, allocated=0.40)
    hook = one_rank(
        node,
        0.12,
        COMPUTE_SHARES,
        1.7e12,
        6.0,
        parameters=85_000_000,
        autocast_dtype="bfloat16",
        compute_dtype="bfloat16",
        batch_size=64,
        **mem,
    )
    return Tick([g], job_cpu(), HostFigures(cpu_util=0.07)), hook


# --- (c) input-bound, loader workers saturating the cores (L4, JPEG decode + augmentation) ------------

INPUT_SHARES = {
    "data_wait": 0.60,
    "transfer": 0.02,
    "forward": 0.12,
    "backward": 0.22,
    "optimizer": 0.03,
    "other": 0.01,
}


def c_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    g = GpuFigures(busy=0.38, mem_busy=0.14, mem_used=0.71, pcie_rx=1.6e9, power=38.0, clock_ratio=0.95, job_pid=JOB)
    j = JobCpu(
        rank_busy=0.55,
        workers=8,
        worker_busy=7.44,
        worker_max=0.97,
        main=0.38,
        launch=0.52,
        hottest=0.38,
        usable=8.0,
        waiting=0.9,
    )
    hook = one_rank(
        node,
        0.21,
        INPUT_SHARES,
        3.15e12,
        95.0,
        parameters=25_600_000,
        autocast_dtype="float16",
        compute_dtype="float16",
        conv_flop_share=0.93,
        has_conv=True,
        input_rank=4,
        batch_size=256,
        loader_workers=8,
        cores=8,
        **cuda_memory(L4_MEM, reserved=0.68, peak=0.55, allocated=0.30),
    )
    return Tick([g], j, HostFigures(cpu_util=0.99, cpu_psi=0.32, disk_read=60e6, job_reads=55e6, job_chars=180e6)), hook


# --- (d) input-bound, the loader waiting on latency (objects fetched from a remote store) ----------


def d_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    g = compute_gpu(busy=0.37, mem_busy=0.16, sm=0.33, tensor=0.22, dram=0.14, power=260.0)
    j = job_cpu(worker_busy=0.16, worker_max=0.05, main=0.22, launch=0.34, hottest=0.22, rank_busy=0.5)
    hook = one_rank(
        node,
        0.9,
        {**INPUT_SHARES, "data_wait": 0.62, "forward": 0.11, "backward": 0.21},
        1.47e14,
        400.0,
        parameters=1_300_000_000,
        autocast_dtype="bfloat16",
        compute_dtype="bfloat16",
        loader_workers=4,
        **cuda_memory(H100_MEM, reserved=0.90, peak=0.71, allocated=0.45),
    )
    return Tick([g], j, HostFigures(cpu_util=0.03, eth=95e6)), hook


# --- (e) host-to-device copies from pageable memory (H200) -----------------------------------------

TRANSFER_SHARES = {
    "data_wait": 0.03,
    "transfer": 0.42,
    "forward": 0.16,
    "backward": 0.30,
    "optimizer": 0.05,
    "other": 0.04,
}


def e_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    # 0.42 of each second copying at ~22 GB/s (pageable, through the driver's bounce buffer)
    g = compute_gpu(
        busy=0.55,
        mem_busy=0.2,
        sm=0.24,
        tensor=0.12,
        fp32=0.05,
        dram=0.16,
        pcie_rx=0.42 * 22e9,
        pcie_tx=0.2e9,
        power=300.0,
        mem_used=0.55,
    )
    hook = one_rank(
        node,
        0.25,
        TRANSFER_SHARES,
        2.2e13,
        220.0,
        parameters=350_000_000,
        autocast_dtype="bfloat16",
        compute_dtype="bfloat16",
        pin_memory=False,
        loader_workers=6,
        cores=44,
        batch_size=65536,
        **cuda_memory(H200_MEM, reserved=0.53, peak=0.40, allocated=0.22),
    )
    return Tick([g], job_cpu(usable=44.0, main=0.62, launch=0.8, hottest=0.62), HostFigures(cpu_util=0.09)), hook


# --- multi-GPU -----------------------------------------------------------------------------------


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


DDP_EXPOSED = {
    "data_wait": 0.02,
    "transfer": 0.01,
    "forward": 0.12,
    "backward": 0.28,
    "communication": 0.45,
    "optimizer": 0.08,
    "other": 0.04,
}


def f_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    """8 ranks over NVLink; 1.2B parameters with fp32 gradients (4.8 GB) all-reduced every 50 ms step
    of a one-sequence micro-batch: 8.4 GB each way per GPU per step, 168 GB/s averaged over the second
    (336 GB/s while communicating, NCCL's ring on NVLink4)."""
    g = compute_gpu(sm=0.55, tensor=0.25, dram=0.42, mem_busy=0.5, power=480.0, nvlink=168e9, mem_used=0.62)
    gpus = [compute_gpu(**{**g.__dict__, "job_pid": JOB + r}) for r in range(8)]
    facts = {
        "parameters": 1_200_000_000,
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "batch_size": 1,
        "cores": 28,
        **ddp_facts(8, 8, comm=0.025, exposed=0.0225),
        **cuda_memory(H100_MEM, reserved=0.60, peak=0.48, allocated=0.30),
    }
    ranks = ranks_on(node, 8, 0.05, DDP_EXPOSED, 7.4e12, 300.0, facts)
    j = job_cpu(rank_busy=8 * 0.9, workers=32, worker_busy=3.2, worker_max=0.12, usable=224.0, ranks=8)
    return Tick(gpus, j, HostFigures(cpu_util=0.06)), Hook(ranks, 8, 8)


INTER_NODE = {
    "data_wait": 0.01,
    "transfer": 0.01,
    "forward": 0.16,
    "backward": 0.30,
    "communication": 0.42,
    "optimizer": 0.06,
    "other": 0.04,
}


def g_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    """Ranks 0-7 of 16 (two nodes); each GPU's NDR port at ~88% of 50 GB/s while the all-reduce runs."""
    gpus = [
        compute_gpu(sm=0.52, tensor=0.28, dram=0.30, mem_busy=0.35, power=450.0, nvlink=60e9, job_pid=JOB + r)
        for r in range(8)
    ]
    facts = {
        "parameters": 1_500_000_000,
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "batch_size": 4,
        "cores": 28,
        **ddp_facts(16, 8, comm=0.095, exposed=0.084),
        **cuda_memory(H100_MEM, reserved=0.90, peak=0.66, allocated=0.35),
    }
    ranks = ranks_on(node, 8, 0.2, INTER_NODE, 3.7e13, 320.0, facts)
    j = job_cpu(rank_busy=8 * 0.9, workers=32, worker_busy=3.2, worker_max=0.12, usable=224.0, ranks=8)
    return Tick(gpus, j, HostFigures(cpu_util=0.06, ib=0.42 * 0.88 * 50e9, eth=40e6)), Hook(ranks, 16, 8)


FSDP_SHARES = {
    "data_wait": 0.004,
    "transfer": 0.003,
    "forward": 0.30,
    "backward": 0.60,
    "communication": 0.02,
    "optimizer": 0.05,
    "other": 0.023,
}


def h_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    """FSDP (MixedPrecision bf16, fp32 flat parameters): all-gathers and reduce-scatters in flight
    120 ms of a 360 ms step on side streams; the compute stream waits 7 ms for them."""
    gpus = [compute_gpu(sm=0.88, tensor=0.58, dram=0.42, nvlink=110e9, job_pid=JOB + r) for r in range(8)]
    facts = {
        "parameters": 6_700_000_000,
        "fsdp": True,
        "sharded": True,
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "world_size": 8,
        "local_world_size": 8,
        "comm_backend": "nccl",
        "comm_seconds_per_step": 0.12,
        "comm_exposed_seconds_per_step": 0.007,
        "comm_overlapped_seconds_per_step": 0.113,
        "comm_overlap_ratio": 0.94,
        "batch_size": 4,
        "cores": 28,
        **cuda_memory(H100_MEM, reserved=0.91, peak=0.78, allocated=0.52),
    }
    ranks = ranks_on(node, 8, 0.36, FSDP_SHARES, 1.55e14, 350.0, facts)
    j = job_cpu(rank_busy=8 * 1.0, workers=32, worker_busy=3.0, worker_max=0.1, usable=224.0, ranks=8)
    return Tick(gpus, j, HostFigures(cpu_util=0.06)), Hook(ranks, 8, 8)


# --- GPU memory ----------------------------------------------------------------------------------


def i_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    """The caching allocator holds 93% of the H200; the tensors peak at 68%: a full cache with room."""
    g = compute_gpu(sm=0.84, tensor=0.55, dram=0.40, mem_used=0.94)
    mem = cuda_memory(H200_MEM, reserved=0.93, peak=0.68, allocated=0.41)
    hook = one_rank(
        node,
        0.42,
        COMPUTE_SHARES,
        1.6e14,
        380.0,
        parameters=3_000_000_000,
        autocast_dtype="bfloat16",
        compute_dtype="bfloat16",
        cores=44,
        **mem,
    )
    return Tick([g], job_cpu(usable=44.0), HostFigures(cpu_util=0.05)), hook


def j_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    """Tensors peak at 97% of the H100; cudaMalloc fails and the allocator flushes its cache and
    retries 1.5 times a step (a device synchronisation each); a batch-size finder hit 3 OOMs."""
    g = compute_gpu(busy=0.93, sm=0.62, tensor=0.38, dram=0.30, mem_used=0.99, power=520.0)
    mem = cuda_memory(H100_MEM, reserved=0.985, peak=0.97, allocated=0.62, retries=40 + 3 * k, per_step=1.5, ooms=3)
    hook = one_rank(
        node,
        0.6,
        COMPUTE_SHARES,
        2.1e14,
        380.0,
        parameters=2_700_000_000,
        autocast_dtype="bfloat16",
        compute_dtype="bfloat16",
        batch_size=16,
        **mem,
    )
    return Tick([g], job_cpu(), HostFigures(cpu_util=0.07)), hook


# --- launch-bound ---------------------------------------------------------------------------------

LAUNCH_SHARES = {
    "data_wait": 0.01,
    "transfer": 0.01,
    "forward": 0.30,
    "backward": 0.45,
    "optimizer": 0.20,
    "other": 0.03,
}


def k_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    """A small MLP (RL policy), 4 ms steps of hundreds of tiny kernels: the SMs 14% active; the main
    thread launches forward and the optimizer (0.58 of a core), the autograd thread backward (0.39)."""
    g = GpuFigures(
        busy=0.72,
        mem_busy=0.06,
        sm=0.14,
        occupancy=0.05,
        tensor=0.0,
        fp32=0.05,
        integer=0.04,
        dram=0.04,
        mem_used=0.08,
        power=140.0,
        clock_ratio=1.0,
        job_pid=JOB,
        pcie_rx=0.05e9,
        pcie_tx=0.05e9,
    )
    hook = one_rank(
        node,
        0.004,
        LAUNCH_SHARES,
        6e9,
        30.0,
        parameters=2_000_000,
        loader_workers=None,
        pin_memory=None,
        persistent_workers=None,
        prefetch_factor=None,
        batch_size=None,
        **cuda_memory(H100_MEM, reserved=0.06, peak=0.03, allocated=0.02),
    )
    j = JobCpu(
        rank_busy=1.1, workers=0, worker_busy=0.0, worker_max=None, main=0.58, launch=0.97, hottest=0.58, usable=26.0
    )
    return Tick([g], j, HostFigures(cpu_util=0.05)), hook


# --- (l) A100, no GPM, no hook (attach): memory-bound ---------------------------------------------


def l_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    """Attached with py-spy to a LayerNorm/GELU-heavy model on gpu0 of a DGX A100 whose other GPUs
    run other tenants' jobs. The loop reads loss.item() each step: the main thread spins in
    cudaStreamSynchronize (CUDA's default spin-wait), a C call with no Python frame, so py-spy sees
    the loop's own line ("other") while the GPU runs; NVML: busy 100%, memory busy 86%."""
    g = GpuFigures(
        busy=1.0, mem_busy=0.86, mem_used=0.78, pcie_rx=0.4e9, pcie_tx=0.05e9, power=330.0, clock_ratio=1.0, job_pid=JOB
    )
    gpus = [g] + [tenant_gpu(TENANT + i) for i in range(1, 8)]
    j = job_cpu(rank_busy=1.35, worker_busy=0.5, worker_max=0.13, main=0.98, launch=1.12, hottest=0.98, usable=32.0)
    n = 100  # stack samples per second
    counts = {"other": 0.55, "forward": 0.15, "backward": 0.22, "optimizer": 0.05, "data_wait": 0.03}
    ph = StepPhases(
        n,
        n * 0.01,
        {p: s * n * 0.01 for p, s in counts.items()},
        {"phase_source": "py-spy", "stack_samples": n, "low_intensity_op_share": 0.7, "other_idle_share": 0.0},
    )
    return Tick(gpus, j, HostFigures(cpu_util=0.35)), Hook(phases=ph)


# --- (m) 4 ranks, rank 2 a straggler (its GPU thermally throttled) ---------------------------------

PEER_SHARES = {
    "data_wait": 0.01,
    "transfer": 0.01,
    "forward": 0.20,
    "backward": 0.40,
    "communication": 0.30,
    "optimizer": 0.06,
    "other": 0.02,
}
SLOW_SHARES = {
    "data_wait": 0.01,
    "transfer": 0.01,
    "forward": 0.27,
    "backward": 0.54,
    "communication": 0.08,
    "optimizer": 0.06,
    "other": 0.03,
}


def m_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    gpus = [
        compute_gpu(
            sm=0.95, tensor=0.66, clock_ratio=0.62, reasons=HW_THERMAL | SW_THERMAL, power=520.0, job_pid=JOB + r
        )
        if r == 2
        else compute_gpu(sm=0.66, tensor=0.42, power=480.0, nvlink=40e9, job_pid=JOB + r)
        for r in range(4)
    ] + [idle_gpu() for _ in range(4)]

    def per_rank(r: int) -> dict:
        if r == 2:
            return {"shares": SLOW_SHARES, **ddp_facts(4, 4, comm=0.03, exposed=0.02)}
        return {"shares": PEER_SHARES, **ddp_facts(4, 4, comm=0.085, exposed=0.075)}

    facts = {
        "parameters": 1_300_000_000,
        "autocast_dtype": "bfloat16",
        "compute_dtype": "bfloat16",
        "cores": 56,
        **cuda_memory(H100_MEM, reserved=0.90, peak=0.71, allocated=0.45),
    }
    ranks = ranks_on(node, 4, 0.25, PEER_SHARES, 8.2e13, 380.0, facts, per_rank)
    j = job_cpu(rank_busy=4 * 0.9, workers=16, worker_busy=1.6, worker_max=0.12, usable=112.0, ranks=4)
    return Tick(gpus, j, HostFigures(cpu_util=0.04)), Hook(ranks, 4, 4)


# --- (n) a CPU-only job on a GPU node whose GPUs another tenant keeps busy --------------------------


def n_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    # PIDs of another container (not visible to us); its DDP all-reduce keeps NVLink busy
    gpus = [tenant_gpu(TENANT + i, nvlink=420e9) for i in range(8)]
    j = JobCpu(
        rank_busy=30.4,
        workers=2,
        worker_busy=0.5,
        worker_max=0.26,
        main=0.99,
        launch=0.99,
        hottest=0.99,
        usable=32.0,
        waiting=0.4,
    )
    facts = {
        "device": "cpu",
        "epoch": 0,
        "param_dtype": "float32",
        "has_conv": False,
        "input_rank": 2,
        "loader_workers": 2,
        "pin_memory": False,
        "batch_size": 512,
        "cores": 32,
        "loader_workers_saturate_cores": False,
        "parameters": 40_000_000,
        "mitigations": (),
        "compute_dtype": "float32",
    }
    shares = {"data_wait": 0.03, "forward": 0.35, "backward": 0.52, "optimizer": 0.07, "other": 0.03}
    return Tick(gpus, j, HostFigures(cpu_util=0.32)), Hook([RankJob(0, "", 0.8, shares, facts, 1.2e12, 25.0)])


# --- (o) a MIG slice (3g.40gb of an H100), compute-bound in its slice -------------------------------


def o_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    gpus = [compute_gpu(sm=0.91, tensor=0.60, dram=0.36, mem_used=0.93, power=410.0), tenant_gpu(TENANT)]
    hook = one_rank(
        node,
        0.5,
        COMPUTE_SHARES,
        8.2e13,
        380.0,
        parameters=350_000_000,
        autocast_dtype="bfloat16",
        compute_dtype="bfloat16",
        cores=16,
        **cuda_memory(40 * GIB, reserved=0.90, peak=0.70, allocated=0.40),
    )
    return Tick(gpus, job_cpu(usable=16.0), HostFigures(cpu_util=0.1)), hook


# --- (p) storage-bound: small files from the local NVMe (L4) ---------------------------------------


def p_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    g = GpuFigures(busy=0.40, mem_busy=0.15, mem_used=0.62, pcie_rx=1.2e9, power=40.0, clock_ratio=0.95, job_pid=JOB)
    j = JobCpu(
        rank_busy=0.5,
        workers=8,
        worker_busy=3.0,
        worker_max=0.42,
        main=0.35,
        launch=0.5,
        hottest=0.35,
        usable=8.0,
        d_threads=5.2,
    )
    h = HostFigures(
        cpu_util=0.45,
        iowait=0.14,
        io_psi=0.42,
        disk_read=1.5e9,
        disk_ops=370e3,
        disk_busy=0.97,
        disk_queue=28.0,
        job_reads=1.5e9,
        job_chars=1.52e9,
        job_calls=370e3,
    )
    hook = one_rank(
        node,
        0.21,
        {**INPUT_SHARES, "data_wait": 0.58, "forward": 0.13, "backward": 0.23},
        3.15e12,
        95.0,
        parameters=25_600_000,
        autocast_dtype="float16",
        compute_dtype="float16",
        conv_flop_share=0.93,
        has_conv=True,
        input_rank=4,
        batch_size=256,
        loader_workers=8,
        cores=8,
        **cuda_memory(L4_MEM, reserved=0.60, peak=0.5, allocated=0.3),
    )
    return Tick([g], j, h), hook


# --- (q) compute-bound under a power cap ----------------------------------------------------------


def q_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    """A hot GPU (a failed fan, a blocked inlet): thermal slowdown holds the SM clock at 66%."""
    g = compute_gpu(sm=0.94, tensor=0.66, clock_ratio=0.66, reasons=SW_THERMAL | HW_SLOWDOWN, power=430.0)
    hook = one_rank(
        node,
        0.47,
        COMPUTE_SHARES,
        1.47e14,
        400.0,
        parameters=1_300_000_000,
        autocast_dtype="bfloat16",
        compute_dtype="bfloat16",
        **cuda_memory(H100_MEM, reserved=0.9, peak=0.7, allocated=0.45),
    )
    return Tick([g], job_cpu(), HostFigures(cpu_util=0.07)), hook


def q2_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    """A power limit set below the board's (nvidia-smi -pl 500): the SM clock at 68%."""
    g = compute_gpu(sm=0.94, tensor=0.66, clock_ratio=0.68, reasons=POWER_CAP, power=500.0)
    hook = one_rank(
        node,
        0.45,
        COMPUTE_SHARES,
        1.47e14,
        400.0,
        parameters=1_300_000_000,
        autocast_dtype="bfloat16",
        compute_dtype="bfloat16",
        **cuda_memory(H100_MEM, reserved=0.9, peak=0.7, allocated=0.45),
    )
    return Tick([g], job_cpu(), HostFigures(cpu_util=0.07)), hook


# --- (r) FP8 matmuls (Transformer Engine / torchao float8) on an H100 --------------------------------


def r_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    g = compute_gpu(sm=0.90, tensor=0.74, dram=0.42, power=690.0, clock_ratio=0.9)
    hook = one_rank(
        node,
        0.3,
        COMPUTE_SHARES,
        3.04e14,
        600.0,
        parameters=8_000_000_000,
        autocast_dtype="bfloat16",
        compute_dtype="bfloat16",
        fp8_flop_share=0.72,
        **cuda_memory(H100_MEM, reserved=0.93, peak=0.8, allocated=0.5),
    )
    return Tick([g], job_cpu(), HostFigures(cpu_util=0.07)), hook


# --- (s) A100, no GPM, with the hook: the roofline decides -----------------------------------------


def s_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    """bf16 autocast GEMM-heavy step on an A100 under bottleneckd run: 205 TFLOP/s (66% of 312), operand
    bytes 0.55 TB/s (27% of 2.04); NVML busy 100%, memory busy 45%. GPUs 1-7 idle."""
    g = GpuFigures(busy=1.0, mem_busy=0.45, mem_used=0.9, pcie_rx=0.5e9, power=390.0, clock_ratio=0.97, job_pid=JOB)
    hook = one_rank(
        node,
        0.5,
        COMPUTE_SHARES,
        0.965 * 0.5 * 205e12,
        373.0,
        parameters=1_300_000_000,
        autocast_dtype="bfloat16",
        compute_dtype="bfloat16",
        cores=32,
        **cuda_memory(A100_MEM, reserved=0.88, peak=0.7, allocated=0.42),
    )
    return Tick([g] + [idle_gpu() for _ in range(7)], job_cpu(usable=32.0), HostFigures(cpu_util=0.02)), hook


# --- (t) A100 with a dcgm-exporter (default counters: tensor pipe and DRAM, no SM activity) -----------


def t_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    """A normalisation-heavy step under bottleneckd run on a Kubernetes A100 node whose GPU Operator
    runs dcgm-exporter with its default counters: DRAM_ACTIVE 0.83, PIPE_TENSOR_ACTIVE 0.06 (no
    SM_ACTIVE in the default file). The hook's roofline agrees: intensity 5 FLOP/B, 1.6 TB/s."""
    g = GpuFigures(busy=1.0, mem_busy=0.9, mem_used=0.7, pcie_rx=0.3e9, power=340.0, clock_ratio=1.0, job_pid=JOB)
    fields = {"DCGM_FI_PROF_DRAM_ACTIVE": 0.83, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.06}
    dcgm = {
        0: fields,
        **{i: {"DCGM_FI_PROF_DRAM_ACTIVE": 0.0, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.0} for i in range(1, 8)},
    }
    hook = one_rank(
        node,
        0.1,
        COMPUTE_SHARES,
        0.965 * 0.1 * 8e12,
        5.0,
        parameters=60_000_000,
        autocast_dtype="bfloat16",
        compute_dtype="bfloat16",
        cores=32,
        **cuda_memory(A100_MEM, reserved=0.68, peak=0.5, allocated=0.3),
    )
    tick = Tick([g] + [idle_gpu() for _ in range(7)], job_cpu(usable=32.0), HostFigures(cpu_util=0.02), dcgm)
    return tick, hook


# --- (u) a GPU job held by per-step Python on the host (control for the spin-wait rule) --------------


def u_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    """A pure-Python metric over each batch's predictions on the host: 62% of the step outside the
    phases, the main thread at a full core, the GPU idle meanwhile (busy 34%)."""
    g = compute_gpu(busy=0.34, mem_busy=0.15, sm=0.31, tensor=0.2, dram=0.13, power=230.0)
    hook = one_rank(
        node,
        0.8,
        {"data_wait": 0.01, "transfer": 0.01, "forward": 0.12, "backward": 0.22, "optimizer": 0.02, "other": 0.62},
        4.5e13,
        380.0,
        parameters=1_300_000_000,
        autocast_dtype="bfloat16",
        compute_dtype="bfloat16",
        **cuda_memory(H100_MEM, reserved=0.8, peak=0.6, allocated=0.4),
    )
    return Tick([g], job_cpu(main=0.99, launch=1.1, hottest=0.99, rank_busy=1.4), HostFigures(cpu_util=0.07)), hook


# --- (v) fp32 without autocast on an H100: compute-bound on the FP32 pipe ------------------------------


def v_tick(node: Node, k: int) -> tuple[Tick, Hook | None]:
    """A wide fp32 MLP (TF32 off, PyTorch's default for matmuls): the FP32 pipe 78%, tensor cores idle,
    48 TFLOP/s = 72% of the fp32 peak."""
    g = compute_gpu(sm=0.93, occupancy=0.45, tensor=0.0, fp32=0.78, fp16=0.0, dram=0.41, power=610.0)
    hook = one_rank(
        node,
        0.4,
        COMPUTE_SHARES,
        0.965 * 0.4 * 48e12,
        120.0,
        parameters=400_000_000,
        compute_dtype="float32",
        **cuda_memory(H100_MEM, reserved=0.7, peak=0.55, allocated=0.35),
    )
    return Tick([g], job_cpu(), HostFigures(cpu_util=0.07)), hook


def _s(
    node: NodeSpec,
    resource: str,
    stage: str,
    tick: Callable[[Node, int], tuple[Tick, Hook | None]],
    what: str,
    why: str,
    top: tuple[str, ...],
    **kw: object,
) -> Scenario:
    return Scenario(node=node, resource=resource, stage=stage, tick=tick, what=what, why=why, top=top, **kw)  # type: ignore[arg-type]


SCENARIOS: dict[str, Scenario] = {
    "a_bf16_autocast_compute_h100": _s(
        H100_1,
        "gpu_compute",
        "compute",
        a_tick,
        "GPT-style 1.3B model, fp32 parameters under torch.autocast(bfloat16), H100 SXM with GPM: SM 93%, "
        "tensor pipe 62%, DRAM 38%, 46% of the bf16 peak",
        "the SMs and tensor cores are busy and DRAM is not: compute-bound, judged against the bf16 peak "
        "(autocast), not fp32's",
        ("fp8_matmuls",),
    ),
    "b_memory_bandwidth_h100": _s(
        H100_1,
        "gpu_memory_bandwidth",
        "compute",
        b_tick,
        "LayerNorm/GELU/dropout-heavy model (intensity 6 FLOP/B) under bf16 autocast, H100: DRAM 81%, SM 86%, "
        "tensor pipe 8%",
        "DRAM at the practical maximum and far above every pipe, low arithmetic intensity: memory-bandwidth-bound",
        ("fuse_operators",),
    ),
    "c_input_cpu_loader_l4": _s(
        L4_1,
        "cpu_compute",
        "data",
        c_tick,
        "ResNet-50 fp16 on an L4 (8 vCPUs): waiting for data 60% of the step, 8 loader workers at 0.93 core each "
        "(JPEG decode + augmentation), the job at 8.0 of 8 cores",
        "the loader's CPU is full (workers = cores); more workers cannot help: make each batch cheaper or move "
        "decoding to the GPU",
        ("offload_preprocessing", "fast_loader_library", "cache_preprocessing", "simplify_augmentation"),
    ),
    "d_input_latency_loader": _s(
        H100_1,
        "undetermined",
        "data",
        d_tick,
        "waiting for data 62% of the step; 4 loader workers at 0.04 core each fetching objects from a remote "
        "store; disk idle, NIC at 95 MB/s of 100 GbE",
        "nothing the samplers see is busy: the loader waits on latency; no resource can be named, and hiding "
        "the wait (more workers, deeper prefetch) is the advice",
        ("hide_loader_latency",),
    ),
    "e_h2d_pageable_h200": _s(
        H200_1,
        "cpu_gpu_interconnect",
        "transfer",
        e_tick,
        "host-to-device copies 42% of the step from pageable memory (pin_memory=False) at ~22 GB/s on PCIe gen5 "
        "x16 (9 GB/s averaged over each second), SM 24%",
        "copies take the step; pageable copies cannot fill the link: pin the host memory first",
        ("pinned_memory",),
    ),
    "f_ddp_nvlink_exposed_allreduce": _s(
        H100_8,
        "inter_gpu_interconnect",
        "communication",
        f_tick,
        "DDP on 8 H100s over NVLink, 1.2B parameters with one-sequence micro-batches: the exposed all-reduce 45% "
        "of the step (22.5 of 25 ms not overlapped), NVLink at 37% averaged (~75% while communicating)",
        "communication takes the step, on one node: too little compute per gradient byte; accumulate "
        "gradients (fewer all-reduces) or compress them",
        ("larger_batch", "gradient_compression", "less_frequent_sync"),
    ),
    "g_multinode_ddp_network": _s(
        H100_8,
        "inter_node_interconnect",
        "communication",
        g_tick,
        "DDP on 2 nodes x 8 H100s (this node's ranks 0-7 of 16), all-reduce 42% of the step, each NDR port "
        "at 37% averaged (88% while communicating)",
        "the inter-node links are full while communicating and communication takes the step",
        ("gradient_compression", "larger_batch", "less_frequent_sync"),
    ),
    "h_fsdp_overlapped_compute": _s(
        H100_8,
        "gpu_compute",
        "compute",
        h_tick,
        "FSDP on 8 H100s (bf16 MixedPrecision), collectives in flight 120 ms of a 360 ms step but the compute "
        "stream waits 7 ms; SM 88%, tensor 58%",
        "communication is overlapped; the SMs are busy: compute-bound",
        ("fp8_matmuls",),
    ),
    "i_allocator_cache_full_compute": _s(
        H200_1,
        "gpu_compute",
        "compute",
        i_tick,
        "compute-bound job (SM 84%) on an H200 NVML reads 94% used; the caching allocator holds 93%, the tensors "
        "peak at 68%, no retries",
        "a full cache with room in it is no memory bottleneck: the SMs are busy",
        ("fp8_matmuls",),
    ),
    "j_gpu_memory_pressure": _s(
        H100_1,
        "gpu_memory",
        "compute",
        j_tick,
        "tensors peak at 97% of the H100, cudaMalloc retried after a cache flush 1.5 times a step, 3 OOMs",
        "the GPU's memory is short and the retries cost time: reduce activation memory",
        ("activation_checkpointing",),
    ),
    "k_launch_bound": _s(
        H100_1,
        "cpu_compute",
        "compute",
        k_tick,
        "small MLP, 4 ms steps of tiny kernels: SM 14%, NVML busy 72%, main thread 0.58 + autograd thread 0.39 "
        "of a core",
        "the threads launching kernels are at a full core while the SMs idle: launch-bound; CUDA graphs",
        ("cuda_graphs",),
    ),
    "l_a100_attach_memory_bound": _s(
        A100_8,
        "gpu_memory_bandwidth",
        "compute",
        l_tick,
        "bottleneckd attach (py-spy, no hook) to a LayerNorm/GELU-heavy job on gpu0 of a DGX A100 (no GPM, no "
        "dcgm-exporter); NVML busy 100%, memory busy 86%; the main thread spins in loss.item()'s synchronisation; "
        "the other 7 GPUs run another tenant's jobs",
        "the GPU never idles and device memory is busy nearly whenever a kernel runs: memory-bandwidth-bound "
        "(a heuristic); the main thread's CPU is a spin-wait on the GPU, not host work",
        ("fuse_operators", "mixed_precision"),
    ),
    "m_straggler_rank2": _s(
        H100_8,
        "gpu_compute",
        "compute",
        m_tick,
        "DDP on 4 H100s; GPU 2 thermally throttled (clock 62%): rank 2 computes 35% longer, ranks 0, 1, 3 wait "
        "for it in the all-reduce 30% of the step",
        "rank 2 is the straggler; the job is held by rank 2's GPU compute, not by the interconnect: restore its clock",
        ("restore_gpu_clocks",),
        straggler=2,
    ),
    "n_cpu_job_shared_gpu_node": _s(
        H100_8,
        "cpu_compute",
        "compute",
        n_tick,
        "a CPU-only training job (device cpu, 30 of 32 cores) on a node whose 8 H100s another tenant's DDP job "
        "keeps busy, NVLink at 93% (its PIDs in another PID namespace)",
        "the job runs on its CPUs; the GPUs are not its own",
        ("mixed_precision", "smaller_model", "shrink_tensors"),
    ),
    "o_mig_slice_compute": _s(
        H100_MIG,
        "gpu_compute",
        "compute",
        o_tick,
        "a 3g.40gb MIG slice of an H100: SM 91% of the slice, 40% of the slice's bf16 peak; another tenant on "
        "the other slice",
        "compute-bound in its slice, judged against the slice's share of the GPU",
        ("fp8_matmuls",),
    ),
    "p_storage_local_nvme_l4": _s(
        L4_1,
        "storage_bandwidth",
        "data",
        p_tick,
        "waiting for data 58% of the step, reading small files from local NVMe: 370k IO/s, disk busy 97%, 28 "
        "requests queued, 5 loader threads in disk wait, I/O stalls 42%",
        "the loader waits on the disk",
        ("sequential_shards", "cache_locally", "fast_loader_library", "data_echoing"),
    ),
    "q_thermal_throttled_compute": _s(
        H100_1,
        "gpu_compute",
        "compute",
        q_tick,
        "compute-bound (SM 94%, tensor 66%) on an H100 in thermal slowdown (SW thermal + HW slowdown): SM clock "
        "66% of its maximum",
        "compute-bound at two thirds of its clock: restore the clock first (cooling, a node check): 1.5x for free",
        ("restore_gpu_clocks",),
    ),
    "q2_power_capped_compute": _s(
        H100_1,
        "gpu_compute",
        "compute",
        q2_tick,
        "compute-bound (SM 94%, tensor 66%) on an H100 held at 500 W by a power limit: SM clock 68% of its maximum",
        "compute-bound, slowed by the power cap: the evidence says so; whether the limit is below the board's "
        "default is not sampled (NVML's enforced vs default power limit), so no advice on it",
        ("fp8_matmuls",),
    ),
    "r_fp8_h100": _s(
        H100_1,
        "gpu_compute",
        "compute",
        r_tick,
        "8B model with 72% of its FLOPs in FP8 matmuls (aten._scaled_mm) on an H100: 1.05 PFLOP/s achieved, "
        "SM 90%, tensor 74%",
        "compute-bound against the FP8/bf16 blend of peaks (68%), not over 100% of the bf16 peak; FP8 already in "
        "use, what is left is less work",
        ("smaller_model", "shrink_tensors", "selective_backprop"),
    ),
    "s_a100_hook_roofline_compute": _s(
        A100_8,
        "gpu_compute",
        "compute",
        s_tick,
        "bf16 autocast GEMM-heavy step on an A100 (no GPM, no dcgm-exporter) under bottleneckd run: 66% of the bf16 "
        "peak, operand bytes at 27% of memory bandwidth; NVML busy 100%",
        "without activity counters the hook's roofline against the bf16 peak says compute",
        ("smaller_model", "shrink_tensors", "selective_backprop"),
    ),
    "t_a100_dcgm_memory_bound": _s(
        A100_8,
        "gpu_memory_bandwidth",
        "compute",
        t_tick,
        "normalisation-heavy step on an A100 read through dcgm-exporter's default counters: DRAM_ACTIVE 83%, "
        "PIPE_TENSOR_ACTIVE 6%, no SM_ACTIVE; intensity 5 FLOP/B",
        "DRAM at the practical maximum: memory-bandwidth-bound",
        ("fuse_operators",),
    ),
    "u_gpu_job_host_python_other": _s(
        H100_1,
        "cpu_compute",
        "other",
        u_tick,
        "a pure-Python metric over each batch on the host: 62% of the step outside the phases, main thread at a "
        "full core, the H100 busy 34%",
        "the host's Python between the phases starves the GPU: compute the metric every N steps or on the GPU",
        ("per_step_python_work",),
    ),
    "v_fp32_no_autocast_h100": _s(
        H100_1,
        "gpu_compute",
        "compute",
        v_tick,
        "a wide fp32 MLP on an H100 without autocast (TF32 off): SM 93%, FP32 pipe 78%, tensor cores idle, 72% of "
        "the fp32 peak",
        "compute-bound on the FP32 pipe: bf16 autocast (or TF32) moves the matmuls to the tensor cores, ~15x the rate",
        ("mixed_precision",),
    ),
}
