"""The data that flows from the samplers: readings, one sample per tick, step phases."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bottleneckd.model.code import StackCounts
from bottleneckd.model.facts import Facts
from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.resources import Resource


@dataclass(frozen=True)
class Reading:
    """One figure: raw (unit as named) or ``metric == "utilization"`` (a fraction of the peak).

    ``value is None`` means unknown, never zero; ``note`` then says why."""

    resource: Resource
    device: str
    metric: str
    value: float | None
    unit: str
    note: str = ""

    def to_json(self) -> list[Any]:
        return [self.resource, self.device, self.metric, self.value, self.unit] + ([self.note] if self.note else [])

    @staticmethod
    def from_json(row: list[Any]) -> Reading:
        return Reading(
            Resource(row[0]),
            str(row[1]),
            str(row[2]),
            None if row[3] is None else float(row[3]),
            str(row[4]),
            str(row[5]) if len(row) > 5 else "",
        )


@dataclass(frozen=True)
class StepPhases:
    """Step-phase seconds summed over ``steps`` steps in one interval (from the torch hook)."""

    steps: int
    wall_seconds: float
    phases: dict[str, float]
    #: what the hook knows (dtype, loader workers, achieved FLOP/s ...): typed, see model/facts.py
    facts: Mapping[str, Any] = field(default_factory=Facts)
    #: training examples in those steps (None: the sender did not count them)
    examples: int | None = None

    def per_step(self, phase: str) -> float | None:
        return self.phases.get(phase, 0.0) / self.steps if self.steps else None

    @property
    def sampled(self) -> bool:
        """Phases counted from stack samples (attach: py-spy), not timed steps: ``steps`` counts
        samples and ``wall_seconds`` is samples x the sampling interval, so only shares mean anything."""
        return self.facts.get("phase_source") == "py-spy"

    @property
    def unit(self) -> str:
        """What ``steps`` counts: "stack samples" or "steps"."""
        return "stack samples" if self.sampled else "steps"

    def share(self, phase: str) -> float | None:
        return self.phases.get(phase, 0.0) / self.wall_seconds if self.wall_seconds > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "wall_seconds": self.wall_seconds,
            "phases": self.phases,
            "facts": Facts(self.facts).to_json(),
            **({"examples": self.examples} if self.examples is not None else {}),
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> StepPhases:
        return StepPhases(
            int(d["steps"]),
            float(d["wall_seconds"]),
            {k: float(v) for k, v in d["phases"].items()},
            Facts.from_json(d.get("facts")),
            None if d.get("examples") is None else int(d["examples"]),
        )


@dataclass(frozen=True)
class RankPhases:
    """One rank's step phases over one interval (every rank of a job reports its own)."""

    identity: RankIdentity
    phases: StepPhases

    def to_json(self) -> dict[str, Any]:
        return {"identity": self.identity.to_json(), "phases": self.phases.to_json()}

    @staticmethod
    def from_json(d: dict[str, Any]) -> RankPhases:
        return RankPhases(RankIdentity.from_json(d["identity"]), StepPhases.from_json(d["phases"]))


@dataclass(frozen=True)
class SamplerStatus:
    name: str
    up: bool
    seconds: float
    error: str = ""


#: the latest Unix time a trace may hold (year 5138; the protocol's bound on event times): past it
#: the time cannot be formatted (1e300 made ``analyze`` and ``report`` end in OverflowError)
MAX_UNIX_TIME = 1e11
#: the longest sampling interval a trace may hold: ``--interval`` takes at most 60 s
MAX_INTERVAL = 3600.0


def unix_time(v: Any) -> float:
    """``v`` as a Unix time; ValueError when it is not one (NaN, negative, past MAX_UNIX_TIME)."""
    t = float(v)
    if not 0 <= t <= MAX_UNIX_TIME:  # NaN fails too
        raise ValueError(f"t {str(v)[:20]} is not a Unix time (0 to {MAX_UNIX_TIME:g})")
    return t


def interval_seconds(v: Any) -> float:
    """``v`` as a sampling interval in seconds; ValueError when it is not one."""
    x = float(v)
    if not 0 < x <= MAX_INTERVAL:
        raise ValueError(f"interval {str(v)[:20]} is not a number of seconds above 0 and at most {MAX_INTERVAL:g}")
    return x


@dataclass(frozen=True)
class Sample:
    t: float
    interval: float
    readings: tuple[Reading, ...]
    phases: StepPhases | None = None
    samplers: tuple[SamplerStatus, ...] = ()
    #: per-rank phases of a distributed job (``phases`` is then the job's view: the ranks merged)
    ranks: tuple[RankPhases, ...] = ()
    #: stack samples of the interval by the user's code (model/code.py), when stacks are sampled
    stacks: StackCounts | None = None

    def get(self, resource: str, device: str | None, metric: str) -> float | None:
        for r in self.readings:
            if r.resource == resource and r.metric == metric and (device is None or r.device == device):
                return r.value
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "sample",
            "t": self.t,
            "interval": self.interval,
            "readings": [r.to_json() for r in self.readings],
            "phases": None if self.phases is None else self.phases.to_json(),
            "samplers": {s.name: [s.up, round(s.seconds, 6), s.error] for s in self.samplers},
            **({"ranks": [r.to_json() for r in self.ranks]} if self.ranks else {}),
            **({"stacks": self.stacks.to_json()} if self.stacks is not None else {}),
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> Sample:
        """A trace line's sample; ValueError (or KeyError, TypeError ...) for a malformed one."""
        return Sample(
            t=unix_time(d["t"]),
            interval=interval_seconds(d.get("interval", 1.0)),
            readings=tuple(Reading.from_json(r) for r in d["readings"]),
            phases=None if d.get("phases") is None else StepPhases.from_json(d["phases"]),
            samplers=tuple(
                SamplerStatus(k, bool(v[0]), float(v[1]), str(v[2]) if len(v) > 2 else "")
                for k, v in d.get("samplers", {}).items()
            ),
            ranks=tuple(RankPhases.from_json(r) for r in d.get("ranks", ())),
            stacks=None if d.get("stacks") is None else StackCounts.from_json(d["stacks"]),
        )


def utilization(
    resource: Resource,
    device: str,
    used: float | None,
    peak: float | None,
    unit: str,
    why_unknown: str = "",
    peak_why: str = "peak unknown; run 'bottleneckd calibrate'",
) -> list[Reading]:
    """The raw figure and its fraction of the peak (None with the reason when either is unknown)."""
    out = [
        Reading(
            resource,
            device,
            "throughput" if unit.endswith("/s") else "used",
            used,
            unit,
            "" if used is not None else why_unknown,
        )
    ]
    if used is None:
        out.append(Reading(resource, device, "utilization", None, "ratio", why_unknown or "figure not measurable here"))
    elif not peak:
        out.append(Reading(resource, device, "utilization", None, "ratio", peak_why))
    else:
        out.append(Reading(resource, device, "utilization", used / peak, "ratio"))
    out.append(Reading(resource, device, "peak", peak, unit, "" if peak else "unknown"))
    return out
