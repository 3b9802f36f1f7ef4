"""Operand-size roofline: metadata-only operators move no bytes (views, aliases, allocations)."""

from __future__ import annotations

import pytest
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


@pytest.mark.slow
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


def test_transformer_encoder_layer_step_has_a_roofline_with_attention_counted():
    """scaled_dot_product_attention on CPU (7% of the step's bytes) had no FLOP formula and made every
    transformer step "unknown". Truth, by hand: the linear layers' matmuls, forward and backward (the
    input needs no gradient: in_proj's weight gradient only), and attention as torch counts it (2
    batched matmuls forward, 5 backward)."""
    torch.manual_seed(0)
    b, s, d, ff = 8, 128, 256, 1024
    layer = nn.TransformerEncoderLayer(d, 4, ff, batch_first=True, dropout=0.0)
    opt = torch.optim.SGD(layer.parameters(), lr=0.01)
    x = torch.randn(b, s, d)
    c = StepCounter()
    c.start()
    layer(x).sum().backward()
    opt.step()
    r = c.stop()
    n = b * s
    linear_fwd = 2 * n * d * (3 * d + d + 2 * ff)
    attention = 2 * b * s * s * d  # one batched matmul over every head
    expected = linear_fwd + 2 * attention + (2 * linear_fwd - 2 * n * d * 3 * d) + 5 * attention
    assert r is not None and r.flops_unknown is None
    assert r.flops == expected
    assert r.intensity == pytest.approx(expected / r.operand_bytes)
    assert 10 < r.intensity < 60  # 26 FLOP/B measured with this shape: far above elementwise, below a big matmul


@pytest.mark.slow
def test_upsampling_net_has_a_roofline_with_the_interpolation_counted():
    """Bilinear upsampling (38% of this net's bytes) made the step "unknown"; nearest-neighbour
    upsampling is a gather and counts no FLOPs, rightly."""
    torch.manual_seed(0)
    x = torch.randn(4, 3, 64, 64)
    counts = {}
    for mode in ("bilinear", "nearest"):
        net = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.Upsample(scale_factor=2, mode=mode), nn.Conv2d(16, 3, 3, padding=1)
        )
        c = StepCounter()
        c.start()
        net(x).sum().backward()
        counts[mode] = c.stop()
    bil, nea = counts["bilinear"], counts["nearest"]
    assert bil is not None and nea is not None and bil.flops_unknown is None and nea.flops_unknown is None
    up_out = 4 * 16 * 128 * 128
    assert bil.flops - nea.flops == 7 * up_out + 8 * up_out  # 4 taps: 4 multiplies + 3 adds; backward 4 + 4
    assert bil.intensity == pytest.approx(bil.flops / bil.operand_bytes) and 5 < bil.intensity < 12
    assert bil.shares()["conv"] == pytest.approx(nea.flops / bil.flops)


def test_a_small_uncounted_compute_op_beside_a_big_counted_step_does_not_make_it_unknown():
    """Unknown depends on the FLOPs that could be missing, not on bytes: a tiny LSTM beside a big MLP
    (its bytes x 600 FLOP/B far under 5% of the counted FLOPs) leaves the count known; the LSTM job,
    whose compute is all in mkldnn_rnn_layer, stays unknown (below)."""
    torch.manual_seed(0)
    big = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 512))
    small = nn.LSTM(4, 4, batch_first=True)
    c = StepCounter()
    c.start()
    (big(torch.randn(128, 512)).sum() + small(torch.randn(1, 2, 4))[0].sum()).backward()
    r = c.stop()
    assert r is not None and r.uncounted_ops and r.uncounted_bytes > 0
    assert r.missing_flops_bound < 0.05 * r.flops and r.flops_unknown is None and r.intensity
    # the other way round: the LSTM's bytes are under 1% of an elementwise step's (the old byte
    # threshold called it known), but its FLOPs could be all the FLOPs there are
    wide = nn.Sequential(nn.LayerNorm(4096), nn.GELU(), nn.LayerNorm(4096))
    lstm = nn.LSTM(16, 16, batch_first=True)
    c = StepCounter()
    c.start()
    (wide(torch.randn(64, 4096)).sum() + lstm(torch.randn(2, 4, 16))[0].sum()).backward()
    r = c.stop()
    assert r is not None and 0 < r.uncounted_bytes < 0.01 * r.operand_bytes
    assert r.intensity is None and "mkldnn_rnn_layer" in (r.flops_unknown or "")


@pytest.mark.slow
def test_lstm_lbfgs_workload_model_stays_unknown():
    """scripts/workloads/lstm_lbfgs.py's model (2-layer LSTM, hidden 384): its compute is uncounted."""
    torch.manual_seed(0)
    lstm, out = nn.LSTM(64, 384, num_layers=2, batch_first=True), nn.Linear(384, 1)
    c = StepCounter()
    c.start()
    nn.functional.mse_loss(out(lstm(torch.randn(16, 16, 64))[0][:, -1]), torch.randn(16, 1)).backward()
    r = c.stop()
    assert r is not None and r.intensity is None and "mkldnn_rnn_layer" in (r.flops_unknown or "")


def test_the_counted_step_says_the_dtype_its_flops_ran_in():
    """fp32 parameters under autocast run their matmuls in bf16: that, not the parameters' dtype, is
    the arithmetic the peak must be for; _scaled_mm's FLOPs are FP8."""
    from bottleneckd.torch.counting import precision_facts

    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten(), nn.Linear(8 * 14 * 14, 4))
    x = torch.randn(2, 3, 16, 16)
    c = StepCounter()
    c.start()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = net(x)
    y.float().sum().backward()
    f = precision_facts(c.stop())
    assert f["compute_dtype"] == "bfloat16" and f["fp8_flop_share"] == 0.0 and 0.5 < f["conv_flop_share"] < 1.0
    c = StepCounter()
    c.start()
    net(x).sum().backward()
    assert precision_facts(c.stop())["compute_dtype"] == "float32"
    a, bm = torch.randn(32, 64).to(torch.float8_e4m3fn), torch.randn(16, 64).to(torch.float8_e4m3fn).t()
    one = torch.tensor(1.0)
    c = StepCounter()
    c.start()
    y = torch._scaled_mm(a, bm, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    torch.mm(y, torch.randn(16, 16, dtype=torch.bfloat16))
    f = precision_facts(c.stop())
    assert f["fp8_flop_share"] == pytest.approx(0.8) and f["compute_dtype"] == "bfloat16"


def _counted_step(model: nn.Module, x: torch.Tensor, steps: int = 1):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    c = StepCounter()
    c.start(frozenset(tuple(p.shape) for p in model.parameters()))
    opt.zero_grad()
    for _ in range(steps):  # micro-batches: their gradients accumulate
        model(x).sum().backward()
    opt.step()
    return c.stop()


def test_the_weights_share_of_the_bytes_tells_weight_traffic_from_activation_traffic():
    """4 micro-batches of 16 rows through 1536-wide layers (the labelled grad_accumulation's MLP): the
    bytes are the weights' (read by the products, their gradients accumulated, the update); LayerNorm
    and GELU on wide rows (layernorm_gelu_wide): the activations'. The fact picks between more rows
    per product and fusing the elementwise operators."""
    mlp = nn.Sequential(nn.Linear(1536, 1536), nn.ReLU(), nn.Linear(1536, 1536), nn.ReLU(), nn.Linear(1536, 10))
    weights = _counted_step(mlp, torch.randn(16, 1536), steps=4)
    rowwise = _counted_step(nn.Sequential(nn.LayerNorm(4096), nn.GELU(), nn.LayerNorm(4096)), torch.randn(64, 4096))
    assert weights is not None and rowwise is not None
    assert weights.weight_byte_share is not None and weights.weight_byte_share > 0.8
    assert rowwise.weight_byte_share is not None and rowwise.weight_byte_share < 0.05
    assert 0 < weights.weight_bytes <= weights.operand_bytes
    # no shapes given: nothing is counted as a weight's
    c = StepCounter()
    c.start()
    mlp(torch.randn(16, 1536)).sum().backward()
    assert c.stop().weight_bytes == 0
