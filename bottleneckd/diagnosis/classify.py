"""Combine the rules' findings into one verdict for a window."""

from __future__ import annotations

from bottleneckd.diagnosis.rules import RULES
from bottleneckd.diagnosis.verdict import Finding, Verdict
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import UNDETERMINED
from bottleneckd.peaks.resolve import PeakTable

ACTIVE = 0.5  # a finding below this score is a secondary pressure at most
SECONDARY = 0.3


def findings(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    out: list[Finding] = []
    for rule in RULES:
        out += rule(w, peaks)
    best: dict[str, Finding] = {}
    for f in out:  # one finding per resource: the strongest
        if f.resource not in best or f.score > best[f.resource].score:
            best[f.resource] = f
    return sorted(best.values(), key=lambda f: -f.score)


def _largest_utilization(w: WindowStats) -> tuple[str, str, float] | None:
    best = None
    for (r, d, m), s in w.stats.items():
        if (
            m == "utilization"
            and r not in ("cpu_memory", "storage_capacity", "gpu_memory")
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
        top = fs[0]
        return Verdict(UNDETERMINED, top.stage, 0.0, top.evidence, secondary, None, top.evidence[-1], w.end, w.end)
    fs = [f for f in fs if f.resource != UNDETERMINED]
    if fs and fs[0].score >= ACTIVE:
        top = fs[0]
        margin = top.score - (fs[1].score if len(fs) > 1 else 0.0)
        confidence = max(0.0, min(1.0, top.score * (0.6 + 0.4 * min(1.0, margin / 0.3))))
        why = ""
        if top.headroom is not None:
            why = f"headroom: step time without the {top.stage} stage's share (Figure 15's vertical line)"
        return Verdict(
            top.resource, top.stage, confidence, top.evidence, secondary, top.headroom, why, w.end, w.end, top.figures
        )
    steps = w.phases.steps if w.phases else 0
    largest = _largest_utilization(w)
    lu = (
        f"largest utilization {largest[0]} {largest[1]} at {largest[2] * 100:.0f}% of peak"
        if largest
        else "no utilization known"
    )
    if steps == 0 and (largest is None or largest[2] < 0.1):
        reason = f"idle: no training steps reported and no resource above 10% ({lu})"
        stage = "other"
    elif fs:
        reason = f"balanced: no resource clearly limits the step (strongest: {fs[0].resource} at score {fs[0].score:.2f}; {lu})"
        stage = fs[0].stage
    else:
        reason = f"balanced: no rule fired ({lu})"
        stage = "other"
    ev = tuple(e for f in fs[:2] for e in f.evidence) or (lu,)
    return Verdict(UNDETERMINED, stage, 0.0 if not fs else 1.0 - fs[0].score, ev, secondary, None, reason, w.end, w.end)
