"""fp16 loss scaling as GradScaler does it: one fused check-and-unscale per device and dtype (not
two kernels per parameter), the scale kept on the device, and no host read at all with an optimizer
that takes AMP scaling itself (fused SGD here, on CPU)."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from bottleneckd.torch.mitigations.base import Context, LoopEvent
from bottleneckd.torch.mitigations.mixed_precision import MixedPrecision


class Ops(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        self.names.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def _ops_of_the_check(layers: int) -> list[str]:
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(layers)])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(2, 8)).sum().backward()
    m = MixedPrecision("float16", init_scale=8.0)
    with Ops() as ops:
        m.on_event(LoopEvent.BEFORE_OPTIMIZER_STEP, Context(model, opt, None))
    return ops.names


def test_one_fused_unscale_whatever_the_number_of_parameters():
    few, many = _ops_of_the_check(2), _ops_of_the_check(40)
    assert many.count("_amp_foreach_non_finite_check_and_unscale_") == 1
    assert "isfinite" not in many and "stack" not in many
    assert len(many) == len(few)  # was 2 kernels per parameter (isfinite, all) + a stack: 160 vs 8 here


def test_an_optimizer_with_amp_support_skips_an_overflow_on_the_device_without_a_host_read(monkeypatch):
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    assert opt._step_supports_amp_scaling
    m = MixedPrecision("float16", init_scale=1024.0)
    ctx = Context(model, opt, None)
    x = torch.randn(4, 8)

    def one_step(loss_factor: float) -> None:
        opt.zero_grad()
        out = model(x)
        m._scale_output_grad(model, (torch.ones_like(out),))  # the scale is made on the gradients' device
        (out.sum() * loss_factor * m._t["scale"]).backward()  # a scaled loss, as the backward pre-hook makes it
        m.on_event(LoopEvent.BEFORE_OPTIMIZER_STEP, ctx)
        opt.step()
        m.on_event(LoopEvent.STEP_END, ctx)

    def no_read(*_a, **_k):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("a host read of a device value inside the step")

    before = model.weight.detach().clone()
    with monkeypatch.context() as mp:
        for name in ("item", "__bool__", "__float__", "__int__", "tolist"):
            mp.setattr(torch.Tensor, name, no_read)
        one_step(1.0)
    expected = before - 0.1 * x.sum(0, keepdim=True)  # unscaled by the fused step itself
    assert torch.allclose(model.weight, expected, atol=1e-4)
    assert not hasattr(opt, "grad_scale") and not hasattr(opt, "found_inf")  # handed back after the step
    before = model.weight.detach().clone()
    with monkeypatch.context() as mp:
        for name in ("item", "__bool__", "__float__", "__int__", "tolist"):
            mp.setattr(torch.Tensor, name, no_read)
        one_step(float("inf"))  # an overflow: the fused step skips it on the device
    assert torch.equal(model.weight, before) and m.skipped_steps == 1 and m.scale == 512.0
