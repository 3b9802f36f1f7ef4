"""The measured inputs of the what-if models (``advice/predict.py``), taken from one window.

Every figure is what the window measured, or None when it did not (unknown, never zero): the step
time and each phase's share (over the window's recent samples, as the verdict reads them) with the
range of that share across the window's samples, the loader's workers and the cores they and the
rest of the job use, the roofline's FLOP and operand bytes per step with the peaks of the job's
dtype path and of the low-precision path, and, from the stack samples, the share of the "other"
stage spent on lines that save checkpoints, log or evaluate, and in the user's hottest function.
``to_json``/``from_json`` carry them in the report, so the hook can predict a mitigation it
applies with its own parameters (``predict_hook``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from bottleneckd.model.resources import Phase, Resource, Stage
from bottleneckd.model.sample import Sample

if TYPE_CHECKING:
    from bottleneckd.diagnosis.code import CodeProfile
    from bottleneckd.diagnosis.window import WindowStats
    from bottleneckd.peaks.resolve import PeakTable

#: source lines of the "other" stage by what they do (the stack samples' innermost user line): a
#: line that saves a checkpoint, logs, evaluates, or reads a device tensor on the host (a
#: synchronisation on a GPU: ``.item()``, ``.cpu()``, ``.tolist()``, ``.nonzero(``,
#: ``torch.cuda.synchronize``; PyTorch's tuning guide names them; a checkpoint's line that copies
#: to the host is the checkpoint's). Matched on the line's text, so only calls written on the line
#: itself count (a helper called on it counts under its own lines).
LINE_KINDS: dict[str, re.Pattern[str]] = {
    "checkpoint": re.compile(r"torch\.save|\bsave_checkpoint|\bfsync\b|\bdcp\.|\basync_save|\.save\(|save_state_dict"),
    "logging": re.compile(r"\bprint\(|\blog(ger|ging)?\.|\bwandb\.|\bwriter\.add_|\.log\(|\bmlflow\."),
    "evaluation": re.compile(r"\bevaluat|\bvalidat|\.eval\(\)|\bno_grad\(\)|\binference_mode\(\)"),
    "host_sync": re.compile(r"\.item\(\)|\.cpu\(\)|\.tolist\(\)|\bcuda\.synchronize\(|\.nonzero\("),
}
#: the faster math paths the what-if models read: autocast's dtypes, and TF32 for float32 matmuls
LOW_PATHS = {"bfloat16": "bf16 tensor", "float16": "fp16 tensor", "tf32": "tf32 tensor"}


@dataclass(frozen=True)
class Share:
    """A share of the step (0..1) with its range over the window's samples."""

    value: float
    low: float
    high: float


@dataclass(frozen=True)
class StepInputs:
    step: float  # seconds per step
    shares: dict[str, Share]  # phase -> share of the step
    device: str = "cpu"  # the model's device type (cpu, cuda)
    # the loader's figures are one rank's (its DataLoader's num_workers is per rank): the job's
    # worker cores, idle cores and usable cores on this host divided among its ranks here
    loader_workers: float | None = None  # one rank's loader worker processes
    worker_cores: float | None = None  # cores one rank's loader workers use
    main_cores: float | None = None  # the training thread, 0..1 of a core
    #: the training thread and the busiest worker running or waiting to run (0..1): what they ask of
    #: the CPU, which on a shared machine says more than what they got
    main_demand: float | None = None
    worker_demand: float | None = None
    #: cores free for more work: neither used nor wanted by the job's threads (usable - busy -
    #: waiting), and not busy with other processes (the host's idle share of its cores)
    idle_cores: float | None = None
    #: cores the job may use (affinity, quota; else the host's): with idle_cores, how crowded they are
    cores: float | None = None
    #: the job on this host (its ranks and loader workers, per rank as above): cores it ran on, cores'
    #: worth of its threads runnable but waiting for a CPU, and cores busy outside the job (other
    #: processes); outside_cores only where the job's threads wait behind them (rules/cpu_state.py
    #: ``waits_behind_others``), else None
    busy_cores: float | None = None
    waiting_cores: float | None = None
    outside_cores: float | None = None
    #: the busiest of those processes, "name[pid] at N.NN" (cores on the host, not per rank;
    #: rules/cpu_state.py ``outside_named``)
    outside_processes: tuple[str, ...] = ()
    #: the busiest single loader worker's CPU (cores, 0..1): with worker_demand, its run-queue wait
    worker_max_cores: float | None = None
    flops_per_step: float | None = None
    bytes_per_step: float | None = None  # operand bytes per step
    compute_seconds: float | None = None  # seconds per step of the phases the roofline counted
    peak_flops: float | None = None  # of the job's dtype path
    peak_flops_low: dict[str, float] = field(default_factory=dict)  # autocast dtype -> its path's peak
    peak_bandwidth: float | None = None  # memory bandwidth peak, B/s
    #: shares of the "other" stage's stack samples: on checkpoint/logging/evaluation lines, and in
    #: the user's hottest function (with its Wilson interval), and how many samples
    other_lines: dict[str, Share] = field(default_factory=dict)
    other_samples: int = 0
    hottest: str = ""  # that function, as "function (file:line)"
    #: the all-reduce's part overlapped with backward that still costs the step, as a share of it
    #: (gloo on a CPU job whose cores are full reduces on the cores backward needs: rules/comm_cost.py);
    #: 0.0 where the overlap is free, None where the DDP comm hook did not time the communication
    comm_overlap_cost: float | None = None
    #: the gradient all-reduce's exposed part as a share of the step where DDP's comm hook timed it
    #: and the rest of the communication phase, other collectives, leads (rules/communication.py
    #: ``other_collectives``); None otherwise (the whole phase is taken as the gradients')
    gradient_comm: float | None = None
    #: parameters sharded across ranks (FSDP): they are gathered at every forward and backward
    sharded: bool = False
    #: share of the data stage's stack samples in random augmentation (the fact data_random_share)
    data_random: float | None = None
    #: the share of the interval the job's GPUs idle inside the compute phases (gpu_one.compute_idle,
    #: the mean over them); None on a CPU job, where unread, or where the phases hold little
    gpu_idle_in_compute: float | None = None
    #: whether their kernels fill them while they run (gpu_one.kernels_fill, all of them); None
    #: where SM activity is not measured
    gpu_kernels_fill: bool | None = None
    #: the rate most of the node's InfiniBand ports run at over the slow link's, where the traffic
    #: runs on a slower port or an Ethernet interface (rules/communication.py slow_link); None otherwise
    link_rate_ratio: float | None = None
    #: the share of the step the job saves with its ranks' work even (the fact
    #: straggler_balance_share: a rank's own extra work the others wait for, diagnosis/straggler.py)
    straggler_balance: float | None = None
    #: the job's busiest PCIe link's share of its peak while the step copies (the fact
    #: pcie_while_copying, rules/transfer.py); None where not measured
    pcie_while_copying: float | None = None

    def share(self, phase: str) -> Share:
        return self.shares.get(phase, Share(0.0, 0.0, 0.0))

    def stage_share(self, phases: Iterable[str]) -> Share:
        ps = [self.share(p) for p in phases]
        return Share(
            min(1.0, sum(s.value for s in ps)), min(1.0, sum(s.low for s in ps)), min(1.0, sum(s.high for s in ps))
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: Mapping[str, Any] | None) -> StepInputs | None:
        """The inputs a report carries; None when it has none or they do not read (unknown)."""
        if not isinstance(d, Mapping):
            return None
        try:
            kw = dict(d)
            kw["shares"] = {k: Share(**v) for k, v in d["shares"].items()}
            kw["other_lines"] = {k: Share(**v) for k, v in d.get("other_lines", {}).items()}
            kw["outside_processes"] = tuple(str(x) for x in d.get("outside_processes", ()))
            return StepInputs(**kw)
        except (KeyError, TypeError, AttributeError):
            return None


#: each phase's lowest and highest share of the step over the samples (per-sample shares)
Ranges = Mapping[str, tuple[float, float]]


@dataclass(frozen=True)
class OtherCode:
    """What the stack samples say of the "other" stage (``other_code``): shares by line kind and in
    the hottest user function, how many samples, and that function."""

    lines: dict[str, Share] = field(default_factory=dict)
    samples: int = 0
    hottest: str = ""


NO_OTHER = OtherCode()


def phase_ranges(samples: Iterable[Sample]) -> dict[str, tuple[float, float]]:
    """Each phase's lowest and highest share over the samples that timed steps (a phase a sample
    did not time is 0 in it)."""
    timed = [s.phases for s in samples if s.phases is not None and s.phases.steps]
    keys = {k for p in timed for k in p.phases}
    out = {}
    for k in keys:
        vals = [p.share(k) or 0.0 for p in timed]
        out[k] = (min(vals), max(vals))
    return out


def step_inputs(
    stats: WindowStats,
    ranges: Ranges,
    peaks: PeakTable,
    facts: Mapping[str, Any],
    other: OtherCode = NO_OTHER,
) -> StepInputs | None:
    """The inputs of a window (or of a regime's sums, diagnosis/held.py), with each phase's share
    ranging over ``ranges`` (``phase_ranges`` of its samples); None when it timed no step (no model
    can run without the step)."""
    from bottleneckd.diagnosis.job_gpus import runs_on_gpu
    from bottleneckd.diagnosis.rules.comm_cost import comm_cost
    from bottleneckd.diagnosis.rules.communication import exposed_outside_phase, other_collectives, slow_link
    from bottleneckd.diagnosis.rules.cpu_state import cpu_state, loader_workers
    from bottleneckd.diagnosis.rules.stack_comm import stack_comm
    from bottleneckd.peaks.select import PATHS, compute_peak

    ph = stats.phases
    if ph is None or not ph.steps or ph.wall_seconds <= 0:
        return None
    shares = {}
    for k in ph.phases:
        v = ph.share(k) or 0.0
        lo, hi = ranges.get(k, (v, v))
        shares[k] = Share(v, min(lo, v), max(hi, v))
    sc = stack_comm(stats)
    if sc is not None and sc.waiting > 0.0:
        shares = _waiting_is_communication(shares, sc.waiting)
    outside = exposed_outside_phase(stats) if sc is None else None  # the hook's exposed waits left in forward/backward
    left = 0.0 if outside is None else outside - shares.get(Phase.COMMUNICATION, Share(0, 0, 0)).value
    if left > 0.0:
        shares = _waiting_is_communication(shares, left)
    cpu = cpu_state(stats)
    lag = _share(facts.get("straggler_data_lag_share"))
    if lag is not None:
        shares = _straggler_waits_for_data(shares, lag, facts.get("world_size"))
    idle = None if cpu.busy is None else max(0.0, cpu.cores - cpu.busy - (cpu.waiting or 0.0))
    host_cores = stats.get(Resource.CPU_COMPUTE, "host", "cores")
    if idle is not None and cpu.host is not None and host_cores:
        idle = min(idle, max(0.0, host_cores * (1.0 - cpu.host)))  # other processes hold the rest
    # attach has no device fact: a job seen on the node's GPUs trains on one
    device = str(facts.get("device") or ("cuda" if runs_on_gpu(stats, peaks) else "cpu"))
    flops, nbytes, achieved = (
        facts.get("flops_per_step"),
        facts.get("operand_bytes_per_step"),
        facts.get("achieved_flops"),
    )
    compute_s = flops / achieved if flops and achieved else None
    peak: float | None = None
    bw: float | None = None
    low: dict[str, float] = {}
    if device == "cuda":
        gpu = stats.busiest(Resource.GPU_COMPUTE)
        dev = gpu[0] if gpu else next((p.device for p in peaks.for_resource(Resource.GPU_COMPUTE)), "")
        peak = compute_peak(peaks, dev, facts).value
        for dtype, path in LOW_PATHS.items():
            found = [p.value for m in PATHS[path] if (p := peaks.get(Resource.GPU_COMPUTE, dev, m)) and p.value]
            if found and found[0]:
                low[dtype] = found[0]
        bw = peaks.value(Resource.GPU_MEMORY_BANDWIDTH, dev)
    else:
        peak, bw = peaks.value(Resource.CPU_COMPUTE, "cpu"), peaks.value(Resource.CPU_MEMORY_BANDWIDTH, "host")
    comm = comm_cost(stats)
    overlap = comm.overlapped_share if comm is not None else (sc.overlapped if sc is not None else None)
    here = _ranks_here(stats, facts)
    slow = slow_link(stats)
    collectives = other_collectives(stats)
    counted = cpu.n_workers if cpu.busy is not None or cpu.n_workers else None
    return StepInputs(
        step=ph.wall_seconds / ph.steps,
        shares=shares,
        device=device,
        loader_workers=loader_workers(None if counted is None else counted / here, facts),
        # the straggler's loader is the one the job waits on: its workers run as the busiest one
        worker_cores=_per(cpu.workers, here)
        if lag is None or cpu.worker_max is None or not counted
        else max(_per(cpu.workers, here) or 0.0, cpu.worker_max * counted / here),
        main_cores=cpu.main,
        main_demand=None if cpu.main is None else max(cpu.main, cpu.main_demand or 0.0),
        worker_demand=None if cpu.worker_max is None else cpu.worker_hot,
        idle_cores=_per(idle, here),
        cores=_per(cpu.cores, here),
        busy_cores=_per(cpu.busy, here),
        waiting_cores=_per(cpu.waiting, here),
        outside_cores=_per(cpu.outside, here) if cpu.waits_behind_others else None,
        outside_processes=cpu.outside_said,
        worker_max_cores=cpu.worker_max,
        flops_per_step=flops,
        bytes_per_step=nbytes,
        compute_seconds=compute_s,
        peak_flops=peak,
        peak_flops_low=low,
        peak_bandwidth=bw,
        other_lines=other.lines,
        other_samples=other.samples,
        hottest=other.hottest,
        comm_overlap_cost=overlap,
        gradient_comm=None if collectives is None else max(0.0, (ph.share(Phase.COMMUNICATION) or 0.0) - collectives),
        sharded=bool(facts.get("fsdp")),
        data_random=_share(facts.get("data_random_share")),
        **(_gpu_gaps(stats, peaks) if device == "cuda" else {}),
        link_rate_ratio=None if slow is None else slow.usual / slow.rate,
        straggler_balance=_share(facts.get("straggler_balance_share")),
        pcie_while_copying=_share(facts.get("pcie_while_copying")),
    )


def _gpu_gaps(stats: WindowStats, peaks: PeakTable) -> dict[str, Any]:
    """``gpu_idle_in_compute`` and ``gpu_kernels_fill`` over the job's GPUs (those that read them)."""
    from bottleneckd.diagnosis.job_gpus import window_job_gpus
    from bottleneckd.diagnosis.rules.gpu_one import compute_idle, kernels_fill

    idle: list[float] = []
    fill: list[bool | None] = []
    for dev in window_job_gpus(stats, peaks).devices:
        busy = stats.get(Resource.GPU_COMPUTE, dev, "busy_fraction")
        found = compute_idle(stats, stats.over_phases(Resource.GPU_COMPUTE, dev, "busy_fraction"))
        if found is not None:
            idle.append(found[1])
            fill.append(kernels_fill(stats.get(Resource.GPU_COMPUTE, dev, "sm_activity"), busy))
    if not idle:
        return {}
    return {
        "gpu_idle_in_compute": sum(idle) / len(idle),
        "gpu_kernels_fill": None if None in fill else all(fill),
    }


def _straggler_waits_for_data(shares: dict[str, Share], lag: float, world: Any) -> dict[str, Share]:
    """A straggler's wait for its next batch that the other ranks wait for in their collectives
    (``straggler_data_lag_share``, ``lag`` of the step beyond the median rank's wait): the job's
    merged phases hold it as the mean over the ranks (a 145 ms wait on one of 8 ranks read as a data
    wait of 6% of the step, and more loader workers were predicted x1.06). Taken as the step's data
    wait, from the communication in which the others waited: Amdahl over the data stage is then
    the straggler's loader, the wait the whole job sits in."""
    n = world if isinstance(world, int) and not isinstance(world, bool) and world > 1 else None
    move = lag * (1.0 - 1.0 / n) if n else lag
    comm = shares.get(Phase.COMMUNICATION, Share(0.0, 0.0, 0.0))
    move = min(move, comm.value)
    if move <= 0.0:
        return shares
    data = shares.get(Phase.DATA_WAIT, Share(0.0, 0.0, 0.0))
    out = dict(shares)
    out[Phase.DATA_WAIT] = Share(data.value + move, data.low + move, min(1.0, data.high + move))
    out[Phase.COMMUNICATION] = Share(comm.value - move, max(0.0, comm.low - move), max(0.0, comm.high - move))
    return out


def _waiting_is_communication(shares: dict[str, Share], waiting: float) -> dict[str, Share]:
    """Attach on a DDP job: the stack samples in which the main thread waited inside forward or
    backward (the reducer waiting for its all-reduce, rules/stack_comm.py) are the step's exposed
    communication, as the hook's comm timing makes them; taken from forward and backward in
    proportion to their shares. So is the hook's exposed communication that the phases left in
    forward and backward (rules/communication.py ``exposed_outside_phase``)."""
    compute = (Phase.FORWARD, Phase.BACKWARD)
    total = sum(shares[k].value for k in compute if k in shares)
    if total <= 0.0:
        return shares
    keep = max(0.0, 1.0 - waiting / total)
    out = {k: (Share(v.value * keep, v.low * keep, v.high * keep) if k in compute else v) for k, v in shares.items()}
    c = out.get(Phase.COMMUNICATION, Share(0.0, 0.0, 0.0))
    out[Phase.COMMUNICATION] = Share(c.value + waiting, c.low + waiting, c.high + waiting)
    return out


def _ranks_here(stats: WindowStats, facts: Mapping[str, Any]) -> int:
    """The job's ranks on this host: the rank processes the CPU sampler found (whose workers' cores
    it sums), else the job's local world size (the hook's fact), else one. A probe found 8 ranks'
    worker cores read against one rank's num_workers (x1.72 predicted for 12 -> 136 workers)."""
    sampled = stats.get(Resource.CPU_COMPUTE, "job", "ranks")
    if sampled is not None:
        return max(1, int(round(sampled)))
    n = facts.get("local_world_size")
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 1 else 1


def _per(v: float | None, n: int) -> float | None:
    return None if v is None else v / n


def _share(v: Any) -> float | None:
    """A share fact (0..1), or None when absent or not one."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0 else None


def other_code(code: CodeProfile) -> OtherCode:
    """Shares of the "other" stage's stack samples by line kind and in the hottest user function."""
    from bottleneckd.diagnosis.code import MIN_STAGE_SAMPLES, wilson

    sites = code.stage_sites(Stage.OTHER)
    n = sum(sites.values())
    if n < MIN_STAGE_SAMPLES:
        return OtherCode(samples=n)
    out: dict[str, Share] = {}
    ckpt = LINE_KINDS["checkpoint"]
    for kind, pat in LINE_KINDS.items():
        k = sum(
            c
            for s, c in sites.items()
            if s is not None and pat.search(s.text) and not (kind == "host_sync" and ckpt.search(s.text))
        )
        out[kind] = Share(k / n, *wilson(k, n))
    a = code.attribute(Stage.OTHER)
    if a is not None and a.sites:
        top = a.sites[0]
        out["hottest_function"] = Share(top.share, top.low, top.high)
        return OtherCode(out, n, top.where)
    return OtherCode(out, n)
