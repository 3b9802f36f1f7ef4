"""Windows built from readings and step phases, through the real Window (tests of the rules).

Figures named as "resource/device/metric"; a phase share dict is turned into seconds over
``steps`` steps of ``step`` seconds. Only the hardware-side figures are invented here; everything
from the Window on is the production code."""

from __future__ import annotations

from typing import Any

from bottleneckd.diagnosis.window import Window, WindowStats
from bottleneckd.model.sample import Reading, Sample, StepPhases
from bottleneckd.peaks.resolve import PeakTable

NO_PEAKS = PeakTable(())


def sample(
    figures: dict[str, float | None],
    shares: dict[str, float] | None = None,
    facts: dict[str, Any] | None = None,
    t: float = 0.0,
    steps: int = 10,
    step: float = 0.1,
) -> Sample:
    readings = []
    for key, v in figures.items():
        r, rest = key.split("/", 1)
        d, m = rest.rsplit("/", 1)  # a device may hold a slash (an InfiniBand port: mlx5_0/1)
        readings.append(Reading(r, d, m, v, "", "" if v is not None else "unknown in this test"))
    ph = None
    if shares is not None:
        wall = steps * step
        ph = StepPhases(steps, wall, {k: v * wall for k, v in shares.items()}, dict(facts or {}))
    return Sample(t, 1.0, tuple(readings), ph)


def window(
    figures: dict[str, float | None],
    shares: dict[str, float] | None = None,
    facts: dict[str, Any] | None = None,
    n: int = 5,
) -> WindowStats:
    w = Window(n)
    for i in range(n):
        w.add(sample(figures, shares, facts, t=float(i)))
    st = w.stats()
    assert st is not None
    return st


HOST = {"cpu_compute/host/cores": 8.0, "cpu_compute/host/utilization": 0.1, "cpu_compute/host/iowait": 0.0}


def job(
    busy: float,
    main: float,
    hottest: float | None = None,
    workers: float = 0.0,
    n_workers: int = 0,
    worker_max: float | None = None,
    ranks: int = 1,
    usable: float = 8.0,
    waiting: float = 0.0,
    d_threads: float = 0.0,
) -> dict[str, float | None]:
    """The job's CPU figures as the cpu_compute sampler reports them."""
    return {
        "cpu_compute/job/busy_cores": busy,
        "cpu_compute/job/main_busy_cores": main,
        "cpu_compute/job/hottest_thread_busy": main if hottest is None else hottest,
        "cpu_compute/job/worker_busy_cores": workers,
        "cpu_compute/job/workers": float(n_workers),
        "cpu_compute/job/worker_max_busy_cores": worker_max
        if worker_max is not None
        else (workers / n_workers if n_workers else None),
        "cpu_compute/job/ranks": float(ranks),
        "cpu_compute/job/usable_cores": usable,
        "cpu_compute/job/runqueue_wait_cores": waiting,
        "cpu_compute/job/threads_in_disk_wait": d_threads,
    }
