"""What the hook can tell the recommender about the model, the optimizer, the loader and the
input (declared in model/facts.py; a recommendation must fit the job: channels_last only with
convolutions, progressive resizing only for image batches, nothing already in effect)."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import torch


def model_facts(model: torch.nn.Module, optimizer: Any = None) -> dict[str, Any]:
    params = list(model.parameters())
    by_dtype: Counter = Counter()
    for p in params:
        by_dtype[p.dtype] += p.numel()
    kinds = [type(m).__name__ for m in model.modules()]
    fsdp = any(k == "FullyShardedDataParallel" or k.startswith("FSDP") for k in kinds)
    offload = any(bool(getattr(getattr(m, "cpu_offload", None), "offload_params", False)) for m in model.modules())
    zero = type(optimizer).__name__ == "ZeroRedundancyOptimizer"
    f: dict[str, Any] = {
        "has_conv": any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in model.modules()),
        "parameters": sum(p.numel() for p in params),
        "compiled": hasattr(model, "_orig_mod"),  # torch.compile's OptimizedModule
        "ddp": isinstance(model, torch.nn.parallel.DistributedDataParallel),
        "fsdp": fsdp,
        "sharded": fsdp or zero,
        "offloading": offload,
        "allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
    }
    if by_dtype:
        f["param_dtype"] = str(by_dtype.most_common(1)[0][0]).split(".")[-1]
    low = set(by_dtype) & {torch.bfloat16, torch.float16}
    if low:
        f["autocast_dtype"] = str(next(iter(low))).split(".")[-1]
    if optimizer is not None:
        f["optimizer_closure"] = isinstance(optimizer, torch.optim.LBFGS)  # its step needs a closure
    return f


def input_facts(args: tuple) -> dict[str, Any]:
    """From the model's first call: the rank of its first input (4 for an NCHW image batch)."""
    first = args[0] if args else None
    return {"input_rank": first.dim()} if isinstance(first, torch.Tensor) else {}


def loader_facts(loader: Any) -> dict[str, Any]:
    f: dict[str, Any] = {}
    for k in ("num_workers", "pin_memory", "persistent_workers", "prefetch_factor", "batch_size"):
        if hasattr(loader, k):
            f["loader_workers" if k == "num_workers" else k] = getattr(loader, k)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    f["cores"] = cores
    if "loader_workers" in f:
        f["loader_workers_saturate_cores"] = f["loader_workers"] >= cores
    return f
