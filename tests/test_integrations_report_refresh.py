"""How often a framework callback asks the sidecar for its report: a report with a verdict is kept
for a while, an undetermined one is asked again soon (a CI run's first log, ~1 s into training,
got an undetermined verdict and, kept for 30 s, logged it to the end of the run), with the waits
doubling so that a job that stays undetermined is not sampled every few seconds all run long."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from bottleneckd.integrations import _common
from bottleneckd.integrations._common import (
    REPORT_REFRESH_SECONDS,
    REPORT_RETRIES_BEFORE_BACK_OFF,
    REPORT_RETRY_SECONDS,
    Marks,
    settled,
)


def doc(resource: str | None, steps: int = 5) -> dict[str, Any]:
    return {"verdict": {"resource": resource} if resource else {}, "throughput": {"steps": steps}}


def marks_answering(answers: list[dict[str, Any]], clock: list[float]) -> tuple[Marks, list[float]]:
    asked: list[float] = []

    def report() -> dict[str, Any]:
        asked.append(clock[0])
        return answers[min(len(asked), len(answers)) - 1]

    m = Marks("test", print_epoch=False)
    m.watcher = SimpleNamespace(flush=lambda: None, transport=SimpleNamespace(report=report))
    return m, asked


def test_settled_needs_steps_and_a_verdict() -> None:
    assert settled(doc("cpu_compute"))
    assert not settled(doc("undetermined"))
    assert not settled(doc(None))
    assert not settled(doc("cpu_compute", steps=0))


def test_an_undetermined_report_is_asked_again_soon_then_less_often(monkeypatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(_common.time, "monotonic", lambda: clock[0])
    m, asked = marks_answering([doc("undetermined")], clock)
    while clock[0] < 100:
        m._report()
        clock[0] += 0.5
    waits = [b - a for a, b in zip(asked, asked[1:], strict=False)]
    flat = REPORT_RETRIES_BEFORE_BACK_OFF
    assert waits[:flat] == [REPORT_RETRY_SECONDS] * flat, waits
    assert waits[flat : flat + 3] == [REPORT_RETRY_SECONDS * 2**i for i in (1, 2, 3)], waits
    assert max(waits) == REPORT_REFRESH_SECONDS and waits[-1] == REPORT_REFRESH_SECONDS, waits


def test_a_verdict_is_kept_once_it_comes_and_the_back_off_starts_over(monkeypatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(_common.time, "monotonic", lambda: clock[0])
    answers = [doc("undetermined"), doc("undetermined"), doc("cpu_compute"), doc("undetermined"), doc("undetermined")]
    m, asked = marks_answering(answers, clock)
    seen = []
    while clock[0] < 80:
        seen.append((m._report() or {}).get("verdict", {}).get("resource"))
        clock[0] += 0.5
    assert asked[:3] == [0.0, REPORT_RETRY_SECONDS, 2 * REPORT_RETRY_SECONDS], asked
    # the verdict, once it came, is what every log gets until the refresh
    assert asked[3] == asked[2] + REPORT_REFRESH_SECONDS, asked
    assert asked[4] == asked[3] + REPORT_RETRY_SECONDS, asked  # undetermined again: soon
    assert "cpu_compute" in seen and seen[-1] == "undetermined"
