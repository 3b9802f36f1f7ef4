"""Which compute peak a GPU job can reach: the one for the arithmetic it runs.

The roofline must compare a job's FLOP/s with the peak of its own path, not the fastest figure
of the part: an fp32 job on an H200 peaks at 67 TFLOP/s, not bf16's 989 (15x). The path follows
from the hook's facts: ``autocast_dtype`` (bf16/fp16 autocast in effect), else ``param_dtype``;
for fp32, ``allow_tf32`` (PyTorch's ``torch.backends.cuda.matmul.allow_tf32``, False by default
since 1.12); fp64 matmuls run on FP64 tensor cores where the part has them (A100, H100). V100 and
T4 have fp16 tensor cores but no bf16 path: bf16 there runs at the fp32 rate at best.

A calibrated figure (metric ``*_matmul``) wins over the catalog's, as everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bottleneckd.peaks.resolve import PeakTable, ResolvedPeak

#: path -> the peak metrics that measure it, preferred first (calibrated names, then catalog names)
PATHS: dict[str, tuple[str, ...]] = {
    "bf16 tensor": ("bf16_matmul", "fp16_bf16_tensor_dense"),
    "fp16 tensor": ("fp16_matmul", "fp16_bf16_tensor_dense", "fp16_tensor_dense"),
    "tf32 tensor": ("tf32_matmul", "tf32_tensor_dense"),
    "fp32": ("fp32_matmul", "fp32"),
    "fp64 tensor": ("fp64_matmul", "fp64_tensor_dense", "fp64"),
}


@dataclass(frozen=True)
class ComputePeak:
    value: float | None
    path: str  # "bf16 tensor", "fp32", ...; "" when the job's path is unknown
    why: str  # how the path was chosen, or why there is no figure


def job_path(facts: Mapping[str, Any]) -> tuple[str, str]:
    """(path, why) from the hook's facts; ("", reason) when they do not say."""
    auto = facts.get("autocast_dtype")
    if auto in ("bfloat16", "float16"):
        return ("bf16 tensor" if auto == "bfloat16" else "fp16 tensor"), f"autocast to {auto}"
    dtype = facts.get("param_dtype")
    if dtype in ("bfloat16", "float16"):
        return ("bf16 tensor" if dtype == "bfloat16" else "fp16 tensor"), f"parameters in {dtype}"
    if dtype == "float64":
        return "fp64 tensor", "parameters in float64"
    if dtype == "float32":
        tf32 = facts.get("allow_tf32")
        if tf32 is True:
            return "tf32 tensor", "float32 parameters with allow_tf32 on"
        return "fp32", "float32 parameters, TF32 " + (
            "off" if tf32 is False else "setting unknown (PyTorch's default is off)"
        )
    return "", "the job's dtype is unknown (no autocast_dtype or param_dtype fact from the hook)"


def _first(peaks: PeakTable, device: str, path: str) -> tuple[str, ResolvedPeak] | None:
    """The first of the path's metrics with a figure for ``device``, and that figure."""
    for metric in PATHS[path]:
        p = peaks.get("gpu_compute", device, metric)
        if p is not None and p.value:
            return metric, p
    return None


def compute_peak(peaks: PeakTable, device: str, facts: Mapping[str, Any]) -> ComputePeak:
    path, why = job_path(facts)
    if not path:
        return ComputePeak(None, "", why)
    found = _first(peaks, device, path)
    if found is not None:
        return ComputePeak(found[1].value, path, f"{why}: {found[0]} peak ({found[1].origin})")
    if path in (
        "bf16 tensor",
        "tf32 tensor",
    ):  # V100, T4: no bf16 or TF32 tensor path; that math runs at the fp32 rate at best
        found = _first(peaks, device, "fp32")
        if found is not None:
            return ComputePeak(
                found[1].value, "fp32", f"{why}, but this GPU has no {path} path: the fp32 peak ({found[1].origin})"
            )
    return ComputePeak(None, path, f"{why}: no {path} peak known for {device}")
