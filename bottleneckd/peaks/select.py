"""Which compute peak a GPU job can reach: the one for the arithmetic it runs.

The roofline must compare a job's FLOP/s with the peak of its own path, not the fastest figure
of the part: an fp32 job on an H200 peaks at 67 TFLOP/s, not bf16's 989 (15x), and fp32 parameters
under ``torch.autocast(bfloat16)`` run at bf16's 989, not fp32's 67. The path follows from the
hook's facts, measured first:

- ``compute_dtype``: the dtype most of the counted step's FLOPs ran in (torch/counting.py; it sees
  autocast, Lightning's and the HF Trainer's mixed precision, FSDP's MixedPrecision with fp32 flat
  parameters, whatever the parameters' dtype), with ``fp8_flop_share`` (``aten._scaled_mm``: FP8
  tensor cores) and ``conv_flop_share``;
- else ``autocast_dtype`` (autocast seen at forward time, a framework's setting, FSDP's policy,
  low-precision parameters), else ``param_dtype``.

For fp32, matmuls use TF32 tensor cores when ``allow_tf32`` (``torch.backends.cuda.matmul``, False by
default since 1.12) and convolutions when ``cudnn_allow_tf32`` (``torch.backends.cudnn``, True by
default); fp64 matmuls run on FP64 tensor cores where the part has them (A100, H100). V100 and T4
have fp16 tensor cores but no bf16 path: bf16 there runs at the fp32 rate at best.

A step whose FLOPs run on several paths (FP8 matmuls beside bf16 attention; TF32 convolutions beside
fp32 matmuls) is judged against the blend: the FLOP/s it would reach with every part at its own peak,
``1 / sum(share_i / peak_i)``.

A calibrated figure (metric ``*_matmul``) wins over the catalog's, as everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bottleneckd.model.resources import Resource
from bottleneckd.peaks.resolve import PeakTable, ResolvedPeak

#: path -> the peak metrics that measure it, preferred first (calibrated names, then catalog names)
PATHS: dict[str, tuple[str, ...]] = {
    "fp8 tensor": ("fp8_matmul", "fp8_tensor_dense"),
    "bf16 tensor": ("bf16_matmul", "fp16_bf16_tensor_dense"),
    "fp16 tensor": ("fp16_matmul", "fp16_bf16_tensor_dense", "fp16_tensor_dense"),
    "tf32 tensor": ("tf32_matmul", "tf32_tensor_dense"),
    "fp32": ("fp32_matmul", "fp32"),
    "fp64 tensor": ("fp64_matmul", "fp64_tensor_dense", "fp64"),
}
#: paths a part may lack, and what that math runs at instead
FALLBACK = {"bf16 tensor": "fp32", "tf32 tensor": "fp32"}
#: a path's share of the FLOPs below this is left out of the blend (noise of the count)
MIN_SHARE = 0.01


@dataclass(frozen=True)
class ComputePeak:
    value: float | None
    path: str  # "bf16 tensor", "fp32", "fp8 tensor 60% + bf16 tensor 40%", ...; "" when unknown
    why: str  # how the path was chosen, or why there is no figure


def _dtype_path(dtype: str, facts: Mapping[str, Any], convolutions: bool) -> tuple[str, str]:
    if dtype == "float8":
        return "fp8 tensor", "FP8 matmuls"
    if dtype in ("bfloat16", "float16"):
        return ("bf16 tensor" if dtype == "bfloat16" else "fp16 tensor"), dtype
    if dtype == "float64":
        return "fp64 tensor", "float64"
    key, name, default = (
        ("cudnn_allow_tf32", "cudnn.allow_tf32", True) if convolutions else ("allow_tf32", "allow_tf32", False)
    )
    tf32 = facts.get(key)
    on = default if tf32 is None else bool(tf32)
    how = f"{name} {'on' if on else 'off'}" + (" (PyTorch's default)" if tf32 is None else "")
    what = "float32 convolutions" if convolutions else "float32"
    return ("tf32 tensor" if on else "fp32"), f"{what}, {how}"


def job_mix(facts: Mapping[str, Any]) -> tuple[list[tuple[str, float, str]], str]:
    """[(path, share of FLOPs, why)] from the hook's facts, and where the dtype came from;
    ([], reason) when they do not say."""
    dtype, source = facts.get("compute_dtype"), "measured on the counted step"
    if dtype is None and facts.get("autocast_dtype") in ("bfloat16", "float16"):
        dtype, source = facts.get("autocast_dtype"), "autocast / mixed-precision setting"
    if dtype is None and facts.get("param_dtype") in ("bfloat16", "float16", "float32", "float64"):
        dtype, source = facts.get("param_dtype"), "parameters' dtype"
    if dtype is None:
        return [], "the job's dtype is unknown (no compute_dtype, autocast_dtype or param_dtype fact from the hook)"
    fp8 = float(facts.get("fp8_flop_share") or 0.0) if facts.get("compute_dtype") is not None else 0.0
    conv = float(facts.get("conv_flop_share") or 0.0) if facts.get("compute_dtype") is not None else 0.0
    rest = max(0.0, 1.0 - fp8 - conv)
    parts: dict[str, list[Any]] = {}
    for share, dt, is_conv in ((fp8, "float8", False), (conv, dtype, True), (rest, dtype, False)):
        if share < MIN_SHARE:
            continue
        path, why = _dtype_path(dt, facts, is_conv and dt == "float32")
        p = parts.setdefault(path, [0.0, []])
        p[0] += share
        p[1].append(why)
    if not parts:  # every share under the noise floor: the main dtype alone
        path, why = _dtype_path(dtype, facts, False)
        parts[path] = [1.0, [why]]
    total = sum(v[0] for v in parts.values())
    mix = [(path, v[0] / total, "; ".join(v[1])) for path, v in sorted(parts.items(), key=lambda kv: -kv[1][0])]
    return mix, source


def job_path(facts: Mapping[str, Any]) -> tuple[str, str]:
    """(the main path, why) from the hook's facts; ("", reason) when they do not say."""
    mix, source = job_mix(facts)
    if not mix:
        return "", source
    return mix[0][0], f"{mix[0][2]} ({source})"


def _first(peaks: PeakTable, device: str, path: str) -> tuple[str, ResolvedPeak] | None:
    """The first of the path's metrics with a figure for ``device``, and that figure."""
    for metric in PATHS[path]:
        p = peaks.get(Resource.GPU_COMPUTE, device, metric)
        if p is not None and p.value:
            return metric, p
    return None


def _peak_of(peaks: PeakTable, device: str, path: str) -> tuple[str, float | None, str]:
    """(path actually run, its peak or None, how it was found)."""
    found = _first(peaks, device, path)
    if found is not None:
        return path, found[1].value, f"{found[0]} peak ({found[1].origin})"
    alt = FALLBACK.get(path)
    if alt is not None:  # V100, T4: no bf16 or TF32 tensor path; that math runs at the fp32 rate at best
        found = _first(peaks, device, alt)
        if found is not None:
            return alt, found[1].value, f"this GPU has no {path} path: the {alt} peak ({found[1].origin})"
    return path, None, f"no {path} peak known for {device}"


def compute_peak(peaks: PeakTable, device: str, facts: Mapping[str, Any]) -> ComputePeak:
    mix, source = job_mix(facts)
    if not mix:
        return ComputePeak(None, "", source)
    resolved = [(share, why, *_peak_of(peaks, device, path)) for path, share, why in mix]
    missing = [r for r in resolved if r[3] is None]
    if missing:
        _, why, path, _, how = missing[0]
        return ComputePeak(None, path, f"{why} ({source}): {how}")
    if len(resolved) == 1:
        _, why, path, value, how = resolved[0]
        return ComputePeak(value, path, f"{why} ({source}): {how}")
    value = 1.0 / sum(share / v for share, _, _, v, _ in resolved if v is not None)  # none is None: `missing` above
    path = " + ".join(f"{p} {share:.0%}" for share, _, p, _, _ in resolved)
    why = "; ".join(f"{p}: {w}, {h}" for _, w, p, _, h in resolved)
    return ComputePeak(value, path, f"a blend by share of FLOPs ({source}): {why}")
