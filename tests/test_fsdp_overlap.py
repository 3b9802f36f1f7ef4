"""FSDP's communication overlapped with compute is not exposed: the exposed part is the time the
compute stream waits for it. The GPU is faked at the hardware boundary: streams with their own
timelines, events that take the time their stream has reached, a wait that moves the waiting
stream to the event's time (what cudaStreamWaitEvent does). The wrapped methods are the fakes' own
(stream_waits.py installs on whatever classes it is given)."""

from __future__ import annotations

import pytest

from bottleneckd.diagnosis.classify import classify
from bottleneckd.diagnosis.window import Stat, WindowStats
from bottleneckd.model.facts import Facts
from bottleneckd.model.sample import StepPhases
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.torch import stream_waits
from bottleneckd.torch.clock_phases import PHASE_KEYS
from bottleneckd.torch.cuda_clock import CudaClock


class Gpu:
    def __init__(self) -> None:
        self.cur: FakeStream | None = None


class FakeStream:
    def __init__(self, handle: int) -> None:
        self.cuda_stream, self.t = handle, 0.0

    def wait_event(self, event: FakeEvent) -> None:
        self.t = max(self.t, event.t)

    def record_event(self) -> FakeEvent:
        e = FakeEvent(GPU)
        e.record(self)
        return e

    def wait_stream(self, other: FakeStream) -> None:  # as torch.cuda.Stream.wait_stream
        self.wait_event(other.record_event())


class FakeEvent:
    def __init__(self, gpu: Gpu) -> None:
        self.gpu, self.t = gpu, None

    def record(self, stream: FakeStream | None = None) -> None:
        self.t = (stream or self.gpu.cur).t

    def wait(self, stream: FakeStream | None = None) -> None:
        (stream or self.gpu.cur).t = max((stream or self.gpu.cur).t, self.t)

    def query(self) -> bool:
        return self.t is not None

    def elapsed_time(self, end: FakeEvent) -> float:
        return (end.t - self.t) * 1000.0


GPU = Gpu()
MS = 1e-3


@pytest.fixture
def gpu():
    GPU.cur = None
    yield GPU
    stream_waits.uninstall()


def _clock(gpu: Gpu) -> CudaClock:
    api = stream_waits.StreamApi(FakeStream, FakeEvent, lambda: gpu.cur)
    return CudaClock(sample_every=1, event_factory=lambda: FakeEvent(gpu), streams=api)


class Fsdp:
    """One FSDP-like step on fake streams: all-gathers on one side stream, reduce-scatters on
    another, the compute stream waiting for each before the layer that needs it (as FSDP does)."""

    def __init__(self, gpu: Gpu, clock: CudaClock) -> None:
        self.gpu, self.clock = gpu, clock
        self.compute, self.ag, self.rs = FakeStream(1), FakeStream(2), FakeStream(3)
        gpu.cur = self.compute

    def collective(self, stream: FakeStream, ms: float) -> FakeEvent:
        stream.wait_stream(self.compute)  # its input is ready where the compute stream stands
        self.gpu.cur = stream
        self.clock.comm_begin()
        stream.t += ms * MS
        self.clock.comm_end()
        ev = stream.record_event()
        self.gpu.cur = self.compute
        return ev

    def work(self, ms: float) -> None:
        self.compute.t += ms * MS

    def step(self, ag_fwd: float, ag_bwd: float, rs: float) -> None:
        c = self.clock
        c.mark("step_start")
        c.mark("data_ready")
        c.mark("forward_start")
        gathers = [self.collective(self.ag, ag_fwd) for _ in range(3)]  # prefetched: issued together
        self.work(3)  # embedding (not sharded)
        for ev in gathers:
            self.compute.wait_event(ev)
            self.work(3)
        c.mark("forward_end")
        regather = [self.collective(self.ag, ag_bwd) for _ in range(2)]  # layers 1 and 0 again for backward
        self.work(7)  # layer 2's backward (kept gathered after forward)
        rs_events = [self.collective(self.rs, rs)]
        for ev in regather:
            self.compute.wait_event(ev)
            self.work(7)
            rs_events.append(self.collective(self.rs, rs))
        self.work(3)  # the embedding's backward
        assert len(rs_events) == 3
        self.compute.wait_stream(self.rs)  # FSDP's final callback: gradients reduced before the optimizer
        c.mark("optimizer_start")
        self.work(0.0)
        c.end_step()


def _phases(steps) -> tuple[dict[str, float], float]:
    ph = [sum(s[0][k] for s in steps) for k in range(len(PHASE_KEYS))]
    return dict(zip(PHASE_KEYS, ph, strict=True)), sum(s[1] for s in steps)


def test_fully_overlapped_fsdp_communication_is_not_exposed(gpu):
    """13 ms of all-gather and reduce-scatter, all of it hidden behind 36 ms of compute: the step
    read 36% communication and backward 7 ms (the collectives' durations taken out of it); it is
    0% communication, forward 12 ms and backward 24 ms, with the 13 ms reported as in flight."""
    clock = _clock(gpu)
    job = Fsdp(gpu, clock)
    for _ in range(3):
        job.step(ag_fwd=2, ag_bwd=1.5, rs=4 / 3)
    ph, wall = _phases(clock.drain())
    assert wall == pytest.approx(3 * 36 * MS)
    assert ph["communication"] == pytest.approx(0.0, abs=1e-9)
    assert ph["forward"] == pytest.approx(3 * 12 * MS) and ph["backward"] == pytest.approx(3 * 24 * MS)
    f = clock.comm_facts()
    assert f["comm_seconds_per_step"] == pytest.approx(13 * MS)
    assert f["comm_exposed_seconds_per_step"] == pytest.approx(0.0, abs=1e-9)
    assert f["comm_overlap_ratio"] == pytest.approx(1.0)


def test_the_compute_streams_waits_are_the_exposed_communication(gpu):
    """All-gathers of 5 ms each behind 3 ms layers: forward waits 2 ms at each of 3 layers (6 ms
    exposed, taken out of forward); the backward's gathers and reduce-scatters stay hidden."""
    clock = _clock(gpu)
    job = Fsdp(gpu, clock)
    job.step(ag_fwd=5, ag_bwd=1.5, rs=4 / 3)
    ph, wall = _phases(clock.drain())
    assert wall == pytest.approx(42 * MS)
    assert ph["communication"] == pytest.approx(6 * MS)
    assert ph["forward"] == pytest.approx(12 * MS) and ph["backward"] == pytest.approx(24 * MS)
    f = clock.comm_facts()
    assert f["comm_exposed_seconds_per_step"] == pytest.approx(6 * MS)
    assert f["comm_seconds_per_step"] == pytest.approx(15 * MS + 7 * MS)  # 15 forward (3 back to back) + 7 backward


def test_a_collective_on_the_compute_stream_is_exposed_whole(gpu):
    """A user's all_reduce on the compute stream holds it: all of it is communication (as before)."""
    clock = _clock(gpu)
    job = Fsdp(gpu, clock)
    clock.mark("step_start")
    clock.mark("forward_start")
    job.work(10)
    clock.mark("forward_end")
    job.work(10)
    clock.comm_begin()
    job.work(5)  # on the compute stream
    clock.comm_end()
    clock.mark("optimizer_start")
    clock.end_step()
    ph, wall = _phases(clock.drain())
    assert ph["communication"] == pytest.approx(5 * MS) and ph["backward"] == pytest.approx(10 * MS)
    assert clock.comm_facts() == {}  # no side stream: DDP's facts (ddp_comm.py) stand


def test_waits_for_non_communication_streams_are_left_alone_and_methods_restored(gpu):
    clock = _clock(gpu)
    job = Fsdp(gpu, clock)
    original = FakeStream.wait_event
    clock.mark("step_start")
    clock.mark("forward_start")
    assert not stream_waits.installed()  # nothing wrapped before a side-stream collective
    job.collective(job.ag, 1)
    assert stream_waits.installed() and FakeStream.wait_event is not original
    copy = FakeStream(9)  # an input-copy stream: the compute stream's wait for it is not communication
    copy.t = job.compute.t + 4 * MS
    job.compute.wait_stream(copy)
    clock.mark("forward_end")
    clock.mark("optimizer_start")
    clock.end_step()
    ph, _ = _phases(clock.drain())
    assert ph["communication"] == 0.0
    stream_waits.uninstall()
    assert FakeStream.wait_event is original and not stream_waits.installed()


def test_a_failing_clock_never_breaks_the_wait(gpu):
    clock = _clock(gpu)
    job = Fsdp(gpu, clock)
    clock.mark("forward_start")
    ev = job.collective(job.ag, 3)

    def broken(_stream):  # noqa: ANN001, ANN202
        raise RuntimeError("injected")

    clock.wait_begin = broken  # type: ignore[method-assign]
    job.compute.wait_event(ev)
    assert job.compute.t == ev.t  # the wait happened


def test_compute_bound_fsdp_job_is_not_called_inter_gpu_interconnect(gpu):
    """SM 85%, the communication all hidden: the phases the clock now gives, through the rules, name
    gpu_compute (with the old count, 36% communication named inter_gpu_interconnect)."""
    clock = _clock(gpu)
    job = Fsdp(gpu, clock)
    for _ in range(5):
        job.step(ag_fwd=2, ag_bwd=1.5, rs=4 / 3)
    steps = clock.drain()
    ph, wall = _phases(steps)
    facts = Facts(
        {"device": "cuda", "fsdp": True, "sharded": True, "world_size": 2, "local_world_size": 2, **clock.comm_facts()}
    )
    phases = StepPhases(len(steps), wall, ph, facts)
    readings = {
        ("gpu_compute", "gpu0", "busy_fraction"): 0.99,
        ("gpu_compute", "gpu0", "sm_activity"): 0.85,
        ("gpu_memory_bandwidth", "gpu0", "utilization"): 0.3,
        ("inter_gpu_interconnect", "gpu0", "utilization"): 0.2,
        ("cpu_compute", "job", "main_busy_cores"): 0.4,
    }
    w = WindowStats(0.0, 5.0, 5, {k: Stat(v, v, v, v, 5) for k, v in readings.items()}, {}, phases)
    v = classify(w, PeakTable(()))
    assert v.resource == "gpu_compute", v
