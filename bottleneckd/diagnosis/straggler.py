"""The straggler: which rank (or node) every other rank waits for. Pure functions over the
per-rank phases of a window of samples (``Sample.ranks``).

Under a synchronous all-reduce every rank's wall time per step is the same (the fast ranks wait),
so wall clocks cannot find a slow rank. Two per-rank figures can: compute time per step (forward
+ backward, where backward excludes the communication it waited for; GPU-side on CUDA) and time
waiting in collectives per step. The straggler computes longest and waits least; its victims wait
for it. A rank is named only when it is the slowest in most of the recent intervals, the last to
arrive (the one waiting least) in at least half of them, and its compute is longer than the
median rank's by more than the noise margin; all the ranks of one
node slower than every rank elsewhere are a slow node, named as the node.

An interval is one report period of one rank (``RankPhases``: its steps in one sampling tick);
"slowest in most steps" is judged over the last ``last`` intervals in which two or more ranks
reported.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import TYPE_CHECKING, Any

from bottleneckd.diagnosis.thresholds import (
    STRAGGLER_HOLD,
    STRAGGLER_LAST,
    STRAGGLER_LAST_ARRIVAL,
    STRAGGLER_MAJORITY,
    STRAGGLER_MARGIN,
    STRAGGLER_MIN_INTERVALS,
    STRAGGLER_RUN_SHARE,
    STRAGGLER_WAIT_SHARE,
)
from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.sample import RankPhases, Sample

if TYPE_CHECKING:
    from bottleneckd.diagnosis.verdict import Verdict

COMPUTE_PHASES = ("forward", "backward")
WAIT_PHASES = ("communication",)
#: the thresholds (diagnosis/thresholds.py, with their sources) under the names this module has used
MARGIN = STRAGGLER_MARGIN  # compute this much longer than the median rank's, or it is noise
MAJORITY = STRAGGLER_MAJORITY  # slowest in at least this share of the intervals judged
LAST_ARRIVAL = STRAGGLER_LAST_ARRIVAL  # and the last to arrive (waiting least) in at least half of them
MIN_INTERVALS = STRAGGLER_MIN_INTERVALS
HOLD = STRAGGLER_HOLD  # windows of the last HOLD + 2 that must find the same straggler before a verdict names it
LAST = STRAGGLER_LAST
#: windows beyond HOLD that the hold looks back over (HOLD of the last HOLD + 2)
HOLD_SLACK = 2


@dataclass(frozen=True, kw_only=True)
class RankFigures:
    """One rank over the window: means per step."""

    identity: RankIdentity
    compute: float  # seconds per step in forward + backward
    wait: float  # seconds per step waiting in collectives
    steps: int
    slowest: int  # intervals in which it computed longest
    last_arrival: int  # intervals in which it waited least (the others waited for it)


@dataclass(frozen=True, kw_only=True)
class Straggler:
    kind: str  # "rank" | "node"
    rank: int | None  # the rank (None for a node)
    node: str
    gpu: str
    ranks: tuple[int, ...]  # the ranks concerned (one, or all of the node's)
    compute: float  # its compute per step (s); for a node the mean over its ranks
    median_compute: float  # the median rank's
    slowest_share: float  # share of the intervals in which it was the slowest
    last_share: float  # share of the intervals in which it arrived last (waited least)
    intervals: int
    step_time_lost: float  # s per step: slowest compute - median compute

    @property
    def excess(self) -> float:
        return self.compute / self.median_compute - 1.0 if self.median_compute > 0 else 0.0

    def evidence(self) -> tuple[str, ...]:
        who = (
            f"rank {self.rank} on {self.node}" + (f" ({self.gpu})" if self.gpu else "")
            if self.kind == "rank"
            else f"node {self.node} (ranks {', '.join(map(str, self.ranks))})"
        )
        return (
            f"straggler: {who} computes {self.excess:.0%} longer than the median rank "
            f"({self.compute * 1e3:.1f} ms vs {self.median_compute * 1e3:.1f} ms of forward+backward per step)",
            f"slowest in {self.slowest_share:.0%} and last to arrive at the all-reduce in {self.last_share:.0%} "
            f"of the last {self.intervals} intervals",
            f"step time lost to it: {self.step_time_lost * 1e3:.1f} ms per step (the other ranks wait)",
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "rank": self.rank,
            "node": self.node,
            "gpu": self.gpu,
            "ranks": list(self.ranks),
            "compute_seconds": self.compute,
            "median_compute_seconds": self.median_compute,
            "excess_ratio": self.excess,
            "slowest_share": self.slowest_share,
            "last_arrival_share": self.last_share,
            "intervals": self.intervals,
            "step_time_lost_seconds": self.step_time_lost,
        }


def _per_step(rp: RankPhases, names: Sequence[str]) -> float:
    s = rp.phases.steps
    return sum(rp.phases.phases.get(n, 0.0) for n in names) / s if s else 0.0


def intervals(samples: Iterable[Sample], last: int = LAST) -> list[tuple[RankPhases, ...]]:
    """The last ``last`` sample intervals in which two or more ranks of one job reported steps."""
    out = []
    for s in samples:
        rs = tuple(r for r in s.ranks if r.phases.steps > 0)
        if len({r.identity.key for r in rs}) > 1:
            out.append(rs)
    return out[-last:]


def rank_figures(window: Sequence[tuple[RankPhases, ...]]) -> list[RankFigures]:
    """Per rank: compute and wait per step (the median over the window's intervals: one slow
    interval, such as the first steps' warm-up, does not make a straggler), and how often it was
    the slowest and the last to arrive."""
    acc: dict[str, list[Any]] = {}
    for rs in window:
        by_key: dict[str, RankPhases] = {}
        for r in rs:
            by_key[r.identity.key] = r  # one report per rank per interval (the receiver sums)
        comp = {k: _per_step(r, COMPUTE_PHASES) for k, r in by_key.items()}
        wait = {k: _per_step(r, WAIT_PHASES) for k, r in by_key.items()}
        slowest = max(comp, key=lambda k: comp[k])
        last = min(wait, key=lambda k: (wait[k], -comp[k]))
        for k, r in by_key.items():
            a = acc.setdefault(k, [r.identity, [], [], 0, 0, 0])
            a[0] = r.identity
            a[1].append(comp[k])
            a[2].append(wait[k])
            a[3] += r.phases.steps
            a[4] += k == slowest
            a[5] += k == last
    return [
        RankFigures(identity=a[0], compute=median(a[1]), wait=median(a[2]), steps=a[3], slowest=a[4], last_arrival=a[5])
        for a in acc.values()
        if a[3]
    ]


def find_straggler(
    samples: Iterable[Sample],
    last: int = LAST,
    margin: float = MARGIN,
    majority: float = MAJORITY,
    min_intervals: int = MIN_INTERVALS,
) -> Straggler | None:
    """The rank or node the job waits for, or None (fewer than two ranks, too few intervals, no
    rank consistently slowest, or a spread within the noise margin)."""
    window = intervals(samples, last)
    if len(window) < min_intervals:
        return None
    figs = rank_figures(window)
    if len(figs) <= 1:
        return None
    med = median(f.compute for f in figs)
    if med <= 0:
        return None
    n = len(window)
    node = _slow_node(figs, med, margin, n)
    if node is not None:
        return node
    top = max(figs, key=lambda f: f.compute)
    # both signals agree: it computes longest in most intervals, and it is the one the others wait for
    if top.slowest / n < majority or top.last_arrival / n < LAST_ARRIVAL or top.compute < med * (1 + margin):
        return None
    return Straggler(
        kind="rank",
        rank=top.identity.rank,
        node=top.identity.node,
        gpu=top.identity.gpu,
        ranks=(top.identity.rank,),
        compute=top.compute,
        median_compute=med,
        slowest_share=top.slowest / n,
        last_share=top.last_arrival / n,
        intervals=n,
        step_time_lost=top.compute - med,
    )


def _slow_node(figs: list[RankFigures], med: float, margin: float, n: int) -> Straggler | None:
    """Every rank of one node slower than every rank elsewhere (by the margin), with several nodes:
    the node is the straggler (its ranks share a cause: thermal limits, a noisy neighbour, a NIC)."""
    nodes: dict[str, list[RankFigures]] = {}
    for f in figs:
        nodes.setdefault(f.identity.node, []).append(f)
    if len(nodes) <= 1:
        return None
    for name, own in nodes.items():
        others = [f for f in figs if f.identity.node != name]
        if len(own) <= 1 or not others:
            continue
        slowest_other = max(f.compute for f in others)
        if min(f.compute for f in own) >= slowest_other * (1 + margin):
            mean = sum(f.compute for f in own) / len(own)
            share = sum(f.slowest for f in own) / n
            last = sum(f.last_arrival for f in own) / n
            if share < MAJORITY or last < LAST_ARRIVAL:
                continue
            return Straggler(
                kind="node",
                rank=None,
                node=name,
                gpu="",
                ranks=tuple(sorted(f.identity.rank for f in own)),
                compute=mean,
                median_compute=med,
                slowest_share=share,
                last_share=last,
                intervals=n,
                step_time_lost=max(f.compute for f in own) - med,
            )
    return None


def topology(ranks: Iterable[RankPhases]) -> dict[str, list[int]]:
    """Node name -> the ranks on it, from the identities that reported."""
    out: dict[str, set[int]] = {}
    for r in ranks:
        out.setdefault(r.identity.node, set()).add(r.identity.rank)
    return {k: sorted(v) for k, v in sorted(out.items())}


def with_straggler(v: Verdict, samples: Iterable[Sample], history: StragglerHistory | None = None) -> Verdict:
    """The window's verdict with the straggler, when one is named. When the job's steps wait in
    communication and the straggler's extra compute accounts for at least half of the median
    rank's wait, the wait is for the straggler, not for the link: the verdict becomes the
    straggler's compute (load imbalance), with the link's figures kept as secondary evidence."""
    from dataclasses import replace

    samples = list(samples)
    window = intervals(samples)
    s = find_straggler(samples)
    if history is not None:
        s = history.confirm(s)
    if s is None:
        return v
    figs = rank_figures(window)
    med_wait = median(f.wait for f in figs)
    med_step = median(f.compute + f.wait for f in figs)
    if v.stage == "communication" and med_wait > 0 and s.step_time_lost >= STRAGGLER_WAIT_SHARE * med_wait:
        resource = "gpu_compute" if s.gpu else "cpu_compute"
        head = med_step / (med_step - s.step_time_lost) if med_step > s.step_time_lost > 0 else None
        return replace(
            v,
            resource=resource,
            stage="compute",
            evidence=s.evidence() + tuple(v.evidence),
            headroom=head,
            straggler={**s.to_json(), "evidence": list(s.evidence()), "limits_the_step": True},
            reason=f"the ranks wait in communication for the straggler ({s.step_time_lost * 1e3:.1f} ms of their "
            f"{med_wait * 1e3:.1f} ms wait per step): its compute limits the step; headroom if it computed as fast as "
            "the median rank",
        )
    return replace(
        v, evidence=tuple(v.evidence) + s.evidence(), straggler={**s.to_json(), "evidence": list(s.evidence())}
    )


class StragglerHistory:
    """The straggler over the run, for the run's report: the verdict that held longest is its
    latest instance, often from the job's tear-down when ranks have stopped reporting, so the
    straggler is taken from the whole run instead: the one the live verdicts named (after the
    hold) in at least a quarter of the windows in which several ranks reported, and more often
    than any other. The live hold already keeps a rank that contention slows for a few seconds
    from being named; counting only named windows keeps the report consistent with what was shown
    live (a warm-up and a loaded machine leave fewer windows with a straggler found)."""

    def __init__(self, last: int = LAST) -> None:
        self.windows = 0
        self._named: dict[tuple[str, Any, str], list[Any]] = {}
        self.recent: deque[Sample] = deque(maxlen=last)  # the samples the straggler is judged on
        self.current = False  # the latest sample had rank reports
        self._seen: deque[Any] = deque(
            maxlen=HOLD + HOLD_SLACK
        )  # which straggler each recent window found (None: none)
        self._found: Straggler | None = None  # found in the latest window (before the hold)
        self._confirmed = False  # the latest window's straggler was named (after the hold)

    def observe(self, sample: Sample) -> tuple[Sample, ...]:
        """Add a sample; returns the samples to judge this window's straggler on (none once the
        ranks have stopped reporting: a finished job has no straggler)."""
        self.current = bool(sample.ranks)
        if self.current:
            self.recent.append(sample)
        return tuple(self.recent) if self.current else ()

    def confirm(self, s: Straggler | None) -> Straggler | None:
        """``s`` once the same rank (or node) was found in HOLD of the last HOLD + 2 windows: a
        rank that CPU contention slows for a few seconds is not a straggler of the job (on the
        2-core test machine an evenly loaded rank ran 25-32% slower for ~10 s in 1 of 6 runs: 3
        windows), and one noisy window does not hide a real one."""
        self._found = s
        self._seen.append(None if s is None else (s.kind, s.rank, s.node))
        self._confirmed = False
        if s is None:
            return None
        key = self._seen[-1]
        self._confirmed = sum(k == key for k in self._seen) >= HOLD
        return s if self._confirmed else None

    def update(self, v: Verdict) -> None:
        """Count the latest window: the straggler found in it (before the hold), if any."""
        if not self.current or len(intervals(self.recent)) < MIN_INTERVALS:
            return
        self.windows += 1
        if self._found is not None and self._confirmed:
            s = self._found.to_json()
            e = self._named.setdefault((s["kind"], s["rank"], s["node"]), [0, s])
            e[0] += 1
            e[1] = s

    def persistent(self) -> tuple[dict[str, Any], int] | None:
        if not self._named:
            return None
        ranked = sorted((e[0] for e in self._named.values()), reverse=True)
        count, s = max(self._named.values(), key=lambda e: e[0])
        unique = len(ranked) == 1 or ranked[1] < count
        return (s, count) if count >= STRAGGLER_RUN_SHARE * self.windows and unique else None

    def apply(self, v: Verdict | None) -> Verdict | None:
        """``v`` with the run's persistent straggler when it carries none of its own."""
        from dataclasses import replace

        p = self.persistent()
        if v is None or p is None or v.straggler:
            return v
        s, count = p
        who = f"rank {s['rank']} on {s['node']}" if s["kind"] == "rank" else f"node {s['node']}"
        ev = (
            f"straggler over the run: {who}, named in {count} of {self.windows} windows with several ranks; "
            f"{s['excess_ratio']:.0%} longer compute than the median rank, "
            f"{s['step_time_lost_seconds'] * 1e3:.1f} ms per step lost",
        )
        return replace(
            v,
            evidence=tuple(v.evidence) + ev,
            straggler={**s, "windows_named": count, "windows": self.windows, "evidence": list(ev)},
        )
