"""Rank mitigations for a verdict: the active bottleneck's first, by expected effect and cost;
those already in effect or not fitting the job (advice/fit.py) left out, with the reason;
section 5's baselines named; semantics changes marked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bottleneckd.advice.fit import in_effect, unfit
from bottleneckd.advice.knowledge import Mitigation
from bottleneckd.diagnosis.verdict import Verdict
from bottleneckd.model.resources import UNDETERMINED

COST_WEIGHT = {"low": 1.0, "medium": 0.75, "high": 0.5}
SECONDARY_WEIGHT = 0.5
ITERATIONS_WEIGHT = 0.85  # a mitigation that saves iterations, not time per iteration: its gain is less certain

__all__ = ["Recommendation", "recommend", "skipped", "not_fitting"]


@dataclass(frozen=True)
class Recommendation:
    mitigation: Mitigation
    resource: str  # which bottleneck it addresses (active or secondary)
    score: float
    why: str

    def to_json(self) -> dict[str, Any]:
        return {**self.mitigation.to_json(), "addresses": self.resource, "score": round(self.score, 3), "why": self.why}


def score(m: Mitigation, weight: float) -> float:
    return weight * m.strength * COST_WEIGHT.get(m.cost, 0.7) * (1.0 if m.effect != "iterations" else ITERATIONS_WEIGHT)


def recommend(
    verdict: Verdict, kb: tuple[Mitigation, ...], facts: Mapping[str, Any] | None = None, limit: int = 8
) -> list[Recommendation]:
    facts = facts or {}
    if verdict.resource == UNDETERMINED:
        return []
    targets = [(verdict.resource, 1.0)] + [(r, SECONDARY_WEIGHT * s) for r, s in verdict.secondary]
    best: dict[str, Recommendation] = {}
    for resource, weight in targets:
        for m in kb:
            if resource not in m.resources or in_effect(m, facts) or unfit(m, facts):
                continue
            if resource == verdict.resource and verdict.stage not in m.stages:
                continue  # it relieves this resource in another stage of the step, not where it limits now
            why = f"addresses {resource}" + (
                " (active bottleneck)" if resource == verdict.resource else " (secondary pressure)"
            )
            if m.baseline:
                why += "; a strong baseline (section 5): compare any speed-up against it"
            s = score(m, weight)
            if m.id not in best or best[m.id].score < s:
                best[m.id] = Recommendation(m, resource, s, why)
    return sorted(best.values(), key=lambda r: -r.score)[:limit]  # ties keep the knowledge base's order


def skipped(verdict: Verdict, kb: tuple[Mitigation, ...], facts: Mapping[str, Any]) -> list[tuple[Mitigation, str]]:
    """Mitigations for the active resource left out because they are already in effect."""
    return [(m, why) for m in kb if verdict.resource in m.resources and (why := in_effect(m, facts))]


def not_fitting(verdict: Verdict, kb: tuple[Mitigation, ...], facts: Mapping[str, Any]) -> list[tuple[Mitigation, str]]:
    """Mitigations for the active resource left out because they do not fit this job."""
    return [
        (m, why) for m in kb if verdict.resource in m.resources and not in_effect(m, facts) and (why := unfit(m, facts))
    ]
