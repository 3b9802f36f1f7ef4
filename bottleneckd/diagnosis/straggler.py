"""The straggler: which rank (or node) every other rank waits for, and what it was doing. Pure
functions over the per-rank phases of a window of samples (``Sample.ranks``).

Under a synchronous collective every rank's wall time per step is the same (the fast ranks wait),
so wall clocks cannot find a slow rank. The time each rank spends *outside* its collective waits
can: the straggler is busy longest and arrives last (waits least); its victims wait for it. Busy
time counts every phase but the wait - forward and backward, the optimizer, the data wait, and
"other" (code between the steps: logging, evaluation, checkpoints on rank 0) - so the straggler
is found whichever phase delays it, and named with the phase in which it spends the most more
than the median rank. A rank is named only when it is the busiest in most of the recent
intervals, the last to arrive in at least half of them, and busy longer than the median rank by
more than the noise margin (its busy time, or its own work: busy less its wait for a CPU, with
its busy time above a smaller floor: the time the others lose to it); all
the ranks of one node slower than every rank elsewhere are a slow node, named as the node.

Contention from outside the job is not a rank's doing: each rank's hook reports its training
thread's CPU time and run-queue wait (facts ``thread_cpu_seconds``, ``runqueue_wait_seconds``, from
schedstat). On a loaded machine every rank waits in proportion to the CPU it uses, so a rank doing
more work also waits more; a rank whose cores other processes take falls behind with no more CPU
than the others. When its extra CPU per step, at the least contended rank's wait per CPU second,
explains less than half of its lag, it was slowed from outside: said so, never named as the
straggler.

An interval is one report period of one rank (``RankPhases``: its steps in one sampling tick);
"busiest in most steps" is judged over the last ``last`` intervals in which two or more ranks
reported.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from statistics import median
from typing import TYPE_CHECKING, Any

from bottleneckd.diagnosis.thresholds import (
    COMM_HIGH,
    SECONDARY,
    STRAGGLER_BUSY_FLOOR,
    STRAGGLER_CONTENTION,
    STRAGGLER_CONTENTION_RATE,
    STRAGGLER_HOLD,
    STRAGGLER_LAST,
    STRAGGLER_LAST_ARRIVAL,
    STRAGGLER_MAJORITY,
    STRAGGLER_MARGIN,
    STRAGGLER_MIN_INTERVALS,
    STRAGGLER_SAMPLED_LAST,
    STRAGGLER_SAMPLED_Z,
    STRAGGLER_WAIT_SHARE,
)
from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.resources import Phase, Resource, Stage
from bottleneckd.model.sample import RankPhases, Sample

if TYPE_CHECKING:
    from bottleneckd.diagnosis.straggler_history import StragglerHistory
    from bottleneckd.diagnosis.verdict import Verdict

COMPUTE_PHASES = (Phase.FORWARD, Phase.BACKWARD)
WAIT_PHASES = (Phase.COMMUNICATION,)
#: the thresholds (diagnosis/thresholds.py, with their sources) under the names this module has used
MARGIN = STRAGGLER_MARGIN  # busy this much longer than the median rank's, or it is noise
BUSY_FLOOR = STRAGGLER_BUSY_FLOOR  # and busy at least this much longer when judged on its own work
MAJORITY = STRAGGLER_MAJORITY  # busiest in at least this share of the intervals judged
LAST_ARRIVAL = STRAGGLER_LAST_ARRIVAL  # and the last to arrive (waiting least) in at least half of them
MIN_INTERVALS = STRAGGLER_MIN_INTERVALS
HOLD = STRAGGLER_HOLD  # windows of the last HOLD + 2 that must find the same straggler before a verdict names it
LAST = STRAGGLER_LAST
SAMPLED_LAST = STRAGGLER_SAMPLED_LAST
CONTENTION = STRAGGLER_CONTENTION  # a lag at least this much not explained by its own CPU: slowed from outside
#: windows beyond HOLD that the hold looks back over (HOLD of the last HOLD + 2)
HOLD_SLACK = 2
#: a slow group (``_slow_group``): two ranks or more (one is a rank's to name), at most half the job's
#: (more than half slow is the job's pace, its faster ranks the odd ones)
GROUP_MIN = 2
GROUP_MAX_SHARE = 0.5
#: the rule in words, from the constants above (README.md's is generated from it: scripts/gen_docs.py)
RULE_SUMMARY = (
    f"a rank busy outside its collective waits longest in at least {MAJORITY:.0%} of the last {LAST} intervals, "
    f"last to arrive at the collectives in at least {LAST_ARRIVAL:.0%} of them, more than {MARGIN:.0%} longer than "
    f"the median rank (busy, or its own work: busy less its wait for a CPU, with busy at least {BUSY_FLOOR:.0%} "
    f"longer), found in {HOLD} of the last "
    f"{HOLD + HOLD_SLACK} windows, named with the phase it spends the "
    f"extra time in; not when its own extra CPU leaves {CONTENTION:.0%} or more of that time unexplained (other "
    "processes on its cores), nor when it is within the margin without the backward its forward does not predict "
    "(the all-reduce running beside backward slows one rank more than another); a node when all its ranks are "
    "slower than every rank elsewhere; of GPU ranks, a group (at most half of them) each slower than every other "
    "rank by the margin and together the busiest and the last to arrive, its busiest rank not apart from the next "
    "by the margin"
)
#: what a phase of the straggler's extra time means
DOING: dict[str, str] = {
    Phase.FORWARD: "forward",
    Phase.BACKWARD: "backward",
    Phase.OPTIMIZER: "the optimizer step",
    Phase.DATA_WAIT: "waiting for its next batch",
    Phase.TRANSFER: "copying its batch to the device",
    Phase.OTHER: (
        "code between the steps (outside forward, backward and the optimizer: logging, evaluation, checkpoints)"
    ),
    Phase.GPU_WAIT: "waiting for its GPU",
    Phase.FILE_IO: "reading files",
}


@dataclass(frozen=True, kw_only=True)
class RankFigures:
    """One rank over the window: medians per step over its intervals."""

    identity: RankIdentity
    busy: float  # seconds per step outside collective waits
    wait: float  # seconds per step waiting in collectives
    steps: int
    slowest: float  # intervals in which it was busy longest (shared among the ranks tied: stack samples)
    last_arrival: float  # intervals in which it waited least (the others waited for it)
    phases: dict[str, float] = field(default_factory=dict)  # seconds per step in each non-wait phase
    runqueue: float | None = None  # seconds per step its training thread waited for a CPU (None: not reported)
    cpu: float | None = None  # seconds per step its training thread ran on a CPU (its work)
    #: seconds per step busy on its own work: busy less its training thread's run-queue wait, per
    #: interval (busy when the wait is not reported). On a machine with more ranks than cores every
    #: rank waits for a CPU about as long, which dilutes a real difference in work: 30% more forward
    #: work on 4 gloo ranks on 2 cores was +16-28% own work but +6-14% busy (tests/test_ranks_job.py)
    own: float = 0.0
    #: seconds per step of the job's all-reduce in flight during its backward (fact
    #: ``comm_overlapped_seconds_per_step``; None: not reported, as under attach)
    comm_overlapped: float | None = None

    @property
    def wait_per_cpu(self) -> float | None:
        """Run-queue wait per second of CPU: how contended its cores are (the same for every rank
        of a uniformly loaded machine, however much work each does)."""
        return self.runqueue / self.cpu if self.runqueue is not None and self.cpu else None

    @property
    def compute(self) -> float:
        """Forward + backward per step."""
        return sum(self.phases.get(k, 0.0) for k in COMPUTE_PHASES)

    def phase(self, name: str) -> float:
        return self.phases.get(name, 0.0)


@dataclass(frozen=True, kw_only=True)
class Straggler:
    kind: str  # "rank" | "node" | "ranks" (several ranks slower than all the others: _slow_group)
    rank: int | None  # the rank (None for a node)
    node: str
    gpu: str
    ranks: tuple[int, ...]  # the ranks concerned (one, or all of the node's)
    compute: float  # its busy time per step (s); for a node the mean over its ranks
    median_compute: float  # the median rank's
    slowest_share: float  # share of the intervals in which it was the busiest
    last_share: float  # share of the intervals in which it arrived last (waited least)
    intervals: int
    step_time_lost: float  # s per step: its busy time - the median rank's
    own: float | None = None  # its own work per step: busy less its wait for a CPU (RankFigures.own)
    median_own: float | None = None  # the median rank's
    doing: str = ""  # the phase it spends most of its extra time in
    doing_excess: float = 0.0  # s per step more than the median rank in that phase
    runqueue: float | None = None  # its training thread's run-queue wait per step (s)
    median_runqueue: float | None = None
    #: seconds per step of its lag that its own extra CPU does not explain: its lag less its CPU per
    #: step beyond the median rank's x (1 + the least contended rank's wait per CPU second); None
    #: when not reported
    contention: float | None = None
    #: the ranks' phases are stack samples (attach: diagnosis by py-spy, no hook): the figures per
    #: "step" are per sampling period of a rank, so only their ratios and shares are said
    sampled: bool = False
    mean_compute: float | None = None  # the mean rank's busy time per step (what each does with the work even)
    median_step: float | None = None  # the median rank's busy time and wait per step: the job's step
    #: seconds per step of its lag in backward beyond what its forward predicts, where without it
    #: the lag is within the margin (``overlap_lag``): the all-reduce beside backward, not its work
    #: (callers say so and name no one); 0 otherwise
    overlap_lag: float = 0.0

    @property
    def overlapped(self) -> bool:
        """Its lag is the all-reduce running beside its backward, not its own work."""
        return self.overlap_lag > 0

    @property
    def balance_share(self) -> float | None:
        """The share of the step the job saves with the work even among the ranks (each busy as
        long as their mean; the straggler's lag behind the mean is what the others wait): a rank's
        own extra work, not a node's or contention's (None)."""
        if self.kind == "node" or self.mean_compute is None or not self.median_step or self.contended:
            return None
        return min(1.0, max(0.0, self.compute - self.mean_compute) / self.median_step)

    @property
    def excess(self) -> float:
        return self.compute / self.median_compute - 1.0 if self.median_compute > 0 else 0.0

    @property
    def own_excess(self) -> float | None:
        """Its own work (busy less its wait for a CPU) over the median rank's, less one."""
        return self.own / self.median_own - 1.0 if self.own is not None and self.median_own else None

    @property
    def contended(self) -> bool:
        """Its lag is mostly not its own work: its extra CPU per step, at the least contended rank's
        run-queue wait per CPU second, explains less than half of it (a loaded machine makes every rank wait
        in proportion to its work; a rank that does no more work than the others but falls behind
        was denied the CPU)."""
        if self.contention is None or self.step_time_lost <= 0:
            return False
        return self.contention >= CONTENTION * self.step_time_lost

    def who(self) -> str:
        if self.kind == "rank":
            return f"rank {self.rank} on {self.node}" + (f" ({self.gpu})" if self.gpu else "")
        if self.kind == "ranks":
            return f"ranks {', '.join(map(str, self.ranks))}" + (f" on {self.node}" if self.node else "")
        return f"node {self.node} (ranks {', '.join(map(str, self.ranks))})"

    def against(self) -> str:
        """Whom its busy time is measured against."""
        return "the faster ranks' median" if self.kind == "ranks" else "the median rank"

    def lag_said(self) -> str:
        """The time the others lose to it: per step from timed steps, a share of the time from stack samples."""
        if self.sampled:
            share = self.step_time_lost / self.median_step if self.median_step else 0.0
            return f"{share:.0%} of the step"
        return f"{self.step_time_lost * 1e3:.1f} ms per step"

    def evidence(self) -> tuple[str, ...]:
        if self.sampled:
            return self._sampled_evidence()
        doing = (
            f", most of it {DOING.get(self.doing, self.doing)} (+{self.doing_excess * 1e3:.1f} ms per step)"
            if self.doing
            else ""
        )
        rq = (
            f"its training thread waited for a CPU {self.runqueue * 1e3:.1f} ms per step (median rank "
            f"{self.median_runqueue * 1e3:.1f} ms), no more per second of its own CPU than the other ranks "
            f"(contention {self.contention * 1e3:.1f} ms of its lag): its own work, not contention from outside the job"
            if self.runqueue is not None and self.median_runqueue is not None and self.contention is not None
            else ""
        )
        own = (
            f"; its own work (busy less its wait for a CPU) {self.own_excess:.0%} longer "
            f"({(self.own or 0) * 1e3:.1f} ms vs {(self.median_own or 0) * 1e3:.1f} ms per step)"
            if self.own_excess is not None and self.own_excess > self.excess
            else ""
        )
        return (
            f"straggler: {self.who()} busy {self.excess:.0%} longer than {self.against()} outside the collectives "
            f"({self.compute * 1e3:.1f} ms vs {self.median_compute * 1e3:.1f} ms per step){own}{doing}",
            f"busiest in {self.slowest_share:.0%} and last to arrive at the collectives in {self.last_share:.0%} "
            f"of the last {self.intervals} intervals",
            f"step time lost to it: {self.step_time_lost * 1e3:.1f} ms per step (the other ranks wait)",
            *([rq] if rq else []),
        )

    def _sampled_evidence(self) -> tuple[str, ...]:
        """What stack samples of every rank show (attach): the share of each rank's samples outside
        its collective waits, not times per step."""
        step = self.median_step or 1.0
        doing = f", most of it {DOING.get(self.doing, self.doing)}" if self.doing else ""
        rq = (
            f"its training thread waited for a CPU {self.runqueue / step:.0%} of the time (median rank "
            f"{self.median_runqueue / step:.0%}): its own work, not contention from outside the job"
            if self.runqueue is not None and self.median_runqueue is not None and self.contention is not None
            else ""
        )
        return (
            f"straggler: {self.who()} busy outside the collectives in {self.compute / step:.0%} of its stack samples "
            f"(median rank {self.median_compute / step:.0%}; py-spy, every rank in turn){doing}",
            f"busiest in {self.slowest_share:.0%} and last to arrive at the collectives in {self.last_share:.0%} "
            f"of the last {self.intervals} intervals",
            f"step time lost to it: about {self.lag_said()} (the other ranks wait)",
            *([rq] if rq else []),
        )

    def contention_evidence(self) -> str:
        return (
            f"{self.who()} is busy {self.excess:.0%} longer than the median rank, but "
            f"{(self.contention or 0) * 1e3:.1f} ms per step of its lag is its training thread waiting for a CPU "
            f"beyond the other ranks' rate ({(self.runqueue or 0) * 1e3:.1f} ms of run-queue wait per step, median "
            f"rank {(self.median_runqueue or 0) * 1e3:.1f} ms): other processes on its cores slow it, not its own "
            "work; no rank is named"
        )

    def overlap_evidence(self) -> str:
        return (
            f"{self.who()} is busy {self.excess:.0%} longer than the median rank, but "
            f"{self.overlap_lag * 1e3:.1f} ms per step of it is backward beyond what its forward predicts (forward "
            "as the median rank's): the all-reduce runs beside backward on the same cores (or GPU), and which rank it "
            "slows is not the work each was given; no rank is named"
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
            "own_work_seconds": self.own,
            "median_own_work_seconds": self.median_own,
            "own_work_excess_ratio": self.own_excess,
            "slowest_share": self.slowest_share,
            "last_arrival_share": self.last_share,
            "intervals": self.intervals,
            "step_time_lost_seconds": self.step_time_lost,
            "doing": self.doing,
            "doing_excess_seconds": self.doing_excess,
            "runqueue_seconds": self.runqueue,
            "median_runqueue_seconds": self.median_runqueue,
            "contention_seconds": self.contention,
            "mean_compute_seconds": self.mean_compute,
            "balance_share": self.balance_share,
            "sampled": self.sampled,
            "median_step_seconds": self.median_step,
            "overlap_lag_seconds": self.overlap_lag,
        }


def sampled_ranks(window: Sequence[tuple[RankPhases, ...]]) -> bool:
    """Whether the window's ranks are stack samples (attach), not timed steps."""
    return any(r.phases.sampled for rs in window for r in rs)


def _per_step(rp: RankPhases, names: Sequence[str]) -> float:
    s = rp.phases.steps
    return sum(rp.phases.phases.get(n, 0.0) for n in names) / s if s else 0.0


def intervals(samples: Iterable[Sample], last: int | None = None) -> list[tuple[RankPhases, ...]]:
    """The last ``last`` sample intervals in which two or more ranks of one job reported steps
    (by default LAST, or SAMPLED_LAST where the ranks are stack samples: a sample or two of each
    rank an interval)."""
    out = []
    for s in samples:
        rs = tuple(r for r in s.ranks if r.phases.steps > 0)
        if len({r.identity.key for r in rs}) > 1:
            out.append(rs)
    if last is None:
        last = SAMPLED_LAST if sampled_ranks(out[-LAST:]) else LAST
    return out[-last:]


def _delta(prev: RankPhases | None, cur: RankPhases, fact: str) -> float | None:
    """Seconds per step a cumulative per-thread figure grew between two reports of a rank."""
    a = prev.phases.facts.get(fact) if prev is not None else None
    b = cur.phases.facts.get(fact)
    if a is None or b is None or b < a or not cur.phases.steps:
        return None
    return float(b - a) / cur.phases.steps


def rank_figures(window: Sequence[tuple[RankPhases, ...]]) -> list[RankFigures]:
    """Per rank: busy time, wait and each phase per step (the median over the window's intervals:
    one slow interval, such as the first steps' warm-up, does not make a straggler), its run-queue
    wait, and how often it was the busiest and the last to arrive. Ranks seen by stack samples
    (attach: a sample or two of each rank an interval, each one phase whole) are summed over the
    window instead: the median of per-interval shares of 0 or 1 is no rank's share."""
    if sampled_ranks(window):
        return _sampled_figures(window)
    acc: dict[str, dict[str, Any]] = {}
    prev: dict[str, RankPhases] = {}
    for rs in window:
        by_key: dict[str, RankPhases] = {}
        for r in rs:
            by_key[r.identity.key] = r  # one report per rank per interval (the receiver sums)
        wall = {k: r.phases.wall_seconds / r.phases.steps for k, r in by_key.items()}
        wait = {k: _per_step(r, WAIT_PHASES) for k, r in by_key.items()}
        busy = {k: max(0.0, wall[k] - wait[k]) for k in by_key}
        slowest = max(busy, key=lambda k: busy[k])
        last = min(wait, key=lambda k: (wait[k], -busy[k]))
        for k, r in by_key.items():
            a = acc.setdefault(
                k,
                {
                    "busy": [],
                    "own": [],
                    "wait": [],
                    "steps": 0,
                    "slow": 0,
                    "last": 0,
                    "ph": {},
                    "rq": [],
                    "cpu": [],
                    "ov": [],
                },
            )
            a["id"] = r.identity
            a["busy"].append(busy[k])
            a["wait"].append(wait[k])
            a["steps"] += r.phases.steps
            a["slow"] += k == slowest
            a["last"] += k == last
            for ph, secs in r.phases.phases.items():
                if ph not in WAIT_PHASES:
                    a["ph"].setdefault(ph, []).append(secs / r.phases.steps)
            rq = _delta(prev.get(k), r, "runqueue_wait_seconds")
            cpu = _delta(prev.get(k), r, "thread_cpu_seconds")
            if rq is not None and cpu is not None:
                a["rq"].append(rq)
                a["cpu"].append(cpu)
            a["own"].append(max(0.0, busy[k] - rq) if rq is not None else busy[k])
            ov = r.phases.facts.get("comm_overlapped_seconds_per_step")
            if isinstance(ov, (int, float)) and math.isfinite(ov):
                a["ov"].append(float(ov))
            prev[k] = r
    return [
        RankFigures(
            identity=a["id"],
            busy=median(a["busy"]),
            wait=median(a["wait"]),
            steps=a["steps"],
            slowest=a["slow"],
            last_arrival=a["last"],
            phases={ph: median(v + [0.0] * (len(a["busy"]) - len(v))) for ph, v in a["ph"].items()},
            runqueue=median(a["rq"]) if a["rq"] else None,
            cpu=median(a["cpu"]) if a["cpu"] else None,
            own=median(a["own"]),
            comm_overlapped=median(a["ov"]) if a["ov"] else None,
        )
        for a in acc.values()
        if a["steps"]
    ]


def _sampled_figures(window: Sequence[tuple[RankPhases, ...]]) -> list[RankFigures]:
    """``rank_figures`` of stack-sampled ranks: each rank's samples summed over the window (busy,
    wait and phases per sample), the busiest and last to arrive per interval as from timed steps,
    and its run-queue wait and CPU from its main thread's schedstat over the window."""
    acc: dict[str, dict[str, Any]] = {}
    first: dict[str, RankPhases] = {}
    for rs in window:
        by_key = {r.identity.key: r for r in rs}
        waits = {k: sum(r.phases.phases.get(n, 0.0) for n in WAIT_PHASES) for k, r in by_key.items()}
        busy = {k: r.phases.wall_seconds - waits[k] for k, r in by_key.items()}
        per = {k: busy[k] / r.phases.steps for k, r in by_key.items()}
        wait = {k: waits[k] / r.phases.steps for k, r in by_key.items()}
        # a sample or two of each rank tie often: the busiest (and the least waiting) share the interval
        top, least = max(per.values()), min(wait.values())
        slowest = [k for k in per if math.isclose(per[k], top)]
        last = [k for k in wait if math.isclose(wait[k], least)]
        for k, r in by_key.items():
            a = acc.setdefault(k, {"busy": 0.0, "wall": 0.0, "steps": 0, "slow": 0, "last": 0, "ph": {}})
            first.setdefault(k, r)
            a["id"], a["end"] = r.identity, r
            a["busy"] += max(0.0, busy[k])
            a["wall"] += r.phases.wall_seconds
            a["steps"] += r.phases.steps
            a["slow"] += (k in slowest) / len(slowest)
            a["last"] += (k in last) / len(last)
            for ph, secs in r.phases.phases.items():
                if ph not in WAIT_PHASES:
                    a["ph"][ph] = a["ph"].get(ph, 0.0) + secs
    out = []
    for k, a in acc.items():
        n = a["steps"]
        if not n:
            continue
        busy = a["busy"] / n
        rq, cpu = (
            _span(first[k], a["end"], "runqueue_wait_seconds", a["wall"]),
            _span(first[k], a["end"], "thread_cpu_seconds", a["wall"]),
        )
        out.append(
            RankFigures(
                identity=a["id"],
                busy=busy,
                wait=a["wall"] / n - busy,
                steps=n,
                slowest=a["slow"],
                last_arrival=a["last"],
                phases={ph: secs / n for ph, secs in a["ph"].items()},
                runqueue=None if rq is None else rq * a["wall"] / n,
                cpu=None if cpu is None else cpu * a["wall"] / n,
                own=max(0.0, busy - rq * a["wall"] / n) if rq is not None else busy,
            )
        )
    return out


def _span(a: RankPhases, b: RankPhases, fact: str, wall: float) -> float | None:
    """Seconds per second a cumulative per-thread figure (schedstat's CPU or run-queue wait) grew
    from report ``a`` to report ``b``, whose reports after ``a`` cover ``wall`` less ``a``'s own
    seconds; None when not reported."""
    x, y = a.phases.facts.get(fact), b.phases.facts.get(fact)
    span = wall - a.phases.wall_seconds
    if not isinstance(x, (int, float)) or not isinstance(y, (int, float)) or y < x or span <= 0:
        return None
    return (y - x) / span


def busy_excess(top: RankFigures, figs: Sequence[RankFigures]) -> float:
    """How much longer than the median rank ``top`` is busy, as a ratio less one: the share of the
    others' work they wait for it."""
    med = median(f.busy for f in figs)
    return top.busy / med - 1.0 if med > 0 else 0.0


def excess(top: RankFigures, figs: Sequence[RankFigures]) -> float:
    """How much longer than the median rank ``top`` is busy, as a ratio less one: the larger of its
    busy time's excess and its own work's (busy less its wait for a CPU, ``RankFigures.own``). The
    busy excess finds a rank slowed by anything, contention from outside included (judged after,
    by ``Straggler.contended``); the own-work excess finds a rank doing more work when every rank
    waits for a CPU about as long."""
    med_own = median(f.own for f in figs)
    return max(busy_excess(top, figs), top.own / med_own - 1.0 if med_own > 0 else 0.0)


def overlap_lag(top: RankFigures, figs: Sequence[RankFigures]) -> float:
    """Seconds per step of ``top``'s backward beyond what its forward predicts (the median rank's
    backward scaled by ``top``'s forward over the median rank's), at most the all-reduce the job
    has in flight during backward; 0 where no rank reports that overlap.

    While backward runs, DDP's all-reduce of the gradients already computed runs beside it: on a
    CPU the collectives' threads of every rank share the cores with the training threads, on a GPU
    the communication kernels share the SMs and memory. Which rank's backward that slows is not
    the work it was given: 2 gloo ranks on 2 cores with even work (scripts/workloads/ddp_torchrun.py,
    accelerate_ddp.py) read one rank's backward 33-45 ms longer a step (its training thread's CPU
    per step +16-40%), forward within 1 ms of the other's, and named that rank a straggler at
    +11-13% busy in 3 of 4 runs under ``run`` (one rank +10%, all of it backward, in 1 of 2 runs
    with ``--no-stacks``); a rank given more work is slower in forward too, in proportion
    (straggler_uneven: forward 49 vs 8 ms, backward 89 vs 15 ms, this figure 0). See
    docs/measurements.md, "stragglers that were the all-reduce"."""
    ovs = [f.comm_overlapped for f in figs if f.comm_overlapped]
    med_f = median(f.phase(Phase.FORWARD) for f in figs)
    med_b = median(f.phase(Phase.BACKWARD) for f in figs)
    if not ovs or med_f <= 0 or med_b <= 0:
        return 0.0
    predicted = med_b * top.phase(Phase.FORWARD) / med_f
    return min(max(0.0, top.phase(Phase.BACKWARD) - predicted), median(ovs))


def _doing(top: RankFigures, figs: list[RankFigures]) -> tuple[str, float]:
    """The phase in which ``top`` spends the most more than the median rank, and by how much."""
    names = {ph for f in figs for ph in f.phases}
    excess = {ph: top.phases.get(ph, 0.0) - median(f.phases.get(ph, 0.0) for f in figs) for ph in names}
    if not excess:
        return "", 0.0
    ph = max(excess, key=lambda k: excess[k])
    return (ph, excess[ph]) if excess[ph] > 0 else ("", 0.0)


def find_straggler(
    samples: Iterable[Sample],
    last: int | None = None,
    margin: float = MARGIN,
    majority: float = MAJORITY,
    min_intervals: int = MIN_INTERVALS,
) -> Straggler | None:
    """The rank or node the job waits for, or None (fewer than two ranks, too few intervals, no
    rank consistently the busiest, or a spread within the noise margin). A rank slowed by CPU
    contention is returned with ``contended`` set, one whose lag is within the margin without the
    backward its forward does not predict with ``overlapped`` (``overlap_lag``): callers say so and
    name no one."""
    window = intervals(samples, last)
    if len(window) < min_intervals:
        return None
    figs = rank_figures(window)
    if len(figs) <= 1:
        return None
    med = median(f.busy for f in figs)
    if med <= 0:
        return None
    n = len(window)
    node = _slow_node(figs, med, margin, n)
    if node is not None:
        return node
    # a slow group, on GPU ranks only: CPU ranks sharing a machine's cores (4 gloo ranks on 2 cores,
    # other processes beside them) run unevenly in pairs, and a rank's own straggling read as a pair
    # with a noisy one. Tried before a single rank: two A10s beside two L40S each read the busiest in
    # 60-70% of a window's intervals in turn, were named rank 3, then rank 2, and never held; a rank
    # apart from the group by the margin is still a rank's to name (``_slow_group``)
    gpus = all(f.identity.gpu for f in figs)
    group = _slow_group(figs, margin, n) if gpus and not sampled_ranks(window) else None
    if group is not None:
        return group
    top = max(figs, key=lambda f: f.busy)
    # both signals agree: it is busy longest in most intervals, and it is the one the others wait for
    judged = excess(top, figs)
    if top.slowest / n < majority or top.last_arrival / n < LAST_ARRIVAL or judged < margin:
        return None
    if top.busy < med * (1.0 + BUSY_FLOOR):
        return None  # its own work reads longer, but the others lose next to no time to it
    # its lag without the backward its forward does not predict, against the same median rank
    interference = overlap_lag(top, figs)
    med_own = median(f.own for f in figs)
    rest_own = (top.own - interference) / med_own - 1.0 if med_own > 0 else 0.0
    rest_busy = (top.busy - interference) / med - 1.0
    overlap_only = interference > 0 and (max(rest_busy, rest_own) < margin or rest_busy < BUSY_FLOOR)
    sampled = sampled_ranks(window)
    if sampled and sampled_z(top, figs) < STRAGGLER_SAMPLED_Z:
        return None  # within what a few stack samples of even ranks differ by
    doing, extra = _doing(top, figs)
    rqs = [f.runqueue for f in figs if f.runqueue is not None]
    return Straggler(
        kind="rank",
        rank=top.identity.rank,
        node=top.identity.node,
        gpu=top.identity.gpu,
        ranks=(top.identity.rank,),
        compute=top.busy,
        median_compute=med,
        slowest_share=top.slowest / n,
        last_share=top.last_arrival / n,
        intervals=n,
        step_time_lost=top.busy - med,
        own=top.own,
        median_own=median(f.own for f in figs),
        doing=doing,
        doing_excess=extra,
        runqueue=top.runqueue,
        median_runqueue=median(rqs) if top.runqueue is not None and len(rqs) == len(figs) else None,
        contention=_contention(top, figs, top.busy - med),
        sampled=sampled,
        mean_compute=sum(f.busy for f in figs) / len(figs),
        median_step=median(f.busy + f.wait for f in figs),
        overlap_lag=interference if overlap_only else 0.0,
    )


def sampled_z(top: RankFigures, figs: Sequence[RankFigures]) -> float:
    """How many standard errors ``top``'s share of stack samples outside the collectives exceeds
    the other ranks' pooled share by (a two-proportion z statistic; 0 when it cannot be judged)."""
    others = [f for f in figs if f is not top]

    def busy_share(f: RankFigures) -> float:
        return f.busy / (f.busy + f.wait) if f.busy + f.wait > 0 else 0.0

    n1, n0 = top.steps, sum(f.steps for f in others)
    if n1 <= 0 or n0 <= 0:
        return 0.0
    p1 = busy_share(top)
    p0 = sum(busy_share(f) * f.steps for f in others) / n0
    pooled = (p1 * n1 + p0 * n0) / (n1 + n0)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n0))
    if se <= 0:
        return float("inf") if p1 > p0 else 0.0
    return (p1 - p0) / se


def _contention(top: RankFigures, figs: list[RankFigures], lag: float) -> float | None:
    """Seconds per step of ``top``'s lag taken by other processes on its cores or another rank's
    (0: not contended), None when a rank sent no CPU figures. Contended: another rank waited for a
    CPU longer per step than ``top`` by its lag or more (the job waits on that rank); or it waits
    for a CPU notably longer per second of its own CPU than the other ranks
    (STRAGGLER_CONTENTION_RATE times their median), and its own extra CPU per step, at that rate,
    explains less than half of its lag.

    Neither figure alone will do at load 12-31 on 2 cores: CFS lets ranks that sleep in collectives
    wait less per CPU second than one computing through, and three spinners on a rank's core add
    6-9% to its CPU per step (its caches). The recorded cases are in STRAGGLER_CONTENTION's source."""
    others = [f for f in figs if f is not top]
    rates = [f.wait_per_cpu for f in others if f.wait_per_cpu is not None]
    cpus = [f.cpu for f in figs if f.cpu is not None]
    if top.cpu is None or top.wait_per_cpu is None or len(rates) < len(others) or len(cpus) < len(figs):
        return None
    denied = max((f.runqueue or 0.0) for f in others) - (top.runqueue or 0.0)
    if denied >= lag:
        # another rank waited for a CPU longer per step, beyond this one's wait, than this one lags:
        # the job waits on the rank denied the CPU (a rank's wait for it inside backward reads as
        # busy: a CI run named rank 0 of an even job whose rank 1 shared its core with six spinners)
        return lag
    rate = median(rates)
    work = max(0.0, top.cpu - median(cpus)) * (1 + top.wait_per_cpu)
    return max(0.0, lag - work) if top.wait_per_cpu >= STRAGGLER_CONTENTION_RATE * rate else 0.0


def _slow_group(figs: list[RankFigures], margin: float, n: int) -> Straggler | None:
    """Several ranks, at most half the job's, each slower than every other rank by the margin and
    together the busiest and the last to arrive in most intervals (GPUs of a slower model in one
    job, a rack of throttled cards): no one of them is the busiest in most intervals, so no rank is
    named, yet the others wait for them. Named as a group (kind ``ranks``), measured against the
    faster ranks: a blind trace of two A10s beside two L40S in one DDP job, 121 ms of compute a step
    against 42 ms, read as the link's wait. GPU ranks only (``find_straggler``), and not where the
    group's busiest rank is apart from the next by the margin (a rank's to name); slowed from outside
    (``contention``) or by the all-reduce beside backward (``overlap_lag``) as a rank is, its busiest
    member judged against the faster ranks."""
    order = sorted(figs, key=lambda f: f.busy)
    for m in range(GROUP_MIN, int(len(order) * GROUP_MAX_SHARE) + 1):  # the slow group: the m busiest ranks
        fast, slow = order[:-m], order[-m:]
        if slow[0].busy < fast[-1].busy * (1 + margin) or slow[-1].busy >= slow[-2].busy * (1 + margin):
            continue  # not apart from the rest, or its busiest rank apart from the group: a rank's to name
        share = sum(f.slowest for f in slow) / n
        last = sum(f.last_arrival for f in slow) / n
        if share < MAJORITY or last < LAST_ARRIVAL:
            continue
        top, med_fast = slow[-1], median(f.busy for f in fast)
        doing, extra = _doing(top, fast)
        nodes = {f.identity.node for f in slow}
        judged = [*fast, top]  # its busiest member against the faster ranks, as a rank against the others
        interference = overlap_lag(top, judged)
        return Straggler(
            kind="ranks",
            rank=None,
            node=nodes.pop() if len(nodes) == 1 else "",
            gpu=top.identity.gpu,
            ranks=tuple(sorted(f.identity.rank for f in slow)),
            compute=top.busy,
            median_compute=med_fast,
            slowest_share=share,
            last_share=last,
            intervals=n,
            step_time_lost=top.busy - med_fast,
            own=top.own,
            median_own=median(f.own for f in fast),
            doing=doing,
            doing_excess=extra,
            mean_compute=sum(f.busy for f in figs) / len(figs),
            median_step=median(f.busy + f.wait for f in figs),
            runqueue=top.runqueue,
            contention=_contention(top, judged, top.busy - med_fast),
            overlap_lag=interference if interference > 0 and top.busy - interference < med_fast * (1 + margin) else 0.0,
        )
    return None


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
        slowest_other = max(f.busy for f in others)
        if min(f.busy for f in own) >= slowest_other * (1 + margin):
            mean = sum(f.busy for f in own) / len(own)
            share = sum(f.slowest for f in own) / n
            last = sum(f.last_arrival for f in own) / n
            if share < MAJORITY or last < LAST_ARRIVAL:
                continue
            # what its ranks do longer: its busiest rank against the other nodes' (as a group's)
            top = max(own, key=lambda f: f.busy)
            doing, extra = _doing(top, others)
            return Straggler(
                kind="node",
                rank=None,
                node=name,
                gpu=top.identity.gpu,
                ranks=tuple(sorted(f.identity.rank for f in own)),
                compute=mean,
                median_compute=med,
                slowest_share=share,
                last_share=last,
                intervals=n,
                step_time_lost=max(f.busy for f in own) - med,
                doing=doing,
                doing_excess=extra,
            )
    return None


def topology(ranks: Iterable[RankPhases]) -> dict[str, list[int]]:
    """Node name -> the ranks on it, from the identities that reported."""
    out: dict[str, set[int]] = {}
    for r in ranks:
        out.setdefault(r.identity.node, set()).add(r.identity.rank)
    return {k: sorted(v) for k, v in sorted(out.items())}


#: the straggler's extra phase -> the stage its ranks' wait is really spent in
STAGE_OF: dict[str, Stage] = {
    Phase.FORWARD: Stage.COMPUTE,
    Phase.BACKWARD: Stage.COMPUTE,
    Phase.OPTIMIZER: Stage.COMPUTE,
    Phase.GPU_WAIT: Stage.COMPUTE,
    Phase.OTHER: Stage.OTHER,
    Phase.DATA_WAIT: Stage.DATA,
    Phase.FILE_IO: Stage.DATA,
    Phase.TRANSFER: Stage.TRANSFER,
}


_STORAGE = (Resource.STORAGE_BANDWIDTH, Resource.STORAGE_NETWORK_BANDWIDTH)


def straggler_resource(s: Straggler, stage: Stage | None, v: Verdict) -> Resource:
    """What limits the straggler in the stage it spends its extra time in: its GPU's compute (a GPU
    rank computing), its CPU (computing on a CPU, code between the steps, its loader building
    batches: the loader's CPU is what a rank's data wait most often waits on, and more of it is the
    first thing to give; storage where the window's verdict or a secondary pressure is storage, or
    the rank reads files inline), its PCIe link for a GPU rank copying its batch."""
    if stage == Stage.TRANSFER and s.gpu:
        return Resource.CPU_GPU_INTERCONNECT
    if stage == Stage.DATA:
        storage = next((r for r in (v.resource, *(r for r, _ in v.secondary)) if r in _STORAGE), None)
        if storage is not None:  # the window's own storage finding says what the data waits on
            return storage
        return Resource.STORAGE_BANDWIDTH if s.doing == Phase.FILE_IO else Resource.CPU_COMPUTE
    return Resource.GPU_COMPUTE if s.gpu and stage == Stage.COMPUTE else Resource.CPU_COMPUTE


def _contended(v: Verdict, s: Straggler, figs: list[RankFigures], held: bool) -> Verdict:
    """A rank behind from CPU other processes take (not named): where the job's ranks wait for it
    (its lag STRAGGLER_WAIT_SHARE of the median rank's wait or more, the verdict in communication or
    that wait COMM_HIGH of the median step or more), the step is limited by the CPU it is denied:
    cpu_compute in the stage it was in, contended from outside the job (an independent probe's
    trace: a rank whose cores another tenant shared, 150 ms of run-queue wait a step, the other
    ranks 25% in the all-reduce, read as the median rank's GPU compute); only once ``held`` (found so
    in STRAGGLER_HOLD of the recent windows, as a straggler is named). Else the evidence says so."""
    ev = s.contention_evidence()
    med_wait = median(f.wait for f in figs) if figs else 0.0
    med_step = median(f.busy + f.wait for f in figs) if figs else 0.0
    stage = STAGE_OF.get(s.doing or Phase.FORWARD) or Stage.COMPUTE
    waits = v.stage == Stage.COMMUNICATION or (med_step > 0 and med_wait >= COMM_HIGH * med_step)
    if not (held and med_wait > 0 and waits and s.step_time_lost >= STRAGGLER_WAIT_SHARE * med_wait):
        return replace(v, evidence=tuple(v.evidence) + (ev,))
    head = med_step / (med_step - s.step_time_lost) if med_step > s.step_time_lost > 0 else None
    return replace(
        v,
        resource=Resource.CPU_COMPUTE,
        stage=stage,
        evidence=(ev, *v.evidence),
        headroom=head,
        figures={**v.figures, "contended_rank_lag_seconds": s.step_time_lost},
        reason=f"the ranks wait for a rank other processes take the CPU from ({_of_wait(s, med_wait)}): "
        "contended from outside the job; headroom if it ran as the "
        "median rank",
    )


def _of_wait(s: Straggler, med_wait: float) -> str:
    """The straggler's lag within the others' wait: ms per step from timed steps, shares of the
    step from stack samples."""
    if s.sampled:
        step = s.median_step or 1.0
        return f"{s.step_time_lost / step:.0%} of the step of their {med_wait / step:.0%} waiting, from stack samples"
    return f"{s.step_time_lost * 1e3:.1f} ms of their {med_wait * 1e3:.1f} ms wait per step"


#: the links whose findings score the ranks' wait in their collectives
_LINKS = (Resource.INTER_GPU_INTERCONNECT, Resource.INTER_NODE_INTERCONNECT)


def _links_less_the_wait(
    secondary: tuple[tuple[Resource, float], ...], lost: float, wait: float
) -> tuple[tuple[Resource, float], ...]:
    """The secondary pressures of a verdict whose ranks wait for a straggler: a link's score, read
    from the communication's share of the step, scaled to the part of the median rank's wait the
    straggler does not explain (the rest is its lag, not the link), and left out under SECONDARY."""
    rest = max(0.0, 1.0 - lost / wait) if wait > 0 else 1.0
    out = []
    for r, score in secondary:
        scaled = score * rest if r in _LINKS else score
        if scaled >= SECONDARY:
            out.append((r, scaled))
    return tuple(out)


def with_straggler(v: Verdict, samples: Iterable[Sample], history: StragglerHistory | None = None) -> Verdict:
    """The window's verdict with the straggler, when one is named. When the job's steps wait in
    communication and the straggler's extra time accounts for at least half of the median rank's
    wait, the wait is for the straggler, not for the link: the verdict becomes what the straggler
    was doing (its compute, its code between the steps, its data wait or its copies:
    ``straggler_resource``), with the link's figures kept as evidence and the links' secondary
    pressures scaled to the part of the wait it does not explain; where the window's verdict already
    is what the straggler was doing, it stands, with the straggler as what limits the step. A rank
    slowed by contention from outside the job is said so, not named."""
    samples = list(samples)
    window = intervals(samples)
    s = find_straggler(samples)
    if s is not None and s.contended:
        held = history.hold_contended(s) if history is not None else True
        return _contended(v, s, rank_figures(window), held)
    if s is not None and s.overlapped:
        if history is not None:
            history.note_overlapped(s)
        return replace(v, evidence=tuple(v.evidence) + (s.overlap_evidence(),))
    if history is not None:
        s = history.confirm(s)
    if s is None:
        return v
    figs = rank_figures(window)
    med_wait = median(f.wait for f in figs)
    med_step = median(f.busy + f.wait for f in figs)
    stage = STAGE_OF.get(s.doing or Phase.FORWARD)
    resource = straggler_resource(s, stage, v)
    waited_for = med_wait > 0 and s.step_time_lost >= STRAGGLER_WAIT_SHARE * med_wait
    if stage and waited_for and (v.resource, v.stage) == (resource, stage):
        # the window already names what the straggler was doing (under attach the rank followed can
        # be the straggler itself, computing while the others wait): it limits the step
        return replace(
            v,
            evidence=tuple(v.evidence) + s.evidence(),
            secondary=_links_less_the_wait(v.secondary, s.step_time_lost, med_wait),
            straggler={**s.to_json(), "evidence": list(s.evidence()), "limits_the_step": True},
        )
    if stage and waited_for and v.stage == Stage.COMMUNICATION:
        head = med_step / (med_step - s.step_time_lost) if med_step > s.step_time_lost > 0 else None
        return replace(
            v,
            resource=resource,
            stage=stage,
            evidence=s.evidence() + tuple(v.evidence),
            headroom=head,
            secondary=_links_less_the_wait(v.secondary, s.step_time_lost, med_wait),
            straggler={**s.to_json(), "evidence": list(s.evidence()), "limits_the_step": True},
            reason=f"the ranks wait in communication for the straggler ({_of_wait(s, med_wait)}): "
            f"{DOING.get(s.doing or 'forward', s.doing)} limits the step; "
            "headroom if it were as quick as the median rank",
        )
    return replace(
        v, evidence=tuple(v.evidence) + s.evidence(), straggler={**s.to_json(), "evidence": list(s.evidence())}
    )
