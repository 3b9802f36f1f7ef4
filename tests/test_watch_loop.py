"""watch() on the loop as written (issue 14 items 1 and 7) and careless use (issue 16 items 17-18)."""

import itertools
import logging
import threading
import time

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset, TensorDataset  # noqa: E402

from bottleneckd.torch import watch  # noqa: E402
from bottleneckd.torch.hot_path import DEPTH  # noqa: E402
from bottleneckd.torch.roofline import OperandBytes  # noqa: E402


class Slow(Dataset):
    def __init__(self, n, delay):
        self.n, self.delay = n, delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.delay)
        return torch.randn(8), torch.tensor(i % 2)


def kw(tmp_path, **extra):
    return {
        "socket_path": str(tmp_path / "none.sock"),
        "local_sampling": False,
        "print_epoch": False,
        "roofline_step": None,
        **extra,
    }


def step(model, opt, x, y):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


@pytest.mark.parametrize("loop", ["for", "enumerate", "islice"])
def test_iterating_the_original_loader_times_data_waits_and_ends_epochs(tmp_path, loop):
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Slow(8, 0.005), batch_size=2)  # 4 batches of 10 ms
    w = watch(model, opt, loader, **kw(tmp_path))
    assert w.dataloader is loader
    for _ in range(2):
        if loop == "for":
            for x, y in loader:
                step(model, opt, x, y)
        elif loop == "enumerate":
            for _i, (x, y) in enumerate(loader):
                step(model, opt, x, y)
        else:
            for x, y in itertools.islice(loader, 3):  # stops early: the iterator is dropped, the epoch ends
                step(model, opt, x, y)
    n = 3 if loop == "islice" else 4
    assert [r.steps for r in w.epoch_reports] == [n, n] and w.epoch == 2
    assert all(r.phases["data_wait"] >= 0.98 * n * 0.010 for r in w.epoch_reports)
    w.close()
    assert type(loader) is DataLoader and "_bottleneckd_events" not in loader.__dict__  # restored on close
    list(loader)
    assert len(w.epoch_reports) == 2  # no longer watched


def test_a_plain_iterable_is_timed_through_w_dataloader(tmp_path):
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(2, 8), torch.tensor([0, 1]))] * 5
    w = watch(model, opt, data, **kw(tmp_path))
    for x, y in w.dataloader:
        step(model, opt, x, y)
    assert w.epoch_reports[-1].steps == 5
    w.close()


def test_loops_without_a_loader_report_every_n_steps(tmp_path, capsys):
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = watch(model, opt, **kw(tmp_path, print_epoch=True, report_every_steps=4))
    x, y = torch.randn(2, 8), torch.tensor([0, 1])
    for _ in range(10):
        step(model, opt, x, y)
    assert [r.steps for r in w.epoch_reports] == [4, 4]
    out = capsys.readouterr().out
    assert out.count("[bottleneckd] epoch 0: 4 steps") == 1 and out.count("[bottleneckd] epoch 1: 4 steps") == 1
    w.epoch_end()
    assert w.epoch_reports[-1].steps == 2
    w.close()


def test_report_every_seconds(tmp_path):
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = watch(model, opt, **kw(tmp_path, report_every_seconds=0.05))
    x, y = torch.randn(2, 8), torch.tensor([0, 1])
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.3:
        step(model, opt, x, y)
        time.sleep(0.005)
    assert 2 <= len(w.epoch_reports) <= 7 and all(r.steps > 0 for r in w.epoch_reports)
    w.close()


def test_an_empty_loader_gets_no_verdict(tmp_path, capsys):
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(0, 8)), batch_size=4)
    w = watch(
        model, opt, loader, socket_path=str(tmp_path / "x.sock"), local_sampling=True, interval=0.2, roofline_step=None
    )
    for _ in loader:
        pass
    rep = w.epoch_reports[-1]
    assert rep.steps == 0 and rep.report is None and "no verdict" in rep.text
    assert "bottleneck:" not in capsys.readouterr().out
    w.close()


def test_watch_without_a_model_times_the_loader_and_warns(tmp_path, caplog):
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Slow(4, 0.005), batch_size=2)
    with caplog.at_level(logging.WARNING, "bottleneckd.torch"):
        w = watch(None, opt, loader, **kw(tmp_path))
    assert sum("no model" in r.message for r in caplog.records) == 1
    for x, y in loader:
        step(model, opt, x, y)
    rep = w.epoch_reports[-1]
    assert rep.steps == 2 and rep.phases["data_wait"] >= 0.019 and w.enabled
    with pytest.raises(ValueError, match="need the model"):
        w.apply("channels_last")
    w.close()


def test_watch_twice_replaces_the_first_with_one_warning(tmp_path, caplog):
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(8, 8), torch.randint(0, 2, (8,))), batch_size=2)
    before = {t.name for t in threading.enumerate()}
    args = {
        "socket_path": str(tmp_path / "x.sock"),
        "local_sampling": True,
        "interval": 0.2,
        "print_epoch": False,
        "roofline_step": None,
    }
    first = watch(model, opt, loader, **args)
    with caplog.at_level(logging.WARNING, "bottleneckd.torch"):
        second = watch(model, opt, loader, **args)
    assert sum("called again" in r.message for r in caplog.records) == 1
    assert not first.enabled and second.enabled
    assert len(opt._optimizer_step_pre_hooks) == 1 and len(opt._optimizer_step_post_hooks) == 1  # no double hooks
    time.sleep(0.3)
    new_threads = [t.name for t in threading.enumerate() if t.name not in before and t.is_alive()]
    # one set of the local sidecar's threads (the second's: the machine sampler, its own stacks and,
    # with py-spy installed, its loader workers' stacks); the first's are stopped
    assert len(new_threads) == len(set(new_threads)) <= 3, new_threads
    for x, y in loader:
        step(model, opt, x, y)
    assert not first.epoch_reports and second.epoch_reports[-1].steps == 4
    second.close()


def test_a_failure_in_the_counting_step_undoes_the_dispatch_modes(tmp_path, monkeypatch, caplog):
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(2, 8), torch.tensor([0, 1]))] * 6

    def broken(self):
        raise RuntimeError("injected")

    monkeypatch.setattr(OperandBytes, "__enter__", broken)  # the second mode fails after the first is on
    w = watch(model, opt, data, **kw(tmp_path, roofline_step=1))
    for x, y in w.dataloader:
        step(model, opt, x, y)
        assert torch._C._len_torch_dispatch_stack() == 0  # never left on
        assert not torch.nn.modules.module._global_forward_pre_hooks  # FlopCounterMode's module tracker is gone too
    assert w.enabled and w.epoch_reports[-1].steps == 6  # timing goes on; the step was not discarded
    assert "flops_per_step" not in w.facts and any("roofline count off" in r.message for r in caplog.records)
    w.close()


def test_a_failure_while_leaving_the_count_undoes_it_too(tmp_path, monkeypatch):
    from torch.utils.flop_counter import FlopCounterMode

    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(2, 8), torch.tensor([0, 1]))] * 4
    monkeypatch.setattr(OperandBytes, "__exit__", lambda self, *a: (_ for _ in ()).throw(RuntimeError("injected")))
    w = watch(model, opt, data, **kw(tmp_path, roofline_step=1))
    for x, y in w.dataloader:
        step(model, opt, x, y)
    monkeypatch.undo()
    assert torch._C._len_torch_dispatch_stack() <= 1  # at most the bytes mode whose __exit__ we broke
    while torch._C._len_torch_dispatch_stack():  # clean up the broken mode for the other tests
        torch.utils._python_dispatch._pop_mode()
    assert not isinstance(torch.utils._python_dispatch._get_current_dispatch_mode(), FlopCounterMode)
    assert w.enabled and w.epoch_reports[-1].steps == 3
    w.close()


def test_injected_watcher_times_the_original_loader_and_restores_on_close(tmp_path, monkeypatch):
    """`bottleneckd run`'s instrumentation (inject.py) in this process: no code change, islice too."""
    from bottleneckd.torch.inject import GlobalWatcher

    monkeypatch.setenv("BOTTLENECKD_EPOCH_PRINT", "stderr")
    original_iter = DataLoader.__iter__
    w = GlobalWatcher(
        socket_path=str(tmp_path / "none.sock"), local_sampling=False, print_epoch=False, roofline_step=None
    )
    try:
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(Slow(8, 0.005), batch_size=2)
        for x, y in loader:
            step(model, opt, x, y)
        for x, y in itertools.islice(loader, 2):
            step(model, opt, x, y)
        assert [r.steps for r in w.epoch_reports] == [4, 2]
        assert w.root is model and w.facts["loader_workers"] == 0
        assert all(r.phases["data_wait"] >= 0.98 * r.steps * 0.010 for r in w.epoch_reports)
    finally:
        w.close()
    assert DataLoader.__iter__ is original_iter and not torch.nn.modules.module._global_forward_pre_hooks


def test_injected_watcher_counts_the_weights_share_of_the_bytes_of_the_model_it_finds(tmp_path):
    """`bottleneckd run`'s watcher finds the model at the first optimizer step, before the counted
    step: the count knows its parameters' shapes (the fact weight_byte_share, advice for a memory-bound
    step of small products)."""
    from bottleneckd.torch.inject import GlobalWatcher

    w = GlobalWatcher(socket_path=str(tmp_path / "none.sock"), local_sampling=False, print_epoch=False, roofline_step=3)
    try:
        model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(6):
            step(model, opt, torch.randn(4, 256), torch.randint(0, 10, (4,)))
        assert w.root is model and w.facts["weight_byte_share"] > 0.5
    finally:
        w.close()


class _Base(torch.optim.SGD):
    """An optimizer whose step calls another hooked step: a subclass calling ``super().step()``
    once torch has hooked the parent's step too (any plain SGD made first), or SAM's and
    Lookahead's ``base_optimizer.step()``. torch runs the step hooks once per level."""


class _Nested(_Base):
    def step(self, closure=None):
        return super().step(closure)


@pytest.mark.parametrize("how", ["watch", "injected"])
def test_an_optimizer_step_inside_another_is_one_step(tmp_path, how):
    from bottleneckd.torch.inject import GlobalWatcher

    model = nn.Linear(8, 2)
    _Base(model.parameters(), lr=0.1)  # hooks _Base.step: _Nested's step then runs the hooks twice
    opt = _Nested(model.parameters(), lr=0.1)
    loader = DataLoader(Slow(8, 0.0), batch_size=2)
    if how == "watch":
        w = watch(model, opt, loader, **kw(tmp_path))
    else:
        w = GlobalWatcher(**kw(tmp_path))
    try:
        for x, y in loader:
            step(model, opt, x, y)
        assert [r.steps for r in w.epoch_reports] == [4]
        assert w.optimizer_calls == 4 and w.hot[DEPTH] == 0
    finally:
        w.close()


class _Probing(_Base):
    """A custom optimizer that runs the model itself inside its step, with no closure (a line search
    or a sharpness probe reading the loss at the current weights)."""

    model: nn.Module | None = None

    def step(self, closure=None):
        with torch.no_grad():
            self.model(torch.randn(2, 8))
        return super().step(closure)


@pytest.mark.parametrize("how", ["watch", "injected"])
def test_a_forward_the_optimizer_runs_inside_its_step_ends_no_step(tmp_path, how):
    """The forward inside a nested step used to reset the step depth (taken for a step that raised),
    so the inner and the outer step each ended one: 8 steps for 4."""
    from bottleneckd.torch.inject import GlobalWatcher

    model = nn.Linear(8, 2)
    _Base(model.parameters(), lr=0.1)  # hooks _Base.step: the probing step nests a hooked step
    opt = _Probing(model.parameters(), lr=0.1)
    opt.model = model
    loader = DataLoader(Slow(8, 0.0), batch_size=2)
    w = watch(model, opt, loader, **kw(tmp_path)) if how == "watch" else GlobalWatcher(**kw(tmp_path))
    try:
        for x, y in loader:
            step(model, opt, x, y)
        assert [r.steps for r in w.epoch_reports] == [4]
        assert w.hot[DEPTH] == 0
    finally:
        w.close()


class _Failing(torch.optim.SGD):
    fail = False

    def step(self, closure=None):
        if self.fail:
            raise RuntimeError("a failed step the loop catches")
        return super().step(closure)


def test_a_step_that_raised_does_not_hide_the_steps_after_it(tmp_path):
    """The pre-hook ran, the post-hook never did: the next forward (outside any closure) starts over."""
    model = nn.Linear(8, 2)
    opt = _Failing(model.parameters(), lr=0.1)
    w = watch(model, opt, **kw(tmp_path))
    x, y = torch.randn(4, 8), torch.tensor([0, 1, 0, 1])
    try:
        step(model, opt, x, y)
        opt.fail = True
        with pytest.raises(RuntimeError):
            step(model, opt, x, y)
        opt.fail = False
        for _ in range(3):
            step(model, opt, x, y)
        assert w.epoch_end().steps == 4 and w.hot[DEPTH] == 0
    finally:
        w.close()
