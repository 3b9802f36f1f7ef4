"""The peak MFU is taken against: one device's compute peak on the job's own arithmetic path.

On a GPU that is ``select.compute_peak`` (bf16 autocast against the bf16 tensor peak, fp32 with
TF32 off against the fp32 peak, ...). A CPU has one figure in the catalog or a calibration, the
fp32 one (``cpu_compute``: ``fp32_fma`` or the calibrated ``fp32_matmul``): it is used for an
fp32 job only; a bf16 or fp16 job on a CPU (AMX, AVX512-BF16) has no known peak, so its MFU is
unknown with that reason rather than a figure against the wrong roof.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bottleneckd.model.resources import Resource
from bottleneckd.model.throughput import Peak
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.peaks.select import compute_peak, job_path


def mfu_peak(peaks: PeakTable, facts: Mapping[str, Any], gpu: str | None) -> Peak:
    """``gpu``: the job's (first) GPU device as the peaks name it, None for a CPU job."""
    if gpu is not None:
        c = compute_peak(peaks, gpu, facts)
        return Peak(value=c.value, path=c.path, why=c.why)
    path, why = job_path(facts)
    if path == "tf32 tensor":  # TF32 is CUDA's tensor-core path (torch.backends switches): a CPU runs fp32
        path, why = "fp32", why.split(",")[0] + " (TF32 switches act on CUDA only)"
    if path not in ("fp32", ""):
        return Peak(value=None, path=path, why=f"{why}: no {path} peak known for the CPU (only its fp32 one)")
    p = peaks.get(Resource.CPU_COMPUTE, "cpu")
    if p is None or not p.value:
        return Peak(value=None, path="fp32 CPU", why=p.source if p is not None else "no CPU compute peak")
    how = why if path else "the job's dtype unknown, taken as fp32"
    return Peak(value=p.value, path="fp32 CPU", why=f"{how}: {p.metric} peak ({p.origin})")
