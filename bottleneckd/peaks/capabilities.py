"""What this node's GPUs can run, read from their resolved peaks: facts for the advice's conditions
(advice/fit.py), produced on the daemon side, never from torch.

- ``gpu_fp8``: a GPU of this node has FP8 tensor cores (Hopper, Ada, Blackwell): the catalog or a
  calibration gives it an FP8 peak. An A100 or V100 has none: FP8 matmuls are no advice there.
"""

from __future__ import annotations

from bottleneckd.model.facts import Facts
from bottleneckd.model.resources import Resource
from bottleneckd.peaks.resolve import PeakTable

#: the peak metrics of FP8 matmuls (catalog, calibrated): peaks/select.py's "fp8 tensor" path
FP8_METRICS = frozenset({"fp8_tensor_dense", "fp8_matmul"})


def gpu_facts(peaks: PeakTable | None) -> Facts:
    """The GPUs' capabilities; nothing for a node without GPUs (unknown, not False)."""
    gpus = [p for p in peaks.for_resource(Resource.GPU_COMPUTE) if p.device not in ("", "-")] if peaks else []
    if not gpus:
        return Facts()
    return Facts(gpu_fp8=any(p.metric in FP8_METRICS and p.value for p in gpus))
