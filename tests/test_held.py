"""A regime's sums (diagnosis/held.py): each phase's range of per-sample shares is a quantile of
its samples (as wide as one window's), not the extremes of a long run."""

from __future__ import annotations

import pytest

from bottleneckd.diagnosis.held import SHARE_BINS, HeldAccounts
from bottleneckd.model.facts import Facts
from bottleneckd.model.sample import Sample, StepPhases

#: a share is read to its bin: within one bin's width, and a float's rounding at the edge
BIN = 1.5 / SHARE_BINS
REGIME = ("cpu_compute", "data")


def timed(t: float, phases: dict[str, float]) -> Sample:
    return Sample(t, 1.0, (), StepPhases(2, 1.0, phases, Facts()))


def test_a_window_s_worth_of_samples_ranges_from_the_least_to_the_largest() -> None:
    a = HeldAccounts()
    for t, d in enumerate((0.2, 0.6, 0.4)):
        a.add(REGIME, timed(t, {"data_wait": d, "forward": 1 - d}))
    lo, hi = a.held(REGIME, Facts(), 0).ranges["data_wait"]
    assert lo == pytest.approx(0.2, abs=BIN) and hi == pytest.approx(0.6, abs=BIN)


def test_a_long_regime_s_range_leaves_its_outlier_samples_out() -> None:
    a = HeldAccounts()
    a.add(REGIME, timed(0, {"data_wait": 0.0, "forward": 1.0}))  # an epoch's start
    for t in range(1, 99):
        a.add(REGIME, timed(t, {"data_wait": 0.5 + 0.1 * (t % 2), "forward": 0.5}))
    a.add(REGIME, timed(99, {"data_wait": 1.0}))  # forward not timed in it: 0 there
    held = a.held(REGIME, Facts(), 0)
    lo, hi = held.ranges["data_wait"]
    assert lo == pytest.approx(0.5, abs=BIN) and hi == pytest.approx(0.6, abs=BIN)
    assert held.ranges["forward"][0] <= 0.5  # a phase a sample did not time counts as 0 in it


def test_a_phase_first_timed_late_was_zero_before() -> None:
    a = HeldAccounts()
    for t in range(10):
        a.add(REGIME, timed(t, {"forward": 1.0}))
    for t in range(10, 12):
        a.add(REGIME, timed(t, {"forward": 0.5, "other": 0.5}))
    lo, hi = a.held(REGIME, Facts(), 0).ranges["other"]
    assert lo == 0.0 and hi == pytest.approx(0.5, abs=BIN)
