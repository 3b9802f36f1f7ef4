"""Each regime (resource and stage) over the whole time it was the verdict, so that the end report's
evidence covers every window of it, not its last one (often the tear-down: issue 21 item 8).

While training steps are reported, each tick's sample is booked to the regime that is the stable
verdict on that tick: running sums of every series and of the step phases, per regime. Memory is
bounded by the regimes (12 resources and undetermined, 6 stages) times the series, whatever the
length of the run. ``stats`` turns a regime's sums into the ``WindowStats`` the rules read, as if
one window had spanned all of it. Each phase's per-sample shares are counted in ``SHARE_BINS``
bins over 0..1 (bounded too), so that the regime's range of a share (what the what-if models read,
diagnosis/step_inputs.py) is a quantile of its samples, not the extremes of a long run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bottleneckd.diagnosis.thresholds import REGIME_RANGE_QUANTILE
from bottleneckd.diagnosis.window import RankView, Stat, WindowStats
from bottleneckd.model.sample import Sample, StepPhases

Key = tuple[str, str, str]
#: the resolution of a regime's per-sample phase shares (bins over 0..1)
SHARE_BINS = 200


@dataclass
class _ShareCounts:
    """A phase's per-sample shares over a regime, by bin (bin k holds [k, k+1) / SHARE_BINS)."""

    bins: list[int] = field(default_factory=lambda: [0] * (SHARE_BINS + 1))
    count: int = 0

    def add(self, x: float) -> None:
        self.bins[min(SHARE_BINS, max(0, int(x * SHARE_BINS)))] += 1
        self.count += 1

    def quantile_bin(self, rank: int) -> int:
        seen = 0
        for k, c in enumerate(self.bins):
            seen += c
            if seen > rank:
                return k
        return SHARE_BINS

    def range(self, q: float = REGIME_RANGE_QUANTILE) -> tuple[float, float]:
        """From the ``q`` quantile of the shares (the lower edge of its bin) to the ``1 - q`` one
        (the upper edge): the least and the largest share while there are only a window's worth."""
        last = self.count - 1
        lo = self.quantile_bin(math.floor(q * last))
        hi = self.quantile_bin(math.ceil((1.0 - q) * last))
        return lo / SHARE_BINS, min(1.0, (hi + 1) / SHARE_BINS)


@dataclass
class _Series:
    total: float = 0.0
    count: int = 0
    max: float = float("-inf")
    last: float = 0.0

    def add(self, x: float) -> None:
        self.total += x
        self.count += 1
        self.max = max(self.max, x)
        self.last = x

    def stat(self) -> Stat:
        # the p95 of a long stretch is not kept (it would need every value): its maximum stands in
        # for it, an upper bound; no rule reads either (they read means)
        return Stat(mean=self.total / self.count, p95=self.max, max=self.max, last=self.last, count=self.count)


@dataclass
class _Account:
    start: float
    end: float = 0.0
    samples: int = 0
    seconds: float = 0.0
    series: dict[Key, _Series] = field(default_factory=dict)
    notes: dict[Key, str] = field(default_factory=dict)
    steps: int = 0
    wall: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    shares: dict[str, _ShareCounts] = field(default_factory=dict)  # each phase's per-sample shares
    timed: int = 0  # samples that timed steps
    nodes: dict[str, set[int]] = field(default_factory=dict)
    views: dict[str, RankView] = field(default_factory=dict)  # each rank's latest report


@dataclass(frozen=True)
class Held:
    """A regime over the whole time it was the verdict while training."""

    stats: WindowStats
    seconds: float
    samples: int
    steps: int
    #: each phase's range of per-sample shares (see _ShareCounts.range)
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)


class HeldAccounts:
    """Running sums per regime, and over every training sample whatever its regime (the whole run);
    written by the pipeline's thread, read under its lock."""

    def __init__(self) -> None:
        self._accounts: dict[tuple[str, str], _Account] = {}
        self._run: _Account | None = None

    def add(self, regime: tuple[str, str], sample: Sample) -> None:
        a = self._accounts.get(regime)
        if a is None:
            a = self._accounts[regime] = _Account(start=sample.t - sample.interval)
        if self._run is None:
            self._run = _Account(start=sample.t - sample.interval)
        _book(a, sample)
        _book(self._run, sample)

    def held(self, regime: tuple[str, str], facts: Mapping[str, Any], steps_seen: int) -> Held | None:
        """The regime's statistics over all of its time (the facts: this tick's), or None when it
        never held while training."""
        return _held(self._accounts.get(regime), facts, steps_seen)

    def whole(self, facts: Mapping[str, Any], steps_seen: int) -> Held | None:
        """Every training sample's statistics as one window, or None before the first."""
        return _held(self._run, facts, steps_seen)

    def run_share(self, phase: str) -> float | None:
        """``phase``'s share of the whole run's step time (None before a step is timed)."""
        a = self._run
        if a is None or not a.steps or a.wall <= 0.0:
            return None
        return a.phases.get(phase, 0.0) / a.wall


def _book(a: _Account, sample: Sample) -> None:
    a.end = sample.t
    a.samples += 1
    a.seconds += sample.interval
    for r in sample.readings:
        key = (r.resource, r.device, r.metric)
        if r.value is None:
            a.notes[key] = r.note
        else:
            a.series.setdefault(key, _Series()).add(r.value)
    p = sample.phases
    if p is not None and p.steps:
        a.steps += p.steps
        a.wall += p.wall_seconds
        for k, x in p.phases.items():
            a.phases[k] = a.phases.get(k, 0.0) + x
        for k in a.phases.keys() - p.phases.keys():  # a phase this sample did not time: 0 in it
            a.shares[k].add(0.0)
        for k in p.phases:
            if k not in a.shares:  # a phase first timed now was 0 in the samples before
                a.shares[k] = _ShareCounts()
                a.shares[k].bins[0], a.shares[k].count = a.timed, a.timed
            a.shares[k].add(p.share(k) or 0.0)
        a.timed += 1
    for rp in sample.ranks:
        i = rp.identity
        a.nodes.setdefault(i.node, set()).add(i.rank)
        a.views[i.key] = RankView(i.rank, i.node, i.gpu, rp.phases.facts)


def _held(a: _Account | None, facts: Mapping[str, Any], steps_seen: int) -> Held | None:
    if a is None or not a.samples:
        return None
    phases = StepPhases(a.steps, a.wall, dict(a.phases), facts) if a.steps else None
    stats = WindowStats(
        start=a.start,
        end=a.end,
        samples=a.samples,
        stats={k: s.stat() for k, s in a.series.items()},
        notes=dict(a.notes),
        phases=phases,
        steps_seen=steps_seen,
        topology=tuple((n, tuple(sorted(rs))) for n, rs in sorted(a.nodes.items())),
        ranks=tuple(sorted(a.views.values(), key=lambda v: (v.rank, v.node))),
    )
    return Held(
        stats=stats,
        seconds=a.seconds,
        samples=a.samples,
        steps=a.steps,
        ranges={k: c.range() for k, c in a.shares.items() if c.count},
    )
