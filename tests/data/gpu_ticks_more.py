"""A MIG slice, local storage, throttled clocks, FP8, A100 without GPM (roofline, dcgm-exporter), host
Python on a GPU job, fp32 without autocast (o-v). The figures and their sources: tests/data/gpu_figures.py."""

from __future__ import annotations

from tests.data.gpu_figures import (
    A100_MEM,
    COMPUTE_SHARES,
    H100_MEM,
    HW_SLOWDOWN,
    JOB,
    L4_MEM,
    POWER_CAP,
    SW_THERMAL,
    TENANT,
    Hook,
    compute_gpu,
    idle_gpu,
    job_cpu,
    one_rank,
    tenant_gpu,
)
from tests.data.gpu_hook import cuda_memory
from tests.data.gpu_node import GIB, GpuFigures, HostFigures, JobCpu, Node, Tick
from tests.data.gpu_ticks_one import INPUT_SHARES

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
