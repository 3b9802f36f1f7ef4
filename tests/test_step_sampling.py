"""Sampled steps (bottleneckd/torch/sampling.py, issue 23): on a step too short to time every one
within the overhead budget the watcher times windows of steps and rests between them, and the
reports still count every step, its wall and its examples."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from bottleneckd.torch import sampling, watch  # noqa: E402
from bottleneckd.torch.hot_path import REST, RESTED  # noqa: E402

BATCH = 16


def _job(n: int, sleep_fwd: float = 0.0):  # noqa: ANN202
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(8, 2)

        def forward(self, x):  # noqa: ANN001, ANN202
            if sleep_fwd:
                time.sleep(sleep_fwd)
            return self.lin(x)

    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(BATCH, 8), torch.randint(0, 2, (BATCH,)))] * n
    return model, opt, data


def _watched(model, opt, data, **kw):  # noqa: ANN001, ANN003, ANN202
    w = watch(
        model,
        opt,
        data,
        local_sampling=False,
        socket_path="/nonexistent/sampling.sock",
        print_epoch=False,
        roofline_step=None,
        **kw,
    )
    sent: list = []
    w.transport.send = sent.append  # the reports as the sidecar would get them
    return w, sent


_LOSS = nn.CrossEntropyLoss()


def _step(model, opt, x, y) -> None:  # noqa: ANN001
    opt.zero_grad()
    _LOSS(model(x), y).backward()
    opt.step()


def _steps(it, model, opt, k: int) -> None:  # noqa: ANN001
    """``k`` steps from the iterator ``it``, kept alive (a dropped timed iterator ends the epoch)."""
    for _ in range(k):
        _step(model, opt, *next(it))


def _train(w, model, opt, steps: int | None = None) -> float:  # noqa: ANN001
    t0 = time.perf_counter()
    for k, (x, y) in enumerate(w.dataloader):
        _step(model, opt, x, y)
        if steps is not None and k + 1 >= steps:
            break
    return time.perf_counter() - t0


def test_a_short_step_is_sampled_and_every_step_is_still_counted_with_its_wall_and_examples():
    n = 3000
    model, opt, data = _job(n)
    w, sent = _watched(model, opt, data, report_every=0.05)
    elapsed = _train(w, model, opt)
    w.flush()
    w.close()
    assert w.steps == n
    assert sum(r.steps for r in sent) == n  # timed and untimed steps alike
    assert sum(r.examples or 0 for r in sent) == n * BATCH  # untimed examples from the timed steps' batch
    shares = [r.facts["timed_step_share"] for r in sent]
    assert min(shares) < 0.5, shares  # most steps of a sub-millisecond step went untimed
    wall = sum(r.wall_seconds for r in sent)
    assert 0.8 * elapsed <= wall <= 1.02 * elapsed  # the rests' wall is counted, not lost
    for r in sent:  # the untimed steps' phases follow the timed ones': they add up to the wall
        assert sum(r.phases.values()) == pytest.approx(r.wall_seconds, rel=0.05)


def test_a_rest_goes_on_through_reports():
    """Reports every 10 ms on a sub-millisecond step: the rests are not cut at each report (which
    would time a window after every report, half the steps here), the reports inside a rest
    carry untimed steps only, and every step is still counted."""
    n = 4000
    model, opt, data = _job(n)
    w, sent = _watched(model, opt, data, report_every=0.01)
    _train(w, model, opt)
    w.flush()
    w.close()
    assert w.steps == n == _reported(sent)
    shares = [r.facts["timed_step_share"] for r in sent]
    assert 0.0 in shares  # a report taken inside a rest, our hooks off
    timed = sum(r.steps * r.facts["timed_step_share"] for r in sent)
    assert timed / n < 2 * sampling.MIN_TIMED_SHARE, (timed, n)  # about the least share, not 1 in 2
    for r in sent:  # an untimed report's phases: the proportions of the timed steps before it
        assert sum(r.phases.values()) == pytest.approx(r.wall_seconds, rel=0.05)


def test_rest_lengths_are_drawn_around_the_budgets():
    import random

    rng = random.Random(sampling.JITTER_SEED)
    draws = [sampling.jittered(300, rng) for _ in range(4000)]
    assert min(draws) >= 150 and max(draws) <= 450
    assert sum(draws) / len(draws) == pytest.approx(300, rel=0.02)
    assert len(set(draws)) > 100
    assert sampling.jittered(1, rng) >= 1


def test_a_step_long_enough_for_the_budget_is_always_timed():
    model, opt, data = _job(60, sleep_fwd=0.01)  # 10 ms: 40 us is 0.4% of it, within the 0.5% budget
    w, sent = _watched(model, opt, data, report_every=0.2)
    _train(w, model, opt)
    w.flush()
    w.close()
    assert sum(r.steps for r in sent) == 60
    assert all(r.facts["timed_step_share"] == 1.0 for r in sent)


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_no_budget_times_every_step(how: str, monkeypatch: pytest.MonkeyPatch):
    model, opt, data = _job(1500)
    if how == "environment":
        monkeypatch.setenv("BOTTLENECKD_OVERHEAD_BUDGET", "off")
        w, sent = _watched(model, opt, data, report_every=0.05)
    else:
        w, sent = _watched(model, opt, data, report_every=0.05, overhead_budget=None)
    assert w.overhead_budget is None
    _train(w, model, opt)
    w.flush()
    w.close()
    assert all(r.facts["timed_step_share"] == 1.0 for r in sent)
    assert sum(r.steps for r in sent) == 1500


def test_a_rest_ends_at_a_mark_and_the_hooks_come_back():
    model, opt, data = _job(400)
    w, _ = _watched(model, opt, data, report_every=1e9)
    it = iter(w.dataloader)
    _steps(it, model, opt, 3 * sampling.WINDOW_STEPS)
    assert w.hot[REST] > 0  # resting: the forward wrapper is off
    assert "forward" not in model.__dict__
    w.mark("step_start")  # anything the fast path does not handle ends the rest
    assert w.hot[REST] == 0 and "forward" in model.__dict__
    w.close()
    assert "forward" not in model.__dict__  # and close() takes it off again


def test_a_nested_optimizer_step_is_never_rested():
    """A step inside a step (SAM, Lookahead: a subclass calling super().step()): every step stays
    timed, on the hooks that tell the outer step from the inner."""

    class Outer(torch.optim.SGD):
        def step(self, closure=None):  # noqa: ANN001, ANN201
            super().step()
            return super().step()

    model, _, data = _job(800)
    opt = Outer(model.parameters(), lr=0.01)
    w, sent = _watched(model, opt, data, report_every=0.05)
    _train(w, model, opt)
    w.flush()
    w.close()
    assert w.steps == 800
    assert all(r.facts["timed_step_share"] == 1.0 for r in sent)


def test_the_injected_watcher_samples_and_counts_every_step():
    from torch.utils.data import DataLoader, TensorDataset

    from bottleneckd.torch.inject import GlobalWatcher

    n = 2000
    model, opt, _ = _job(1)
    loader = DataLoader(TensorDataset(torch.randn(n * BATCH, 8), torch.randint(0, 2, (n * BATCH,))), batch_size=BATCH)
    g = GlobalWatcher(
        socket_path="/nonexistent/sampling.sock", local_sampling=False, print_epoch=False, roofline_step=None
    )
    sent: list = []
    g.transport.send = sent.append
    try:
        for x, y in loader:
            _step(model, opt, x, y)
        g.flush()
    finally:
        g.close()
    assert g.steps == n and sum(r.steps for r in sent) == n
    assert min(r.facts["timed_step_share"] for r in sent) < 0.5


def test_a_failure_while_resting_disables_us_and_training_goes_on(caplog: pytest.LogCaptureFixture):
    model, opt, data = _job(2000)  # longer than the longest rest at the least share timed
    w, _ = _watched(model, opt, data, report_every=1e9)

    def broken() -> None:
        raise RuntimeError("boom")

    it = iter(w.dataloader)
    _steps(it, model, opt, 3 * sampling.WINDOW_STEPS)
    assert w.hot[REST] > 0
    w.drain = broken  # type: ignore[method-assign]  # the wake at the rest's end fails
    _steps(it, model, opt, 2000 - 3 * sampling.WINDOW_STEPS)  # no exception into the loop
    assert not w.enabled and "instrumentation disabled" in caplog.text
    assert "forward" not in model.__dict__
    w.close()


@pytest.mark.parametrize(
    ("step_s", "share"),
    [
        (0.010, 1.0),  # 10 ms: 0.5% is 50 us, above a timed step's cost
        (sampling.TIMED_STEP_COST_S / sampling.OVERHEAD_BUDGET, 1.0),  # the boundary
        (1e-5, sampling.MIN_TIMED_SHARE),  # a 10 us step: the least share
    ],
)
def test_the_share_timed_follows_the_budget(step_s: float, share: float):
    assert sampling.timed_share(step_s, sampling.OVERHEAD_BUDGET) == pytest.approx(share)


def test_the_expected_cost_of_a_sampled_step_is_within_the_budget():
    b = sampling.OVERHEAD_BUDGET
    for step_s in (1e-3, 1.7e-3, 4e-3, 7e-3):
        s = sampling.timed_share(step_s, b)
        assert sampling.MIN_TIMED_SHARE <= s < 1
        cost = s * sampling.TIMED_STEP_COST_S + (1 - s) * sampling.UNTIMED_STEP_COST_S
        if s > sampling.MIN_TIMED_SHARE:
            assert cost == pytest.approx(b * step_s)  # the budget spent, no more
        else:
            assert cost > b * step_s  # too short a step for the budget: the least share, said so
        rest = sampling.rest_steps(step_s, b)
        achieved = sampling.WINDOW_STEPS / (sampling.WINDOW_STEPS + rest)
        assert achieved <= s  # the rest rounds up: never more steps timed than the budget allows
    assert sampling.rest_steps(0.02, b) == 0 and sampling.timed_share(0.001, None) == 1.0


def _reported(sent: list) -> int:
    return sum(r.steps for r in sent)


def test_a_break_inside_a_rest_counts_every_step_that_ran():
    model, opt, data = _job(2000)
    w, sent = _watched(model, opt, data, report_every=1e9)
    ran = 0
    for x, y in w.dataloader:
        _step(model, opt, x, y)
        ran += 1
        if w.hot[REST] and w.hot[RESTED] > 7:  # inside a rest
            break
    w.close()
    assert ran < 2000 and w.steps == ran == _reported(sent)


def test_a_flush_in_the_loop_body_inside_a_rest_loses_no_step():
    """A rest ended from outside the fetches: the last batch's step had ended (the flush comes
    after opt.step()), so it is counted at the next fetch."""
    model, opt, data = _job(1000)
    w, sent = _watched(model, opt, data, report_every=1e9)
    woken = 0
    for x, y in w.dataloader:
        _step(model, opt, x, y)
        if w.hot[REST] and w.hot[RESTED] > 5:
            w.flush()
            woken += 1
    w.flush()
    w.close()
    assert woken > 0
    assert w.steps == 1000 == _reported(sent)


def test_an_apply_before_the_forward_inside_a_rest_times_that_step():
    model, opt, data = _job(400)
    w, sent = _watched(model, opt, data, report_every=1e9)
    woken = 0
    for x, y in w.dataloader:
        if w.hot[REST] and w.hot[RESTED] > 5 and not woken:
            w.mark("step_start")  # the fast path's end, before this batch's forward: its step is timed
            woken += 1
        _step(model, opt, x, y)
    w.flush()
    w.close()
    assert woken == 1 and w.steps == 400 == _reported(sent)


def test_two_batches_a_step_never_rest():
    model, opt, data = _job(2400)
    w, sent = _watched(model, opt, data, report_every=0.05)
    loss_fn = nn.CrossEntropyLoss()
    it = iter(w.dataloader)
    for _ in range(1200):
        (x1, y1), (x2, y2) = next(it), next(it)  # micro-batches fetched ahead, one optimizer step
        opt.zero_grad()
        (loss_fn(model(x1), y1) + loss_fn(model(x2), y2)).backward()
        opt.step()
    w.flush()
    w.close()
    assert w.steps == 1200 == _reported(sent)
    assert all(r.facts["timed_step_share"] == 1.0 for r in sent)


def test_report_every_steps_keeps_its_steps_with_rests():
    model, opt, data = _job(600)
    w, sent = _watched(model, opt, data, report_every_steps=100)
    _train(w, model, opt)
    w.close()
    per_epoch = [r for r in w.epoch_reports if "steps" in r.text]
    assert [r.text.split(" steps")[0].rsplit(" ", 1)[-1] for r in per_epoch[:5]] == ["100"] * 5


@pytest.mark.parametrize("every", [700, 1000])
def test_epochs_by_steps_longer_than_a_rest_keep_their_steps(every: int):
    """A rest (~624 steps at the least share, drawn within 50%) cut where an epoch by steps ends:
    the epoch's last step is timed and ends it, never one step late."""
    model, opt, data = _job(3 * every + 50)
    w, sent = _watched(model, opt, data, report_every=0.02, report_every_steps=every)
    _train(w, model, opt)
    w.close()
    per_epoch = [r for r in w.epoch_reports if "steps" in r.text]
    assert [r.text.split(" steps")[0].rsplit(" ", 1)[-1] for r in per_epoch[:3]] == [str(every)] * 3
    assert w.steps == 3 * every + 50 == _reported(sent)


class _PollRecorder:
    """Stands for run --tune's tuner: records whether a rest was under way at each poll (a poll
    may switch the loader the rest's fetch is reading: it must come after the rest ended)."""

    def __init__(self, w) -> None:  # noqa: ANN001
        self.w, self.resting = w, []

    def poll(self) -> None:
        self.resting.append(bool(self.w.hot[REST]))

    def finish(self) -> None:
        pass

    def lines(self) -> list[str]:
        return []


def test_the_tuners_poll_never_runs_inside_a_rest():
    n = 3000
    model, opt, data = _job(n)
    # a poll at each report (every 50 ms: 16-26 polls here). Every 10 ms the rests were cut so often
    # that in one CI run no report's steps were mostly untimed (least share 0.55; 0.18-0.28 here, under
    # three spinners too; at 50 ms 0.09-0.14, 2026-12-04)
    w, sent = _watched(model, opt, data, report_every=0.05)
    w.tuner = tuner = _PollRecorder(w)  # type: ignore[assignment]
    _train(w, model, opt)
    w.flush()
    w.close()
    assert tuner.resting and not any(tuner.resting)
    assert w.steps == n == _reported(sent)
    assert min(r.facts["timed_step_share"] for r in sent) < 0.5  # the rests still happen


def test_a_wrapper_over_ours_keeps_every_step_timed_and_the_examples_exact():
    model, opt, data = _job(1500)
    w, sent = _watched(model, opt, data, report_every=0.05)
    ours = model.forward

    def theirs(*a, **k):  # noqa: ANN002, ANN003, ANN202
        return ours(*a, **k)

    model.forward = theirs  # e.g. activation checkpointing applied to the root module after watch()
    _train(w, model, opt)
    w.flush()
    w.close()
    assert all(r.facts["timed_step_share"] == 1.0 for r in sent)
    assert sum(r.examples or 0 for r in sent) == 1500 * BATCH
    assert model.__dict__.get("forward") is theirs


def test_the_profiler_started_inside_a_rest_ends_it():
    model, opt, data = _job(400)
    w, _ = _watched(model, opt, data, report_every=1e9)
    it = iter(w.dataloader)
    _steps(it, model, opt, 3 * sampling.WINDOW_STEPS)
    assert w.hot[REST] > 0
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        _steps(it, model, opt, 2)
        assert w.hot[REST] == 0 and "forward" in model.__dict__
    w.close()


def test_another_loader_read_inside_a_rest_is_not_counted_as_steps():
    """Under ``bottleneckd run`` every DataLoader is timed: a validation loader read inside the
    step ends the rest instead of adding its batches to the training steps."""
    from torch.utils.data import DataLoader, TensorDataset

    from bottleneckd.torch.inject import GlobalWatcher

    n = 1500
    model, opt, _ = _job(1)
    train = DataLoader(TensorDataset(torch.randn(n * BATCH, 8), torch.randint(0, 2, (n * BATCH,))), batch_size=BATCH)
    val = DataLoader(TensorDataset(torch.randn(4 * BATCH, 8)), batch_size=BATCH)
    g = GlobalWatcher(
        socket_path="/nonexistent/sampling.sock", local_sampling=False, print_epoch=False, roofline_step=None
    )
    sent: list = []
    g.transport.send = sent.append
    try:
        for k, (x, y) in enumerate(train):
            _step(model, opt, x, y)
            if k % 300 == 299:
                with torch.no_grad():
                    for (v,) in val:
                        model(v)
        g.flush()
    finally:
        g.close()
    assert g.steps == n


@pytest.mark.parametrize("bad", [0, -0.1, 2.0, "half"])
def test_a_budget_that_is_not_a_fraction_is_refused(bad: object):
    model, opt, data = _job(4)
    with pytest.raises(ValueError, match="overhead_budget"):
        _watched(model, opt, data, overhead_budget=bad)
