"""FLOP formulas ``torch.utils.flop_counter`` lacks, for operators common models run.

``flop_registry`` (torch 2.13) counts ``mm``/``addmm``/``bmm``/``baddbmm``/``_scaled_mm``, the
convolutions and the CUDA attention kernels (``_scaled_dot_product_{flash,efficient,cudnn}_attention``
and their backward, ``_flash_attention_*``, ``_efficient_attention_*``). Without the formulas here a
TransformerEncoderLayer step on CPU (``_scaled_dot_product_flash_attention_for_cpu``: 7% of its
operand bytes) and every net with bilinear upsampling (38%) had no FLOP count at all.

- Attention on CPU, on other backends (``_fused_attention_overrideable``) and the MPS math path: the
  same two batched matmuls as torch's ``sdpa_flop_count`` (forward) and its backward's four.
- Interpolating upsampling: an output element is a weighted sum of ``taps`` inputs per channel
  (linear 2, bilinear 4, bicubic 16, trilinear 8): ``taps`` multiplies and ``taps - 1`` adds; the
  backward scatters each output gradient to its ``taps`` inputs: a multiply and an add each. The
  weights themselves are per row and per column, a vanishing share. Nearest-neighbour upsampling is
  a gather: no FLOPs, and none are missing.
- ``_addmm_activation`` (addmm fused with ReLU/GELU, the fast path of ``nn.Linear`` + activation):
  the addmm's FLOPs.

Formulas take operand shapes (``shape_wrapper`` applies, as for torch's own).
"""

from __future__ import annotations

from math import prod
from typing import Any

import torch
from torch.utils.flop_counter import addmm_flop, flop_registry, sdpa_backward_flop_count, sdpa_flop_count

aten = torch.ops.aten

#: inputs combined into one output element by each interpolating upsampling mode
TAPS = {"linear1d": 2, "bilinear2d": 4, "bicubic2d": 16, "trilinear3d": 8}


def _sdpa(query_shape: Any, key_shape: Any, value_shape: Any, *_: Any, out_shape: Any = None, **__: Any) -> int:
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def _sdpa_backward(
    grad_out_shape: Any, query_shape: Any, key_shape: Any, value_shape: Any, *_: Any, out_shape: Any = None, **__: Any
) -> int:
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


def _upsample(taps: int) -> Any:
    def forward(_input_shape: Any, *_: Any, out_shape: Any = None, **__: Any) -> int:
        return (2 * taps - 1) * prod(out_shape) if out_shape is not None else 0

    return forward


def _upsample_backward(taps: int) -> Any:
    def backward(grad_output_shape: Any, *_: Any, out_shape: Any = None, **__: Any) -> int:
        return 2 * taps * prod(grad_output_shape)

    return backward


def _addmm_activation(self_shape: Any, a_shape: Any, b_shape: Any, *_: Any, out_shape: Any = None, **__: Any) -> int:
    return addmm_flop(self_shape, a_shape, b_shape)


def _formulas() -> dict[Any, Any]:
    out: dict[Any, Any] = {}

    def add(name: str, fn: Any) -> None:
        packet = getattr(aten, name, None)  # absent in an older torch: no formula, the op stays uncounted
        if packet is not None and packet not in flop_registry:
            out[packet] = fn

    for name in (
        "_scaled_dot_product_flash_attention_for_cpu",
        "_scaled_dot_product_fused_attention_overrideable",
        "_scaled_dot_product_attention_math_for_mps",
    ):
        add(name, _sdpa)
    for name in (
        "_scaled_dot_product_flash_attention_for_cpu_backward",
        "_scaled_dot_product_fused_attention_overrideable_backward",
    ):
        add(name, _sdpa_backward)
    for mode, taps in TAPS.items():
        for prefix in ("upsample_", "_upsample_"):
            add(f"{prefix}{mode}", _upsample(taps))
            add(f"{prefix}{mode}_aa", _upsample(taps))
            add(f"{prefix}{mode}_backward", _upsample_backward(taps))
            add(f"{prefix}{mode}_aa_backward", _upsample_backward(taps))
    add("_addmm_activation", _addmm_activation)
    return out


#: passed to ``FlopCounterMode(custom_mapping=...)``
EXTRA_FORMULAS: dict[Any, Any] = _formulas()
