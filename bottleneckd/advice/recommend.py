"""Rank mitigations for a verdict: the active bottleneck's first, by expected effect and cost;
those already in effect or not fitting the job (advice/fit.py) left out, with the reason;
section 5's baselines named; semantics changes marked.

With the window's measured inputs each recommendation carries a predicted speed-up
(``advice/predict.py``), and the ranking is by predicted gain per cost: those predicted to gain at
least MIN_PREDICTED_GAIN first (gain times the cost weight), then those whose gain cannot be
predicted (by the knowledge base's strength and cost, as without inputs), then those predicted to
gain less; the knowledge base's ``first_if`` puts a predicted one ahead of all (the free change
a performance engineer makes before weighing the rest: another loader worker where a whole core
is idle beside a CPU-bound loader); a recommendation that keeps the training's semantics goes
before one above it that changes them where the prediction cannot tell their gains apart (its
interval reaches the other's predicted speed-up: ``undecided_keep_semantics``), or where it removes
a stage that is the whole step as measured and the other only reduces it; within the active
bottleneck's recommendations, then within a secondary pressure's (a resource that does not limit
the step gains it nothing until the active one is relieved: a larger batch "predicted" from the
step's communication share is no first advice for a job out of GPU memory, nor for ranks that
wait in the all-reduce for a straggler).

An undetermined verdict gets advice only when the step waits in its stage with nothing busy
(the measured fact ``idle_wait_stage``, diagnosis/measured.py): the knowledge base's ``latency``
entries, which hide a wait no resource explains (more loader workers and prefetching for a loader
that waits on a remote store or a sleep)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bottleneckd.advice.fit import first, in_effect, unfit
from bottleneckd.advice.knowledge import Mitigation
from bottleneckd.advice.predict import MIN_PREDICTED_GAIN, Prediction, has_model, predict
from bottleneckd.diagnosis.step_inputs import StepInputs
from bottleneckd.diagnosis.verdict import Verdict
from bottleneckd.model.resources import UNDETERMINED, Resource

COST_WEIGHT = {"low": 1.0, "medium": 0.75, "high": 0.5}
SECONDARY_WEIGHT = 0.5
ITERATIONS_WEIGHT = 0.85  # a mitigation that saves iterations, not time per iteration: its gain is less certain
#: a secondary pressure found this strongly (its finding's score) is as much the step's limit as the
#: verdict (a blind trace: pageable copies 40% of a serial step, the transfer's finding 0.99 beside a
#: memory-bound compute stage's 1.0): its recommendations for another stage that keep the semantics and
#: are predicted to gain rank with the active bottleneck's (before its unpredicted ones), not after all
#: of them
TIED_SECONDARY = 0.9

__all__ = ["Recommendation", "recommend", "skipped", "not_fitting", "elsewhere"]


@dataclass(frozen=True)
class Recommendation:
    mitigation: Mitigation
    resource: Resource  # which bottleneck it addresses (active or secondary; undetermined for a latency wait)
    score: float
    why: str
    #: the predicted speed-up from the measured window (None: recommended without inputs)
    prediction: Prediction | None = None
    #: why it comes first for this job (the knowledge base's ``first_if``), or None
    first: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.mitigation.to_json(),
            "addresses": self.resource,
            "score": round(self.score, 3),
            "why": self.why,
            "prediction": None if self.prediction is None else self.prediction.to_json(),
        }


def rank_key(r: Recommendation) -> tuple[int, float, float]:
    """Those the knowledge base puts first for this job (``first_if``) when predicted to gain at
    least MIN_PREDICTED_GAIN, those that keep the training's semantics before those that change it
    (the cores other processes hold given back before cheaper augmentation), and next those put
    first that keep the semantics and no model predicts (before those put first that change them);
    then predicted gain
    per cost (gain >= MIN_PREDICTED_GAIN), then the unpredicted (those no model predicts put first
    for this job, then by score), then those predicted to gain less (tier, then descending value);
    equal gains by score (two mitigations the same hook applies, less frequent sync and
    accumulation on DDP, predict alike)."""
    p = r.prediction
    if p is None or p.gain is None:
        if r.first and not r.mitigation.changes_semantics and (p is None or p.model == "none"):
            # put first by the knowledge base, no model of its gain, nothing trained changes: after
            # those put first with a predicted gain that keep the semantics, before the rest
            # (matching the threads to the cores beside a smaller model predicted x2: one setting
            # against a different model)
            return (-2, 0.0, -r.score)
        return (1, -1.0 if r.first else 0.0, -r.score)
    if p.gain >= MIN_PREDICTED_GAIN:
        # of those put first, one that keeps what is trained goes before one that changes it
        lead = (-1 if r.mitigation.changes_semantics else -2) if r.first else 0
        return (lead, -round(p.gain * COST_WEIGHT.get(r.mitigation.cost, 0.7), 6), -r.score)
    return (2, -p.gain, -r.score)


def score(m: Mitigation, weight: float) -> float:
    return weight * m.strength * COST_WEIGHT.get(m.cost, 0.7) * (1.0 if m.effect != "iterations" else ITERATIONS_WEIGHT)


def _latency_stage(verdict: Verdict, facts: Mapping[str, Any]) -> str | None:
    """The stage an undetermined verdict's step waits in with nothing busy, or None."""
    stage = facts.get("idle_wait_stage")
    return stage if verdict.resource == UNDETERMINED and stage == verdict.stage else None


def _addresses_active(verdict: Verdict, m: Mitigation, facts: Mapping[str, Any]) -> bool:
    """It is meant for the active bottleneck (in any stage)."""
    stage = _latency_stage(verdict, facts)
    if stage is not None:
        return m.latency and stage in m.stages
    return verdict.resource in m.resources


def recommend(
    verdict: Verdict,
    kb: tuple[Mitigation, ...],
    facts: Mapping[str, Any] | None = None,
    limit: int = 8,
    inputs: StepInputs | None = None,
    predictions: bool = True,
) -> list[Recommendation]:
    """Ranked recommendations; with ``predictions`` each carries its predicted speed-up from
    ``inputs`` (unknown, with the reason, when ``inputs`` is None)."""
    facts = facts or {}
    stage = _latency_stage(verdict, facts)
    if verdict.resource == UNDETERMINED and stage is None:
        return []
    if stage is not None:
        why = f"the step waits in the {stage} stage with nothing busy (latency): doing more at once hides the wait"
        fits = [
            m for m in kb if _addresses_active(verdict, m, facts) and not in_effect(m, facts) and not unfit(m, facts)
        ]
        latency = (
            Recommendation(
                m, UNDETERMINED, score(m, 1.0), why, predict(m.id, inputs, UNDETERMINED) if predictions else None
            )
            for m in fits
        )
        return undecided_keep_semantics(sorted(latency, key=rank_key))[:limit]
    targets = [(verdict.resource, 1.0)] + [(r, SECONDARY_WEIGHT * s) for r, s in verdict.secondary]
    best: dict[str, Recommendation] = {}
    for resource, weight in targets:
        for m in kb:
            if resource not in m.resources or in_effect(m, facts) or unfit(m, facts):
                continue
            if resource == verdict.resource and not m.acts_in(resource, verdict.stage):
                continue  # it relieves this resource in another stage of the step, not where it limits now
            why = f"addresses {resource}" + (
                " (active bottleneck)" if resource == verdict.resource else " (secondary pressure)"
            )
            if m.baseline:
                why += "; a strong baseline (section 5): compare any speed-up against it"
            s = score(m, weight)
            if m.id in best and best[m.id].score >= s:
                continue
            pred = predict(m.id, inputs, resource) if predictions else None
            # first only where the knowledge base says so and its gain is predicted, or no model
            # predicts it at all (then first among the unpredicted: rank_key)
            gains = pred is not None and pred.gain is not None and pred.gain >= MIN_PREDICTED_GAIN
            modelless = not has_model(m.id, resource)
            lead = first(m, facts) if resource == verdict.resource and (gains or modelless) else None
            if lead:
                why += f"; first: {lead}"
            best[m.id] = Recommendation(m, resource, s, why, pred, lead)
    # the active bottleneck's first (and a tied secondary's predicted, semantics-keeping ones beside
    # them); ties keep the knowledge base's order
    tied = {res for res, sc in verdict.secondary if sc >= TIED_SECONDARY}
    ranked = sorted(
        best.values(),
        key=lambda r: (r.resource != verdict.resource and not _tied(r, tied, verdict.stage), *rank_key(r)),
    )
    return undecided_keep_semantics(ranked)[:limit]


def _tied(r: Recommendation, tied: set[Resource], stage: str) -> bool:
    """``r`` is for a secondary pressure as strong as the verdict (TIED_SECONDARY), acts in another
    stage of the step than the verdict's (its own share of a serial step, not a consequence of the
    verdict's: a host in swap makes its disk busy in the same data stage, where caching the dataset
    locally is no fix), keeps what is trained and is predicted to gain."""
    p = r.prediction
    return (
        r.resource in tied
        and stage not in r.mitigation.stages
        and not r.mitigation.changes_semantics
        and p is not None
        and p.gain is not None
        and p.gain >= MIN_PREDICTED_GAIN
    )


def undecided_keep_semantics(ranked: list[Recommendation]) -> list[Recommendation]:
    """``ranked`` with each recommendation that keeps the training's semantics moved before the
    first one above it that changes them, where its predicted interval reaches that one's
    predicted speed-up (the measurements cannot say which gains more), at no greater cost, for
    the same resource and with neither put first by the knowledge base. Section 5: a change of
    what is trained needs its quality checked before its speed counts; a performance engineer
    tries the one that cannot cost accuracy first. Measured where it decides: serving a dataset
    read inline from a slow store locally (predicted x1.90 at least, "the most is not measured";
    x9.61 under the hook) against data echoing (x1.98) under ``attach``."""
    out = list(ranked)
    for j in range(len(out)):
        keeps = out[j]
        for i in range(j):
            if _undecided_against(keeps, out[i]):
                out.insert(i, out.pop(j))
                break
    return out


def _undecided_against(keeps: Recommendation, changes: Recommendation) -> bool:
    """``keeps`` goes before ``changes``: the two are a semantics-keeping and a semantics-changing
    recommendation for the same resource, neither put first, ``keeps`` at no greater cost, and the
    measurements cannot say ``changes`` gains more: ``keeps``'s interval reaches its predicted
    speed-up, or ``keeps`` removes a stage that is all of the step (``Prediction.removes_all``: its
    gain has no figure but is more than any part of it; data echoing's x1.98 beside caching the
    preprocessing under ``attach``, every stack sample of a tokenizing loader's job in the data
    wait) of which ``changes`` reduces some."""
    p, q = keeps.prediction, changes.prediction
    if not (
        not keeps.mitigation.changes_semantics
        and changes.mitigation.changes_semantics
        and keeps.first is None
        and changes.first is None
        and keeps.resource == changes.resource
        and COST_WEIGHT.get(keeps.mitigation.cost, 0.7) >= COST_WEIGHT.get(changes.mitigation.cost, 0.7)
        and p is not None
        and q is not None
        and q.speedup is not None
    ):
        return False
    if p.removes_all:
        return bool(set(keeps.mitigation.stages) & set(changes.mitigation.stages))
    return (
        p.gain is not None
        and q.gain is not None
        and p.gain >= MIN_PREDICTED_GAIN
        and q.gain >= MIN_PREDICTED_GAIN
        and p.high is not None
        and p.high >= q.speedup
    )


def skipped(verdict: Verdict, kb: tuple[Mitigation, ...], facts: Mapping[str, Any]) -> list[tuple[Mitigation, str]]:
    """Mitigations for the active bottleneck left out because they are already in effect."""
    return [(m, why) for m in kb if _addresses_active(verdict, m, facts) and (why := in_effect(m, facts))]


def not_fitting(verdict: Verdict, kb: tuple[Mitigation, ...], facts: Mapping[str, Any]) -> list[tuple[Mitigation, str]]:
    """Mitigations for the active bottleneck left out because they do not fit this job (a condition
    of the knowledge base on the measured or declared facts), with why."""
    return [
        (m, why)
        for m in kb
        if _addresses_active(verdict, m, facts) and not in_effect(m, facts) and (why := unfit(m, facts))
    ]


def elsewhere(verdict: Verdict, kb: tuple[Mitigation, ...], facts: Mapping[str, Any]) -> list[tuple[Mitigation, str]]:
    """Mitigations for the active resource left out because they relieve it in another stage of
    the step than the one it limits (a smaller model shortens forward and backward, not Python
    work between the phases), with why."""
    if verdict.resource == UNDETERMINED:
        return []
    out = []
    for m in kb:
        if verdict.resource not in m.resources or m.acts_in(verdict.resource, verdict.stage):
            continue
        if in_effect(m, facts) or unfit(m, facts):
            continue
        stages = [s for s in m.stages if m.acts_in(verdict.resource, s)]
        out.append(
            (m, f"relieves {verdict.resource} in the {', '.join(stages)} stage; this step's time is in {verdict.stage}")
        )
    return out
