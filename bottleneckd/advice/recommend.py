"""Rank mitigations for a verdict: the active bottleneck's first, by expected effect and cost;
those already in effect skipped; section 5's baselines named; semantics changes marked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bottleneckd.diagnosis.verdict import Verdict
from bottleneckd.advice.knowledge import Mitigation
from bottleneckd.model.resources import UNDETERMINED

COST_WEIGHT = {"low": 1.0, "medium": 0.75, "high": 0.5}


@dataclass(frozen=True)
class Recommendation:
    mitigation: Mitigation
    resource: str  # which bottleneck it addresses (active or secondary)
    score: float
    why: str

    def to_json(self) -> dict[str, Any]:
        return {**self.mitigation.to_json(), "addresses": self.resource, "score": round(self.score, 3), "why": self.why}


def _matches(cond: dict[str, Any], facts: dict[str, Any]) -> bool:
    if cond["fact"] not in facts:
        return False
    v = facts[cond["fact"]]
    op = cond["op"]
    if op == "truthy":
        return bool(v)
    if op == "eq":
        return v == cond["value"]
    if op == "in":
        return v in cond["value"]
    if op == ">=":
        return v is not None and v >= cond["value"]
    raise ValueError(f"unknown condition op {op!r}")


def in_effect(m: Mitigation, facts: dict[str, Any]) -> str | None:
    for c in m.skip_if:
        if _matches(c, facts):
            return f"{c['fact']}={facts[c['fact']]!r}"
    return None


def recommend(verdict: Verdict, kb: tuple[Mitigation, ...], facts: dict[str, Any] | None = None, limit: int = 8) -> list[Recommendation]:
    facts = facts or {}
    if verdict.resource == UNDETERMINED:
        return []
    targets = [(verdict.resource, 1.0)] + [(r, 0.5 * s) for r, s in verdict.secondary]
    best: dict[str, Recommendation] = {}
    for resource, weight in targets:
        for m in kb:
            if resource not in m.resources or in_effect(m, facts):
                continue
            if resource == verdict.resource and verdict.stage not in m.stages:
                continue  # it relieves this resource in another stage of the step, not where it limits now
            score = weight * m.strength * COST_WEIGHT.get(m.cost, 0.7) * (1.0 if m.effect != "iterations" else 0.85)
            why = f"addresses {resource}" + (" (active bottleneck)" if resource == verdict.resource else " (secondary pressure)")
            if m.baseline:
                why += "; a strong baseline (section 5): compare any speed-up against it"
            if m.id not in best or best[m.id].score < score:
                best[m.id] = Recommendation(m, resource, score, why)
    return sorted(best.values(), key=lambda r: -r.score)[:limit]


def skipped(verdict: Verdict, kb: tuple[Mitigation, ...], facts: dict[str, Any]) -> list[tuple[Mitigation, str]]:
    """Mitigations for the active resource left out because they are already in effect."""
    return [(m, why) for m in kb if verdict.resource in m.resources and (why := in_effect(m, facts))]
