"""The held-out GPU situations (tests/data/construct_gpu.py writes their traces), each with the label
a GPU performance engineer gives it, why, and what they would do first. The nodes and figures are in
tests/data/gpu_figures.py, each situation's ticks in tests/data/gpu_ticks_*.py."""

from __future__ import annotations

from collections.abc import Callable

from tests.data.gpu_figures import A100_8, H100_1, H100_8, H100_MIG, H200_1, L4_1, Hook, Scenario
from tests.data.gpu_node import Node, NodeSpec, Tick
from tests.data.gpu_ticks_more import o_tick, p_tick, q2_tick, q_tick, r_tick, s_tick, t_tick, u_tick, v_tick
from tests.data.gpu_ticks_nodes import f_tick, g_tick, h_tick, l_tick, m_tick, n_tick
from tests.data.gpu_ticks_one import a_tick, b_tick, c_tick, d_tick, e_tick, i_tick, j_tick, k_tick


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
        "use, what is left is less work; compiling the model (not compiled here) keeps what is trained and comes "
        "before less work (added 2026-12-05 with the knowledge base's compile_model, its gain bounded by the roofline, "
        "not predicted)",
        ("compile_model", "smaller_model", "shrink_tensors", "selective_backprop"),
    ),
    "s_a100_hook_roofline_compute": _s(
        A100_8,
        "gpu_compute",
        "compute",
        s_tick,
        "bf16 autocast GEMM-heavy step on an A100 (no GPM, no dcgm-exporter) under bottleneckd run: 66% of the bf16 "
        "peak, operand bytes at 27% of memory bandwidth; NVML busy 100%",
        "without activity counters the hook's roofline against the bf16 peak says compute; compiling the model (not "
        "compiled here) keeps what is trained and comes before less work (added 2026-12-05 with the knowledge base's "
        "compile_model, its gain bounded by the roofline, not predicted)",
        ("compile_model", "smaller_model", "shrink_tensors", "selective_backprop"),
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
