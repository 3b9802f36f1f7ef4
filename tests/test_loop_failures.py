"""The sampling loop keeps ticking through failures of its parts, and says so once, not every tick."""

import logging

from bottleneckd.model.sample import StepPhases
from bottleneckd.runtime.loop import SamplingLoop


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

    def phases() -> StepPhases | None:
        calls["phases"] += 1
        if calls["phases"] <= 3:
            raise ValueError("bad phases")
        return StepPhases(1, 0.5, {"forward": 0.5})

    def bad_sink(_sample) -> None:  # noqa: ANN001
        raise TypeError("bad sink")

    broken = Broken()
    loop = SamplingLoop([broken], 0.1, {"pipeline": bad_sink, "view": seen.append}, phases)
    with caplog.at_level(logging.WARNING, logger="bottleneckd.runtime.loop"):
        samples = [loop.tick() for _ in range(3)]
    assert len(seen) == 3, "a sink after the failing one still ran every tick"
    assert all(s.phases is None for s in samples), "failed phases are unknown, not zero"
    assert [s.samplers[0].up for s in samples] == [False] * 3
    msgs = [r.getMessage() for r in caplog.records]
    assert sum("sink pipeline failed" in m for m in msgs) == 1
    assert sum("sampler broken failed" in m for m in msgs) == 1
    assert sum("step phases failed" in m for m in msgs) == 1
    broken.fail = False
    s = loop.tick()
    assert s.phases is not None and s.phases.steps == 1 and s.samplers[0].up
    broken.fail = True
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="bottleneckd.runtime.loop"):
        loop.tick()
    assert any("sampler broken failed" in r.getMessage() for r in caplog.records), (
        "a new failure after recovery is said again"
    )
