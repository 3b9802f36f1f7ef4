"""Facts: what the hook and the machine know about the job, typed, immutable and bounded.

Every fact has a declared type and a declared producer (the module that sets it; a contract test
checks that each producer really does). The facts a hook-applied mitigation owns are declared
once, under ``hooks`` in data/mitigations.json (model/hooks.py), and added to the table here.

The hook sends its *whole* current fact state in every report, and the receiver replaces a rank's
facts with it: a fact the hook unset (a mitigation reverted) is gone at the next report, never
merged forever.

A value of the wrong type, an unknown name, a non-finite or negative number or an over-long
string is dropped and counted (``Facts.rejected``), never raised: one bad fact must not stop the
diagnosis. Only declared names are kept and strings are capped, so a fact set is bounded
(a few KB at most) however many messages arrive.

Read API: ``facts.get("x")`` (``None`` when unset), ``"x" in facts``, ``facts["x"]``; ``Facts`` is
an immutable ``Mapping``. Change by copy: ``facts.set(x=1)``, ``facts.unset("x")``. On the hook
side ``FactBoard`` is the mutable holder with the same validation (``board["x"] = v``,
``board.pop("x")``, ``board.freeze()``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import ItemsView, Iterator, Mapping
from dataclasses import dataclass, replace
from importlib import resources as importlib_resources
from typing import TYPE_CHECKING, Any

from bottleneckd.model.errors import InputError
from bottleneckd.model.hooks import HOOKS, Hook
from bottleneckd.model.resources import Stage, StrEnum

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

#: a fact's value: "strs" facts are tuples of short strings
FactValue = bool | int | float | str | tuple[str, ...]
log = logging.getLogger(__name__)

MAX_STR = 64  # characters in a string fact
MAX_ITEMS = 32  # strings in a list fact
MAX_INT = 2**53  # larger integers lose meaning in JSON consumers anyway


@dataclass(frozen=True)
class FactSpec:
    name: str
    type: str  # "bool" | "int" | "float" | "str" | "strs" (a tuple of short strings)
    #: modules that set it: Producer members, or a hook's module (checked by tests/test_facts.py)
    producers: tuple[str, ...]
    doc: str
    #: the allowed strings, where the set is closed
    choices: tuple[str, ...] = ()


class Producer(StrEnum):
    """The modules that set facts, by import path: a fact's ``producers`` name members of this closed
    set (a misspelt one is an AttributeError at import; a module moved or renamed without updating
    it is an ImportError here, at import). A hook-applied mitigation's module is its hook's
    (``Hook.module``, model/hooks.py), not listed here."""

    WATCH = "bottleneckd.torch.watch"
    PROBE = "bottleneckd.torch.probe"
    COLLECTIVES = "bottleneckd.torch.collectives"
    DDP_COMM = "bottleneckd.torch.ddp_comm"
    CUDA_CLOCK = "bottleneckd.torch.cuda_clock"
    CUDA_MEMORY = "bottleneckd.torch.cuda_memory"
    CUDA_GRAPHS = "bottleneckd.torch.cuda_graphs"
    COUNTING = "bottleneckd.torch.counting"
    INTEGRATIONS = "bottleneckd.integrations._common"
    STACK_FRAMES = "bottleneckd.samplers.stack_frames"
    STACKS = "bottleneckd.samplers.stacks"
    FIT = "bottleneckd.advice.fit"
    CAPABILITIES = "bottleneckd.peaks.capabilities"
    MEASURED = "bottleneckd.diagnosis.measured"
    CODE_PROFILE = "bottleneckd.diagnosis.pipeline"  # facts of the stack samples over the run (diagnosis/code.py)

    @property
    def source(self) -> Traversable:
        """The module's source file in the installed package (found without importing it: the
        daemon never imports torch)."""
        package, *path = self.value.split(".")
        # one part at a time: Traversable.joinpath takes a single name before Python 3.11
        found = importlib_resources.files(package)
        for part in path[:-1]:
            found = found.joinpath(part)
        return found.joinpath(path[-1] + ".py")


def _check_producers() -> None:
    missing = [p.value for p in Producer if not p.source.is_file()]
    if missing:
        raise ImportError(f"model/facts.py: Producer names modules that do not exist: {', '.join(missing)}")


_check_producers()


def _spec(
    name: str, type_: str, producers: Producer | tuple[Producer, ...], doc: str, choices: tuple[str, ...] = ()
) -> FactSpec:
    return FactSpec(name, type_, producers if isinstance(producers, tuple) else (producers,), doc, choices)


_W, _C, _P, _N = Producer.WATCH, Producer.COLLECTIVES, Producer.PROBE, Producer.COUNTING
_D = Producer.DDP_COMM
_DC = (Producer.DDP_COMM, Producer.CUDA_CLOCK)  # DDP's comm hook; side-stream collectives (FSDP) on CUDA
_CM = Producer.CUDA_MEMORY
FACTS: dict[str, FactSpec] = {
    s.name: s
    for s in (
        # the model and the loop (hook)
        _spec(
            "device",
            "str",
            (_W, Producer.MEASURED),
            "the model's device type: cpu, cuda, ... (the hook's; without it, cuda where the job is seen on the "
            "node's GPUs: attach)",
        ),
        _spec("pid", "int", _W, "the training process"),
        _spec("epoch", "int", _W, "epochs completed"),
        _spec("parameters", "int", _P, "number of model parameters"),
        _spec("param_dtype", "str", _P, "dtype of most of the model's parameters (float32, bfloat16 ...)"),
        _spec("has_conv", "bool", _P, "the model has a convolution layer"),
        _spec("input_rank", "int", _P, "dimensions of the model's first input (4 for an image batch NCHW)"),
        _spec("allow_tf32", "bool", _P, "torch.backends.cuda.matmul.allow_tf32"),
        _spec("cudnn_allow_tf32", "bool", _P, "torch.backends.cudnn.allow_tf32 (convolutions; on by default)"),
        _spec("intra_op_threads", "int", _P, "torch.get_num_threads(): the training process's intra-op threads"),
        _spec(
            "cuda_uuids",
            "strs",
            _P,
            "UUIDs (GPU-...) of the CUDA devices holding the model's parameters: the job's GPUs, "
            "whatever the PID namespace",
        ),
        _spec("compiled", "bool", _P, "the model is torch.compile'd"),
        _spec(
            "cuda_graphs",
            "str",
            Producer.CUDA_GRAPHS,
            "CUDA graphs replayed: the whole step captured, or graphs within the step (torch.compile "
            "reduce-overhead, graphed callables); either way no per-kernel launch cost on the host",
            ("whole step", "within step"),
        ),
        _spec(
            "ddp",
            "bool",
            (_P, _C, _D, Producer.STACK_FRAMES),
            "DistributedDataParallel, or more than one rank (attach: a DDP frame on a stack)",
        ),
        _spec(
            "fsdp",
            "bool",
            (_P, Producer.STACK_FRAMES),
            "FullyShardedDataParallel (attach: an FSDP frame on a stack)",
        ),
        _spec(
            "sharded",
            "bool",
            (_P, Producer.STACKS),
            "parameters or optimizer state sharded across ranks (FSDP, ZeRO; attach: an FSDP frame on a stack)",
        ),
        _spec(
            "offloading",
            "bool",
            _P,
            "parameters or optimizer state offloaded to the CPU (FSDP CPUOffload, or the optimizer stepping on "
            "host-memory parameters of a GPU model)",
        ),
        _spec(
            "optimizer_impl",
            "str",
            _P,
            "the optimizer's implementation (torch.optim's fused, foreach or for-loop; absent for an optimizer "
            "without those options)",
            ("fused", "foreach", "for-loop"),
        ),
        _spec("world_size", "int", _C, "ranks in the job"),
        _spec("local_world_size", "int", _C, "ranks on this node"),
        # communication inside backward (DDP's buckets through the comm-hook wrapper, ddp_comm.py)
        _spec(
            "ddp_comm_timing",
            "str",
            (_C, _D),
            "how DDP's all-reduce is timed ('comm hook') or why it is not ('off: ...')",
        ),
        _spec("comm_backend", "str", _C, "the process group's backend: gloo, nccl ..."),
        _spec("ddp_buckets", "int", _D, "gradient buckets per step"),
        _spec(
            "comm_seconds_per_step",
            "float",
            _DC,
            "seconds per step some all-reduce (DDP) or side-stream collective (FSDP) was in flight "
            "(overlapped + exposed)",
        ),
        _spec(
            "comm_exposed_seconds_per_step",
            "float",
            _DC,
            "seconds per step the step waited for communication (DDP: after its last gradient; FSDP: "
            "the compute stream's waits)",
        ),
        _spec(
            "comm_overlapped_seconds_per_step", "float", _DC, "seconds per step of communication hidden behind backward"
        ),
        _spec("comm_overlap_ratio", "float", _DC, "share of the communication hidden behind backward"),
        _spec(
            "tokens_per_example",
            "float",
            _W,
            "token ids per example of a batch x sequence integer input, over the last report (tokens/s)",
        ),
        _spec("optimizer_closure", "bool", _W, "the optimizer's step takes a closure (LBFGS ...)"),
        _spec(
            "timed_step_share",
            "float",
            _W,
            "share of the last report's steps whose phases were timed (the rest sampled to keep the "
            "hook within its overhead budget: bottleneckd/torch/sampling.py)",
        ),
        _spec(
            "framework",
            "str",
            Producer.INTEGRATIONS,
            "the training framework whose callback drives the watcher",
            ("lightning", "transformers"),
        ),
        # the data loader (hook)
        _spec("loader_workers", "int", _P, "DataLoader num_workers"),
        _spec("pin_memory", "bool", _P, "DataLoader pin_memory"),
        _spec("persistent_workers", "bool", _P, "DataLoader persistent_workers"),
        _spec("prefetch_factor", "int", _P, "DataLoader prefetch_factor"),
        _spec("batch_size", "int", _P, "DataLoader batch_size"),
        _spec("cores", "int", _P, "CPU cores the training process may run on"),
        _spec("loader_workers_saturate_cores", "bool", _P, "loader workers >= usable cores"),
        # one counted step (hook, roofline)
        _spec("flops_per_step", "float", _N, "FLOP of one step (torch.utils.flop_counter)"),
        _spec("operand_bytes_per_step", "float", _N, "operand bytes of one step"),
        _spec("arithmetic_intensity", "float", _N, "FLOP per operand byte"),
        _spec(
            "weight_byte_share",
            "float",
            _N,
            "share of the step's operand bytes in tensors shaped as a parameter (weights, gradients, their updates)",
        ),
        _spec(
            "flops_unknown",
            "str",
            _N,
            "why the step's FLOPs (and intensity) are unknown: operators with no FLOP formula",
        ),
        _spec(
            "compute_dtype",
            "str",
            _N,
            "dtype of most of the counted step's FLOPs outside FP8 matmuls (measured: autocast included)",
            ("float8", "bfloat16", "float16", "float32", "float64"),
        ),
        _spec("fp8_flop_share", "float", _N, "share of the counted step's FLOPs in FP8 matmuls (aten._scaled_mm)"),
        _spec("conv_flop_share", "float", _N, "share of the counted step's FLOPs in convolutions"),
        _spec("achieved_flops", "float", _N, "FLOP/s over the compute phases"),
        _spec("achieved_bytes_per_second", "float", _N, "operand bytes/s over the compute phases"),
        # the CUDA caching allocator (hook, torch/cuda_memory.py: torch.cuda.memory_stats once per report)
        _spec("cuda_memory_total_bytes", "int", _CM, "the model's GPU's memory (CUDA device properties)"),
        _spec(
            "cuda_memory_reserved_bytes",
            "int",
            _CM,
            "what the caching allocator holds (NVML's 'used' less the context)",
        ),
        _spec("cuda_memory_allocated_bytes", "int", _CM, "what the job's tensors hold at the report"),
        _spec(
            "cuda_memory_peak_allocated_bytes", "int", _CM, "the most the job's tensors have held at once (since start)"
        ),
        _spec("cuda_alloc_retries", "int", _CM, "cudaMalloc calls that failed and were retried after a cache flush"),
        _spec("cuda_alloc_retries_per_step", "float", _CM, "allocation retries per step since the previous report"),
        _spec("cuda_ooms", "int", _CM, "CUDA out-of-memory errors thrown (caught by the job or a batch-size finder)"),
        _spec(
            "cuda_expandable_segments",
            "bool",
            _CM,
            "the allocator's expandable_segments:True is set (PYTORCH_CUDA_ALLOC_CONF or PYTORCH_ALLOC_CONF)",
        ),
        # mitigations in effect (hook; unset on revert); the facts each sets are in data/mitigations.json
        _spec("mitigations", "strs", _W, "hook ids of the mitigations applied and not reverted"),
        _spec(
            "autocast_dtype",
            "str",
            _P,
            "low-precision dtype in effect: autocast at forward time, a framework's setting, FSDP's "
            "MixedPrecision or low-precision parameters",
            ("bfloat16", "float16"),
        ),
        _spec(
            "thread_cpu_seconds",
            "float",
            _P,
            "seconds the training thread has run on a CPU (schedstat): the work it did, whatever the contention",
        ),
        _spec(
            "runqueue_wait_seconds",
            "float",
            _P,
            "seconds the training thread has spent runnable but not running (schedstat): CPU taken by others",
        ),
        # the daemon side
        _spec("cpu_fast_bf16", "bool", Producer.FIT, "the CPU has bf16 instructions (amx_bf16 or avx512_bf16)"),
        _spec("gpu_count", "int", Producer.FIT, "GPUs detected on the machine"),
        _spec(
            "gpu_fp8",
            "bool",
            Producer.CAPABILITIES,
            "a GPU of the node has FP8 tensor cores (an FP8 peak in the catalog or calibrated)",
        ),
        _spec(
            "gpu_throttled",
            "strs",
            Producer.MEASURED,
            "clock-event reasons (thermal, hardware slowdown, power brake) holding the job's GPUs' SM clocks down "
            "over the window",
        ),
        _spec(
            "cpu_contended_from_outside",
            "bool",
            Producer.MEASURED,
            "the job's ranks wait for a rank whose CPU other processes take (diagnosis/straggler.py), or its threads "
            "wait for a CPU while other processes hold cores (rules/cpu_state.py waits_behind_others; window)",
        ),
        _spec(
            "job_memory_share",
            "float",
            Producer.MEASURED,
            "the job's resident memory (ranks and loader workers) over the host's memory in use (window)",
        ),
        _spec(
            "serial_loader_thread",
            "bool",
            Producer.MEASURED,
            "a thread of a rank other than its main and autograd threads runs a full core while the main thread and "
            "the loader workers run less (the pin-memory thread; window)",
        ),
        _spec(
            "several_hosts",
            "bool",
            Producer.MEASURED,
            "the job's ranks are on more than one host (the hook's world sizes, or reports from several nodes)",
        ),
        _spec(
            "other_collectives_share",
            "float",
            Producer.MEASURED,
            "the communication phase's share of the step less the gradients' all-reduce DDP's comm hook timed: "
            "the model's own collectives (expert or tensor parallelism; window)",
        ),
        _spec(
            "degraded_link",
            "str",
            Producer.MEASURED,
            "the busiest InfiniBand/RoCE port when it runs at a lower rate than most of the node's ports, or an "
            "Ethernet interface carrying the traffic beside idle RDMA ports (window)",
        ),
        _spec(
            "gpu_co_tenants",
            "int",
            Producer.MEASURED,
            "processes other than the job's on the job's GPU that has the most (NVML's process lists; window)",
        ),
        _spec(
            "gpu_memory_fragmented",
            "bool",
            Producer.MEASURED,
            "allocation retries while the job's tensors peak under CAPACITY_HIGH of the GPU and the allocator holds "
            "more: fragmentation, not shortage (the hook's allocator figures)",
        ),
        _spec(
            "parameter_memory_share",
            "float",
            Producer.MEASURED,
            "one copy of the model's parameters per rank on the node over the job's resident memory (window)",
        ),
        _spec(
            "pcie_while_copying",
            "float",
            Producer.MEASURED,
            "the job's busiest PCIe link's share of its peak per direction while the step copies to the GPU "
            "(its utilization over the copies' share of the step; window)",
        ),
        _spec(
            "gpu_roofline_share",
            "float",
            Producer.MEASURED,
            "the job's GPU's achieved FLOP/s over the peak of its own path or bytes/s over its memory bandwidth, "
            "whichever is nearer its peak (the hook's roofline; window)",
        ),
        _spec(
            "straggler_limits_the_step",
            "bool",
            Producer.MEASURED,
            "the ranks wait in their collectives for one rank's own extra work (diagnosis/straggler.py: named, "
            "not slowed from outside the job; window)",
        ),
        _spec(
            "straggler_balance_share",
            "float",
            Producer.MEASURED,
            "the share of the step the ranks would save with that work even among them: the straggler's busy time "
            "less the ranks' mean, over the median rank's step (window)",
        ),
        _spec(
            "straggler_data_lag_share",
            "float",
            Producer.MEASURED,
            "where that extra work is the straggler waiting for its next batch: its wait beyond the median rank's, "
            "over the median rank's step (the loader models take the straggler's wait as the step's; window)",
        ),
        _spec(
            "job_idle_cores",
            "float",
            Producer.MEASURED,
            "cores the job may use that its processes neither ran on nor waited for (window)",
        ),
        _spec(
            "job_threads_waiting_share",
            "float",
            Producer.MEASURED,
            "the job's threads runnable but waiting for a CPU (schedstat), in cores, over the cores it may use, where "
            "they wait for one another (not behind other processes: cpu_contended_from_outside) (window)",
        ),
        _spec(
            "flops_per_parameter",
            "float",
            Producer.MEASURED,
            "FLOP per model parameter per step (the counted step's FLOPs over the parameters): about six "
            "times the rows each weight serves in forward and backward",
        ),
        _spec(
            "idle_wait_stage",
            "str",
            Producer.MEASURED,
            "the stage the step waits in with nothing busy (latency)",
            (Stage.DATA, Stage.OTHER),
        ),
        _spec("phase_source", "str", Producer.STACKS, "where the step phases come from", ("hook", "py-spy")),
        _spec("stack_samples", "int", Producer.STACKS, "py-spy stack samples in the interval"),
        _spec(
            "low_intensity_op_share",
            "float",
            Producer.STACKS,
            "share of stack samples in low-intensity operators",
        ),
        _spec(
            "data_random_share",
            "float",
            Producer.CODE_PROFILE,
            "share of the data stage's stack samples in code that draws random numbers for the sample "
            "(random augmentation, which a cache would freeze), over the run",
        ),
        _spec(
            "data_seeded_share",
            "float",
            Producer.CODE_PROFILE,
            "of the data stage's stack samples that draw random numbers, the share whose draws come from "
            "generators seeded by the sample (the same every epoch: a cache of them is exact), over the run",
        ),
        _spec(
            "other_idle_share",
            "float",
            Producer.STACKS,
            "share of recent stack samples outside the phases in which the thread waited (sleep, lock, child, socket)",
        ),
        _spec(
            "compute_idle_share",
            "float",
            Producer.STACKS,
            "share of recent forward/backward stack samples in which the main thread waited "
            "(DDP on CPU: the all-reduce)",
        ),
    )
}


def with_hook_facts(core: Mapping[str, FactSpec], hooks: Mapping[str, Hook]) -> dict[str, FactSpec]:
    """``core`` and the facts the hooks declare (data/mitigations.json): a hook's own facts are
    added, produced by its module; a fact declared elsewhere gets the hook's module as a producer
    too. InputError when a hook owns a fact the table already declares, or sets an undeclared one."""
    out = dict(core)
    for h in hooks.values():  # owned facts first: another hook may set them
        for f in h.facts:
            if f.type is not None:
                if f.name in out:
                    raise InputError(
                        f"hooks[{h.id}].facts: {f.name!r} is already declared in bottleneckd/model/facts.py"
                    )
                out[f.name] = FactSpec(f.name, f.type, (h.module,), f.doc, f.choices)
    for h in hooks.values():
        for f in h.facts:
            if f.type is None:
                if f.name not in out:
                    raise InputError(
                        f"hooks[{h.id}].facts: {f.name!r} is declared nowhere; give it a type and doc to own it"
                    )
                spec = out[f.name]
                if h.module not in spec.producers:
                    out[f.name] = replace(spec, producers=(*spec.producers, h.module))
    return out


FACTS.update(with_hook_facts(FACTS, HOOKS))


class FactError(ValueError):
    """A fact value that does not fit its declaration (raised only by ``check``)."""


def check(name: str, value: Any) -> FactValue:
    """The value normalised to its declared type, or FactError saying what is wrong."""
    spec = FACTS.get(name)
    if spec is None:
        raise FactError(f"unknown fact {name!r}")
    t = spec.type
    if t == "bool":
        if type(value) is not bool:
            raise FactError(f"{name}: expected true/false, got {type(value).__name__}")
        return value
    if t in ("int", "float"):
        if type(value) is bool or not isinstance(value, (int, float)):
            raise FactError(f"{name}: expected a number, got {type(value).__name__}")
        if t == "int" and not isinstance(value, int):
            if not (isinstance(value, float) and math.isfinite(value) and value.is_integer()):
                raise FactError(f"{name}: expected an integer, got {value!r}")
            value = int(value)
        if isinstance(value, float) and not math.isfinite(value):
            raise FactError(f"{name}: not a finite number")
        if value < 0 or abs(value) > (MAX_INT if t == "int" else 1e30):
            raise FactError(f"{name}: {value!r} out of range")
        return value if t == "int" else float(value)
    if t == "str":
        if not isinstance(value, str) or len(value) > MAX_STR:
            raise FactError(f"{name}: expected a string of at most {MAX_STR} characters")
        if spec.choices and value not in spec.choices:
            raise FactError(f"{name}: {value!r} is not one of {', '.join(spec.choices)}")
        return value
    if t == "strs":
        if (
            not isinstance(value, (list, tuple))
            or len(value) > MAX_ITEMS
            or not all(isinstance(v, str) and len(v) <= MAX_STR for v in value)
        ):
            raise FactError(f"{name}: expected a list of at most {MAX_ITEMS} short strings")
        return tuple(value)
    raise FactError(f"{name}: undeclared type {t!r}")  # pragma: no cover - FACTS is static


def _value(name: str, value: Any) -> FactValue | None:
    """The value to keep, None for unset: None (torch's prefetch_factor with no workers, ...) and
    an empty list say nothing. FactError when it does not fit its declaration."""
    if value is None:
        return None
    value = check(name, value)
    return None if value == () else value


def _clean(raw: Mapping[str, Any]) -> tuple[dict[str, FactValue], list[str]]:
    out: dict[str, FactValue] = {}
    bad: list[str] = []
    for k, v in raw.items():
        if v is None:
            continue
        if not isinstance(k, str):
            bad.append("non-string fact name")
            continue
        try:
            v = _value(k, v)
        except FactError as e:
            bad.append(str(e)[:200])
            continue
        if v is not None:
            out[k] = v
    return out, bad


class Facts(Mapping[str, FactValue]):
    """An immutable, validated set of facts. Built from anything: bad entries are dropped and
    named in ``dropped`` (their count in ``rejected``)."""

    __slots__ = ("_d", "dropped", "rejected")
    _d: dict[str, FactValue]
    #: the first reasons for the entries dropped, bounded
    dropped: tuple[str, ...]
    #: how many entries were dropped
    rejected: int

    def __init__(self, values: Mapping[str, Any] | None = None, **kw: Any) -> None:
        d, bad = _clean({**(values or {}), **kw})
        object.__setattr__(self, "_d", d)
        object.__setattr__(self, "dropped", tuple(bad[:MAX_ITEMS]))  # the first reasons, bounded
        object.__setattr__(self, "rejected", len(bad))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Facts is immutable: use set() / unset()")

    def __getitem__(self, name: str) -> FactValue:
        return self._d[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __repr__(self) -> str:
        return f"Facts({self._d!r})"

    def set(self, **values: Any) -> Facts:
        return Facts({**self._d, **values})

    def unset(self, *names: str) -> Facts:
        return Facts({k: v for k, v in self._d.items() if k not in names})

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self._d.items()}

    @staticmethod
    def from_json(raw: Any) -> Facts:
        """Lenient: what fits is kept, the rest named in ``dropped``."""
        f = Facts(raw if isinstance(raw, Mapping) else None)
        if raw is not None and not isinstance(raw, Mapping):
            object.__setattr__(f, "dropped", ("facts: not an object",))
            object.__setattr__(f, "rejected", 1)
        return f


EMPTY = Facts()


class FactBoard:
    """The hook's mutable fact state (set and unset), validated on write: a wrong value is
    dropped and counted, never raised into training. ``freeze()`` is what a report sends."""

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._d: dict[str, FactValue] = {}
        self.rejected = 0
        self.last_error = ""
        self._warned: set[str] = set()
        self.update(values or {})

    def __setitem__(self, name: str, value: Any) -> None:
        try:
            value = _value(name, value)
        except FactError as e:
            self.rejected += 1
            self.last_error = str(e)
            if name not in self._warned and len(self._warned) < 32:  # once per fact: a bug of ours, not the user's
                self._warned.add(name)
                log.warning("bottleneckd: fact dropped (%s); declare it in bottleneckd/model/facts.py", e)
            return
        if value is None:
            self._d.pop(name, None)
        else:
            self._d[name] = value

    def __getitem__(self, name: str) -> FactValue:
        return self._d[name]

    def __contains__(self, name: object) -> bool:
        return name in self._d

    def get(self, name: str, default: Any = None) -> Any:
        return self._d.get(name, default)

    def update(self, values: Mapping[str, Any]) -> None:
        for k, v in values.items():
            self[k] = v

    def pop(self, name: str, default: Any = None) -> Any:
        return self._d.pop(name, default)

    def unset(self, *names: str) -> None:
        for n in names:
            self._d.pop(n, None)

    def freeze(self, **extra: Any) -> Facts:
        return Facts({**self._d, **extra})

    def items(self) -> ItemsView[str, FactValue]:
        return self._d.items()

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)
