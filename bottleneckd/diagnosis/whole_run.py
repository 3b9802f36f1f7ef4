"""The run's verdict where its time goes between the phases, though no window says so.

Periodic work between the training steps (an evaluation every N steps, a recompilation, a metric
computed on the host every step under attach's sparse stack samples) lands in a few windows, or is
reported whole in the interval where it ends; the windows between read the training step, and the
regime held longest is the compute stage's. The whole run's step time says otherwise: its "other"
stage the largest. There the rules read every training sample as one window, with the thresholds a
window's "other" stage is judged by (rules/other.py: OTHER_LARGEST and the largest stage, or
OTHER_HIGH), and where they name the other stage over the whole run, that is the run's verdict.

Found by blind traces and a held-out workload, each labelled by its author's intervention (removing
the work between the steps): a per-step metric under attach, 53% of the whole run's stack samples
outside the phases, read cpu_compute/data (the serial loader beside it held longer); Dynamo
recompiling 53% of a GPU job's step read cpu_compute/compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from bottleneckd.diagnosis.classify import classify, findings
from bottleneckd.diagnosis.held import Held
from bottleneckd.diagnosis.rules.common import pct, stage_share
from bottleneckd.diagnosis.thresholds import OTHER_LARGEST
from bottleneckd.diagnosis.verdict import Verdict
from bottleneckd.model.resources import UNDETERMINED, Phase, Stage
from bottleneckd.peaks.resolve import PeakTable

#: the note the run's verdict carries when the whole run, not a regime, named it
WHOLE_RUN = "over the whole run "


def between_the_phases(
    dominant: Verdict | None,
    whole: Held | None,
    peaks: PeakTable,
    held_other: Sequence[tuple[Verdict, float]] = (),
    min_seconds: float = 0.0,
) -> Verdict | None:
    """The whole run's verdict where its other stage limits it and the regime held longest is
    another stage's; None otherwise (the dominant stands). Where the rules name no resource over
    the whole run (its other stage's work and the training's averaged together: undetermined, or no
    finding), but the other stage is the whole run's largest, the regime that held longest in the
    other stage while training (``held_other``: each one's verdict and seconds, at least
    ``min_seconds``) is the run's; never where they name another stage over it. A straggler's verdict
    stands: its ranks' time between the phases is the wait for it."""
    if dominant is None or whole is None or dominant.stage == Stage.OTHER or dominant.straggler:
        return None
    ph = whole.stats.phases
    share = ph.share(Phase.OTHER) if ph is not None else None
    if share is None or share < OTHER_LARGEST:
        return None
    note = (
        f"{WHOLE_RUN}({whole.seconds:.0f} s of training, {whole.steps} steps): {pct(share)} of the step between "
        "the phases"
    )
    v = classify(whole.stats, peaks)
    if v.resource != UNDETERMINED:  # the rules name the whole run's limit: the other stage, or not at all
        if v.stage != Stage.OTHER:
            return None
        why = f"{note}, though the regime held longest ({regime_text(dominant)}) reads the windows between"
        return replace(v, evidence=(why, *v.evidence))
    named = v if v.stage == Stage.OTHER and any(f.stage == Stage.OTHER for f in findings(whole.stats, peaks)) else None
    # no resource named over the whole run: the windows that read the other stage may name it
    rest = (stage_share(whole.stats, s) for s in Stage if s != Stage.OTHER)
    determined = [(r, s) for r, s in held_other if r.resource != UNDETERMINED and s >= min_seconds]
    if not determined or any(r is not None and r >= share for r in rest):
        if named is None:
            return None
        why = f"{note}, though the regime held longest ({regime_text(dominant)}) reads the windows between"
        return replace(named, evidence=(why, *named.evidence))
    r, seconds = max(determined, key=lambda vs: vs[1])
    why = (
        f"{note}, the largest stage; the windows that read the other stage ({seconds:.0f} s) named "
        f"{r.resource}, those between them {regime_text(dominant)}"
    )
    return replace(r, evidence=(why, *r.evidence))


def from_whole_run(v: Verdict) -> bool:
    """``v`` is a run's verdict this module gave (its first evidence says so)."""
    return bool(v.evidence) and v.evidence[0].startswith(WHOLE_RUN)


def regime_text(v: Verdict) -> str:
    return f"{v.resource}/{v.stage}"
