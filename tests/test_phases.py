"""Phase arithmetic of the host clock and the accumulator, on a fake clock: exact numbers."""

import pytest

pytest.importorskip("torch")

from bottleneckd.model.resources import HOOK_PHASES, PHASES  # noqa: E402
from bottleneckd.torch import timing  # noqa: E402
from bottleneckd.torch.phases import COMPUTE_PHASES, PhaseAccumulator  # noqa: E402


class FakeTime:
    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now

    def advance(self, s):
        self.now += s


@pytest.fixture
def clock(monkeypatch):
    fake = FakeTime()
    monkeypatch.setattr(timing, "time", fake)
    return timing.HostClock(), fake


def step(c, t, data=0.0, transfer=0.0, forward=0.0, backward=0.0, optimizer=0.0, gap=0.0):
    t.advance(gap)
    c.mark("step_start")
    t.advance(data)
    c.mark("data_ready")
    t.advance(transfer)
    c.mark("forward_start")
    t.advance(forward)
    c.mark("forward_end")
    t.advance(backward)
    c.mark("optimizer_start")
    t.advance(optimizer)
    c.end_step()


def named(ph):
    return dict(zip(HOOK_PHASES, ph, strict=True))


def test_phases_of_consecutive_steps_add_up_to_their_wall(clock):
    c, t = clock
    step(c, t, data=0.010, transfer=0.002, forward=0.020, backward=0.030, optimizer=0.005)
    step(c, t, data=0.001, transfer=0.001, forward=0.021, backward=0.029, optimizer=0.006, gap=0.004)
    (p1, w1), (p2, w2) = c.drain()
    assert named(p1) == pytest.approx(
        {
            "data_wait": 0.010,
            "transfer": 0.002,
            "forward": 0.020,
            "backward": 0.030,
            "optimizer": 0.005,
            "communication": 0.0,
            "other": 0.0,
        }
    )
    assert w1 == pytest.approx(0.067)
    # the second step's wall starts where the first ended: the 4 ms before its data request is "other"
    assert named(p2)["other"] == pytest.approx(0.004) and w2 == pytest.approx(0.062)
    assert sum(p2) == pytest.approx(w2)


def test_micro_batches_fold_into_one_step_without_overlap(clock):
    c, t = clock
    for _ in range(3):  # three batches, one optimizer step after the third (accumulation in the loop)
        c.mark("step_start")
        t.advance(0.010)
        c.mark("data_ready")
        c.mark("forward_start")
        t.advance(0.020)
        c.mark("forward_end")
        t.advance(0.030)
    c.mark("optimizer_start")
    t.advance(0.005)
    c.end_step()
    [(ph, wall)] = c.drain()
    p = named(ph)
    assert wall == pytest.approx(0.185) and sum(ph) == pytest.approx(wall)
    assert p["data_wait"] == pytest.approx(0.030) and p["forward"] == pytest.approx(0.060)
    assert p["backward"] == pytest.approx(0.090) and p["optimizer"] == pytest.approx(0.005)


def test_closure_forward_and_backward_move_out_of_the_optimizer_phase(clock):
    c, t = clock
    c.mark("step_start")
    t.advance(0.002)
    c.mark("data_ready")
    c.mark("optimizer_start")  # LBFGS: step(closure) starts
    for _ in range(4):  # the optimizer evaluates the closure 4 times
        t.advance(0.001)  # its own work between evaluations
        c.closure_begin()
        c.mark("forward_start")
        t.advance(0.010)
        c.mark("forward_end")
        t.advance(0.015)
        c.closure_end()
    t.advance(0.003)
    c.end_step()
    [(ph, wall)] = c.drain()
    p = named(ph)
    assert p["forward"] == pytest.approx(0.040) and p["backward"] == pytest.approx(0.060)
    assert p["optimizer"] == pytest.approx(0.007) and p["data_wait"] == pytest.approx(0.002)
    assert sum(ph) == pytest.approx(wall) == pytest.approx(0.109)


def test_communication_is_carved_out_of_backward(clock):
    c, t = clock
    c.mark("step_start")
    c.mark("data_ready")
    c.mark("forward_start")
    t.advance(0.010)
    c.mark("forward_end")
    t.advance(0.005)
    c.comm_begin()
    t.advance(0.007)
    c.comm_end()
    c.mark("optimizer_start")
    c.end_step()
    [(ph, wall)] = c.drain()
    assert named(ph)["communication"] == pytest.approx(0.007) and named(ph)["backward"] == pytest.approx(0.005)


def test_finished_steps_are_kept_unboxed_and_read_back_as_typed_records(clock):
    """The hot path keeps no object per step (issue 23): a finished step is eight doubles in one
    array until drained; ``finished()`` reads them back as frozen records."""
    c, t = clock
    step(c, t, forward=0.001)
    step(c, t, forward=0.002, gap=0.001)
    assert len(c.buf) == 2 * 9 and c.buf.typecode == "d"
    first, second = c.finished()
    assert isinstance(first, timing.StepMarks) and len(first.marks) == len(timing.SLOTS)
    assert first.own_start and not second.own_start  # the first step's wall starts at its own data request
    assert second.marks[3] - second.marks[2] == pytest.approx(0.002)
    with pytest.raises(AttributeError):
        first.comm = 1.0  # frozen
    assert len(c.drain()) == 2 and len(c.buf) == 0 and c.finished() == []


def test_accumulator_names_phases_and_folds_intervals_into_the_epoch():
    seen = []
    acc = PhaseAccumulator(lambda wall, ex: seen.append((wall, ex)))
    one = tuple(0.001 * (i + 1) for i in range(len(HOOK_PHASES)))
    acc.add([(one, sum(one)), (one, sum(one))], [8, 8])
    first = acc.take_interval()
    acc.add([(one, sum(one))], [])
    acc.take_interval()
    epoch = acc.take_epoch()
    assert first.steps == 2 and first.phases["forward"] == pytest.approx(2 * one[HOOK_PHASES.index("forward")])
    assert epoch.steps == 3 and epoch.wall_seconds == pytest.approx(3 * sum(one))
    assert seen == [(pytest.approx(sum(one)), 8)] * 2 + [(pytest.approx(sum(one)), 0)]
    assert set(COMPUTE_PHASES) == {"forward", "backward", "optimizer"}
    assert all(p in PHASES for p in HOOK_PHASES)
    assert acc.take_epoch().steps == 0


def _only(phase: str, seconds: float) -> tuple[float, ...]:
    return tuple(seconds if p == phase else 0.0 for p in HOOK_PHASES)


def test_untimed_steps_take_the_proportions_of_the_last_timed_ones_in_an_interval_without_any():
    """A report taken inside a rest (sampling.py) holds untimed steps only: their phases follow the
    window just before the rest, not the run's average (a job whose phases moved since its start)."""
    acc = PhaseAccumulator()
    acc.add([(_only("data_wait", 0.009), 0.01)] * 50, [8] * 50)  # an early regime: input-bound
    acc.take_interval()
    acc.add([(_only("forward", 0.002), 0.002)] * 16, [8] * 16)  # the window before the rest
    acc.take_interval()  # a report after the window
    acc.add_untimed(100, 0.2)  # the rest's part after that report
    got = acc.take_interval()
    assert got.steps == 100 and got.examples == 800
    assert got.phases["forward"] == pytest.approx(0.2) and got.phases["data_wait"] == 0.0
    acc.add([(_only("backward", 0.003), 0.003)] * 4, [8] * 4)  # timed steps of this interval come first
    acc.add_untimed(10, 0.03)
    assert acc.take_interval().phases["backward"] == pytest.approx(0.012 + 0.03)


def test_a_drained_batch_adds_up_exactly_as_one_step_at_a_time():
    """The report sums a batch column by column and fills the trial history in one go (issue 23):
    the same floating-point additions, in the same order, as one step at a time, and the same
    history (its last 256 steps)."""
    import random

    from bottleneckd.torch.trials import Trials

    rng = random.Random(1)
    steps = [(tuple(rng.random() * 1e-3 for _ in HOOK_PHASES), rng.random() * 1e-2) for _ in range(600)]
    examples = [rng.randrange(1, 64) for _ in range(590)]  # ten steps short: they count 0
    one_by_one, batched = Trials(lambda t: None), Trials(lambda t: None)
    acc = PhaseAccumulator(on_steps=batched.record_steps)
    acc.add(steps[:5], examples[:5])
    acc.add(steps[5:], examples[5:])
    sums, wall = [0.0] * len(HOOK_PHASES), 0.0
    for k, (ph, w) in enumerate(steps):
        sums = [a + b for a, b in zip(sums, ph, strict=True)]
        wall += w
        one_by_one.record_step(w, examples[k] if k < len(examples) else 0)
    got = acc.take_interval()
    assert [got.phases[p] for p in HOOK_PHASES] == sums and got.wall_seconds == wall  # exactly, not approx
    assert got.steps == 600 and got.examples == sum(examples)
    assert list(batched.history) == list(one_by_one.history) and len(batched.history) == 256


def test_injected_watcher_puts_post_step_bookkeeping_in_other_and_the_loss_in_backward(tmp_path, monkeypatch):
    """A python_heavy-shaped step under `bottleneckd run`'s instrumentation (inject.GlobalWatcher),
    each part advancing a fake clock by a known amount: the data wait, the model's forward, the
    loss module (after the root forward: backward by definition, forward end to optimizer start),
    the backward, the optimizer step and pure-Python bookkeeping after ``opt.step()`` (other)."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader

    from bottleneckd.torch.hot_path import PLAIN
    from bottleneckd.torch.inject import GlobalWatcher

    fake = FakeTime()
    monkeypatch.setattr(timing, "time", fake)
    cost = {"data": 0.001, "forward": 0.002, "loss": 0.003, "backward": 0.004, "optimizer": 0.0005, "bookkeeping": 0.02}

    class Slow(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # noqa: ANN001, ANN205
            return x.clone()

        @staticmethod
        def backward(ctx, g):  # noqa: ANN001, ANN205
            fake.advance(cost["backward"])
            return g

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)

        def forward(self, x):  # noqa: ANN001, ANN201
            fake.advance(cost["forward"])
            return Slow.apply(self.lin(x))

    class Loss(nn.Module):
        def forward(self, out, y):  # noqa: ANN001, ANN201
            fake.advance(cost["loss"])
            return nn.functional.cross_entropy(out, y)

    class Data(torch.utils.data.Dataset):
        def __len__(self):
            return 40

        def __getitem__(self, i):  # noqa: ANN001, ANN204
            fake.advance(cost["data"] / 4)  # a batch of 4
            return torch.ones(4), i % 3

    class SlowSGD(torch.optim.SGD):
        def step(self, closure=None):  # noqa: ANN001, ANN201
            fake.advance(cost["optimizer"])
            return super().step(closure)

    full_pre = []  # the full path's optimizer entry point, counted (the hot path's closures call it when needed)
    original_pre = GlobalWatcher.full_before_optimizer_step

    def counted_pre(self, opt, args, kwargs):  # noqa: ANN001, ANN202
        full_pre.append((self.steps, opt))
        return original_pre(self, opt, args, kwargs)

    monkeypatch.setattr(GlobalWatcher, "full_before_optimizer_step", counted_pre)
    w = GlobalWatcher(
        socket_path=str(tmp_path / "none.sock"), local_sampling=False, print_epoch=False, roofline_step=None
    )
    try:
        model, loss_fn = Model(), Loss()
        opt = SlowSGD(model.parameters(), lr=0.1)
        plain = []
        for x, y in DataLoader(Data(), batch_size=4):
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            plain.append(w.hot[PLAIN])
            fake.advance(cost["bookkeeping"])  # metric code after the optimizer step, before the next batch
        rep = w.epoch_reports[-1]
    finally:
        w.close()
    assert rep.steps == 10
    # once the model is found its steps take the hot path (hot_path.py), its global optimizer
    # hooks included, and their phases add up as the full path's (below)
    assert plain[0] == 0 and all(plain[2:]), plain
    # the first two steps found the optimizer and the model (each step() once, or twice where SGD's
    # own step is hooked too: SlowSGD's calls it); the rest took the hot path
    assert {steps for steps, _ in full_pre} == {0, 1} and full_pre[0][1] is opt, full_pre
    # the first step's wall starts at its own data request (no bookkeeping before it); its loss
    # module is still timed by the global hooks (forward until the root is known), later ones not
    want = {
        "data_wait": 10 * cost["data"],
        "forward": 10 * cost["forward"] + cost["loss"],
        "backward": 10 * cost["backward"] + 9 * cost["loss"],
        "optimizer": 10 * cost["optimizer"],
        "other": 9 * cost["bookkeeping"],
    }
    for k, v in want.items():
        assert rep.phases[k] == pytest.approx(v, abs=1e-9), k
    assert rep.phases["transfer"] == pytest.approx(0.0, abs=1e-9)


def test_injected_watcher_counts_one_step_per_iteration_of_a_loop_with_two_optimizers(tmp_path):
    """A GAN-shaped loop under `bottleneckd run` (two models, two optimizers, each stepping once
    per iteration): the global optimizer hooks fire for both, and the first to step is the job's;
    the other's step is part of the iteration, not a step of its own."""
    import torch
    from torch import nn

    from bottleneckd.torch.inject import GlobalWatcher

    w = GlobalWatcher(
        socket_path=str(tmp_path / "none.sock"), local_sampling=False, print_epoch=False, roofline_step=None
    )
    try:
        gen, disc = nn.Linear(4, 4), nn.Linear(4, 1)
        opt_d = torch.optim.SGD(disc.parameters(), lr=0.01)
        opt_g = torch.optim.SGD(gen.parameters(), lr=0.01)
        for _ in range(12):
            z = torch.randn(8, 4)
            opt_d.zero_grad()
            disc(gen(z).detach()).mean().backward()
            opt_d.step()
            opt_g.zero_grad()
            (-disc(gen(z)).mean()).backward()
            opt_g.step()
        steps = w.steps
        # the job replaces its optimizer (a new one after a warm-up): the new one's steps count
        # from its second (the first could be a second optimizer's, as the GAN's above)
        adam = torch.optim.AdamW(gen.parameters(), lr=0.01)
        for _ in range(10):
            adam.zero_grad()
            gen(torch.randn(8, 4)).sum().backward()
            adam.step()
        replaced = w.steps - steps
    finally:
        w.close()
    assert steps == 12 and replaced == 9 and w.optimizer is adam
