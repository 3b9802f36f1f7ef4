"""Operand-size roofline (section 2.3): FLOPs and the bytes of every operator's inputs and
outputs over one training step, counted once per run.

FLOPs come from ``torch.utils.flop_counter.FlopCounterMode``; bytes from a dispatch mode that
adds up the sizes of each aten operator's tensor inputs and outputs. Operators that move no data
count no bytes: views (``OpOverload.is_view``: ``view``, ``t``, ``transpose``, ``expand``,
``detach``, ...), the view-like ops the schema does not mark (``_unsafe_view``), and factories
that only allocate (``empty_like``); factories that fill (``zeros_like``, ``fill_``) count only
what they write. On a TransformerEncoderLayer step the metadata-only ops were 43% of the bytes
counted before this, nearly halving the arithmetic intensity. With the step's measured
compute time this gives achieved FLOP/s and bytes/s, compared against the peaks to tell
compute-bound from memory-bandwidth-bound on CPU and GPU alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode, flop_registry

#: compute operators (recurrent layers, vendor kernels, attention) that FlopCounterMode may have no
#: formula for: their bytes are counted, their FLOPs are not (an LSTM step on CPU runs as
#: mkldnn_rnn_layer(_backward): 0 FLOPs counted for it)
COMPUTE_OPS = re.compile(r"rnn|lstm|gru|conv|linear|matmul|mkldnn|cudnn|miopen|attention")
#: share of the operand bytes in such operators at or above which the step's FLOPs are unknown. Small:
#: these operators reuse each byte many times, so a small share of the bytes can be most of the
#: FLOPs (lstm_lbfgs: the LSTM kernels were 5% of the step's bytes, LBFGS's vector updates the rest,
#: and their ~8 GFLOP against 0.1 MFLOP counted made an intensity of 0.0001 FLOP/byte)
UNCOUNTED_SHARE = 0.01


def _nbytes(obj: object) -> int:
    return sum(t.numel() * t.element_size() for t in tree_flatten(obj)[0] if isinstance(t, torch.Tensor))


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


def operand_bytes(func: torch._ops.OpOverload, args: tuple, kwargs: dict | None, out: object) -> int:
    """Bytes an aten operator reads and writes, by its operand sizes (0 for metadata-only ops)."""
    name = func.overloadpacket.__name__
    if func.is_view or name in NO_DATA_OPS:
        return 0
    if name in WRITE_ONLY_OPS:
        return _nbytes(out)
    return _nbytes((args, kwargs)) + _nbytes(out)


class OperandBytes(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0
        self.ops = 0
        self.uncounted_bytes = 0  # bytes of compute operators with no FLOP formula
        self.uncounted_ops: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        out = func(*args, **(kwargs or {}))
        n = operand_bytes(func, args, kwargs, out)
        self.bytes += n
        self.ops += 1
        name = func.overloadpacket.__name__
        if n and func.overloadpacket not in flop_registry and COMPUTE_OPS.search(name):
            self.uncounted_bytes += n
            self.uncounted_ops.add(name)
        return out


@dataclass(frozen=True)
class StepCounts:
    flops: int
    operand_bytes: int
    ops: int
    uncounted_bytes: int = 0  # operand bytes of compute operators FlopCounterMode has no formula for
    uncounted_ops: tuple[str, ...] = ()

    @property
    def flops_unknown(self) -> str | None:
        """Why the counted FLOPs are not the step's (None: they are): compute operators without a
        FLOP formula carry a substantial share of the bytes. A step of elementwise and
        normalisation operators only counts (almost) no FLOPs, and rightly: it moves bytes."""
        if self.operand_bytes and self.uncounted_bytes >= UNCOUNTED_SHARE * self.operand_bytes:
            share = self.uncounted_bytes / self.operand_bytes
            return f"{share:.0%} of bytes in ops with no FLOP formula: {', '.join(self.uncounted_ops)}"[
                :64
            ]  # a short fact
        return None

    @property
    def intensity(self) -> float | None:
        if not self.operand_bytes or self.flops_unknown:
            return None
        return self.flops / self.operand_bytes


class StepCounter:
    """Counts one step: ``start()`` at the forward pre-hook, ``stop()`` after optimizer.step()."""

    def __init__(self) -> None:
        self._flops: FlopCounterMode | None = None
        self._bytes: OperandBytes | None = None
        self.result: StepCounts | None = None

    @property
    def active(self) -> bool:
        return self._flops is not None

    def start(self) -> None:
        self._flops = FlopCounterMode(display=False)
        self._bytes = OperandBytes()
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
        )
        self._flops = self._bytes = None
        return self.result
