"""The sampling loop and the run keep ticking through failures of their parts (a sampler, the
step phases, a stage of the run, a sink), and say so once, not every tick."""

import logging

from bottleneckd.model.sample import StepPhases
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.runtime.loop import SamplingLoop
from bottleneckd.runtime.run import Run


class Broken:
    name = "broken"

    def __init__(self) -> None:
        self.fail = True

    def available(self) -> tuple[bool, str]:
        return True, ""

    def sample(self) -> list:
        if self.fail:
            raise RuntimeError("injected")
        return []


def test_a_failing_sink_sampler_or_phase_source_is_logged_once_and_the_others_go_on(caplog):
    seen = []
    calls = {"phases": 0}

    def phases() -> tuple[StepPhases | None, tuple]:
        calls["phases"] += 1
        if calls["phases"] <= 3:
            raise ValueError("bad phases")
        return StepPhases(1, 0.5, {"forward": 0.5}), ()

    def bad_trace(_sample) -> None:  # noqa: ANN001
        raise TypeError("bad sink")

    run = Run(PeakTable(()))
    run.sinks.add("trace", bad_trace)  # a sink that fails before the diagnosis
    run.sinks.add("view", lambda _s: seen.append(run.latest()))
    broken = Broken()
    loop = SamplingLoop([broken], 0.1, run, phases)
    with caplog.at_level(logging.WARNING):
        samples = [loop.tick() for _ in range(3)]
    assert len(seen) == 3 and all(s is not None for s in seen), "the diagnosis and the sinks after it still ran"
    assert all(s.phases is None for s in samples), "failed phases are unknown, not zero"
    assert [s.samplers[0].up for s in samples] == [False] * 3
    msgs = [r.getMessage() for r in caplog.records]
    assert sum("sink trace failed" in m for m in msgs) == 1
    assert sum("sampler broken failed" in m for m in msgs) == 1
    assert sum("step phases failed" in m for m in msgs) == 1
    broken.fail = False
    s = loop.tick()
    assert s.phases is not None and s.phases.steps == 1 and s.samplers[0].up
    broken.fail = True
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        loop.tick()
    assert any("sampler broken failed" in r.getMessage() for r in caplog.records), (
        "a new failure after recovery is said again"
    )


def test_a_failing_diagnosis_keeps_the_last_snapshot_and_the_sinks_going(caplog, monkeypatch):
    run = Run(PeakTable(()))
    seen = []
    run.sinks.add("view", lambda s: seen.append(s.t))
    loop = SamplingLoop([], 0.1, run)
    loop.tick()
    good = run.latest()

    def broken(_sample):  # noqa: ANN001
        raise RuntimeError("rule crashed")

    monkeypatch.setattr(run, "pipeline", broken)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            loop.tick()
    assert len(seen) == 4 and run.latest() is good
    assert sum("diagnosis failed" in r.getMessage() for r in caplog.records) == 1
