"""Operand-size roofline (section 2.3): FLOPs and the bytes of every operator's inputs and
outputs over one training step, counted once per run.

FLOPs come from ``torch.utils.flop_counter.FlopCounterMode``; bytes from a dispatch mode that
adds up the sizes of each aten operator's tensor inputs and outputs. With the step's measured
compute time this gives achieved FLOP/s and bytes/s, compared against the peaks to tell
compute-bound from memory-bandwidth-bound on CPU and GPU alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode


def _nbytes(obj: object) -> int:
    return sum(t.numel() * t.element_size() for t in tree_flatten(obj)[0] if isinstance(t, torch.Tensor))


class OperandBytes(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        out = func(*args, **(kwargs or {}))
        self.bytes += _nbytes((args, kwargs)) + _nbytes(out)
        self.ops += 1
        return out


@dataclass(frozen=True)
class StepCounts:
    flops: int
    operand_bytes: int
    ops: int

    @property
    def intensity(self) -> float | None:
        return self.flops / self.operand_bytes if self.operand_bytes else None


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
        self.result = StepCounts(int(self._flops.get_total_flops()), int(self._bytes.bytes), self._bytes.ops)
        self._flops = self._bytes = None
        return self.result
