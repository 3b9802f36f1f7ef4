"""Each rank's step reports between two drains of the receiver, bounded (issue 25 item 6).

A rank's reports are summed until the sidecar's next tick drains them; its facts are *replaced*
by each report (what the hook unset is gone). Once drained, an entry holds nothing that the
rank's next report would not replace, so a rank that reported nothing since the last drain (a
silent one: ended, restarted under a new identity, or in a long evaluation) is forgotten at that
drain, and added again by its next report. Between two drains at most ``MAX_RANKS`` ranks are
kept: beyond that the least recently heard is dropped with its pending steps, and counted.
Before this bound, 60 s of reports under distinct identities grew a sidecar to 4,096 ranks
(RSS 36 -> 591 MB, a 15 MB /metrics taking 2.1 s per scrape).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bottleneckd.model.facts import Facts
from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.protocol import StepReport
from bottleneckd.model.sample import RankPhases, StepPhases

#: ranks kept between two drains. One sidecar serves one node, and a node runs one rank per
#: accelerator (8 on an HGX H100/H200/B200 board, 16 on the largest nodes) or, for CPU training, a
#: few per socket; 256 is 16 times the largest of these. The exporter writes ~3.7 kB of series per
#: rank (measured: 15 MB for 4,098 ranks), so /metrics stays under ~1 MB.
MAX_RANKS = 256


@dataclass
class _Rank:
    identity: RankIdentity
    facts: Facts
    steps: int = 0
    wall: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    examples: int | None = 0  # None once a report came without an example count


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


class RankTable:
    """Not thread-safe: the receiver calls it under its lock."""

    def __init__(self, limit: int = MAX_RANKS) -> None:
        self.limit = limit
        self._ranks: dict[str, _Rank] = {}  # in order of last report: the first is the least recently heard
        self.dropped = 0  # ranks dropped with pending steps because ``limit`` ranks were already kept
        self.expired = 0  # ranks forgotten at a drain because they had reported nothing since the last one

    def __len__(self) -> int:
        return len(self._ranks)

    def add(self, msg: StepReport) -> None:
        key = msg.identity.key
        r = self._ranks.pop(key, None)  # re-inserted last: the dict stays in order of last report
        if r is None:
            while len(self._ranks) >= self.limit:
                self._ranks.pop(next(iter(self._ranks)))
                self.dropped += 1
            r = _Rank(msg.identity, msg.facts)
        self._ranks[key] = r
        r.identity, r.facts = msg.identity, msg.facts  # the whole fact state: replaced, not merged
        r.steps += msg.steps
        r.wall += msg.wall_seconds
        r.examples = _add(r.examples, msg.examples)
        for k, v in msg.phases.items():
            r.phases[k] = r.phases.get(k, 0.0) + v

    def drain(self) -> list[RankPhases]:
        """The ranks that reported steps since the last drain, each with what it reported; the
        ranks that reported none are forgotten."""
        out = []
        for key, r in list(self._ranks.items()):
            if r.steps:
                out.append(RankPhases(r.identity, StepPhases(r.steps, r.wall, dict(r.phases), r.facts, r.examples)))
                r.steps, r.wall, r.phases, r.examples = 0, 0.0, {}, 0
            else:
                del self._ranks[key]
                self.expired += 1
        return out


def merge(ranks: list[RankPhases]) -> StepPhases | None:
    """The job's step phases over its ranks (phases and wall summed, so shares and per-step figures
    are means over ranks; facts of the lowest rank), or None when no rank reported."""
    if not ranks:
        return None
    ranks.sort(key=lambda rp: (rp.identity.rank, rp.identity.key))
    phases: dict[str, float] = {}
    examples: int | None = 0
    for rp in ranks:
        for k, v in rp.phases.phases.items():
            phases[k] = phases.get(k, 0.0) + v
        examples = _add(examples, rp.phases.examples)
    return StepPhases(
        sum(rp.phases.steps for rp in ranks),
        sum(rp.phases.wall_seconds for rp in ranks),
        phases,
        ranks[0].phases.facts,
        examples,
    )
