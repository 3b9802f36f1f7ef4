"""Every threshold of the diagnosis, in one registry: its value, its unit, the figure of a window
(or verdict) it is compared with (``statistic``, named as ``diagnosis/sensitivity.py`` computes it)
and its source or the measurement behind it.

The rules import the values from here (``from bottleneckd.diagnosis.thresholds import INPUT_HIGH``);
``scripts/thresholds_table.py`` writes ``docs/thresholds.md`` from ``REGISTRY``, with each labelled
workload's statistic beside the threshold. ``tests/test_thresholds.py`` fails when a rule compares
with a number that is not registered here. Scores (how strongly a finding limits the step, once a
threshold is crossed) are named constants in their rule modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

N = TypeVar("N", int, float)


@dataclass(frozen=True, kw_only=True)
class Threshold:
    name: str  # the constant's name, as the code spells it
    value: float
    unit: str
    statistic: str  # the figure compared with it (a key of diagnosis/sensitivity.py's STATISTICS)
    source: str  # where the figure comes from, or the measurement behind it
    caveat: str = ""  # what is known to be weak about it (one workload, no measurement)


REGISTRY: dict[str, Threshold] = {}


def _t(name: str, value: N, *, unit: str, statistic: str, source: str, caveat: str = "") -> N:
    if name in REGISTRY:
        raise ValueError(f"threshold {name} registered twice")
    REGISTRY[name] = Threshold(name=name, value=value, unit=unit, statistic=statistic, source=source, caveat=caveat)
    return value


_SHARE = "share of step time"
_TF_INPUT = (
    "TensorFlow Profiler's input-pipeline analyzer: under 5% of step time waiting for input is not "
    "input-bound, 5-20% moderately, 20% or more highly input-bound (tensorflow.org/guide/profiler, "
    "'Input pipeline analyzer')"
)

# --- stage shares of the step ---------------------------------------------------------------------

INPUT_MODERATE = _t("INPUT_MODERATE", 0.05, unit=_SHARE, statistic="data_share", source=_TF_INPUT)
INPUT_HIGH = _t("INPUT_HIGH", 0.20, unit=_SHARE, statistic="data_share", source=_TF_INPUT)
TRANSFER_HIGH = _t(
    "TRANSFER_HIGH",
    0.20,
    unit=_SHARE,
    statistic="transfer_share",
    source=_TF_INPUT + "; its input time includes the host-to-device copy, so the same 20% is used for copies",
)
COMM_HIGH = _t(
    "COMM_HIGH",
    0.10,
    unit=_SHARE,
    statistic="comm_share",
    source="PyTorch profiler's TensorBoard plugin (torch-tb-profiler, now deprecated) recommends gradient compression, "
    "accumulation or a larger batch when communication exceeds 10% of the step",
)
EXPOSED_OUTSIDE_PHASE = _t(
    "EXPOSED_OUTSIDE_PHASE",
    0.5,
    unit="communication phase / the hook's exposed communication (per step)",
    statistic="",
    source="chosen: the hook takes exposed communication out of the phase it fell in (torch/cuda_clock.py), so its "
    "exposed seconds per step and the communication phase agree up to the facts' moving average over the last "
    "steps; a phase holding under half of the exposed time says the waits were left inside forward and backward (a "
    "blind trace of FSDP on PCIe: 2.59 s of a 3.6 s step exposed, no communication phase, read undetermined/compute "
    "with no advice), and the exposed share stands for the phase",
)
LINK_IDLE_WHILE_COMMUNICATING = _t(
    "LINK_IDLE_WHILE_COMMUNICATING",
    0.05,
    unit="share of the link's peak while communicating",
    statistic="link_while_communicating",
    source="the inter-GPU link's throughput over the interval divided by the communication share (its rate while "
    "communicating) under this, while the step also waits for data (INPUT_MODERATE or more, and at least "
    "LATE_BATCH_DATA_RATIO of the communication's share): the exposed "
    "communication is the ranks waiting for the one whose batch came last, not the transfer (an independent "
    "probe's trace: 8 H100s on NVLink at 0.3% of its peak during 33% of exposed all-reduce, loaders at 88 of "
    "96 cores; a transfer-bound NCCL all-reduce runs its link at tens of percent)",
    caveat="chosen between those figures, not measured on a GPU; a latency-bound all-reduce of many small buckets, "
    "or NCCL over shared memory or PCIe (P2P disabled), also leaves the NVLink counters idle, so it is applied only "
    "where the step's data wait is comparable to it",
)
OWN_COLLECTIVES_LINK_IDLE = _t(
    "OWN_COLLECTIVES_LINK_IDLE",
    0.15,
    unit="share of the link's peak while communicating",
    statistic="link_while_communicating",
    source="chosen between two blind traces of jobs with neither DDP nor FSDP (their collectives their own): "
    "tensor parallelism's all-reduces moving activations over NVLink at 46% of its peak while communicating (the "
    "link limits), and a 4-stage pipeline's bubble (43% of the step) with NVLink at 7%: the ranks wait for the "
    "previous stage, and a faster link changes nothing",
    caveat="not applied to FSDP, nor to DDP whose all-reduce its comm hook timed: their idle link while "
    "communicating is a late rank (diagnosis/straggler.py) or an all-reduce of many small buckets, which syncing "
    "less often does shorten; nor where the step waits for data as long (LINK_IDLE_WHILE_COMMUNICATING: a late "
    "batch)",
)
LATE_BATCH_DATA_RATIO = _t(
    "LATE_BATCH_DATA_RATIO",
    0.5,
    unit="data wait over the communication's share",
    statistic="data_over_comm",
    source="with LINK_IDLE_WHILE_COMMUNICATING: the step's data wait at least half its exposed communication, so "
    "late batches can account for the ranks' wait (the probe's trace: 20% against 33%); a few percent of data wait "
    "beside a 30% latency-bound all-reduce does not",
    caveat="chosen, not measured",
)
OFFLOADED_OPTIMIZER_HIGH = _t(
    "OFFLOADED_OPTIMIZER_HIGH",
    0.25,
    unit=_SHARE,
    statistic="optimizer_share",
    source="a GPU job whose optimizer state is offloaded to the CPU (the hook's fact offloading) spends this much of "
    "its step or more in the optimizer step: the CPU's optimizer limits it while the GPU waits (an independent "
    "probe's ZeRO-Offload trace: 55% of a 6.4 s step in CPU Adam, the GPU idle meanwhile, read as GPU compute)",
    caveat="chosen, not measured: between the few percent of an optimizer step on the GPU and that trace",
)
FOR_LOOP_OPTIMIZER_HIGH = _t(
    "FOR_LOOP_OPTIMIZER_HIGH",
    0.2,
    unit=_SHARE,
    statistic="optimizer_share",
    source="a GPU job whose optimizer updates parameter by parameter (the hook's fact optimizer_impl for-loop: "
    "foreach=False, or an optimizer without multi-tensor kernels) spends this much of its step or more in the "
    "optimizer step: the step's cheapest part to shrink, foreach or fused kernels doing the same update in a "
    "fraction of the launches and passes over the state (torch.optim's docs: fused > foreach > for-loop); an "
    "independent probe's trace, AdamW(foreach=False) at 33% of an H100 step, was labelled the optimizer stage by its "
    "engineer and read as forward and backward's compute",
    caveat="chosen, not measured on a GPU: between the few percent of a foreach or fused step and that trace",
)
USUAL_RATE_PORTS = _t(
    "USUAL_RATE_PORTS",
    2,
    unit="ports",
    statistic="ports_at_usual_rate",
    source="InfiniBand/RoCE ports of a node at one rate, more than half of them, that make it the node's usual "
    "rate, against which the port carrying the most bytes running slower is a link trained down: two (one port "
    "beside the slow one says nothing of which is the odd one); a rail-optimised GPU node has one port per GPU, "
    "all at one rate (an independent probe's trace: mlx5_3 at 200 Gb/s beside seven ports at 400)",
    caveat="chosen, not measured: a node with one slower storage HCA beside two compute ports would read as "
    "degraded when the storage port carries the most bytes",
)
RAIL_BYTES = _t(
    "RAIL_BYTES",
    0.8,
    unit="share of the usual-rate ports' median bytes/s",
    statistic="slow_port_bytes_over_rails",
    source="a slower port carrying this share or more of the bytes the node's usual-rate ports carry is a rail of "
    "the same all-reduce (NCCL splits a collective evenly over its rails: a degraded rail carries the same bytes at "
    "twice the utilisation, 190 against 192 Gb/s in an independent probe's trace); a storage port carries other "
    "traffic (a DGX-like node's 200 Gb/s storage ports at 62% of the compute ports' bytes)",
    caveat="chosen, not measured: between those two",
)
COMM_THREADS_ACTIVE = _t(
    "COMM_THREADS_ACTIVE",
    0.02,
    unit="cores",
    statistic="comm_thread_cores",
    source="attach: the ranks' gloo/NCCL threads (by name) busy at least this much say collectives run, so the "
    "main thread waiting inside backward is the gradient all-reduce even where no DDP frame was sampled (its "
    "forward is 4.5% of ddp_torchrun's step: at 2 stack samples a second none was seen in 20 s, and the run read "
    "compute); those threads measured 0.56-0.69 cores there, 0.00 under no_sync() on ddp_spawn; a floor above the "
    "sampler's rounding, not measured",
)
SHARED_COMM_HIGH = _t(
    "SHARED_COMM_HIGH",
    0.35,
    unit=_SHARE,
    statistic="comm_cost_share",
    source="set between the two recorded gloo DDP jobs of tests/test_rules.py: ddp_compute's all-reduce costs 20% of "
    "the step (10% exposed + 10% overlapped on full cores), ddp_spawn's 77% (17% + 60%). Communication at or above "
    "it is named even though compute may still take the larger share (35-50%)",
    caveat="set between two test cases, not measured; from 35% to 50% communication is named while compute takes "
    "more of the step",
)
COMPUTE_STAGE = _t(
    "COMPUTE_STAGE",
    0.5,
    unit=_SHARE,
    statistic="compute_share",
    source="the compute stage limits the step when forward+backward+optimizer(+GPU wait) is the larger half of it; "
    "below it another stage's rule decides",
)
COMPUTE_FULL = _t(
    "COMPUTE_FULL",
    0.8,
    unit=_SHARE,
    statistic="compute_share",
    source="chosen: at 80% compute or more a CPU compute finding keeps its full score; below, it is scaled by "
    "share/0.8 so that a step half in compute and half waiting for data on the same CPU is named by the data stage "
    "(tests/test_rules.py test_half_compute_half_data_on_the_same_cpu_is_the_data_stage, commit 7b4dea4)",
)
OTHER_HIGH = _t(
    "OTHER_HIGH",
    0.5,
    unit=_SHARE,
    statistic="other_share",
    source="the step is mostly outside the timed phases (more than half): the 'other' stage limits it",
)

OTHER_LARGEST = _t(
    "OTHER_LARGEST",
    0.35,
    unit=_SHARE,
    statistic="other_share",
    source="chosen, a floor: under OTHER_HIGH the 'other' stage still limits the step where it takes more of it "
    "than any other stage and at least this much (a per-step pure-Python metric at 47-52% of the step beside a "
    "serial loader's 30-33% was read as the data stage; removing the metric measured x2.30, the data wait's share "
    "allows x1.49: the workload metric_every_step, 2026-12-04)",
)
GPU_WAITS_FOR_HOST = _t(
    "GPU_WAITS_FOR_HOST",
    0.35,
    unit="share of time no kernel runs (1 - NVML utilization)",
    statistic="",
    source="chosen, OTHER_LARGEST's share: a GPU job timed by CUDA events whose least busy GPU idles this much of "
    "the time spends the other stage waiting for its host, whose work there is weighed against the host's stages "
    "only (rules/other.py; a blind trace: host syncs at 46% of the step beside the GPU's 52%, the GPU idle 50%)",
)
IDLE_COVERS_OTHER = _t(
    "IDLE_COVERS_OTHER",
    0.8,
    unit="GPU idle share / the other stage's share",
    statistic="",
    source="chosen: a GPU job timed by CUDA events whose least busy GPU idles at least this much of the time the "
    "other stage takes (and that stage INPUT_HIGH of the step or more) waits for its host there as it waits for a "
    "loader: the stage is judged as the data stage is, from INPUT_HIGH and against the host's stages. Two blind traces "
    "of per-step .tolist() (metrics, per-example losses): the other stage 31% and 26% of the step, the GPU idle 31% "
    "and about as much (ratios near 1; the rest of an idle GPU's time is the next step's first launches), read "
    "gpu_compute/compute from the compute stage's 67-70%, with fp8 first; removing the stage allows x1.45",
)
STAGE_SHARE_RATIO = _t(
    "STAGE_SHARE_RATIO",
    1.3,
    unit="ratio of step shares",
    statistic="other_share",
    source="chosen: where one resource limits the 'other' stage and a stronger finding's stage, the other stage is "
    "named when its share of the step is at least this many times that stage's (metric_every_step: other 47-52% "
    "against data 30-33%, 1.4-1.7x; removing the metric measured x2.30, the data wait allows x1.49); a data wait "
    "beside a larger compute stage stays the data stage (hidden behind compute by one DataLoader argument)",
)

# --- the job's CPUs (no peak needed) -------------------------------------------------------------

SATURATED = _t(
    "SATURATED",
    0.80,
    unit="share of the usable cores",
    statistic="cpu_busy_share",
    source="chosen: the same 80% that DCGM gives for an efficient GPU (SM activity 0.8) applied to the cores the "
    "job may use",
)
ONE_CORE = _t(
    "ONE_CORE",
    0.85,
    unit="cores (one thread)",
    statistic="hottest_thread",
    source="chosen: a GIL-bound or single-threaded step keeps one thread at ~1.0 core; 0.85 leaves room for the "
    "jitter of per-thread CPU ticks read from /proc once a second",
)
CPU_STALL = _t(
    "CPU_STALL",
    0.20,
    unit="share of time",
    statistic="cpu_pressure",
    source="chosen: PSI cpu 'some' (runnable tasks waiting for a CPU) 20% of the time, the same 20% as IO_STALL; "
    "kernel docs (Documentation/accounting/psi.rst) give no threshold",
)
WAITING_SHOWN = _t(
    "WAITING_SHOWN",
    0.1,
    unit="cores",
    statistic="runqueue_wait_cores",
    source="evidence text only: run-queue wait under a tenth of a core is not mentioned",
)
FROM_DISK = _t(
    "FROM_DISK",
    0.5,
    unit="share of the read calls' bytes",
    statistic="",
    source="evidence text only: small read calls whose bytes are mostly the block device's are limited by its "
    "operations; otherwise they are the page cache's or a network mount's (an NFS-bound blind trace read "
    "'0 B per read call: small reads')",
)
OUTSIDE_BUSY = _t(
    "OUTSIDE_BUSY",
    0.25,
    unit="cores",
    statistic="outside_busy_cores",
    source="the job's run-queue wait is put on other processes only when the host's busy cores outside the job "
    "(host busy - the job's ranks, workers and launcher, both psutil rates over the same ~1 s interval) reach a "
    "quarter of a core: the two rates differ by a few hundredths on an idle host; below it the evidence says the "
    "job's own threads (ranks, loader workers) wait for each other (issue 21 item 10: 'other processes share these "
    "cores' was said when the only other processes were the job's loader workers)",
)
CONFINED_SLACK = _t(
    "CONFINED_SLACK",
    0.5,
    unit="cores",
    statistic="usable_core_shortfall",
    source="a job whose usable cores (affinity, cgroup quota) are this far below the host's is confined to some of "
    "them, and its run-queue wait is not put on the processes outside it (CPU busy on cores it may not use; a "
    "quota's throttling is a run-queue wait too): half a core, as affinity counts whole cores and a quota of "
    "1.9 cores on 2 leaves the job the host",
)
OUTSIDE_PROCESS_SHOWN = _t(
    "OUTSIDE_PROCESS_SHOWN",
    0.1,
    unit="cores",
    statistic="outside_process_top_cores",
    source="evidence text only: a process outside the job using under a tenth of a core over a sample is not named "
    "(the tenth of a core WAITING_SHOWN takes for the run-queue wait); the host's processes are scanned only while "
    "OUTSIDE_BUSY holds (samplers/outside_processes.py)",
)
NO_WORKERS = _t(
    "NO_WORKERS",
    0.5,
    unit="loader workers (mean alive over the window)",
    statistic="loader_workers",
    source="rounding: fewer than half a worker alive on average means the main process loads the data itself",
)
LOADER_BUSY_CORES = _t(
    "LOADER_BUSY_CORES",
    0.5,
    unit="cores",
    statistic="job_busy_cores",
    source="chosen: CPU pressure alone is not evidence for the loader unless the job itself uses half a core",
)

# --- storage (no peak needed) ------------------------------------------------------------------

D_THREADS = _t(
    "D_THREADS",
    0.3,
    unit="threads (mean over the window)",
    statistic="threads_in_disk_wait",
    source="chosen: a thread in uninterruptible (D) wait in 30% of the samples",
)
IO_STALL = _t(
    "IO_STALL",
    0.20,
    unit="share of time",
    statistic="io_pressure",
    source="chosen: PSI io 'some' 20% of the time (Documentation/accounting/psi.rst gives no threshold); counted only "
    "when the job reads from the device or has threads in D state",
)
IOWAIT_HIGH = _t(
    "IOWAIT_HIGH",
    0.3,
    unit="share of CPU time",
    statistic="iowait",
    source="chosen: below SageMaker Debugger's I/O-bound rule (iowait over 50% while the GPU is under 10%)",
)
DISK_BUSY_WITH_MISSES = _t(
    "DISK_BUSY_WITH_MISSES",
    0.3,
    unit="share of time",
    statistic="disk_busy",
    source="chosen: a disk busy 30% of the time while the job's own reads miss the page cache is a candidate; "
    "below it the disk has room and waits elsewhere dominate",
)
MISS_READ_RATE = _t(
    "MISS_READ_RATE",
    1e6,
    unit="B/s",
    statistic="job_read_bytes_per_second",
    source="chosen: reads reaching the block device at 1 MB/s or more (less is metadata and log reads)",
)
MISS_RATIO = _t(
    "MISS_RATIO",
    0.5,
    unit="read bytes / read chars",
    statistic="read_miss_ratio",
    source="chosen: at least half of what the job reads comes from the device, not the page cache",
)
SMALL_READ = _t(
    "SMALL_READ",
    64 * 1024,
    unit="B per read call",
    statistic="bytes_per_read_call",
    source="evidence text only: reads under 64 KiB are limited by operations per second (the disk here reads "
    "~24k random 4 KiB reads/s, ~100 MB/s, against ~1 GB/s sequential)",
)
BUSY = _t(
    "BUSY",
    0.60,
    unit="share of the device's peak",
    statistic="device_utilization",
    source="chosen: a disk, network file system, NIC, NVLink or PCIe link at 60% of its peak is busy; below "
    "DRAM's practical maximum (~0.8, DCGM) and well above a device that idles",
)
NFS_OVER_LOCAL = _t(
    "NFS_OVER_LOCAL",
    2.0,
    unit="ratio (network reads / local reads)",
    statistic="nfs_over_local_reads",
    source="chosen: the loader reads over the network when the network file system reads twice what local disks do",
)
NFS_ON_NIC = _t(
    "NFS_ON_NIC",
    0.8,
    unit="ratio (the mount's bytes / the NIC's busier direction's)",
    statistic="nfs_over_nic_bytes",
    source="chosen: a NIC whose busier direction moves no more than 1.25x the network file system's bytes carries "
    "mostly them, and is taken as the mount's path (a blind trace: a checkpoint writing 1.2 GB/s to NFS over a "
    "10 GbE port sending 1.2 GB/s, the node's InfiniBand idle)",
    caveat="bytes, not routes: other traffic of the same rate on that NIC while the mount moves its bytes over "
    "another link would be taken for the mount's",
)
WRITES = _t(
    "WRITES",
    20e6,
    unit="B/s",
    statistic="job_write_bytes_per_second",
    source="job writes at this rate outside the phases are checkpoint or log writes: 20 MB/s is ~10 s to write a "
    "200 MB checkpoint, a cost that shows in a 1 s sampling window",
)
OTHER_IDLE = _t(
    "OTHER_IDLE",
    0.5,
    unit="share of stack samples",
    statistic="other_idle_share",
    source="chosen: the sampled thread waited (sleep, lock, child process, socket) in half of its recent stack "
    "samples outside the phases: the time there is waiting, not computing",
)

# --- memory bandwidth and the roofline -----------------------------------------------------------

NEAR_PEAK_FLOOR = _t(
    "NEAR_PEAK_FLOOR",
    0.04,
    unit="share of the peak (FLOP/s and B/s)",
    statistic="roofline_peak_ratio",
    source="chosen: achieved FLOP/s and bytes/s both under 4% of their peaks mean per-operator overhead, not the "
    "roofline, limits the step",
)
RIDGE_MARGIN = _t(
    "RIDGE_MARGIN",
    1.25,
    unit="this machine's ridge point over the step's arithmetic intensity",
    statistic="ridge_over_intensity",
    source="measured: this 2-core VM's fp32 matmul peak (bottleneckd calibrate, best of 1 s) was 158, 176 and 231 "
    "GFLOP/s in three quiet runs and its copy bandwidth 30.6-31.7 GB/s, so its ridge point moved from 5.0 to 7.3 "
    "FLOP/byte (x1.46, +-19% about the middle); a compute-bound step at 7.2 FLOP/byte (eval_phases, proved by "
    "halving the width, and by its control: 1/16 of the weight bytes no faster) fell on either side. Only an "
    "intensity more than 1.25x below the ridge names memory bandwidth; nearer, the roofline cannot tell the sides "
    "apart and the busy cores name compute, as with no peak known",
    caveat="one machine's spread; the memory-bound step it must keep (grad_accumulation, 3.8 FLOP/byte) is below "
    "the ridge divided by 1.25 for every ridge measured here (4.0 to 5.8), not for a ridge under 4.75",
)
MIN_DRAM_BYTES = _t(
    "MIN_DRAM_BYTES",
    NEAR_PEAK_FLOOR * 25.6e9,
    unit="B/s per core the job ran on",
    statistic="operand_bytes_per_core",
    source="4% (NEAR_PEAK_FLOOR) of one DDR4-3200 channel's 25.6 GB/s (JEDEC JESD79-4): below it no current machine "
    "is DRAM-bound. Per core, because on a shared machine bytes/s shrink with the CPU time the job gets",
)
MEMBW_BUSY = _t(
    "MEMBW_BUSY",
    0.6,
    unit="share of the memory-bandwidth peak",
    statistic="cpu_memory_bandwidth_utilization",
    source="chosen: the BUSY level applied to the host's memory bandwidth sampler (a known peak)",
)
LOW_INTENSITY_OPS = _t(
    "LOW_INTENSITY_OPS",
    0.6,
    unit="share of forward stack samples",
    statistic="low_intensity_op_share",
    source="chosen (attach): normalisation and elementwise operators in 60% of forward stack samples move bytes "
    "with few multiply-adds (operand size, section 2.3)",
)
ROOFLINE_STEPS = _t(
    "ROOFLINE_STEPS",
    12,
    unit="steps",
    statistic="",
    source="the hook counts one step's FLOPs and bytes at its 3rd step and reports them with the next report; "
    "past 12 steps without them the counting failed and the rule goes on without",
)
STACK_SAMPLES = _t(
    "STACK_SAMPLES",
    24,
    unit="stack samples",
    statistic="",
    source="attach: after 24 stack samples (12 s at 2 Hz) an operator mix still unknown is taken as not low-intensity",
)
SIDE_THREADS_SMALL = _t(
    "SIDE_THREADS_SMALL",
    0.10,
    unit="share of the ranks' CPU",
    statistic="rank_side_thread_share",
    source="untimed DDP (attach): the ranks' CPU outside their main threads (gloo reduces in threads of its own) at "
    "most 10% of theirs means the all-reduce takes little of the cores",
    caveat="no measurement behind the value: it decides under attach, and attach records no trace for the suite "
    "yet; under run the ranks of ddp_compute read 0.05 (tests/data/eval_results_small.json)",
)

# --- GPUs ---------------------------------------------------------------------------------------

SM_EFFICIENT = _t(
    "SM_EFFICIENT",
    0.80,
    unit="SM activity",
    statistic="sm_activity",
    source="DCGM guidance: SM activity of 0.8 or more is needed (not sufficient) for an efficient job; a GPU "
    "compute finding's score reaches 1 there",
)
DRAM_PRACTICAL_MAX = _t(
    "DRAM_PRACTICAL_MAX",
    0.80,
    unit="DRAM activity",
    statistic="gpu_dram_utilization",
    source="DCGM guidance: DRAM activity of about 0.8 is the practical maximum; a memory-bandwidth finding's score "
    "reaches 1 there (CPU memory bandwidth is scaled the same way)",
)
LOW_SM = _t(
    "LOW_SM",
    0.5,
    unit="SM activity",
    statistic="sm_activity",
    source="DCGM guidance: SM activity under 0.5 is likely wasteful: the SMs are mostly idle",
)
GPU_DRAM_BUSY = _t(
    "GPU_DRAM_BUSY",
    0.6,
    unit="DRAM activity",
    statistic="gpu_dram_utilization",
    source="chosen: the BUSY level applied to DRAM activity (three quarters of DCGM's practical maximum of 0.8)",
)
GPU_BUSY = _t(
    "GPU_BUSY",
    0.6,
    unit="share of time a kernel runs (NVML utilization)",
    statistic="gpu_busy_fraction",
    source="chosen: the BUSY level; with SM activity under LOW_SM it means small or serial kernels",
)
COPIES_EXPLAIN_IDLE = _t(
    "COPIES_EXPLAIN_IDLE",
    0.5,
    unit="PCIe copy time at the link's peak over the GPU's idle share",
    statistic="pcie_copy_over_gpu_idle",
    source="chosen: PCIe copies that at the link's own peak would take half the time the GPU idles inside the "
    "compute phases or more are what it waits on (copies run below peak, so their real time is longer; a "
    "copy on the compute stream serialises with the kernels); under half, other waits are the larger part",
)
HOST_GAPS = _t(
    "HOST_GAPS",
    0.25,
    unit="share of the interval",
    statistic="gpu_idle_in_compute",
    source="the GPU idle this much of the interval inside the compute phases (their share of the step less NVML's "
    "busy fraction) while the threads that launch its kernels are at a full core: the host holds it back between "
    "kernels (a synchronisation per tensor, .item() or .tolist(), draining the queue; Python between launches), "
    "however busy its SMs are while kernels run (SM activity is a time average: busy 63% at SM 53% is 84% active "
    "while running). An independent probe's trace, 24 .tolist() per forward on an H100 idle 31% of the interval "
    "inside the phases, was read as GPU compute; a compute-bound GPU idles a few percent there",
    caveat="chosen, not measured on a GPU: between those. Copies that explain the idle (COPIES_EXPLAIN_IDLE) leave "
    "the GPU to the SMs' reading. NVML's busy fraction is averaged over the window, the phases over its last "
    "steps: time outside the steps (a checkpoint's save) counts as idle",
)
JOB_MEMORY_SHARE = _t(
    "JOB_MEMORY_SHARE",
    0.5,
    unit="share of the host memory in use",
    statistic="job_memory_share",
    source="the job's processes (ranks and loader workers, resident) holding at most this share of the host's memory "
    "in use while it is short: other processes hold most of it, which the job's own savings do not free (an "
    "independent probe's trace: a job at 56 GB of a 251 GB host 97% used, its page-cached dataset evicted by "
    "another job)",
    caveat="chosen, not measured: shared memory and the page cache the job's own reads fill are not counted as its",
)
CO_TENANT_BYTES = _t(
    "CO_TENANT_BYTES",
    1e9,
    unit="bytes of GPU memory",
    statistic="co_tenant_bytes",
    source="a process other than the job's ranks on its GPU (NVML's process list) holding this much or more is "
    "another tenant whose kernels are time-sliced with the job's; a bare CUDA context with cuBLAS's workspace "
    "holds a few hundred MB (a DataLoader worker or a compile subprocess of the job's that touched CUDA)",
    caveat="chosen, not measured on a GPU: an idle notebook holding gigabytes reads as a tenant too (NVML's "
    "per-process utilisation would tell, not read)",
)
GPU_BUSY_NO_GPM = _t(
    "GPU_BUSY_NO_GPM",
    0.8,
    unit="share of time a kernel runs (NVML utilization)",
    statistic="gpu_busy_fraction",
    source="chosen (DCGM's 0.8): without SM activity (no GPM, no dcgm-exporter) a GPU busy 80% of the time is "
    "judged: memory bandwidth by NVML's memory-busy fraction (NVML_MEMORY_BUSY_HIGH), else undetermined; NVML's busy "
    "reads ~100% for compute-, memory- and launch-bound jobs alike, so it names no compute bottleneck by itself",
)
GPU_NO_KERNELS = _t(
    "GPU_NO_KERNELS",
    0.01,
    unit="NVML busy fraction (largest over the window)",
    statistic="gpu_busy_fraction",
    source="NVML's utilization.gpu counts whole percent of the sample period with a kernel running: 0 on a GPU "
    "that ran none. Where the job's GPUs are unknown (no CUDA UUIDs, no process lists), a GPU under this in "
    "every sample of the window is not the job's where the hook says the job trains on CUDA and as many other "
    "GPUs ran kernels as it has ranks on the node (a one-GPU job on an eight-GPU node)",
    caveat="compared with the window's largest busy fraction; the statistic column's figure is its mean",
)
GPU_NEVER_IDLE = _t(
    "GPU_NEVER_IDLE",
    0.95,
    unit="share of time a kernel runs (NVML utilization)",
    statistic="gpu_busy_fraction",
    source="NVML's utilization.gpu is the share of the sample period during which one or more kernels ran "
    "(nvml.h, nvmlUtilization_t): a GPU at 95% or more never waited for its host, so host-side time overlaps its "
    "work (a thread spinning in cudaStreamSynchronize under CUDA's default spin-wait reads a full core; py-spy "
    "sees a .item() as the loop's own line); 5% leaves room for NVML's sampling granularity",
    caveat="NCCL's kernels count as busy: a GPU waiting in an all-reduce reads busy too (only host-side 'other' "
    "time is read against it)",
)
NVML_MEMORY_BUSY_HIGH = _t(
    "NVML_MEMORY_BUSY_HIGH",
    0.8,
    unit="share of time device memory is read or written (NVML memory utilization)",
    statistic="gpu_memory_busy_fraction",
    source="DCGM guidance: DRAM activity of about 0.8 is the practical maximum (DRAM_PRACTICAL_MAX), applied to "
    "NVML's memory-busy time fraction where nothing measures DRAM activity: memory in use nearly whenever a "
    "kernel runs",
    caveat="a time fraction, not bandwidth; not yet compared with DRAM activity on a GPU (a check for the next GPU "
    "machine)",
)
THROTTLED = _t(
    "THROTTLED",
    0.5,
    unit="share of samples",
    statistic="gpu_throttle_share",
    source="chosen: a clock-throttle reason active in half the window's samples (evidence text, and the measured "
    "fact gpu_throttled for the advice)",
)
CLOCK_THROTTLED = _t(
    "CLOCK_THROTTLED",
    0.9,
    unit="SM clock / its maximum",
    statistic="sm_clock_ratio",
    source="chosen: the SM clock 10% or more below its maximum (evidence text, and the measured fact gpu_throttled "
    "for the advice)",
)
COPY_SM_IDLE = _t(
    "COPY_SM_IDLE",
    0.3,
    unit="SM activity",
    statistic="sm_activity",
    source="KempnerPulse's DCGM classifier: transfer-bound when PCIe or the copy engines are busy while SM activity "
    "is under 30%",
)
PAGEABLE_LINK_MAX = _t(
    "PAGEABLE_LINK_MAX",
    0.5,
    unit="share of the link's peak per direction while copying",
    statistic="pcie_while_copying",
    source="a pageable host-to-device copy stages through the driver's pinned buffer: 20.4 GB/s against 55.5 GB/s "
    "pinned on an H200's PCIe Gen5 x16 link (63 GB/s per direction), 32% of the link's peak "
    "(docs/measurements.md, scripts/gpu_check.py). A job whose link runs at half its peak or more while it "
    "copies is not held to that rate: pinning its memory is not what limits the copies (their volume is)",
    caveat="chosen between the 32% measured pageable and the 88% measured pinned",
)

# --- capacity -----------------------------------------------------------------------------------

CAPACITY_HIGH = _t(
    "CAPACITY_HIGH",
    0.90,
    unit="share of capacity used",
    statistic="memory_used",
    source="PyTorch profiler's TensorBoard plugin: peak memory over 90% of the device -> activation checkpointing "
    "or mixed precision",
)
STORAGE_FULL = _t(
    "STORAGE_FULL",
    0.95,
    unit="share of capacity used",
    statistic="storage_used",
    source="chosen: a file system 95% full risks a failed checkpoint; scored as memory at 90%",
)
SWAP_RATE = _t(
    "SWAP_RATE",
    1e6,
    unit="B/s",
    statistic="swap_bytes_per_second",
    source="chosen: swapping 1 MB/s or more in or out is sustained paging, not a stray page",
)
MEMORY_STALL = _t(
    "MEMORY_STALL",
    0.1,
    unit="share of time",
    statistic="memory_pressure",
    source="chosen: PSI memory 'some' above 10% of the time (tasks stalled on reclaim)",
)

# --- utilization alone (no step phases) ----------------------------------------------------------

GPU_IDLE = _t(
    "GPU_IDLE",
    0.1,
    unit="share of time a kernel runs",
    statistic="gpu_busy_fraction",
    source="SageMaker Debugger's CPU- and I/O-bound rules: GPU utilization under 10%",
)
HOST_CPU_BUSY = _t(
    "HOST_CPU_BUSY",
    0.9,
    unit="share of the host's CPU",
    statistic="host_cpu_utilization",
    source="SageMaker Debugger's CPU-bottleneck rule: CPU utilization over 90% while the GPU is under 10%",
)
IOWAIT_IO_BOUND = _t(
    "IOWAIT_IO_BOUND",
    0.5,
    unit="share of CPU time",
    statistic="iowait",
    source="SageMaker Debugger's I/O-bottleneck rule: iowait over 50% while the GPU is under 10%",
)
IO_WAIT_STRONG = _t(
    "IO_WAIT_STRONG",
    0.5,
    unit="io_wait score (0..1)",
    statistic="io_wait_score",
    source="chosen: the peak-free storage evidence (common.io_wait) at half strength or more",
)

# --- combining findings into a verdict ----------------------------------------------------------

HEADROOM_MAX_SHARE = _t(
    "HEADROOM_MAX_SHARE",
    0.99,
    unit=_SHARE,
    statistic="verdict_stage_share",
    source="a removable stage's share is taken as at most 99% (headroom 100x): a step entirely in it (a job that only "
    "waits for data) would be without bound faster without it. It was the share above which no headroom was given, "
    "and the report said 'no removable stage' against its own evidence ('waiting for the next batch in 100% of 4 "
    "stack samples', where run measured 3.7x on the same job; issue 21 item 10)",
)
ACTIVE = _t(
    "ACTIVE",
    0.5,
    unit="finding score",
    statistic="top_score",
    source="chosen: a finding below half strength is a secondary pressure at most",
)
SECONDARY = _t(
    "SECONDARY",
    0.3,
    unit="finding score",
    statistic="second_score",
    source="chosen: findings at 0.3 or more are listed as secondary pressures",
)
IDLE_UTILIZATION = _t(
    "IDLE_UTILIZATION",
    0.1,
    unit="share of the peak",
    statistic="largest_utilization",
    source="SageMaker Debugger's low-GPU-utilization level: no resource above 10% with no steps is idle",
)

# --- over time: hysteresis, the run's verdict, stragglers ----------------------------------------

HOLD = _t(
    "HOLD",
    2,
    unit="windows",
    statistic="",
    source="a new verdict replaces the current one after this many consecutive windows agree (the pipeline's hold; "
    "VerdictTracker's own default is 3): the stable verdict follows a change of stage within 3 s at 1 Hz, "
    "2.43-3.06 s over 8 runs of scripts/bench_regime_latency.py (docs/diagnosis.md)",
)
PHASE_STACK_SAMPLES = _t(
    "PHASE_STACK_SAMPLES",
    20,
    unit="stack samples",
    statistic="",
    source="attach: stage shares are read over at least 20 stack samples (~10 s at 2 Hz): a share from n samples has "
    "a standard error of sqrt(p(1-p)/n), 0.25 over the 4 samples of 2 ticks at 2 Hz (the verdict flipped 4 times in "
    "30 s after a change of loader workers), 0.11 over 20; on a 30 ms-step job 65 samples at 2 Hz gave shares within "
    "0.1 of the job's own perf_counter timing of each phase",
)
STEP_COVER_SLACK = _t(
    "STEP_COVER_SLACK",
    0.1,
    unit="share of the intervals' time",
    statistic="",
    source="chosen: the window's intervals up to the last step's end may hold this much time outside one rank's "
    "steps (or one step's time, or STEP_REPORT_LAG, whichever is larger) before a longer step is taken to run beside "
    "them (diagnosis/window.py steps_cover_readings): the jitter of a sampling tick against the steps' ends",
)
STEP_REPORT_LAG = _t(
    "STEP_REPORT_LAG",
    1.0,
    unit="s",
    statistic="",
    source="the hook reports its steps every 0.5 s at most, at the first step end after (torch/watch.py "
    "report_every): steps that ended before a tick can arrive in the next one; twice that period, for the tick's "
    "and the report's own jitter (a review's simulation of the default cadence: with one step's slack alone, 35-65% "
    "of a steady job's ticks read as uncovered)",
)
WINDOW_SAMPLES = _t(
    "WINDOW_SAMPLES",
    5,
    unit="samples",
    statistic="",
    source="the pipeline's window: utilization is averaged over the last 5 samples (5 s at 1 Hz), step phases over "
    "the last 2 (diagnosis/window.py PHASE_SAMPLES)",
)
REGIME_RANGE_QUANTILE = _t(
    "REGIME_RANGE_QUANTILE",
    round(1.0 / (WINDOW_SAMPLES + 1), 4),
    unit="quantile of the per-sample shares",
    statistic="",
    source="a phase's share over a regime ranges from this quantile of its samples' shares to its complement "
    "(diagnosis/held.py): the expected rank of the least and the largest of a window's 5 samples (k/(n+1)), so "
    "that a long regime's range is as wide as one window's, not widened by every outlier sample",
)
TRACKER_HOLD = _t(
    "TRACKER_HOLD",
    3,
    unit="windows",
    statistic="",
    source="VerdictTracker's default hold when built on its own (the pipeline passes HOLD)",
)
JUMP = _t(
    "JUMP",
    0.35,
    unit="confidence",
    statistic="",
    source="chosen: a verdict this much more confident than the current one replaces it at once, without the hold",
)
FLAP_WINDOWS = _t(
    "FLAP_WINDOWS",
    10,
    unit="windows",
    statistic="",
    source="a verdict back from an excursion (A -> B -> A) this many windows ago or less leaves for B again only "
    "when WINDOW_SAMPLES windows in a row agree (a whole window of samples; not HOLD, nor at once by JUMP): a "
    "steady GPU job whose SM activity sat on LOW_SM (50% +- 3% from sample to sample) changed regime 7 times in "
    "45 s without it (tests/test_gpu_blind.py, scenario 11_balanced_unremarkable)",
    caveat="chosen, not measured: 10 s at 1 Hz, twice the sidecar's default window",
)
CHECKPOINT_WRITES = _t(
    "CHECKPOINT_WRITES",
    2.0,
    unit="ratio (disk writes / disk reads)",
    statistic="",
    source="regime label only: disks writing twice what they read (and WRITES or more) are writing a checkpoint "
    "(with no steps) or checkpoints or logs (a change to storage while steps run)",
)
DOMINANT_INTERVALS = _t(
    "DOMINANT_INTERVALS",
    3,
    unit="sampling intervals",
    statistic="dominant_held_intervals",
    source="the run's verdict: a bottleneck beats undetermined stretches only if it held 3 or more intervals "
    "(the hold plus one), so one noisy window is never the run's verdict",
)
INTERVAL_JITTER = _t(
    "INTERVAL_JITTER",
    0.9,
    unit="share of the nominal interval",
    statistic="",
    source="sampling intervals run short by up to 10% on a loaded machine: 3 intervals count from 2.7 nominal ones",
)
DOMINANT_UNDETERMINED_RATIO = _t(
    "DOMINANT_UNDETERMINED_RATIO",
    4,
    unit="undetermined time / the bottleneck's time",
    statistic="undetermined_over_dominant",
    source="one observation: attach on DDP jobs held undetermined 28 s, then cpu_compute/other 5 s at tear-down and "
    "was reported cpu_compute (commit 251f455); a bottleneck must hold at least a quarter of the undetermined "
    "training time",
    caveat="set from one observation",
)
STRAGGLER_MARGIN = _t(
    "STRAGGLER_MARGIN",
    0.10,
    unit="busy (or own work) / the median rank's - 1",
    statistic="straggler_excess",
    source="chosen: compute 10% longer than the median rank's, or it is noise (nvidia-resiliency-ext flags a rank "
    "at a score of 0.7 relative to the best)",
)
STRAGGLER_BUSY_FLOOR = _t(
    "STRAGGLER_BUSY_FLOOR",
    0.05,
    unit="busy / the median rank's - 1",
    statistic="straggler_busy_excess",
    source="the time the others lose to a rank is its busy time's excess (evening out a rank 3% busier gains 3% at "
    "most), and its own work (busy less its run-queue wait, a difference of two figures each about half its busy "
    "time on 4 ranks over 2 cores) is the noisier figure: even 4-rank gloo torchrun jobs read own work up to +9% here "
    "and +13% in a CI run that named the rank (tests/test_ranks_job.py, 2026-12-03); a rank doing 30% more forward "
    "work read busy +4-26% (own +9-28%) in four runs, its windows over the margin busy +6% or more",
    caveat="measured on one 2-core machine",
)
STRAGGLER_MAJORITY = _t(
    "STRAGGLER_MAJORITY",
    0.6,
    unit="share of the intervals judged",
    statistic="straggler_slowest_share",
    source="chosen: the slowest rank in most intervals (TraceML #374/#375: flag a rank only when it recurs)",
)
STRAGGLER_LAST_ARRIVAL = _t(
    "STRAGGLER_LAST_ARRIVAL",
    0.5,
    unit="share of the intervals judged",
    statistic="straggler_last_share",
    source="AMD TraceLens straggler_summary counts how often each rank arrived last; here at least half the intervals",
)
STRAGGLER_MIN_INTERVALS = _t(
    "STRAGGLER_MIN_INTERVALS",
    5,
    unit="intervals",
    statistic="",
    source="chosen: no straggler is judged on fewer than 5 intervals in which two or more ranks reported",
)
STRAGGLER_HOLD = _t(
    "STRAGGLER_HOLD",
    5,
    unit="windows (of the last 7)",
    statistic="",
    source="on the 2-core test machine an evenly loaded rank ran 25-32% slower for ~10 s in 1 of 6 runs (3 windows): "
    "a straggler is named only when found in 5 of the last 7 windows",
)
STRAGGLER_LAST = _t(
    "STRAGGLER_LAST",
    10,
    unit="intervals",
    statistic="",
    source="on a loaded 2-core machine, 5 intervals named a rank of an even job in 5 of 26 windows; 10 in none",
)
STRAGGLER_SAMPLED_LAST = _t(
    "STRAGGLER_SAMPLED_LAST",
    30,
    unit="intervals",
    statistic="",
    source="measured under attach (2 samples of each rank an interval): over 10 intervals even DDP jobs reached z 2.7 "
    "and a rank doing 4x the forward work of a 17 ms step 2.6; over 30, the even jobs 2.4 at most, that rank 3.4 and "
    "one doing 7x rank 0's rows 5.6-7.3 (scripts/eval.py traces, 2026-12-03)",
)
STRAGGLER_SAMPLED_Z = _t(
    "STRAGGLER_SAMPLED_Z",
    3.0,
    unit="standard errors (two-proportion z over the window's stack samples)",
    statistic="",
    source="measured under attach (scripts/eval.py traces, 2026-12-03; windows of STRAGGLER_SAMPLED_LAST intervals): "
    "the largest z of the suite's seven even DDP and FSDP jobs 1.1-2.4 (at 2.0 over 10 intervals rank 1 of "
    "accelerate_ddp was named in 2 of 18 windows); jobs whose rank 1 did 7x rank 0's rows (straggler_uneven) 5.6 "
    "and 7.3; a rank doing 4x the forward work of a 17 ms step (tests/rank_job.py --extra 3) 3.4",
)
STRAGGLER_RUN_SHARE = _t(
    "STRAGGLER_RUN_SHARE",
    0.5,
    unit="share of the windows with several ranks that could name the straggler",
    statistic="",
    source="chosen: the run's verdict is the straggler's when it was named in at least half the windows in which "
    "the ranks reported that judged as many intervals as the first to name it, and made the verdict there; a 20 s "
    "job whose rank 1 did 7x rank 0's rows was named in 8 of 12 (the others held the ranks' wait while it was being "
    "held), an even torchrun job's rank 0 in 8 of 12 without making the verdict (its lag under half the others' "
    "wait); under attach the same 7x job was named from its 14th interval in one run, in 4 of 13 windows, every one "
    "from then on (counted from the first window, 2026-12-04: its advice lost balance_ranks)",
)
STRAGGLER_RUN_MIN_WINDOWS = _t(
    "STRAGGLER_RUN_MIN_WINDOWS",
    3,
    unit="windows",
    statistic="",
    source="measured under attach (scripts/eval.py traces replayed with bottleneckd analyze, 2026-12-04): with the "
    "share counted over the windows that could name a straggler, the even accelerate_ddp job had rank 0 named in "
    "its last window only (1 of 17; 1 of the 1 that judged its 21 intervals), which then took the run's verdict; "
    "straggler_uneven (rank 1 doing 7x rank 0's rows) was named in 4 of 13 and 11 of 16 windows. Below it a rank "
    "named live is not the run's straggler at all (the report carried accelerate_ddp's rank 0 as one): only said",
)
STRAGGLER_WAIT_SHARE = _t(
    "STRAGGLER_WAIT_SHARE",
    0.5,
    unit="lost time / the median rank's wait",
    statistic="",
    source="chosen: the straggler's extra compute accounts for at least half the others' wait: they wait for it, "
    "not for the link",
)
STRAGGLER_CONTENTION = _t(
    "STRAGGLER_CONTENTION",
    0.5,
    unit="share of the straggler's lag",
    statistic="straggler_contention_share",
    source="a rank is slowed from outside the job (not named) when its own extra CPU per step (schedstat), at its "
    "run-queue wait per CPU second, explains less than half of its lag (and STRAGGLER_CONTENTION_RATE holds). "
    "Recorded traces of 4 jobs at load 12-31 on 2 cores (windows in which each was found behind, contended / not): "
    "a rank working between steps under 2 spinners 0/42 (named in 33 windows); 30% more forward work at load 12 "
    "2/11 (named in 3); a rank on a core 3 spinners shared 11/14 in one run (never named) and 7/14 in another "
    "(named in 1 window of 25)",
    caveat="under load 12-31 the signals overlap: the contended rank was named in 1 window of 25 in one of two runs; "
    "measured on 4 recorded jobs",
)
STRAGGLER_CONTENTION_RATE = _t(
    "STRAGGLER_CONTENTION_RATE",
    1.4,
    unit="its run-queue wait per CPU second / the other ranks' median",
    statistic="",
    source="a contended rank waits notably longer per second of its own CPU than its peers: up to 2.2x for a rank on "
    "a core 3 spinners shared, 1.0-1.4x for a straggler doing more work at load 12 (CFS lets ranks that sleep in "
    "collectives wait less per CPU second than one computing through). On the 4 recorded jobs 1.25 missed the 30% "
    "straggler (named in no window), 1.4 named it in 3, 1.6 also named the contended rank in 2 windows",
    caveat="chosen on the 4 recorded jobs, not a wider sweep",
)

# --- outside the diagnosis: the hook's roofline (bottleneckd/torch/roofline.py) ------------------

#: registered here with their values because the daemon side never imports torch; tests/test_thresholds.py
#: checks them against torch/roofline.py's MISSING_FLOPS_PER_BYTE and MISSING_SHARE
ROOFLINE_MISSING_FLOPS_PER_BYTE = _t(
    "ROOFLINE_MISSING_FLOPS_PER_BYTE",
    600.0,
    unit="FLOP per operand byte",
    statistic="",
    source="torch/roofline.py MISSING_FLOPS_PER_BYTE: the most FLOPs per byte an operator with no FLOP formula is "
    "taken to hide, the highest ridge point in the catalog (B200 FP8: 4.5 PFLOP/s over 7.7 TB/s = 584); an "
    "operator more intense than every ridge is compute-bound everywhere",
)
ROOFLINE_MISSING_SHARE = _t(
    "ROOFLINE_MISSING_SHARE",
    0.05,
    unit="FLOPs possibly hidden / FLOPs counted",
    statistic="missing_flops_ratio",
    source="torch/roofline.py MISSING_SHARE: the step's FLOPs are unknown when operators with no FLOP formula could "
    "hide this share of the FLOPs counted (their bytes x ROOFLINE_MISSING_FLOPS_PER_BYTE). Replaces a 1% share of "
    "the bytes, set for one job, which switched the roofline off for attention and upsampling; lstm_lbfgs (the "
    "LSTM kernels 5% of the bytes, ~8 GFLOP against 0.1 MFLOP counted) stays unknown, a TransformerEncoderLayer "
    "step (nothing uncounted) and a small LSTM beside a big MLP (0.4%) are known",
    caveat="a bound, not a count: an uncounted operator is assumed as intense as the highest ridge point",
)
