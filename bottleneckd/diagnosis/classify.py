"""Combine the rules' findings into one verdict for a window."""

from __future__ import annotations

from dataclasses import replace

from bottleneckd.diagnosis.rules import RULES
from bottleneckd.diagnosis.rules.common import stage_share
from bottleneckd.diagnosis.thresholds import ACTIVE, IDLE_UTILIZATION, SECONDARY, STAGE_SHARE_RATIO
from bottleneckd.diagnosis.verdict import Finding, Verdict
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED, Resource, Stage
from bottleneckd.peaks.resolve import PeakTable

# --- confidence: chosen, not measured -------------------------------------------------------------

#: a verdict's confidence is its score, weighed from 0.6 (a tie with the runner-up) to 1.0 (a margin
#: of 0.3 or more over it)
TIE_WEIGHT = 0.6
MARGIN_WEIGHT = 0.4
CLEAR_MARGIN = 0.3
#: with no rule strong enough, "undetermined" is as confident as the strongest finding is weak
NO_FINDING_CONFIDENCE = 1.0


def findings(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    out: list[Finding] = []
    for rule in RULES:
        out += rule(w, peaks)
    best: dict[str, Finding] = {}
    for f in out:  # one finding per resource: the strongest
        if f.resource not in best or f.score > best[f.resource].score:
            best[f.resource] = f
    for f in out:  # of one resource's stages, the one that takes clearly more of the step
        best[f.resource] = larger_stage(w, best[f.resource], f)
    return sorted(best.values(), key=lambda f: -f.score)


def larger_stage(w: WindowStats, strongest: Finding, f: Finding) -> Finding:
    """Where one resource limits the "other" stage (Python between the phases, checkpoints,
    logging) and a stronger finding's stage, the other stage is named when it takes
    STAGE_SHARE_RATIO times that stage's share of the step or more: the resource's score stands (the
    same resource, as strongly found); the stage, evidence and headroom are the other stage's.
    Only the other stage: a data wait beside a larger compute stage stays the data stage (hiding it
    behind compute is the one-argument fix; the compute is the work itself). An undetermined
    finding is never moved: it names no resource."""
    if f is strongest or f.stage != Stage.OTHER or f.resource != strongest.resource or f.resource == UNDETERMINED:
        return strongest
    mine, theirs = stage_share(w, f.stage), stage_share(w, strongest.stage)
    if mine is None or theirs is None or mine < theirs * STAGE_SHARE_RATIO:
        return strongest
    why = (
        f"the {f.stage} stage takes {mine:.0%} of the step against the {strongest.stage} stage's {theirs:.0%}, "
        f"the same resource limiting both: the larger lever"
    )
    return replace(f, score=max(f.score, strongest.score), evidence=(*f.evidence, why))


def largest_utilization(w: WindowStats) -> tuple[str, str, float] | None:
    best = None
    for (r, d, m), s in w.stats.items():
        if (
            m == "utilization"
            and r not in (Resource.CPU_MEMORY, Resource.STORAGE_CAPACITY, Resource.GPU_MEMORY)
            and (best is None or s.mean > best[2])
        ):
            best = (r, d, s.mean)
    return best


def classify(w: WindowStats, peaks: PeakTable) -> Verdict:
    """The strongest finding names the bottleneck. A rule that sees a stage limit the step but
    cannot name the resource (its evidence rules each one out) returns an ``undetermined`` finding:
    when it is the strongest, the verdict is undetermined with that rule's reason."""
    fs = findings(w, peaks)
    secondary = tuple((f.resource, f.score) for f in fs[1:] if f.score >= SECONDARY and f.resource != UNDETERMINED)
    if fs and fs[0].resource == UNDETERMINED and fs[0].score >= ACTIVE:
        return _undetermined_by_a_rule(w, fs[0], secondary)
    fs = [f for f in fs if f.resource != UNDETERMINED]
    if fs and fs[0].score >= ACTIVE:
        return _named(w, fs, secondary)
    return _no_active_finding(w, fs, secondary)


def _undetermined_by_a_rule(w: WindowStats, top: Finding, secondary: tuple[tuple[Resource, float], ...]) -> Verdict:
    """The strongest finding rules every resource out: undetermined with its reason."""
    return Verdict(
        resource=UNDETERMINED,
        stage=top.stage,
        confidence=0.0,
        evidence=top.evidence,
        secondary=secondary,
        reason=top.evidence[-1],
        t=w.end,
        since=w.end,
    )


def _named(w: WindowStats, fs: list[Finding], secondary: tuple[tuple[Resource, float], ...]) -> Verdict:
    """The strongest finding names the resource; its margin over the next one sets the confidence."""
    top = fs[0]
    margin = top.score - (fs[1].score if len(fs) > 1 else 0.0)
    confidence = max(0.0, min(1.0, top.score * (TIE_WEIGHT + MARGIN_WEIGHT * min(1.0, margin / CLEAR_MARGIN))))
    why = ""
    if top.headroom is not None:
        why = f"headroom: step time without the {top.stage} stage's share (Figure 15's vertical line)"
    return Verdict(
        resource=top.resource,
        stage=top.stage,
        confidence=confidence,
        evidence=top.evidence,
        secondary=secondary,
        headroom=top.headroom,
        reason=why,
        t=w.end,
        since=w.end,
        figures=top.figures,
    )


def _no_active_finding(w: WindowStats, fs: list[Finding], secondary: tuple[tuple[Resource, float], ...]) -> Verdict:
    """No finding strong enough: idle (no steps, nothing busy) or balanced, with the reason."""
    steps = w.phases.steps if w.phases else 0
    largest = largest_utilization(w)
    lu = (
        f"largest utilization {largest[0]} {largest[1]} at {largest[2] * 100:.0f}% of peak"
        if largest
        else "no utilization known"
    )
    if steps == 0 and (largest is None or largest[2] < IDLE_UTILIZATION):
        reason = f"idle: no training steps reported and no resource above 10% ({lu})"
        stage = Stage.OTHER
    elif fs:
        reason = (
            f"balanced: no resource clearly limits the step (strongest: {fs[0].resource} at score "
            f"{fs[0].score:.2f}; {lu})"
        )
        stage = fs[0].stage
    else:
        reason = f"balanced: no rule fired ({lu})"
        stage = Stage.OTHER
    ev = tuple(e for f in fs[:2] for e in f.evidence) or (lu,)
    return Verdict(
        resource=UNDETERMINED,
        stage=stage,
        confidence=0.0 if not fs else NO_FINDING_CONFIDENCE - fs[0].score,
        evidence=ev,
        secondary=secondary,
        reason=reason,
        t=w.end,
        since=w.end,
    )
