"""The statistics of a speed-up, the MLPerf way: an olympic mean per side (the fastest and the
slowest run dropped, as MLCommons' reference-convergence checker scores submissions), a
one-sided Welch t-test at a stated alpha, and a confidence interval on the ratio of the means.

All inputs are durations (lower is better): time to target, or seconds per step. The speed-up of
B over A is mean(A) / mean(B). scipy is imported only inside ``compare_durations``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Side:
    mean: float
    std: float | None  # None with one value: no estimate of run-to-run noise
    n: int  # values used (after the olympic trim)
    dropped: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def olympic(values: Sequence[float]) -> Side:
    """The mean with the lowest and the highest value dropped when there are at least 5 (MLPerf's
    olympic scoring: 5 runs are scored on 3, 10 on 8), the sample standard deviation of all of
    them, and the number of values the mean is over."""
    every = sorted(float(v) for v in values)
    if not every:
        raise ValueError("no values")
    dropped = 2 if len(every) >= 5 else 0  # MLPerf's minimum of 5 runs: at least 3 left to test
    xs = every[1:-1] if dropped else every
    m = sum(xs) / len(xs)
    # the spread of every run: the trimmed runs' spread understates the noise (dropping the two
    # extremes halves it at 5 runs), which made 'faster' come out of noise well above alpha
    mu = sum(every) / len(every)
    std = math.sqrt(sum((x - mu) ** 2 for x in every) / (len(every) - 1)) if len(every) >= 2 else None
    return Side(m, std, len(xs), dropped)


@dataclass(frozen=True)
class Comparison:
    a: Side
    b: Side
    speedup: float  # mean(A) / mean(B): above 1, B is faster
    alpha: float
    p_value: float | None  # one-sided: H1 is "B takes less time than A"
    ci: tuple[float, float] | None  # two-sided (1 - alpha) interval on the speed-up
    at_least: float | None  # one-sided (1 - alpha) lower bound: the delta of (epsilon, delta)
    verdict: str  # "faster" | "slower" | "within noise" | "untested"
    why: str

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "speedup": self.speedup,
            "alpha": self.alpha,
            "p_value": self.p_value,
            "ci": list(self.ci) if self.ci else None,
            "at_least": self.at_least,
            "verdict": self.verdict,
            "why": self.why,
        }


def compare_durations(a: Sequence[float], b: Sequence[float], alpha: float = 0.05) -> Comparison:
    """Is B faster than A? Welch's one-sided t-test on the olympic samples; the interval on the
    ratio of means by the delta method on its logarithm, with Welch's degrees of freedom."""
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha {alpha} must be in (0, 0.5)")
    sa, sb = olympic(a), olympic(b)
    if sa.mean <= 0 or sb.mean <= 0:
        raise ValueError("durations must be positive")
    ratio = sa.mean / sb.mean
    if sa.std is None or sb.std is None:
        return Comparison(
            sa,
            sb,
            ratio,
            alpha,
            None,
            None,
            None,
            "untested",
            "one run on a side: run-to-run noise unknown; repeat each side (5 runs a side is MLPerf's minimum)",
        )
    from scipy import stats  # lazy: only comparisons need scipy

    if sa.std == 0 and sb.std == 0:
        p = 0.0 if sb.mean < sa.mean else 1.0
        lo = hi = bound = ratio
    else:
        p = float(
            stats.ttest_ind_from_stats(
                sb.mean, sb.std, sb.n, sa.mean, sa.std, sa.n, equal_var=False, alternative="less"
            ).pvalue
        )
        va, vb = (sa.std / sa.mean) ** 2 / sa.n, (sb.std / sb.mean) ** 2 / sb.n  # squared relative standard errors
        se = math.sqrt(va + vb)
        df = (va + vb) ** 2 / ((va**2 / (sa.n - 1)) + (vb**2 / (sb.n - 1))) if va + vb > 0 else float(sa.n + sb.n - 2)
        t2, t1 = float(stats.t.ppf(1 - alpha / 2, df)), float(stats.t.ppf(1 - alpha, df))
        lo, hi, bound = ratio * math.exp(-t2 * se), ratio * math.exp(t2 * se), ratio * math.exp(-t1 * se)
    if p < alpha:
        verdict, why = "faster", f"B faster than A: one-sided Welch t-test p = {p:.3g} < alpha = {alpha}"
    elif 1 - p < alpha:
        verdict, why = (
            "slower",
            f"B slower than A: one-sided Welch t-test p = {1 - p:.3g} < alpha = {alpha} (other direction)",
        )
    else:
        verdict, why = "within noise", f"the difference is within noise: p = {p:.3g} >= alpha = {alpha}"
    return Comparison(sa, sb, ratio, alpha, p, (lo, hi), bound, verdict, why)
