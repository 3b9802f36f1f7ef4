"""One GPU each: compute, memory bandwidth, input, transfer, GPU memory and launch-bound steps (a-e, i-k).
The figures and their sources: tests/data/gpu_figures.py."""

from __future__ import annotations

from tests.data.gpu_figures import (
    COMPUTE_SHARES,
    H100_MEM,
    H200_MEM,
    JOB,
    L4_MEM,
    Hook,
    compute_gpu,
    job_cpu,
    one_rank,
)
from tests.data.gpu_hook import cuda_memory
from tests.data.gpu_node import GpuFigures, HostFigures, JobCpu, Node, Tick

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
