"""Reports: terminal text, JSON (schema bottleneckd.report/1, see docs/report-schema.md), Markdown.

``build_report`` only formats: the verdicts, their advice (advice/stage.py, advised once) and the
run's accounts come from ``runtime/run.py``'s ``Run.report``, the one caller that puts a report
together.
"""

from __future__ import annotations

import time
from typing import Any

from bottleneckd.advice.stage import Advice, Snapshot
from bottleneckd.advice.tune import render_tune
from bottleneckd.diagnosis.pipeline import Summary
from bottleneckd.model.resources import UNDETERMINED, Stage
from bottleneckd.model.sample import StepPhases
from bottleneckd.model.throughput import Throughput

SCHEMA = "bottleneckd.report/1"


def build_report(
    snap: Snapshot | None,
    *,
    current: bool = False,
    summary: Summary | None = None,
    totals: StepPhases | None = None,
    run_seconds: float = 0.0,
    throughput: dict[str, Any] | None = None,
    energy: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The report on the run's dominant verdict (``summary``: over the whole time it held, its
    last window as a note), or with ``current`` on the latest verdict and window (what the hook's
    epoch-end block shows). ``totals``: the whole run's step phases, in place of the window's."""
    v = None if snap is None else snap.verdict if current else snap.dominant
    doc: dict[str, Any] = {"schema": SCHEMA, "created": time.time(), "samples": snap.samples if snap else 0}
    if v is None or snap is None:
        doc["verdict"] = {
            "resource": UNDETERMINED,
            "stage": Stage.OTHER,
            "confidence": 0.0,
            "evidence": [],
            "headroom": None,
            "reason": "no samples",
        }
        doc["recommendations"] = []
        return {**doc, **(extra or {})}
    advice: Advice = snap.advice if current else snap.dominant_advice
    inputs = snap.inputs if current else snap.dominant_inputs
    w = snap.stats
    if current:
        doc["period"] = {
            "covers": "window",
            "seconds": round(w.end - w.start + snap.sample.interval, 3),
            "samples": w.samples,
        }
    else:
        doc["period"] = {"covers": "run", "seconds": round(run_seconds, 3), "samples": snap.samples}
    doc["verdict"] = (summary.verdict if summary else v).to_json()
    if summary is not None:
        doc["verdict"]["held"] = {
            "seconds": round(summary.seconds, 3),
            "samples": summary.samples,
            "steps": summary.steps,
            "ranks": summary.ranks,
            "whole_run": summary.whole_run,
        }
        doc["verdict"]["last_window"] = {
            "t": summary.last.t,
            "evidence": list(summary.last.evidence),
            "headroom": summary.last.headroom,
        }
    doc["held_seconds"] = {k: round(s, 3) for k, s in snap.held}
    doc["recommendations"] = [r.to_json() for r in advice.recommendations]
    doc["already_in_effect"] = [{"id": m.id, "because": why} for m, why in advice.in_effect]
    doc["not_fitting"] = [{"id": m.id, "because": why, "kind": "condition"} for m, why in advice.not_fitting] + [
        {"id": m.id, "because": why, "kind": "stage"} for m, why in advice.elsewhere
    ]
    doc["regime_changes"] = [
        {
            "t": c.t,
            "before": c.before,
            "after": c.after,
            "label": c.label,
            "before_stage": c.before_stage,
            "after_stage": c.after_stage,
        }
        for c in snap.changes
    ]
    doc["utilization"] = [
        {"resource": r, "device": d, "mean": round(s.mean, 4), "p95": round(s.p95, 4)}
        for (r, d, m), s in sorted(w.stats.items())
        if m == "utilization"
    ]
    whole = step_phases_json(totals) if totals is not None and totals.steps else None
    if whole is not None:
        doc["step_phases"] = {**whole, "over": "the whole run"}
    else:
        doc["step_phases"] = step_phases_json(w.phases)
    doc["facts"] = snap.facts.to_json()
    doc["whatif_inputs"] = None if inputs is None else inputs.to_json()  # what the predictions were made from
    if throughput is not None:  # the run's (the end report)
        doc["throughput"] = throughput
    elif snap.throughput is not None:  # the window's
        doc["throughput"] = snap.throughput.to_json()
    if energy is not None:
        doc["energy"] = energy
    return {**doc, **(extra or {})}


def step_phases_json(ph: StepPhases | None) -> dict[str, Any] | None:
    """Steps and each phase's share of their wall time."""
    if ph is None:
        return None
    return {
        # attach counts stack samples, not steps: the key says which (docs/report-schema.md)
        ("stack_samples" if ph.sampled else "steps"): ph.steps,
        "share": {k: round(x / ph.wall_seconds, 4) for k, x in ph.phases.items()} if ph.wall_seconds else {},
    }


def period_text(doc: dict[str, Any]) -> str:
    """The time the verdict and its evidence cover: the last window (the epoch block's live
    verdict) or the whole run, and within it the time this verdict held while training."""
    p = doc.get("period")
    if not p:
        return ""
    if p["covers"] == "window":
        return f"the last {p['seconds']:.0f} s (the diagnosis window: {p['samples']} samples)"
    held = doc["verdict"].get("held")
    run = f"a {p['seconds']:.0f} s run ({p['samples']} samples)"
    if not held:
        return f"{run}; the evidence is from the verdict's last window"
    ranks = held.get("ranks") or 1
    about = "" if held["steps"] % ranks == 0 else "about "
    each = f"{about}{held['steps'] // ranks} steps on each of {ranks} ranks"
    steps = f"{held['steps']} steps" if ranks <= 1 else each
    if held.get("whole_run"):
        return f"all {held['seconds']:.0f} s of training ({steps}) as one window, of {run}"
    return f"the {held['seconds']:.0f} s this verdict held while training ({steps}), of {run}"


def last_window_text(doc: dict[str, Any]) -> str:
    """The verdict's last window, when its evidence differs from the whole time's (a note)."""
    last = doc["verdict"].get("last_window")
    if not last or not last["evidence"] or list(last["evidence"][:1]) == list(doc["verdict"].get("evidence", [])[:1]):
        return ""
    return f"{last['evidence'][0]} (at {time.strftime('%H:%M:%S', time.localtime(last['t']))})"


def _headroom_text(h: float | None, doc: dict[str, Any] | None = None) -> str:
    if h is not None:
        return f"a step could be up to {h:.2f}x faster if this stopped limiting it"
    if doc and doc.get("step_phases"):
        return (
            "no removable stage: the step is this work itself; only the mitigations below (less of it, or more of "
            "the machine for it) make it faster"
        )
    return "unknown (needs step phases from the torch hook)"


def render_text(doc: dict[str, Any], top: int = 5) -> str:
    """The terminal text of a report (``Run.report``'s document): the verdict with its evidence,
    the ``top`` recommendations, throughput and energy, lines joined by newlines."""
    v = doc["verdict"]
    lines = []
    if v["resource"] == UNDETERMINED:
        lines.append(f"bottleneck: undetermined — {v.get('reason', '')}")
    else:
        lines.append(f"bottleneck: {v['resource']} (stage: {v['stage']}, confidence {v['confidence']:.0%})")
    over = period_text(doc)
    if over:
        lines.append(f"  over: {over}")
    for e in v.get("evidence", []):
        lines.append(f"  evidence: {e}")
    if v["resource"] != UNDETERMINED:
        lines.append(f"  headroom: {_headroom_text(v.get('headroom'), doc)}")
    last = last_window_text(doc)
    if last:
        lines.append(f"  last window: {last}")
    if v.get("secondary"):
        lines.append(
            "  secondary pressures: " + ", ".join(f"{s['resource']} ({s['score']:.2f})" for s in v["secondary"])
        )
    for c in doc.get("regime_changes", []):
        lines.append(
            f"  regime change at {time.strftime('%H:%M:%S', time.localtime(c['t']))}: "
            f"{c['before']}/{c.get('before_stage', '')} -> {c['after']}/{c.get('after_stage', '')} ({c['label']})"
        )
    recs = doc.get("recommendations", [])[:top]
    if recs:
        beyond = any(r.get("sources") for r in recs)
        lines.append(
            "recommendations (Bartoldson, Kailkhura and Blalock, JMLR 2023"
            + ("; beyond its section 6.1, the sources named" if beyond else "")
            + "):"
        )
        for k, r in enumerate(recs, 1):
            sem = " [changes training semantics: check quality, section 5]" if r["changes_semantics"] else ""
            hook = f" [bottleneckd.torch can apply: {r['hook']}]" if r["hook"] else ""
            cites = "; ".join(r["cites"]) or next(iter(r.get("sources") or ()), "") or f"section {r['section']}"
            lines.append(f"  {k}. {r['name']}{sem}{hook}")
            lines.append(f"     {r['taxonomy_path']}: {cites}; {r['why']}")
            if r.get("prediction"):
                lines.append(f"     {prediction_text(r['prediction'])}")
    for s in doc.get("already_in_effect", []):
        lines.append(f"  skipped {s['id']}: already in effect ({s['because']})")
    for s in doc.get("not_fitting", []):
        if s.get("kind") != "stage":  # those that relieve the resource in another stage: in the JSON
            lines.append(f"  not fitting {s['id']}: {s['because']}")
    lines += render_tune(doc.get("tune"))  # run --tune: what was tried, kept, and what to change in the code
    note = (doc.get("instrumentation") or {}).get("note")
    if note:
        lines.append(f"instrumentation: {note}")
    t = doc.get("throughput")
    if t and t.get("steps") and "samples_per_second" in t:  # model/throughput.py's figures
        lines.append(Throughput.from_json(t).text())
    e = doc.get("energy")
    if e:  # outputs/energy.py's account
        per = (
            f"{e['joules_per_step']:.3g} J per step"
            + (f", {e['joules_per_example']:.3g} J per example" if e.get("joules_per_example") is not None else "")
            if e.get("joules_per_step") is not None
            else f"unknown ({e.get('joules_per_step_unknown', '')})"
        )
        lines.append(
            f"energy: {per}" + (f"; {e['carbon_grams']:.3g} g CO2" if e.get("carbon_grams") is not None else "")
        )
    return "\n".join(lines)


def prediction_text(d: dict[str, Any] | None, short: bool = False) -> str:
    """A recommendation's predicted speed-up (advice/predict.py), from its JSON."""
    if not d:
        return "predicted speed-up: not computed"
    if d.get("speedup") is None:
        return "predicted speed-up unknown" + ("" if short else f": {d.get('formula', '')}")
    head = f"predicted x{d['speedup']:.2f} (x{d['low']:.2f} to x{d['high']:.2f})"
    return head if short else f"{head} by {d['model']}: {d['formula']}"


def render_markdown(doc: dict[str, Any]) -> str:
    """The same report as Markdown (a CI job summary, a pull-request comment)."""
    v = doc["verdict"]
    out = [
        f"### Bottleneck: `{v['resource']}`"
        + (f" (stage `{v['stage']}`, confidence {v['confidence']:.0%})" if v["resource"] != UNDETERMINED else "")
    ]
    if v.get("reason"):
        out.append(f"_{v['reason']}_")
    out.append("")
    if period_text(doc):
        out.append(f"- Over: {period_text(doc)}")
    out += [f"- {e}" for e in v.get("evidence", [])]
    if v["resource"] != UNDETERMINED:
        out.append(f"- Headroom: {_headroom_text(v.get('headroom'), doc)}")
    if last_window_text(doc):
        out.append(f"- Last window: {last_window_text(doc)}")
    if doc.get("recommendations"):
        out += [
            "",
            "| # | mitigation | predicted | taxonomy | cites | changes semantics | hook |",
            "|---|---|---|---|---|---|---|",
        ]
        for k, r in enumerate(doc["recommendations"], 1):
            out.append(
                f"| {k} | {r['name']} | {prediction_text(r.get('prediction'), short=True)} | {r['taxonomy_path']} | "
                f"{'; '.join(r['cites']) or 'section ' + r['section']} | "
                f"{'yes' if r['changes_semantics'] else 'no'} | {r['hook'] or '-'} |"
            )
    if doc.get("utilization"):
        out += ["", "| resource | device | mean utilization | p95 |", "|---|---|---|---|"]
        out += [f"| {u['resource']} | {u['device']} | {u['mean']:.0%} | {u['p95']:.0%} |" for u in doc["utilization"]]
    return "\n".join(out) + "\n"
