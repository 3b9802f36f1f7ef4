"""CudaClock on a fake CUDA event (the hardware boundary): phases on the GPU's own timeline."""

from __future__ import annotations

import pytest

from bottleneckd.torch.timing import PHASE_KEYS, CudaClock


class FakeTimeline:
    """The GPU's clock: events record the time the test says the stream reached them."""

    def __init__(self) -> None:
        self.now = 0.0  # seconds
        self.created = 0

    def event(self) -> FakeEvent:
        self.created += 1
        return FakeEvent(self)


class FakeEvent:
    def __init__(self, tl: FakeTimeline) -> None:
        self.tl, self.t = tl, None

    def record(self) -> None:
        self.t = self.tl.now

    def query(self) -> bool:
        return self.t is not None and self.t <= self.tl.now

    def elapsed_time(self, end: FakeEvent) -> float:  # milliseconds, like torch.cuda.Event
        assert self.t is not None and end.t is not None
        return (end.t - self.t) * 1000.0


def _step(clock: CudaClock, tl: FakeTimeline, micro: int, data: float, fwd: float, bwd: float, opt: float) -> None:
    for _ in range(micro):
        clock.mark("step_start")
        tl.now += data
        clock.mark("data_ready")
        clock.mark("forward_start")
        tl.now += fwd
        clock.mark("forward_end")
        tl.now += bwd
    clock.mark("optimizer_start")
    tl.now += opt
    clock.end_step()


def _shares(steps):
    ph = [sum(s[0][k] for s in steps) for k in range(len(PHASE_KEYS))]
    wall = sum(s[1] for s in steps)
    return dict(zip(PHASE_KEYS, ph, strict=True)), wall


def test_gradient_accumulation_micro_batches_add_up_not_span():
    """Truth: 4 micro-batches, data 1 ms, forward 10, backward 20 each (4/40/80 per step), optimizer 6."""
    tl = FakeTimeline()
    clock = CudaClock(sample_every=1, event_factory=tl.event)
    for _ in range(3):
        _step(clock, tl, 4, 0.001, 0.010, 0.020, 0.006)
    steps = clock.drain()
    assert len(steps) == 3
    ph, wall = _shares(steps)
    assert wall == pytest.approx(3 * 0.130, rel=1e-6)
    assert ph["data_wait"] == pytest.approx(3 * 0.004, rel=1e-6)
    assert ph["data_wait"] / wall < 0.05  # was 42% before micro-batch segments
    assert ph["forward"] == pytest.approx(3 * 0.040, rel=1e-6)
    assert ph["backward"] == pytest.approx(3 * 0.080, rel=1e-6)
    assert ph["optimizer"] == pytest.approx(3 * 0.006, rel=1e-6)
    assert ph["other"] == pytest.approx(0.0, abs=1e-9)


def test_events_are_reused_from_the_pool():
    tl = FakeTimeline()
    clock = CudaClock(sample_every=1, event_factory=tl.event)
    for _ in range(5):
        _step(clock, tl, 4, 0.001, 0.01, 0.02, 0.005)
        clock.drain()
    made = tl.created
    for _ in range(20):
        _step(clock, tl, 4, 0.001, 0.01, 0.02, 0.005)
        clock.drain()
    assert tl.created == made  # no new events once the pool is warm


def test_untimed_steps_between_and_pending_until_the_gpu_reaches_them():
    tl = FakeTimeline()
    clock = CudaClock(sample_every=4, event_factory=tl.event)
    for _ in range(8):
        _step(clock, tl, 1, 0.002, 0.01, 0.02, 0.005)
    steps = clock.drain()
    assert len(steps) == 2  # steps 0 and 4 timed
    for ph, wall in steps:
        assert wall == pytest.approx(0.037, rel=1e-6)
        assert ph[0] == pytest.approx(0.002, rel=1e-6)


def test_a_step_the_gpu_has_not_reached_is_not_read():
    tl = FakeTimeline()
    clock = CudaClock(sample_every=1, event_factory=tl.event)
    _step(clock, tl, 1, 0.002, 0.01, 0.02, 0.005)
    end = clock._pending[0][0]["step_end"]
    end.t = tl.now + 1.0  # the GPU is still behind the host
    assert clock.drain() == []
