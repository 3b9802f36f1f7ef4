"""Statistics and machine-quietness checks shared by the A/B benchmarks (bench_watcher.py,
bench_ranks.py): the median of paired differences with a bootstrap confidence interval, low tails,
and the load average at start and end, with the rule that a wall-clock figure is not reported
when the load moved during the measurement.
"""

from __future__ import annotations

import math
import os
import random
import statistics
from dataclasses import dataclass

#: a wall-clock A/B is not reported when the 1-minute load average changed by more than this
#: between start and end (issue 23): other processes came or went while the arms ran
LOAD_CHANGE_REFUSE = 0.5
#: above this 1-minute load at start the machine is not quiet (2 cores here): the figure is warned about
LOAD_QUIET = 1.0
#: the kernel's 1-minute load average decays with this time constant (seconds): a process that keeps n
#: threads runnable for T seconds raises it by n (1 - exp(-T / 60)) by itself
LOAD_TAU = 60.0
#: the least duration over which the start's decay is told from other processes: the kernel updates
#: the load average every 5 s in steps of 0.01, so over a shorter run the estimate's error
#: (~0.01 x LOAD_TAU / seconds) approaches the refusal margin
DECAY_MIN_SECONDS = 30.0
#: bootstrap resamples of the pairs for the confidence interval of the median difference
BOOTSTRAP = 4000


def load1() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # no load average on this platform
        return None


@dataclass(frozen=True)
class LoadCheck:
    start: float | None
    end: float | None
    #: the benchmark's own runnable threads and how long they ran (seconds): their part of the
    #: load's rise, own (1 - exp(-seconds / LOAD_TAU)), is not another process's
    own: float = 0.0
    seconds: float = 0.0

    @property
    def own_rise(self) -> float:
        return self.own * (1.0 - math.exp(-self.seconds / LOAD_TAU))

    @property
    def others(self) -> float | None:
        """Other processes' runnable threads, on average over the measurement: the load average is
        an exponential average, so ``end = start e^(-T/tau) + (own + others)(1 - e^(-T/tau))``; a
        start that was the residue of a load just gone decays away instead of counting as others'
        (None: not known, no load average or no duration)."""
        if self.start is None or self.end is None or self.seconds <= 0:
            return None
        decay = math.exp(-self.seconds / LOAD_TAU)
        return (self.end - self.start * decay) / (1.0 - decay) - self.own

    @property
    def refused(self) -> str | None:
        """Why no figure is reported (None: reported): the load moved by more than
        LOAD_CHANGE_REFUSE beyond the benchmark's own part, unless the run lasted DECAY_MIN_SECONDS
        and the decay of its start explains the move: other processes' average over it within
        LOAD_CHANGE_REFUSE of none (a start that was the residue of a load just gone)."""
        if self.start is None or self.end is None:
            return None
        if abs(self.end - self.start - self.own_rise) <= LOAD_CHANGE_REFUSE:
            return None
        others = self.others
        if others is not None and self.seconds >= DECAY_MIN_SECONDS and abs(others) <= LOAD_CHANGE_REFUSE:
            return None  # the start's residue decayed over a quiet run: nothing else ran
        mine = f", {self.own_rise:.2f} of it the benchmark's own" if self.own_rise else ""
        return (
            f"the 1-minute load average went from {self.start:.2f} to {self.end:.2f} during the measurement"
            f"{mine} (other processes' part changed by more than {LOAD_CHANGE_REFUSE}): other processes came "
            "or went while the arms ran, so a wall-clock difference measures them as much as the hook"
        )

    def lines(self) -> list[str]:
        f = lambda v: "unknown" if v is None else f"{v:.2f}"  # noqa: E731
        out = [f"load average (1 min): {f(self.start)} at start, {f(self.end)} at end"]
        if self.own_rise:
            out[0] += (
                f" ({self.own_rise:.2f} of the rise the benchmark's own {self.own:g} thread(s) "
                f"over {self.seconds:.0f} s)"
            )
        if self.others is not None:
            out.append(f"other processes' runnable threads over the measurement (estimate): {self.others:+.2f}")
        if self.start is not None and self.start > LOAD_QUIET:
            out.append(
                f"WARNING: load {self.start:.2f} > {LOAD_QUIET} at start: the machine is not quiet; "
                "timings are provisional (rerun when the load is below 0.5)"
            )
        return out


def bootstrap_median_ci(xs: list[float], level: float = 0.95, n: int = BOOTSTRAP, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the median of ``xs`` (resampling the pairs)."""
    rng = random.Random(seed)
    k = len(xs)
    meds = sorted(statistics.median(rng.choices(xs, k=k)) for _ in range(n))
    lo = meds[int((1 - level) / 2 * n)]
    hi = meds[min(n - 1, int((1 + level) / 2 * n))]
    return lo, hi


@dataclass(frozen=True)
class PairedAB:
    """Paired blocks (bare, watched), seconds per step, adjacent in time."""

    bare: list[float]
    watched: list[float]

    @property
    def diffs(self) -> list[float]:
        return [w - b for b, w in zip(self.bare, self.watched, strict=True)]

    @property
    def ratios(self) -> list[float]:
        return [w / b for b, w in zip(self.bare, self.watched, strict=True) if b > 0]

    def lines(self, unit: float = 1e6, unit_name: str = "us") -> list[str]:
        d, r = self.diffs, self.ratios
        b = statistics.median(self.bare)
        med = statistics.median(d)
        lo, hi = bootstrap_median_ci(d)
        rmed = statistics.median(r)
        rlo, rhi = bootstrap_median_ci(r)
        q = statistics.quantiles(d, n=4) if len(d) > 1 else [med, med, med]
        qb, qw = (statistics.quantiles(x, n=10)[0] for x in (self.bare, self.watched)) if len(d) > 1 else (b, b)
        return [
            f"bare {b * unit:.1f} {unit_name}/step (median of {len(d)} blocks)",
            f"watched minus bare, per pair: median {med * unit:+.2f} {unit_name}/step, "
            f"95% CI [{lo * unit:+.2f}, {hi * unit:+.2f}] (bootstrap over the {len(d)} pairs); "
            f"quartiles {q[0] * unit:+.1f}, {q[2] * unit:+.1f}",
            f"as a ratio watched/bare: median {rmed:.4f}, 95% CI [{rlo:.4f}, {rhi:.4f}] "
            f"({(rmed - 1) * 100:+.2f}% of the step)",
            f"low tails: 10th percentile watched minus bare {(qw - qb) * unit:+.2f} {unit_name}/step, "
            f"fastest block watched minus bare {(min(self.watched) - min(self.bare)) * unit:+.2f} {unit_name}/step",
        ]
