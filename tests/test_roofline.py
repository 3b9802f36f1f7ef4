"""Operand-size roofline: metadata-only operators move no bytes (views, aliases, allocations)."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from bottleneckd.torch.roofline import OperandBytes, StepCounter


def test_views_transposes_and_detach_count_no_bytes():
    a, b = torch.randn(32, 64), torch.randn(32, 16)
    with OperandBytes() as m:
        y = torch.mm(a.t(), b)  # t is a view: the matmul reads a and b and writes y, nothing more
        a.view(64, 32).transpose(0, 1).detach().expand(2, 32, 64)
        torch.empty_like(a)
    assert m.bytes == (32 * 64 + 32 * 16 + 64 * 16) * 4
    assert y.shape == (64, 16)


def test_fills_count_only_what_they_write_and_in_place_ops_read_and_write():
    a, b = torch.randn(1000), torch.randn(1000)
    with OperandBytes() as m:
        torch.zeros_like(a)
    assert m.bytes == 4000
    with OperandBytes() as m:
        a.add_(b)  # reads a and b, writes a
    assert m.bytes == 3 * 4000


class _Raw(TorchDispatchMode):
    """The count before the fix: every operator's inputs and outputs."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        from torch.utils._pytree import tree_flatten

        out = func(*args, **(kwargs or {}))
        self.bytes += sum(t.numel() * t.element_size() for t in tree_flatten((args, kwargs, out))[0] if isinstance(t, torch.Tensor))
        return out


def test_transformer_step_intensity_leaves_out_metadata_ops():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True, dropout=0.0)
    opt = torch.optim.AdamW(layer.parameters())
    x = torch.randn(8, 128, 256)
    c = StepCounter()
    raw = _Raw()
    with raw:
        c.start()
        layer(x).sum().backward()
        opt.step()
        counts = c.stop()
    assert counts is not None and counts.flops > 0
    # the metadata-only ops (view, t, transpose, detach, _unsafe_view, expand, empty_like) are a large
    # share of the raw operand bytes of this step; none of them is counted
    assert counts.operand_bytes < 0.75 * raw.bytes
    with OperandBytes() as m:
        for _ in range(10):
            x.view(8, 128 * 256).t().detach()
    assert m.bytes == 0 and m.ops == 30
