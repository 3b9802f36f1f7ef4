"""Facts the hook reads off the model, the optimizer, the loader and the first input (declared in
``model/facts.py``): what the recommender needs to fit advice to the job and to skip advice
already in effect. Every function returns every fact it owns, False/None included, so that a
fact no longer true is unset (None unsets on the FactBoard)."""

from __future__ import annotations

import logging
import os
from collections import Counter
from typing import Any

import torch

from bottleneckd.samplers.threads import schedstat


def model_facts(model: torch.nn.Module, optimizer: Any = None) -> dict[str, Any]:
    """The model's facts; ``optimizer``: the job's, whose parameters on the CPU while the model's are
    on a GPU say its step runs on the CPU (ZeRO-Offload's CPU Adam, a master copy kept in host memory)."""
    by_dtype: Counter = Counter()
    cuda: set[int] = set()
    for p in model.parameters():
        by_dtype[p.dtype] += p.numel()
        if p.is_cuda:
            cuda.add(p.get_device())
    dtype = by_dtype.most_common(1)[0][0] if by_dtype else None
    return {
        "has_conv": any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in model.modules()),
        "parameters": sum(by_dtype.values()),
        "param_dtype": _name(dtype),
        # the GPUs' identities, as NVML names them: CUDA's indexes are not NVML's
        # (no synchronisation: cached properties)
        "cuda_uuids": tuple(sorted(f"GPU-{torch.cuda.get_device_properties(i).uuid}" for i in cuda)) or None,
        **parallel_facts(model, optimizer_on_cpu(optimizer) if cuda else False),
        "optimizer_impl": optimizer_impl(optimizer, bool(cuda)),
    }


def optimizer_impl(optimizer: Any, cuda: bool) -> str | None:
    """torch.optim's implementation of the optimizer's step: "fused" (one kernel for every
    parameter's update), "foreach" (multi-tensor kernels) or "for-loop" (kernels per parameter),
    as its first parameter group sets them; unset (None) is torch's default, foreach where the
    parameters are on a GPU (torch.optim's docs: fused > foreach > for-loop in performance). None
    for an optimizer without those options."""
    try:
        groups = getattr(optimizer, "param_groups", None)
        group = groups[0] if groups else getattr(optimizer, "defaults", None)
        if not isinstance(group, dict) or ("foreach" not in group and "fused" not in group):
            return None
        if group.get("fused"):
            return "fused"
        foreach = group.get("foreach")
        if foreach is None:
            return "foreach" if cuda else "for-loop"
        return "foreach" if foreach else "for-loop"
    except (AttributeError, TypeError, IndexError, KeyError):
        return None


def optimizer_on_cpu(optimizer: Any) -> bool:
    """The optimizer's first parameters live in host memory (it steps on the CPU)."""
    try:
        for group in getattr(optimizer, "param_groups", ())[:4]:
            for p in group.get("params", ())[:4]:
                if isinstance(p, torch.Tensor):
                    return p.device.type == "cpu"
    except (AttributeError, TypeError):
        pass
    return False


def _name(dtype: Any) -> str | None:
    return str(dtype).split(".")[-1] if dtype is not None else None


def _low(dtype: Any) -> str | None:
    return _name(dtype) if dtype in (torch.bfloat16, torch.float16) else None


def sharded_compute_dtype(model: torch.nn.Module) -> str | None:
    """The dtype FSDP gathers the parameters in for compute (``MixedPrecision(param_dtype=...)``,
    FSDP2's ``MixedPrecisionPolicy``): the flat or sharded parameters themselves stay fp32."""
    for m in model.modules():
        policy = getattr(m, "mixed_precision", None)  # FSDP1's FullyShardedDataParallel
        if policy is None and hasattr(m, "_get_fsdp_state"):  # FSDP2's FSDPModule
            try:
                policy = getattr(m._get_fsdp_state(), "_mp_policy", None)  # type: ignore[operator]
            except Exception:  # noqa: BLE001
                policy = None
        low = _low(getattr(policy, "param_dtype", None))
        if low:
            return low
    return None


#: whether autocast is on for any device: one C call with no argument to parse. The per-device
#: query parses the device string each call (436 ns here against 150 ns) and, run once per step
#: between the model's kernels, touches more cold memory (issue 23: the hook's in-situ cost)
_any_autocast = getattr(torch._C, "_is_any_autocast_enabled", None)


def autocast_now(device_type: str) -> str | None:
    """autocast's dtype when autocast is on for ``device_type`` right now (C calls, no sync)."""
    if _any_autocast is not None and not _any_autocast():
        return None  # off everywhere: the common case, one cheap call
    try:
        if not torch.is_autocast_enabled(device_type):
            return None
        return _low(torch.get_autocast_dtype(device_type))
    except (TypeError, AttributeError, RuntimeError):  # torch < 2.4: the CUDA-only forms
        if device_type != "cuda" or not torch.is_autocast_enabled():
            return None
        return _low(torch.get_autocast_gpu_dtype())


#: what the counted step measured of its arithmetic (counting.py): stale once the precision changes
MEASURED_PRECISION = ("compute_dtype", "fp8_flop_share", "conv_flop_share")


class Precision:
    """The low-precision dtype in effect (fact ``autocast_dtype``), as users write mixed precision:
    low-precision parameters, FSDP's MixedPrecision, a framework's setting (``declare``: Lightning's
    ``precision="bf16-mixed"``, the HF Trainer's ``bf16=True``) and ``torch.autocast`` around the
    forward, read at the step's first forward (``at_forward``: once per step, no sync). What the
    counted step measured (``compute_dtype``, counting.py) is the last word (peaks/select.py)."""

    def __init__(self, model: torch.nn.Module | None, device_type: str) -> None:
        self.device_type = device_type
        self.static: str | None = None
        self.declared: str | None = None
        self.seen: str | None = None
        self._last: str | None = None
        self.refresh(model)

    def refresh(self, model: torch.nn.Module | None) -> None:
        """The parameters' side (at start and at each epoch's end: a model cast meanwhile)."""
        self.static = None
        if model is not None:
            by: Counter = Counter()
            for p in model.parameters():
                by[p.dtype] += p.numel()
            self.static = sharded_compute_dtype(model) or (_low(by.most_common(1)[0][0]) if by else None)

    def declare(self, dtype: str | None) -> None:
        self.declared = dtype if dtype in ("bfloat16", "float16") else None

    def at_forward(self, facts: Any) -> None:
        self.seen = autocast_now(self.device_type)
        want = self.seen or self.declared or self.static
        if want != self._last:
            self._last = want
            if facts.get("compute_dtype") is not None:  # counted under other arithmetic (a mitigation since)
                for k in MEASURED_PRECISION:
                    facts[k] = None
        if facts.get("autocast_dtype") != want:
            facts["autocast_dtype"] = want

    def facts(self) -> dict[str, Any]:
        return {"autocast_dtype": self.seen or self.declared or self.static}


def parallel_facts(model: torch.nn.Module, optimizer_offloaded: bool = False) -> dict[str, Any]:
    """How the model is spread over ranks, by class name (no torch.distributed import needed):
    FSDP (FullyShardedDataParallel, or FSDP2's FSDPModule) shards it; FSDP's CPUOffload offloads,
    and so does an optimizer stepping on host-memory parameters (``optimizer_offloaded``)."""
    kinds = [type(m).__name__ for m in model.modules()]
    fsdp = any(k == "FullyShardedDataParallel" or k.startswith("FSDP") for k in kinds)
    offload = optimizer_offloaded or any(
        bool(getattr(getattr(m, "cpu_offload", None), "offload_params", False)) for m in model.modules()
    )
    f: dict[str, Any] = {"fsdp": fsdp, "sharded": fsdp, "offloading": offload}
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        f["ddp"] = True  # not False otherwise: collectives.py says so for a multi-rank job without the wrapper
    return f


def runtime_facts(model: torch.nn.Module | None, tid: int | None = None) -> dict[str, Any]:
    """Cheap facts that can change while training runs (read at each report): with the training
    thread's id, its run-queue wait so far (one small /proc read per report)."""
    compiled = model is not None and (
        hasattr(model, "_orig_mod")  # torch.compile(model): an OptimizedModule
        or getattr(model, "_compiled_call_impl", None) is not None
    )  # model.compile()
    out: dict[str, Any] = {
        "allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        # convolutions: cuDNN's own switch, on by default (fp32 convolutions run on TF32 tensor cores)
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "compiled": compiled,
        "intra_op_threads": torch.get_num_threads(),
    }
    times = schedstat(os.getpid(), tid) if tid is not None else None
    if times is not None:
        out["thread_cpu_seconds"], out["runqueue_wait_seconds"] = times
    return out


def input_facts(args: tuple) -> dict[str, Any]:
    """From a forward call: the rank of the model's first input (4 for an NCHW image batch)."""
    first = args[0] if args else None
    return {"input_rank": first.dim() if isinstance(first, torch.Tensor) else None}


def loader_facts(loader: Any) -> dict[str, Any]:
    f: dict[str, Any] = {}
    for k in ("num_workers", "pin_memory", "persistent_workers", "prefetch_factor", "batch_size"):
        if hasattr(loader, k):
            f["loader_workers" if k == "num_workers" else k] = getattr(loader, k)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    f["cores"] = cores
    if f.get("loader_workers") is not None:
        f["loader_workers_saturate_cores"] = f["loader_workers"] >= cores
    return f


def startup_facts(
    model: torch.nn.Module | None, loader: Any, *, warn_no_model: bool, optimizer: Any = None
) -> dict[str, Any]:
    """The facts a new watcher starts with (the model's, then the loader's)."""
    out: dict[str, Any] = {}
    if model is not None:
        out.update(model_facts(model, optimizer))
    elif warn_no_model:
        logging.getLogger("bottleneckd.torch").warning(
            "bottleneckd: watch() got no model: only data waits and optimizer steps are timed "
            "(pass the model as the first argument to time forward and backward)"
        )
    if loader is not None:
        out.update(loader_facts(loader))
    return out
