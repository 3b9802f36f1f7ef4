"""The step's phases as ranges in the user's own profiler trace (torch/ranges.py): present under
``torch.profiler.profile``, properly nested with PyTorch's own ranges on the thread (a trace reader
needs that), and no cost at all when no profiler runs."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from bottleneckd.torch import ranges
from bottleneckd.torch.watch import Watcher

PHASES = ("data_wait", "transfer", "forward", "backward", "optimizer")


def _loop(w: Watcher, model: nn.Module, opt: torch.optim.Optimizer, loader, steps: int) -> None:
    for i, (x, y) in enumerate(loader):
        if i == steps:
            break
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def _job(optimizer: str = "sgd"):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = (
        torch.optim.SGD(model.parameters(), lr=0.01)
        if optimizer == "sgd"
        else torch.optim.Adam(model.parameters(), lr=0.01)
    )
    ds = torch.utils.data.TensorDataset(torch.randn(256, 32), torch.randint(0, 2, (256,)))
    return model, opt, torch.utils.data.DataLoader(ds, batch_size=16)


def _slices(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and "dur" in e]


def test_phases_appear_nested_in_the_users_profiler_trace(tmp_path):
    model, opt, loader = _job("adam")
    w = Watcher(  # the one counted step (under FLOP-counting dispatch modes) before the profiler starts
        model,
        opt,
        loader,
        print_epoch=False,
        local_sampling=False,
        socket_path=str(tmp_path / "none.sock"),
        roofline_step=1,
    )
    try:
        _loop(w, model, opt, w.dataloader, 3)  # before the profiler: nothing of ours runs
        assert "step" not in opt.__dict__
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            _loop(w, model, opt, w.dataloader, 6)
        _loop(w, model, opt, w.dataloader, 2)
        assert w._ranges is not None and w._ranges.phase == ""  # the last one closed, nothing opened since
    finally:
        w.close()
    assert "step" not in opt.__dict__  # the optimizer's wrapper came off with the watcher
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = _slices(json.loads(path.read_text()))
    ours = [e for e in events if e["name"].startswith(ranges.PREFIX)]
    names = {e["name"][len(ranges.PREFIX) :] for e in ours}
    assert names == set(PHASES), names
    per_phase = {p: sum(1 for e in ours if e["name"] == ranges.PREFIX + p) for p in PHASES}
    assert all(n >= 5 for n in per_phase.values()), per_phase  # one per step (the first may start mid-phase)
    # every range of ours nests with every other slice on its thread: none starts inside another
    # and ends after it (trace readers drop or cut such slices)
    for a in ours:
        a0, a1 = a["ts"], a["ts"] + a["dur"]
        for b in events:
            if b is a or b["tid"] != a["tid"] or b["pid"] != a["pid"]:
                continue
            b0, b1 = b["ts"], b["ts"] + b["dur"]
            straddles = (a0 < b0 < a1 < b1) or (b0 < a0 < b1 < a1)
            assert not straddles, (a["name"], a0, a1, b["name"], b0, b1)
    # the optimizer's range holds torch's own Optimizer.step range
    steps = [e for e in events if e["name"].startswith("Optimizer.step#")]
    opts = [e for e in ours if e["name"] == ranges.PREFIX + "optimizer"]
    assert steps and all(
        any(o["ts"] <= s["ts"] and s["ts"] + s["dur"] <= o["ts"] + o["dur"] for o in opts) for s in steps
    )


def test_no_profiler_no_cost(tmp_path, monkeypatch):
    """Without a profiler no range is made and the optimizer is left as it is."""
    calls = []

    class Counting(torch.autograd.profiler.record_function):
        def __init__(self, name: str, *a, **k) -> None:
            if name.startswith(ranges.PREFIX):
                calls.append(name)
            super().__init__(name, *a, **k)

    monkeypatch.setattr(ranges._profiler, "record_function", Counting)
    model, opt, loader = _job()
    w = Watcher(model, opt, loader, print_epoch=False, local_sampling=False, socket_path=str(tmp_path / "none.sock"))
    try:
        _loop(w, model, opt, w.dataloader, 10)
        assert w.steps >= 9
    finally:
        w.close()
    assert calls == [] and "step" not in opt.__dict__
    # the control: the same counting sees our ranges once a profiler runs
    w = Watcher(model, opt, loader, print_epoch=False, local_sampling=False, socket_path=str(tmp_path / "none.sock"))
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            _loop(w, model, opt, w.dataloader, 3)
    finally:
        w.close()
    assert ranges.PREFIX + "forward" in calls


@pytest.mark.parametrize("fail_at", ["open", "close"])
def test_a_failing_range_never_breaks_training(tmp_path, monkeypatch, fail_at):
    def broken(*a, **k):
        raise RuntimeError("injected")

    monkeypatch.setattr(ranges.PhaseRanges, "_open" if fail_at == "open" else "close", broken)
    model, opt, loader = _job()
    before = [p.detach().clone() for p in model.parameters()]
    w = Watcher(model, opt, loader, print_epoch=False, local_sampling=False, socket_path=str(tmp_path / "none.sock"))
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            _loop(w, model, opt, w.dataloader, 4)
    finally:
        w.close()
    assert not w.enabled  # ours off
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))  # training went on


@pytest.mark.parametrize("made", ["before", "while profiling"])
def test_lr_schedulers_and_our_step_wrapper_go_together(tmp_path, made):
    """torch's LR schedulers wrap optimizer.step (a plain function through the bound method's
    __func__): made before the profiler, we wrap theirs; made while it runs, they wrap ours."""
    model, opt, loader = _job()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5) if made == "before" else None
    w = Watcher(model, opt, loader, print_epoch=False, local_sampling=False, socket_path=str(tmp_path / "none.sock"))
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            _loop(w, model, opt, w.dataloader, 2)
            if sched is None:
                sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
            _loop(w, model, opt, w.dataloader, 2)
            sched.step()
        assert opt.param_groups[0]["lr"] == pytest.approx(0.005)
        assert opt._opt_called  # the scheduler saw the optimizer step through both wrappers
        assert w.enabled and w.steps >= 4
    finally:
        w.close()
    names = [e.name for e in prof.events()]
    assert names.count(ranges.PREFIX + "optimizer") >= 3
