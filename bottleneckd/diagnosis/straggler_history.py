"""The straggler over the run, for the report: which one the live verdicts named, held over
the windows (``StragglerHistory``). See ``straggler.py`` for how one window finds it."""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bottleneckd.diagnosis.straggler import HOLD_SLACK, SAMPLED_LAST, Straggler, intervals
from bottleneckd.diagnosis.thresholds import STRAGGLER_HOLD as HOLD
from bottleneckd.diagnosis.thresholds import STRAGGLER_MIN_INTERVALS as MIN_INTERVALS
from bottleneckd.diagnosis.thresholds import STRAGGLER_RUN_MIN_WINDOWS as RUN_MIN_WINDOWS
from bottleneckd.diagnosis.thresholds import STRAGGLER_RUN_SHARE as RUN_SHARE
from bottleneckd.model.resources import Stage
from bottleneckd.model.sample import Sample

if TYPE_CHECKING:
    from bottleneckd.diagnosis.verdict import Verdict


#: how the run's straggler notes that name no one begin (``StragglerHistory.apply``): the run's
#: summary keeps them beside the evidence its rules give (diagnosis/pipeline.py ``_over``)
RUN_NOTES = ("over the run, in ", "named a straggler in ")


class StragglerHistory:
    """The straggler over the run, for the run's report: the verdict that held longest is its
    latest instance, often from the job's tear-down when ranks have stopped reporting, so the
    straggler is taken from the whole run instead: the one the live verdicts named (after the
    hold), more often than any other, with the share of the windows it was named in. (A quarter
    of the windows was required before: under load 20 a rank named live in 3 of 20 windows was
    missing from the report, which then contradicted what had been shown live.) The live hold
    already keeps a rank that contention slows for a few seconds from being named; counting only
    named windows keeps the report consistent with what was shown live."""

    def __init__(self, last: int = SAMPLED_LAST) -> None:
        self.windows = 0
        #: each straggler named: [windows named in, its latest figures, the intervals of the window
        #: it was first named in]
        self._named: dict[tuple[str, Any, str, tuple[int, ...]], list[Any]] = {}
        #: the windows counted, by the intervals each judged (at most SAMPLED_LAST distinct counts)
        self._by_intervals: dict[int, int] = {}
        self.recent: deque[Sample] = deque(maxlen=last)  # the samples the straggler is judged on
        self.current = False  # the latest sample had rank reports
        self._seen: deque[Any] = deque(
            maxlen=HOLD + HOLD_SLACK
        )  # which straggler each recent window found (None: none)
        self._found: Straggler | None = None  # found in the latest window (before the hold)
        self._confirmed = False  # the latest window's straggler was named (after the hold)
        #: the latest verdict each named straggler made where the others' wait was for it
        #: (``limits_the_step``: what it was doing, not the link)
        self._made: dict[tuple[str, Any, str, tuple[int, ...]], Verdict] = {}
        #: a rank found busier only in backward beside the all-reduce (``Straggler.overlapped``): the
        #: windows it was found so in, and its latest evidence (said in the run's report, not named)
        self._overlap: Straggler | None = None
        self._overlap_found = False
        self.overlap_windows = 0

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
        self._seen.append(None if s is None else (s.kind, s.rank, s.node, s.ranks))
        self._confirmed = False
        if s is None:
            return None
        key = self._seen[-1]
        self._confirmed = sum(k == key for k in self._seen) >= HOLD
        return s if self._confirmed else None

    def note_overlapped(self, s: Straggler) -> None:
        """``s`` was found busier only in backward beside the all-reduce: no straggler this window
        (as ``confirm(None)``), remembered for the run's report."""
        self.confirm(None)
        self._overlap, self._overlap_found = s, True

    def hold_contended(self, s: Straggler) -> bool:
        """``s``, a rank behind from CPU other processes take, was found so in HOLD of the last
        HOLD + 2 windows, as a straggler is held before it is named: a few seconds of contention
        do not change the verdict."""
        self._found, self._confirmed = None, False
        key = ("contended", s.kind, s.rank, s.node)
        self._seen.append(key)
        return bool(sum(k == key for k in self._seen) >= HOLD)

    def update(self, v: Verdict) -> None:
        """Count the latest window: the straggler found in it (before the hold), if any."""
        n = len(intervals(self.recent)) if self.current else 0
        if n < MIN_INTERVALS:
            return
        self.windows += 1
        self._by_intervals[n] = self._by_intervals.get(n, 0) + 1
        self.overlap_windows += self._overlap_found
        self._overlap_found = False
        if self._found is not None and self._confirmed:
            s = self._found.to_json()
            key = (s["kind"], s["rank"], s["node"], tuple(s["ranks"]))
            e = self._named.setdefault(key, [0, s, n])
            e[0] += 1
            e[1] = s
            if (v.straggler or {}).get("limits_the_step"):
                self._made[key] = v

    def persistent(self) -> tuple[dict[str, Any], int, int] | None:
        """The straggler named in more windows than any other: its figures, the windows it was named
        in, and the windows that judged at least as many intervals as the one it was first named in
        (those that could name it); None where none or a tie."""
        if not self._named:
            return None
        ranked = sorted((e[0] for e in self._named.values()), reverse=True)
        count, s, first = max(self._named.values(), key=lambda e: e[0])
        unique = len(ranked) == 1 or ranked[1] < count
        could = sum(k for n, k in self._by_intervals.items() if n >= first)
        return (s, count, could) if unique else None

    def apply(self, v: Verdict | None) -> Verdict | None:
        """``v`` with the run's persistent straggler when it carries none of its own. Where ``v``
        is the ranks' wait in communication and the straggler, named in at least half the windows
        with several ranks that could name it, made the verdict when named (the others' wait was for
        it), the run's verdict is the straggler's: the communication held longer only while the
        straggler was being held (STRAGGLER_MIN_INTERVALS intervals, then STRAGGLER_HOLD windows:
        ~10 s of a 20 s job whose rank 1 did 7x rank 0's rows, named in 8 of the 12 windows that
        followed). The windows that could name it judged at least as many intervals as the one it
        was first named in: under ``attach`` a window's intervals (stack samples of each rank) grow
        to STRAGGLER_SAMPLED_LAST over the run, and the same job, its ranks sampled for ~17 s, had
        its straggler named from the 10th interval in one run (in 11 of 16 windows) and from the
        14th in another (in 4 of 13, every one from then on); the hook's windows reach their
        STRAGGLER_LAST intervals within seconds, so nearly every window counts. And in at least
        STRAGGLER_RUN_MIN_WINDOWS windows: a rank of an even job named in the last window alone
        is not the run's verdict. Below that minimum the rank named live is said in the evidence
        but is not the run's straggler at all; from it, it is (a real straggler on a loaded machine
        may be named in fewer than half the windows), as what limits the step only as above."""
        p = self.persistent()
        if v is not None and p is None and not v.straggler and self._overlap is not None:
            if self.overlap_windows >= RUN_MIN_WINDOWS:
                said = (
                    f"over the run, in {self.overlap_windows} of {self.windows} windows with several ranks: "
                    + self._overlap.overlap_evidence()
                )
                return replace(v, evidence=tuple(v.evidence) + (said,))
        if v is None or p is None or v.straggler:
            return v
        s, count, could = p
        ranks = ", ".join(map(str, s.get("ranks") or ()))
        who = {
            "rank": f"rank {s['rank']} on {s['node']}",
            "ranks": f"ranks {ranks}" + (f" on {s['node']}" if s["node"] else ""),
        }.get(s["kind"], f"node {s['node']}")
        ev = (
            f"straggler over the run: {who}, named in {count} of {self.windows} windows with several ranks; "
            f"{s['excess_ratio']:.0%} busy longer than "
            + ("the faster ranks' median, " if s["kind"] == "ranks" else "the median rank, ")
            + (
                f"{s['step_time_lost_seconds'] / s['median_step_seconds']:.0%} of the step lost (stack samples)"
                if s.get("sampled") and s.get("median_step_seconds")
                else f"{s['step_time_lost_seconds'] * 1e3:.1f} ms per step lost"
            ),
        )
        made = self._made.get((s["kind"], s["rank"], s["node"], tuple(s["ranks"])))
        if made is not None and count >= max(RUN_SHARE * could, RUN_MIN_WINDOWS):
            held = {**(made.straggler or {}), "windows_named": count, "windows": self.windows}
            if v.stage == Stage.COMMUNICATION:
                return replace(made, evidence=tuple(made.evidence) + ev, straggler=held)
            if (v.resource, v.stage) == (made.resource, made.stage):
                # the run's verdict is the one the straggler made where it was named (the windows in
                # which the other rules said it on their own count for it too): the straggler limits
                # the step, as it did there (balance_ranks' fact: diagnosis/measured.py)
                return replace(v, evidence=tuple(v.evidence) + ev, straggler=held)
        if count < RUN_MIN_WINDOWS:
            # named live in too few windows to be the run's (an even job's rank 0 in 1 of 17 windows
            # under attach): said, not carried as the run's straggler
            few = (
                f"named a straggler in {count} of {self.windows} windows only: {who}, "
                f"fewer than {RUN_MIN_WINDOWS}, not the run's straggler"
            )
            return replace(v, evidence=tuple(v.evidence) + (few,))
        return replace(
            v,
            evidence=tuple(v.evidence) + ev,
            straggler={**s, "windows_named": count, "windows": self.windows, "evidence": list(ev)},
        )
