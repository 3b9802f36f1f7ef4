"""torch.compile (real, CPU, the aot_eager backend: dynamo and AOT autograd without a C++ build)
and CUDA graphs (a fake ``CUDAGraph`` class at the hardware boundary: capture and replay are
CUDA's; the watcher, hooks and clock are the production code)."""

from __future__ import annotations

import time

import pytest
import torch
from torch import nn

from bottleneckd.torch import cuda_graphs
from bottleneckd.torch.watch import watch


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8))


def _w(model: nn.Module, opt: torch.optim.Optimizer, **kw):
    return watch(model, opt, None, local_sampling=False, socket_path="/nonexistent/x.sock", print_epoch=False, **kw)


#: FLOPs of one step of _mlp() on 16 examples: forward, then backward (weights of both layers and
#: the second layer's input; the first layer's input needs no gradient)
MLP_STEP_FLOPS = 2 * 16 * 64 * (64 + 8) + 2 * 16 * 64 * 8 * 2 + 2 * 16 * 64 * 64


@pytest.mark.slow
@pytest.mark.parametrize("how", ["in place", "wrapped"])
def test_a_compiled_model_is_counted_whole_and_stays_compiled(how):
    """model.compile() after watch(): dynamo traced into our forward wrapper and broke the graph at
    time.perf_counter (with a warning); the counted step saw the forward only (the compiled frame
    puts the dispatch modes back on leaving). Now the wrapper's edges are kept out of tracing, the
    counted step runs eagerly and counts the backward, and the model is compiled again after it."""
    from torch._dynamo.utils import counters

    counters.clear()
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if how == "in place":
        w = _w(model, opt, roofline_step=2)
        model.compile(backend="aot_eager")
        call = model
    else:
        call = torch.compile(model, backend="aot_eager")
        w = _w(call, opt, roofline_step=2)
    try:
        for _ in range(4):
            opt.zero_grad()
            call(torch.randn(16, 64)).sum().backward()
            opt.step()
        assert w.facts["flops_per_step"] == MLP_STEP_FLOPS
        w.flush()  # runtime facts are read at each report; the first may not have fallen due in 4 fast steps
        assert w.facts["compiled"] is True
        breaks = " ".join(counters["graph_break"])
        assert "perf_counter" not in breaks and "Event" not in breaks
        if how == "in place":
            assert model.__dict__.get("_compiled_call_impl") is not None  # compiled again after the count
        assert torch._dynamo.eval_frame._stance.stance == "default"
        notes = w._counting.notes(True)
        assert notes and "eagerly" in notes[0]
    finally:
        w.close()


class FakeGraph:
    """torch.cuda.CUDAGraph's surface: capture_begin/capture_end around the captured work; replay
    runs it again (here: the captured step's CPU work, so the replay takes time)."""

    def __init__(self) -> None:
        self.work = None

    def capture_begin(self, *a, **k) -> None:  # noqa: ANN002, ANN003
        pass

    def capture_end(self) -> None:
        pass

    def replay(self) -> None:
        self.work()


@pytest.fixture
def graphs():
    yield FakeGraph
    cuda_graphs.STATE.capturing = None


def _captured(graph: FakeGraph, step, kernels) -> None:  # noqa: ANN001
    """As ``with torch.cuda.graph(g): step()``; a replay runs the captured ``kernels``, no Python
    of the step and no hook (what CUDA does)."""
    graph.capture_begin()
    try:
        step()
    finally:
        graph.capture_end()
    graph.work = kernels


def test_a_whole_step_cuda_graph_is_timed_one_step_per_replay(graphs):
    """A step captured whole fires no hook when replayed: it was timed as nothing (no step at all).
    Each replay is now a step, its time in forward, the capture itself not counted, and the fact
    and the epoch block say what cannot be told apart."""
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = _w(model, opt, roofline_step=None, report_every=1e6)  # no report mid-test: the interval holds every step
    cuda_graphs.register(w, graph_cls=graphs)
    x = torch.randn(512, 64)

    def step() -> None:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        time.sleep(0.002)

    try:
        for _ in range(3):  # warm-up steps, eager: timed as usual
            step()
        assert w.steps == 3
        g = graphs()
        _captured(g, step, lambda: time.sleep(0.004))
        assert w.steps == 3 and cuda_graphs.is_step_graph(g)  # the capture's step is not a step
        for _ in range(5):
            g.replay()
        assert w.steps == 8 and w.facts["cuda_graphs"] == "whole step"
        w.drain()
        totals = w._phases.take_interval()
        assert totals.steps == 8 and totals.phases["forward"] > 5 * 0.004
        rep = w.epoch_end()
        assert rep is not None and "CUDA graphs" in rep.text and "cannot be told apart" in rep.text
    finally:
        w.close()
        cuda_graphs.unregister(w)
    assert graphs.replay is FakeGraph.__dict__["replay"]  # restored when the last watcher went


def test_graphs_replayed_inside_the_step_are_timed_by_the_marks_around_them(graphs):
    """torch.compile reduce-overhead / graphed callables: the graph runs inside forward; the step is
    timed by our marks as usual and the fact says graphs are in use (no launch cost)."""
    inner = nn.Linear(64, 64)
    g = graphs()
    _captured(g, lambda: None, lambda: None)

    class Graphed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = inner

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            g.replay()
            return self.lin(x)

    model = Graphed()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = _w(model, opt, roofline_step=None)
    cuda_graphs.register(w, graph_cls=graphs)
    try:
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(8, 64)).sum().backward()
            opt.step()
        assert w.steps == 3 and w.facts["cuda_graphs"] == "within step"
    finally:
        w.close()
        cuda_graphs.unregister(w)


def test_nothing_is_recorded_during_a_capture(graphs):
    """Inside a capture, an event recorded would become part of the graph and a query would
    invalidate a global-mode capture: the watcher's hooks do nothing there."""
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = _w(model, opt, roofline_step=None)
    cuda_graphs.register(w, graph_cls=graphs)
    calls: list[str] = []
    real_mark = w.clock.mark
    w.clock.mark = lambda label: calls.append(label) or real_mark(label)  # type: ignore[method-assign]
    try:
        g = graphs()
        g.capture_begin()
        assert cuda_graphs.capturing()
        opt.zero_grad()
        model(torch.randn(4, 64)).sum().backward()
        opt.step()
        g.capture_end()
        assert calls == [] and w.steps == 0 and not cuda_graphs.capturing()
    finally:
        w.close()
        cuda_graphs.unregister(w)
