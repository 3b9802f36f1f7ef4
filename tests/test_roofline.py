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
        self.bytes += sum(
            t.numel() * t.element_size() for t in tree_flatten((args, kwargs, out))[0] if isinstance(t, torch.Tensor)
        )
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


def test_lstm_step_flops_are_unknown_not_zero_intensity():
    """FlopCounterMode has no formula for the LSTM kernels (mkldnn_rnn_layer on CPU): the Linear
    head's few FLOPs over the LSTM's bytes would be an intensity near 0, a false memory-bound."""
    torch.manual_seed(0)
    lstm, head = nn.LSTM(16, 32, num_layers=2, batch_first=True), nn.Linear(32, 1)
    c = StepCounter()
    c.start()
    head(lstm(torch.randn(4, 8, 16))[0][:, -1]).sum().backward()
    r = c.stop()
    assert r is not None and r.operand_bytes > 0 and r.uncounted_bytes > 0.01 * r.operand_bytes
    assert r.intensity is None and r.flops_unknown and len(r.flops_unknown) <= 64


def test_counting_reports_unknown_flops_as_a_reason_not_a_number():
    from bottleneckd.model.facts import Facts
    from bottleneckd.torch.counting import RooflineCounting

    lstm = nn.LSTM(16, 32, batch_first=True)
    rc = RooflineCounting(at_step=0)
    rc.maybe_start(0)
    lstm(torch.randn(4, 8, 16))[0].sum().backward()
    facts = rc.finish()
    assert "arithmetic_intensity" not in facts and "flops_per_step" not in facts and facts["flops_unknown"]
    assert rc.achieved(0.1) == {}  # no achieved FLOP/s from a partial count
    Facts(facts)  # the facts are valid (a short string)
    mlp = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
    c = StepCounter()
    c.start()
    mlp(torch.randn(8, 16)).sum().backward()
    r = c.stop()
    assert r is not None and r.flops_unknown is None and r.intensity and r.intensity > 0


def test_an_elementwise_step_has_a_near_zero_intensity_not_an_unknown_one():
    """LayerNorm and GELU have no FLOP formula but are no hidden compute: the step moves bytes, and
    its intensity says so (the labelled layernorm_gelu_wide is memory-bandwidth-bound)."""
    from bottleneckd.torch.roofline import StepCounter

    m = torch.nn.Sequential(torch.nn.LayerNorm(4096), torch.nn.GELU(), torch.nn.LayerNorm(4096), torch.nn.GELU())
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x = torch.randn(16, 4096)
    c = StepCounter()
    c.start()
    opt.zero_grad()
    m(x).sum().backward()
    opt.step()
    r = c.stop()
    assert r is not None and r.flops_unknown is None
    assert r.intensity is not None and r.intensity < 0.5
