"""Facts measured from a window and its verdict, for the advice's conditions (advice/fit.py):
what the job's own figures say about whether a mitigation can help, not what the hook declared.

- ``job_idle_cores``: the cores the job may use that its processes neither ran on nor waited for
  over the window (usable cores - busy cores - run-queue wait). More loader workers only help
  while idle cores remain (the knowledge base's caveat for them); a job whose two workers fill
  both cores has none left.
- ``cpu_contended_from_outside``: the verdict is a rank's CPU that other processes take, which the
  job's ranks wait for (diagnosis/straggler.py), or the job's threads wait on a run queue while
  processes outside the job hold cores (rules/cpu_state.py ``waits_behind_others``, what the
  evidence says as "other processes share these cores"): the first thing is to give it its cores
  back, which changes nothing in the training.
- ``straggler_limits_the_step`` and ``straggler_balance_share``: the job's ranks wait in their
  collectives for one rank's own extra work (diagnosis/straggler.py names it and the verdict is
  what it was doing), and the share of the step they would save with the work even among them (the
  straggler's busy time less the ranks' mean, over the median rank's step): a larger shard, longer
  sequences, work only rank 0 does. Evening it out keeps the global batch, and comes before
  making every rank do less.
- ``straggler_data_lag_share``: where that straggler's own work is waiting for its next batch, its
  wait beyond the median rank's over the median rank's step: the loader's figures (diagnosis/
  step_inputs.py) are then the straggler's, since the job waits on its loader, not on the ranks' mean.
- ``device``: ``cuda`` where no hook said the model's device and the job's GPUs are known (NVML lists
  its processes on them: attach), not merely not ruled out: the advice for GPUs (CUDA graphs, TF32)
  fits it.
- ``job_memory_share``: the job's resident memory over the host's memory in use (rules/capacity.py):
  where host memory is short and others hold most of it, the job's own savings do not free it.
- ``serial_loader_thread``: a thread of a rank other than its main and autograd threads at a full
  core while the main thread and the loader workers run less (rules/cpu_state.py
  ``side_thread_at_full_core``: the pin-memory thread), or the main thread running through the
  wait for its workers' batches (rules/input.py ``main_thread_works_in_the_wait``: a collate in the
  training process): more workers do not add to it.
- ``idle_wait_stage``: the stage (data or other) in which the step spends its time waiting with
  nothing busy: the diagnosis ruled every resource out there (no thread near a full core, no
  storage, network or I/O wait), so the step waits on latency (a sleep, a remote service, a lock).
  Concurrency (more workers, prefetching, asynchronous work) hides latency; it needs no idle core.
- ``flops_per_parameter``: the counted step's FLOPs over the model's parameters, about six times
  the rows each weight serves a step. Low, a CPU's bf16 autocast loses: it casts every weight at
  each forward (the knowledge base's condition on mixed precision, with the measurements).
- ``other_collectives_share``: the communication phase's share of the step less the gradients'
  all-reduce, where DDP's comm hook timed it apart and the rest leads (rules/communication.py
  ``other_collectives``): blocking collectives of the model's own (expert parallelism's
  all-to-all, tensor parallelism's all-gathers), which gradient mitigations do not reduce and
  keeping those groups within a node does.
- ``several_hosts``: the job's ranks are on more than one host (``spans_hosts``): only then can
  its collectives be kept within a node.
- ``degraded_link``: the busiest InfiniBand/RoCE port when its rate is below the one most of the
  node's ports run at, or an Ethernet interface carrying the traffic beside idle RDMA ports
  (rules/communication.py ``slow_link``): fixing the link comes before any change to the training.
- ``gpu_co_tenants``: processes other than the job's on its GPU that has most (NVML's process
  lists, by PID): their kernels are time-sliced with the job's, which gets a share of every
  resource of that GPU. Unknown where the job's PIDs or the lists are not known.
- ``gpu_memory_fragmented``: allocation retries while the tensors' peak stays under CAPACITY_HIGH
  and the allocator holds more (rules/gpu_memory.py ``fragmented``, the hook's allocator figures):
  the memory is fragmented, not short.
- ``gpu_roofline_share``: the job's first GPU's achieved FLOP/s over the peak of the rank's own
  path, or bytes/s over its memory bandwidth, whichever is the nearer (the hook's roofline). Far
  below both (a few percent) while its SMs read active, the kernels are too small to fill the GPU:
  more rows per kernel (a larger per-GPU batch) use it; a lower-precision path does not.
- ``pcie_while_copying``: the job's busiest PCIe link's share of its peak while the step copies
  (rules/transfer.py ``link_while_copying``). At PAGEABLE_LINK_MAX or more the copies are not held
  to a pageable copy's rate (a third of a pinned one's): pinning the host memory does not speed
  them up.
- ``parameter_memory_share``: one copy of the model's parameters per rank on the node over the
  job's resident memory. At 5% or less (the knowledge base's condition on meta-device
  initialisation), avoiding materialised model copies frees little of a host at capacity: the
  memory is the job's data, not its model.
- ``gpu_throttled``: the clock-event reasons that hold a job's GPU's SM clock down (under
  CLOCK_THROTTLED of its maximum with the reason active in THROTTLED of the samples): thermal
  slowdowns, hardware slowdown, the power brake. Not the software power cap: GPU Boost runs a busy
  GPU against its power limit as a matter of course (and an L4's base clock is 39% of its boost).
"""

from __future__ import annotations

from bottleneckd.diagnosis.job_gpus import co_tenants, job_listed, ranks_on_node, runs_on_gpu, window_job_gpus
from bottleneckd.diagnosis.rules.capacity import job_memory_share
from bottleneckd.diagnosis.rules.common import other_share
from bottleneckd.diagnosis.rules.communication import other_collectives, slow_link, spans_hosts
from bottleneckd.diagnosis.rules.cpu_state import cpu_state
from bottleneckd.diagnosis.rules.gpu_memory import fragmented
from bottleneckd.diagnosis.rules.input import main_thread_works_in_the_wait
from bottleneckd.diagnosis.rules.transfer import link_while_copying
from bottleneckd.diagnosis.thresholds import CLOCK_THROTTLED, INPUT_HIGH, OTHER_HIGH, THROTTLED
from bottleneckd.diagnosis.verdict import Verdict
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.facts import Facts
from bottleneckd.model.resources import UNDETERMINED, Phase, Resource, Stage
from bottleneckd.peaks.resolve import PeakTable

#: clock-event reasons that are a fault to fix (nvml.h: thermal slowdowns, HW slowdown, the power
#: brake), as the GPU sampler labels them; the software power cap is GPU Boost's normal limit
FAULT_REASONS = ("hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake")


def measured_facts(w: WindowStats, verdict: Verdict, peaks: PeakTable | None = None) -> Facts:
    """The facts this window measures (those it cannot are left out: unknown, not zero)."""
    out: dict[str, object] = {}
    cpu = cpu_state(w)
    if verdict.figures.get("contended_rank_lag_seconds") or cpu.waits_behind_others:
        out["cpu_contended_from_outside"] = True
    elif cpu.outside is not None and cpu.waiting is not None:  # measured, and not so
        out["cpu_contended_from_outside"] = False
    if peaks is not None and "device" not in (w.phases.facts if w.phases is not None else {}):
        seen = window_job_gpus(w, peaks)
        if seen.known and seen.devices:  # attach has no hook to say so: NVML lists the job's processes on them
            out["device"] = "cuda"
    balance = _straggler_balance(verdict)
    if balance is not None:
        out["straggler_limits_the_step"] = True
        out["straggler_balance_share"] = round(balance, 4)
    lag = _straggler_data_lag(verdict)
    if lag is not None:
        out["straggler_data_lag_share"] = round(lag, 4)
    held = job_memory_share(w)
    if held is not None:
        out["job_memory_share"] = round(held, 4)
    data = w.phases.share(Phase.DATA_WAIT) if w.phases is not None else None
    if cpu.side_thread_at_full_core or (data is not None and main_thread_works_in_the_wait(w, cpu, data) is not None):
        out["serial_loader_thread"] = True
    if cpu.busy is not None:
        out["job_idle_cores"] = round(max(0.0, cpu.cores - cpu.busy - (cpu.waiting or 0.0)), 3)
    if cpu.waiting is not None and cpu.cores > 0 and out.get("cpu_contended_from_outside") is False:
        out["job_threads_waiting_share"] = round(cpu.waiting / cpu.cores, 4)
    stage = idle_wait_stage(w, verdict)
    if stage is not None:
        out["idle_wait_stage"] = stage
    per_param = flops_per_parameter(w)
    if per_param is not None:
        out["flops_per_parameter"] = round(per_param, 1)
    other = other_collectives(w)
    if other is not None:
        out["other_collectives_share"] = round(other, 4)
    world = w.phases.facts.get("world_size") if w.phases is not None else None
    if (isinstance(world, int) and world > 1) or len(w.topology) > 1:  # a distributed job's
        out["several_hosts"] = spans_hosts(w)
    slow = slow_link(w)
    if slow is not None:
        out["degraded_link"] = slow.port
    tenants = gpu_co_tenants(w, peaks)
    if tenants is not None:
        out["gpu_co_tenants"] = tenants
    frag = fragmented(w.phases.facts) if w.phases is not None else None
    if frag is not None:
        out["gpu_memory_fragmented"] = frag
    roof = gpu_roofline_share(w, peaks)
    if roof is not None:
        out["gpu_roofline_share"] = round(roof, 4)
    throttled = gpu_throttled(w, peaks)
    if throttled:
        out["gpu_throttled"] = throttled
    params = parameter_memory_share(w)
    if params is not None:
        out["parameter_memory_share"] = round(params, 4)
    copying = link_while_copying(w, peaks) if runs_on_gpu(w, peaks) else None
    if copying is not None:
        out["pcie_while_copying"] = round(copying[1], 4)
    return Facts(out)


def _straggler_balance(verdict: Verdict) -> float | None:
    """The straggler's ``balance_share`` where the verdict is its own work the ranks wait for (a
    rank or a group of ranks named, not a node: ``limits_the_step``), else None."""
    s = verdict.straggler or {}
    share = s.get("balance_share")
    if not s.get("limits_the_step") or s.get("kind") == "node" or not isinstance(share, (int, float)):
        return None
    return float(share)


def _straggler_data_lag(verdict: Verdict) -> float | None:
    """The straggler's data wait beyond the median rank's, over the median rank's step, where the
    verdict is that wait (a rank named, ``limits_the_step``, waiting for its next batch), else None."""
    s = verdict.straggler or {}
    lag, step = s.get("doing_excess_seconds"), s.get("median_step_seconds")
    if not s.get("limits_the_step") or s.get("kind") == "node" or s.get("doing") != Phase.DATA_WAIT:
        return None
    if not isinstance(lag, (int, float)) or not isinstance(step, (int, float)) or step <= 0 or lag <= 0:
        return None
    return min(1.0, float(lag) / float(step))


#: bytes per parameter by the hook's param_dtype
_DTYPE_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2, "float8": 1}


def parameter_memory_share(w: WindowStats) -> float | None:
    """One copy of the model's parameters per rank on the node over the job's resident memory, or
    None (parameters, their dtype or the job's memory not known)."""
    f = w.phases.facts if w.phases is not None else {}
    params, nbytes = f.get("parameters"), _DTYPE_BYTES.get(str(f.get("param_dtype") or ""))
    rss = w.get(Resource.CPU_MEMORY, "job", "resident_bytes")
    copies = ranks_on_node(f)
    if not isinstance(params, (int, float)) or isinstance(params, bool) or params <= 0 or nbytes is None or not rss:
        return None
    return min(1.0, float(params) * nbytes * copies / rss)


def flops_per_parameter(w: WindowStats) -> float | None:
    """FLOP per parameter per step from the hook's counted step, or None (not counted, no model)."""
    f = w.phases.facts if w.phases is not None else {}
    flops, params = f.get("flops_per_step"), f.get("parameters")
    if not isinstance(flops, (int, float)) or not isinstance(params, (int, float)) or flops <= 0 or params <= 0:
        return None
    return float(flops) / float(params)


def gpu_co_tenants(w: WindowStats, peaks: PeakTable | None) -> int | None:
    """Other processes on the job's GPU that has the most, or None where no GPU's list says."""
    if not runs_on_gpu(w, peaks):
        return None
    counts = [
        0 if found is None else found[0]
        for dev in window_job_gpus(w, peaks).devices
        if (found := co_tenants(w, dev)) is not None or job_listed(w, dev)
    ]
    return max(counts) if counts else None


def gpu_roofline_share(w: WindowStats, peaks: PeakTable | None) -> float | None:
    """The nearer of achieved FLOP/s and bytes/s to its peak on the job's first GPU, or None (no
    roofline from the hook, no peak for the GPU, a CPU job)."""
    from bottleneckd.peaks.select import compute_peak

    f = w.phases.facts if w.phases is not None else {}
    flops, byts = f.get("achieved_flops"), f.get("achieved_bytes_per_second")
    if peaks is None or not isinstance(flops, (int, float)) or not isinstance(byts, (int, float)):
        return None
    if not runs_on_gpu(w, peaks):
        return None
    devices = window_job_gpus(w, peaks).devices
    if not devices:
        return None
    peak_c = compute_peak(peaks, devices[0], f).value
    peak_b = peaks.value(Resource.GPU_MEMORY_BANDWIDTH, devices[0])
    if not peak_c or not peak_b:
        return None
    return max(float(flops) / peak_c, float(byts) / peak_b)


def gpu_throttled(w: WindowStats, peaks: PeakTable | None) -> tuple[str, ...]:
    """The fault reasons holding any of the job's GPUs' clocks down over the window."""
    if not runs_on_gpu(w, peaks):
        return ()
    found: set[str] = set()
    for dev in window_job_gpus(w, peaks).devices:
        clock = w.get(Resource.GPU_COMPUTE, dev, "sm_clock_ratio")
        if clock is None or clock >= CLOCK_THROTTLED:
            continue
        found |= {r for r in FAULT_REASONS if (w.get(Resource.GPU_COMPUTE, dev, f"throttle:{r}") or 0.0) >= THROTTLED}
    return tuple(sorted(found))


def idle_wait_stage(w: WindowStats, verdict: Verdict) -> str | None:
    """The stage the step waits in with nothing busy, or None."""
    if verdict.resource != UNDETERMINED or w.phases is None or not w.phases.steps:
        return None
    if verdict.stage == Stage.DATA:
        waiting = (w.phases.share(Phase.DATA_WAIT) or 0.0) + (w.phases.share(Phase.FILE_IO) or 0.0)
        return Stage.DATA if waiting >= INPUT_HIGH else None
    if verdict.stage == Stage.OTHER:
        outside = other_share(w)
        return Stage.OTHER if outside is not None and outside >= OTHER_HIGH else None
    return None
