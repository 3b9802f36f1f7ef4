"""What the CUDA caching allocator holds, for the report: the job's tensors against the allocator's cache.

NVML's "used" memory of a GPU is what PyTorch's caching allocator has reserved, which it keeps
(90-95% of HBM is common) whether or not the job's tensors need it: a full cache is not a memory
bottleneck. What the hook can see tells them apart (``torch.cuda.memory_stats``, PyTorch's
documented statistics):

- ``allocated_bytes.all.peak``: the most the job's tensors have held at once (the allocator's own
  peak since start; never reset here, a user may read it with ``max_memory_allocated``);
- ``reserved_bytes.all.current``: what the allocator holds (what NVML sees, less the CUDA context);
- ``num_alloc_retries``: cudaMalloc calls that failed and were retried after freeing the cache
  (each frees and re-reserves memory on the critical path): memory pressure that costs time;
- ``num_ooms``: out-of-memory errors thrown (a batch-size finder's, or caught and retried);
- ``PYTORCH_ALLOC_CONF`` (else the older ``PYTORCH_CUDA_ALLOC_CONF``), read from the environment:
  whether ``expandable_segments:True`` is set (c10 accepts exactly ``True`` or ``False``), the
  allocator setting that stops fragmentation from cached blocks of the wrong sizes (PyTorch's CUDA
  semantics notes). A setting changed at run time (``torch.cuda.memory._set_allocator_settings``)
  is not seen.

Read once per report from the report path (every ``report_every`` seconds, not per step): a
C++ call that copies counters, no synchronisation. Not on CUDA, or before CUDA is initialised,
every fact is unset.
"""

from __future__ import annotations

import os
from typing import Any

import torch

FACTS = (
    "cuda_memory_total_bytes",
    "cuda_memory_reserved_bytes",
    "cuda_memory_allocated_bytes",
    "cuda_memory_peak_allocated_bytes",
    "cuda_alloc_retries",
    "cuda_alloc_retries_per_step",
    "cuda_ooms",
    "cuda_expandable_segments",
)
#: the environment variables PyTorch reads its allocator settings from (the first set wins)
ALLOC_CONF_VARS = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")


def expandable_segments(env: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """``expandable_segments:True`` among the allocator's settings (comma-separated key:value)."""
    conf = next((env[v] for v in ALLOC_CONF_VARS if env.get(v)), "")
    for item in conf.split(","):
        key, _, value = item.partition(":")
        if key.strip() == "expandable_segments":
            return value.strip() == "True"
    return False


class CudaMemory:
    """The allocator's statistics of the model's device, as facts, with retries per step since the
    previous report."""

    def __init__(self, device: torch.device | None) -> None:
        self.device = device
        self._total: int | None = None
        self._last: tuple[int, int] | None = None  # (retries, steps) at the previous report

    def facts(self, steps: int) -> dict[str, Any]:
        """``steps``: training steps so far (the retries are divided by those since the last report)."""
        none = dict.fromkeys(FACTS)
        d = self.device
        if d is None or d.type != "cuda" or not torch.cuda.is_initialized():
            return none
        st = torch.cuda.memory_stats(d)
        if not st:
            return none
        if self._total is None:  # a cached property: no device call after the first
            idx = d.index if d.index is not None else torch.cuda.current_device()
            self._total = int(torch.cuda.get_device_properties(idx).total_memory)
        retries = int(st.get("num_alloc_retries", 0))
        per_step = None
        if self._last is not None and steps > self._last[1]:
            per_step = max(0, retries - self._last[0]) / (steps - self._last[1])
        self._last = (retries, steps)
        return {
            "cuda_memory_total_bytes": self._total,
            "cuda_memory_reserved_bytes": int(st.get("reserved_bytes.all.current", 0)),
            "cuda_memory_allocated_bytes": int(st.get("allocated_bytes.all.current", 0)),
            "cuda_memory_peak_allocated_bytes": int(st.get("allocated_bytes.all.peak", 0)),
            "cuda_alloc_retries": retries,
            "cuda_alloc_retries_per_step": per_step,
            "cuda_ooms": int(st.get("num_ooms", 0)),
            "cuda_expandable_segments": expandable_segments(),
        }
