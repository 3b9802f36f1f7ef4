"""Operand-size roofline (section 2.3): FLOPs and the bytes of every operator's inputs and
outputs over one training step, counted once per run.

FLOPs come from ``torch.utils.flop_counter.FlopCounterMode`` with the formulas it lacks added
(``flop_formulas.py``: attention on CPU, interpolating upsampling); bytes from a dispatch mode that
adds up the sizes of each aten operator's tensor inputs and outputs. Operators that move no data
count no bytes: views (``OpOverload.is_view``: ``view``, ``t``, ``transpose``, ``expand``,
``detach``, ...), the view-like ops the schema does not mark (``_unsafe_view``), and factories
that only allocate (``empty_like``); factories that fill (``zeros_like``, ``fill_``) count only
what they write. On a TransformerEncoderLayer step the metadata-only ops were 43% of the bytes
counted before this, nearly halving the arithmetic intensity. With the step's measured
compute time this gives achieved FLOP/s and bytes/s, compared against the peaks to tell
compute-bound from memory-bandwidth-bound on CPU and GPU alike.

The same mode notes the dtype each counted FLOP ran in (the first floating-point operand: bf16
under autocast whatever the parameters, float8 for ``_scaled_mm``) and the FLOPs in convolutions,
so the peak the step is judged against is that of the arithmetic it ran (``peaks/select.py``).

Unknown, not zero: a compute operator with no FLOP formula (an LSTM's ``mkldnn_rnn_layer``) may
hide most of the step's FLOPs. How many it could hide is bounded by its operand bytes times the
highest intensity an operator can usefully have (``MISSING_FLOPS_PER_BYTE``); the step's FLOPs are
unknown when that bound is a noticeable share of the FLOPs counted (``MISSING_SHARE``), and known
however many bytes such operators move when they could not change the count.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from bottleneckd.torch.flop_formulas import EXTRA_FORMULAS

#: compute operators (recurrent layers, vendor kernels, grouped and integer matmuls, FFTs) that may
#: have no FLOP formula: their bytes are counted, their FLOPs are not (an LSTM step on CPU runs as
#: mkldnn_rnn_layer(_backward): 0 FLOPs counted for it). Names, not substrings: "bilinear" in
#: upsample_bilinear2d is no linear layer.
COMPUTE_OPS = re.compile(
    r"rnn|lstm|gru|conv|attention|fft|(^|_)(mm|bmm|mv|addmv|addbmm|dot|matmul|linear|einsum)($|_)|_mm$"
    r"|linalg_(cholesky|qr|svd|eig|solve|inv|lstsq|lu|ldl|householder|matrix_exp)"  # not linalg_vector_norm
)
#: FLOPs per operand byte an operator without a formula is assumed to reach at most: the highest
#: ridge point in the catalog (B200 FP8, 4.5 PFLOP/s over 7.7 TB/s = 584 FLOP/B). An operator more
#: intense than every ridge is compute-bound everywhere, so this bounds the FLOPs that matter.
MISSING_FLOPS_PER_BYTE = 600.0
#: the step's FLOPs are unknown when operators without a formula could hide this share of the FLOPs
#: counted (the intensity could be off by as much). lstm_lbfgs: the LSTM kernels are 5% of the
#: step's bytes and ~8 GFLOP against 0.1 MFLOP counted; a TransformerEncoderLayer step (all of its
#: compute counted) has none.
MISSING_SHARE = 0.05
#: dtype of the first floating operand -> the kind of arithmetic (peaks/select.py paths)
_KIND = {
    torch.bfloat16: "bfloat16",
    torch.float16: "float16",
    torch.float32: "float32",
    torch.float64: "float64",
}
_CONV = re.compile(r"conv")


def _kind(args: object) -> str | None:
    for t in tree_flatten(args)[0]:
        if isinstance(t, torch.Tensor) and (t.is_floating_point()):
            k = _KIND.get(t.dtype)
            if k is None and "float8" in str(t.dtype):
                return "float8"
            return k
    return None


def _decomposes(func: torch._ops.OpOverload) -> bool:
    """A composite operator: the operators it decomposes into are counted instead."""
    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd")
    except Exception:  # noqa: BLE001
        return False


#: not marked as views in their schema, but they move no data (aliases, allocations)
NO_DATA_OPS = frozenset(
    {
        "_unsafe_view",
        "_reshape_alias",
        "alias",
        "detach",
        "lift_fresh",
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "resize_",
        "set_",
        "_local_scalar_dense",
    }
)
#: write their output and read no tensor data
WRITE_ONLY_OPS = frozenset(
    {
        "zeros",
        "ones",
        "full",
        "zeros_like",
        "ones_like",
        "full_like",
        "rand_like",
        "randn_like",
        "new_zeros",
        "new_ones",
        "new_full",
        "zero_",
        "fill_",
        "scalar_tensor",
        "arange",
    }
)


def _operands(func: torch._ops.OpOverload, args: tuple, kwargs: dict | None, out: object) -> list[torch.Tensor]:
    """The tensors an aten operator reads and writes (none for metadata-only ops; only its output
    for an op that writes without reading)."""
    name = func.overloadpacket.__name__
    if func.is_view or name in NO_DATA_OPS:
        return []
    found = tree_flatten(out if name in WRITE_ONLY_OPS else (args, kwargs, out))[0]
    return [t for t in found if isinstance(t, torch.Tensor)]


def operand_bytes(func: torch._ops.OpOverload, args: tuple, kwargs: dict | None, out: object) -> int:
    """Bytes an aten operator reads and writes, by its operand sizes (0 for metadata-only ops)."""
    return sum(t.numel() * t.element_size() for t in _operands(func, args, kwargs, out))


class OperandBytes(TorchDispatchMode):
    """Operand bytes of every operator; with ``registry`` (a FlopCounterMode's formulas) also the
    FLOPs of each counted operator by the dtype it ran in, and those in convolutions."""

    def __init__(
        self, registry: dict[Any, Any] | None = None, weight_shapes: frozenset[tuple[int, ...]] = frozenset()
    ) -> None:
        super().__init__()
        self.bytes = 0
        self.weight_shapes = weight_shapes  # the model's parameters' shapes
        self.weight_bytes = 0  # bytes of operands shaped as a parameter (weights, their gradients, optimizer state)
        self.ops = 0
        self.uncounted_bytes = 0  # bytes of compute operators with no FLOP formula
        self.uncounted_ops: set[str] = set()
        self.registry = registry if registry is not None else {**flop_registry, **EXTRA_FORMULAS}
        self._tally = registry is not None
        self.flops_by_kind: Counter[str] = Counter()
        self.conv_flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        out = func(*args, **(kwargs or {}))
        operands = _operands(func, args, kwargs, out)
        n = sum(t.numel() * t.element_size() for t in operands)
        self.bytes += n
        if n and self.weight_shapes:
            self.weight_bytes += sum(
                t.numel() * t.element_size() for t in operands if tuple(t.shape) in self.weight_shapes
            )
        self.ops += 1
        packet = func.overloadpacket
        formula = self.registry.get(packet)
        if formula is None:
            if n and COMPUTE_OPS.search(packet.__name__) and not _decomposes(func):
                self.uncounted_bytes += n
                self.uncounted_ops.add(packet.__name__)
        elif self._tally:
            self._count(packet.__name__, formula, args, kwargs, out)
        return out

    def _count(self, name: str, formula: Any, args: tuple, kwargs: dict | None, out: object) -> None:
        flops = int(formula(*args, **(kwargs or {}), out_val=out))
        if flops <= 0:
            return
        self.flops_by_kind[_kind(args) or "other"] += flops
        if _CONV.search(name):
            self.conv_flops += flops


@dataclass(frozen=True)
class StepCounts:
    flops: int
    operand_bytes: int
    ops: int
    uncounted_bytes: int = 0  # operand bytes of compute operators FlopCounterMode has no formula for
    uncounted_ops: tuple[str, ...] = ()
    flops_by_kind: tuple[tuple[str, int], ...] = ()  # (float8 | bfloat16 | float16 | float32 | float64, FLOPs)
    conv_flops: int = 0
    weight_bytes: int = 0  # operand bytes shaped as a parameter (weights, gradients, optimizer state)

    @property
    def weight_byte_share(self) -> float | None:
        """The share of the step's operand bytes in tensors shaped as one of the model's parameters:
        the weights the products read, their gradients, the gradient accumulation's and the
        optimizer's updates. Near 1 (few rows per weight: small micro-batches), more rows per
        product cut the traffic, and fusing elementwise operators on activations does not; near 0,
        the traffic is activations. An activation shaped as a parameter (a square layer fed as many
        rows as it has features) counts as one."""
        return self.weight_bytes / self.operand_bytes if self.operand_bytes else None

    @property
    def missing_flops_bound(self) -> float:
        """At most this many FLOPs can hide in compute operators without a formula."""
        return self.uncounted_bytes * MISSING_FLOPS_PER_BYTE

    @property
    def flops_unknown(self) -> str | None:
        """Why the counted FLOPs are not the step's (None: they are): compute operators without a
        FLOP formula could hold a noticeable share of them. A step of elementwise and
        normalisation operators only counts (almost) no FLOPs, and rightly: it moves bytes."""
        if self.uncounted_bytes and self.missing_flops_bound >= MISSING_SHARE * self.flops:
            ratio = f"{self.missing_flops_bound / self.flops:.2g}" if self.flops else "inf"
            return f"up to {ratio}x the FLOPs counted in {', '.join(self.uncounted_ops)}"[:64]  # a short fact
        return None

    @property
    def intensity(self) -> float | None:
        if not self.operand_bytes or self.flops_unknown:
            return None
        return self.flops / self.operand_bytes

    def shares(self) -> dict[str, float]:
        """Shares of the counted FLOPs: by dtype kind, and ``conv`` for convolutions."""
        total = sum(v for _, v in self.flops_by_kind)
        if total <= 0:
            return {}
        out = {k: v / total for k, v in self.flops_by_kind}
        out["conv"] = min(1.0, self.conv_flops / total)
        return out


class StepCounter:
    """Counts one step: ``start()`` at the forward pre-hook, ``stop()`` after optimizer.step()."""

    def __init__(self) -> None:
        self._flops: FlopCounterMode | None = None
        self._bytes: OperandBytes | None = None
        self.result: StepCounts | None = None

    @property
    def active(self) -> bool:
        return self._flops is not None

    def start(self, weight_shapes: frozenset[tuple[int, ...]] = frozenset()) -> None:
        """``weight_shapes``: the model's parameters' shapes (``StepCounts.weight_byte_share``)."""
        self._flops = FlopCounterMode(display=False, custom_mapping=EXTRA_FORMULAS)
        self._bytes = OperandBytes(self._flops.flop_registry, weight_shapes)
        self._flops.__enter__()
        self._bytes.__enter__()

    def stop(self) -> StepCounts | None:
        if self._flops is None or self._bytes is None:
            return None
        self._bytes.__exit__(None, None, None)
        self._flops.__exit__(None, None, None)
        b = self._bytes
        self.result = StepCounts(
            int(self._flops.get_total_flops()),
            int(b.bytes),
            b.ops,
            int(b.uncounted_bytes),
            tuple(sorted(b.uncounted_ops)),
            tuple(sorted(b.flops_by_kind.items())),
            int(b.conv_flops),
            int(b.weight_bytes),
        )
        self._flops = self._bytes = None
        return self.result
