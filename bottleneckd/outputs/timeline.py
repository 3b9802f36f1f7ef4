"""What the HTML report plots over time: one compact row per sample, taken after the pipeline has
seen it (live as a loop sink, or while a trace is replayed through the same Pipeline).

Rows keep only known figures (an unknown utilisation is absent, with its reason kept once per
series), so a long run stays small; past ``max_rows`` every other row is dropped (the plot keeps
its shape at half the resolution).
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneckd.advice.stage import Snapshot
from bottleneckd.model.resources import UNDETERMINED
from bottleneckd.model.sample import Sample


@dataclass(frozen=True)
class RankRow:
    label: str
    steps: int
    step_seconds: float
    phases: dict[str, float]  # seconds per step


@dataclass(frozen=True)
class Row:
    t: float
    steps: int
    step_seconds: float | None  # wall seconds per step in this interval
    phases: dict[str, float]  # seconds per step in each phase
    util: dict[str, float]  # "resource device" -> fraction of its peak
    verdict: str
    ranks: tuple[RankRow, ...] = ()


class Timeline:
    def __init__(self, max_rows: int = 20000) -> None:
        self.rows: list[Row] = []
        self.unknown: dict[str, str] = {}  # series -> why it was last unknown (reported when it never had a value)
        self.max_rows = max_rows

    def add(self, sample: Sample, snap: Snapshot | None) -> None:
        util: dict[str, float] = {}
        for r in sample.readings:
            if r.metric != "utilization":
                continue
            key = f"{r.resource} {r.device}"
            if r.value is None:
                self.unknown[key] = (
                    r.note or "unknown"
                )  # the latest reason ("first interval" gives way to the lasting one)
            else:
                util[key] = r.value
        ph = sample.phases
        steps = ph.steps if ph is not None else 0
        per = {k: v / steps for k, v in ph.phases.items()} if ph is not None and steps else {}
        ranks = tuple(
            RankRow(
                f"rank {r.identity.rank} ({r.identity.node})",
                r.phases.steps,
                r.phases.wall_seconds / r.phases.steps,
                {k: v / r.phases.steps for k, v in r.phases.phases.items()},
            )
            for r in sample.ranks
            if r.phases.steps and not r.phases.sampled  # stack samples (attach) have no seconds per step
        )
        self.rows.append(
            Row(
                sample.t,
                steps,
                ph.wall_seconds / steps if ph is not None and steps else None,
                per,
                util,
                snap.verdict.resource if snap is not None else UNDETERMINED,
                ranks,
            )
        )
        if len(self.rows) > self.max_rows:
            self.rows = self.rows[::2]

    def known_series(self) -> list[str]:
        """The utilisation series with at least one known value, in the order first seen."""
        seen: dict[str, None] = {}
        for row in self.rows:
            for k in row.util:
                seen.setdefault(k, None)
        return list(seen)

    def unknown_series(self) -> dict[str, str]:
        """The series never known in the run -> why (the last reason given)."""
        known = set(self.known_series())
        return {k: v for k, v in self.unknown.items() if k not in known}
