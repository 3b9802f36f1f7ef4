"""Whole nodes: DDP over NVLink and over the network, FSDP, attach on a shared A100 node, a straggler,
a CPU job beside another tenant (f-h, l-n). The figures and their sources: tests/data/gpu_figures.py."""

from __future__ import annotations

from bottleneckd.model.sample import StepPhases
from tests.data.gpu_figures import (
    H100_MEM,
    HW_THERMAL,
    JOB,
    SW_THERMAL,
    TENANT,
    Hook,
    compute_gpu,
    idle_gpu,
    job_cpu,
    ranks_on,
    tenant_gpu,
)
from tests.data.gpu_hook import RankJob, cuda_memory, ddp_facts
from tests.data.gpu_node import GpuFigures, HostFigures, JobCpu, Node, Tick

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
