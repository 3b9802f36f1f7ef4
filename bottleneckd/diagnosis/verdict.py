"""The verdict types."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from bottleneckd.model.resources import Resource, Stage

if TYPE_CHECKING:
    from bottleneckd.diagnosis.code import CodeAttribution


@dataclass(frozen=True, kw_only=True)
class Finding:
    """What one rule concludes from one window (built with keywords)."""

    resource: Resource
    stage: Stage
    score: float  # 0..1: how strongly this resource limits the step
    evidence: tuple[str, ...]
    headroom: float | None = None  # step speed-up if this resource stopped limiting (x)
    figures: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class RegimeChange:
    """The limiting resource or the limiting stage changed (compute -> data on the same CPU is a
    regime change too). ``t`` is the window end at which the new verdict took over."""

    t: float
    before: Resource
    after: Resource
    label: str
    #: "" where the verdict was undetermined (its stage is not a regime of its own)
    before_stage: Stage | Literal[""] = ""
    after_stage: Stage | Literal[""] = ""


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The diagnosis of one window (built with keywords)."""

    resource: Resource  # one of the twelve, or Resource.UNDETERMINED
    stage: Stage
    confidence: float
    evidence: tuple[str, ...]
    secondary: tuple[tuple[Resource, float], ...] = ()
    headroom: float | None = None
    reason: str = ""  # why undetermined, or how the headroom was derived
    t: float = 0.0
    since: float = 0.0
    figures: dict[str, float] = field(default_factory=dict)
    #: the rank or node the job waits for (diagnosis/straggler.py), when one is named
    straggler: dict[str, Any] | None = None
    #: the user's functions the stage's time goes to (diagnosis/code.py), when stacks were sampled
    code: CodeAttribution | None = None

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["secondary"] = [{"resource": r, "score": round(s, 3)} for r, s in self.secondary]
        d["confidence"] = round(self.confidence, 3)
        return d
