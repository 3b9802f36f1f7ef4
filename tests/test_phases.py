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
    return dict(zip(HOOK_PHASES, ph))


def test_phases_of_consecutive_steps_add_up_to_their_wall(clock):
    c, t = clock
    step(c, t, data=0.010, transfer=0.002, forward=0.020, backward=0.030, optimizer=0.005)
    step(c, t, data=0.001, transfer=0.001, forward=0.021, backward=0.029, optimizer=0.006, gap=0.004)
    (p1, w1), (p2, w2) = c.drain()
    assert named(p1) == pytest.approx({"data_wait": 0.010, "transfer": 0.002, "forward": 0.020, "backward": 0.030,
                                       "optimizer": 0.005, "communication": 0.0, "other": 0.0})
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


def test_done_steps_are_typed_records(clock):
    c, t = clock
    step(c, t, forward=0.001)
    assert isinstance(c.done[0], timing.StepMarks) and len(c.done[0].marks) == len(timing.SLOTS)
    with pytest.raises(AttributeError):
        c.done[0].comm = 1.0  # frozen


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
