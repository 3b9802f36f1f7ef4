"""Pipeline: the dominant verdict (the run-level tests, facts and the snapshot read from another
thread, are in tests/test_run.py)."""

from __future__ import annotations

from bottleneckd.diagnosis.pipeline import dominant_of
from bottleneckd.diagnosis.verdict import Verdict


def v(resource: str) -> Verdict:
    return Verdict(resource=resource, stage="compute", confidence=0.7, evidence=())


def test_dominant_prefers_a_bottleneck_that_held_three_intervals_over_longer_idle() -> None:
    last = {"undetermined": v("undetermined"), "cpu_compute": v("cpu_compute")}
    assert dominant_of({"undetermined": 20.0, "cpu_compute": 3.0}, {}, last, 1.0).resource == "cpu_compute"
    assert dominant_of({"undetermined": 20.0, "cpu_compute": 2.0}, {}, last, 1.0).resource == "undetermined"
    assert dominant_of({}, {}, {}, 1.0) is None


def test_dominant_counts_training_windows_first() -> None:
    last = {"cpu_compute": v("cpu_compute"), "storage_bandwidth": v("storage_bandwidth")}
    held = {"cpu_compute": 30.0, "storage_bandwidth": 10.0}  # set-up and tear-down were CPU-bound
    training = {"storage_bandwidth": 10.0, "cpu_compute": 1.0}
    assert dominant_of(held, training, last, 1.0).resource == "storage_bandwidth"
