"""Two groups of runs, A (the baseline) and B: the speed-up of B and the quality it kept, stated
as the paper's Definition 1 pair (epsilon, delta): B reaches A's quality within epsilon, at a
speed-up of at least delta (a one-sided lower bound at the stated alpha)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bottleneckd.compare.runs import Run
from bottleneckd.compare.stats import compare_durations, olympic
from bottleneckd.model.errors import InputError


def compare_groups(
    a: Sequence[Run],
    b: Sequence[Run],
    metric: str | None = None,
    target: float | None = None,
    minimize: bool = False,
    alpha: float = 0.05,
) -> dict[str, Any]:
    if (metric is None) != (target is None):
        raise InputError(
            "--metric and --target go together: the metric to read from each run's log"
            " and the value that counts as reached"
        )
    doc: dict[str, Any] = {
        "alpha": alpha,
        "metric": metric,
        "target": target,
        "minimize": minimize,
        "runs": {"a": [r.name for r in a], "b": [r.name for r in b]},
    }
    if metric is None:
        doc["measure"] = "seconds per training step (the hook's step walls over the run)"
        da, db = (
            _durations(a, lambda r: r.seconds_per_step, "no training steps in it"),
            _durations(b, lambda r: r.seconds_per_step, "no training steps in it"),
        )
        doc["durations"] = {"a": da, "b": db}
        doc["epsilon"] = None
        doc["epsilon_why"] = "quality not compared: name each run's quality log (RUN,LOG) and --metric/--target"
    else:
        assert target is not None
        doc["measure"] = f"seconds until {metric} {'<=' if minimize else '>='} {target:g}"
        for runs in (a, b):
            missing = [r.name for r in runs if not r.quality]
            if missing:
                raise InputError(f"{missing[0]}: no quality log for --metric {metric}; give the run as PATH,LOG")
        never = {
            side: [r.name for r in runs if r.time_to_target(target, minimize) is None]
            for side, runs in (("a", a), ("b", b))
        }
        doc["did_not_reach_target"] = never
        da = [_timed(r, t) for r in a if (t := r.time_to_target(target, minimize)) is not None]
        db = [_timed(r, t) for r in b if (t := r.time_to_target(target, minimize)) is not None]
        doc["durations"] = {"a": da, "b": db}
        qa, qb = (
            olympic([q for r in a if (q := r.final_quality(minimize)) is not None]),
            olympic([q for r in b if (q := r.final_quality(minimize)) is not None]),
        )
        loss = (qb.mean - qa.mean) if minimize else (qa.mean - qb.mean)
        doc["quality"] = {"a": qa.to_json(), "b": qb.to_json()}
        doc["epsilon"] = max(0.0, loss)
        doc["epsilon_why"] = f"olympic mean of each run's best {metric}: A {qa.mean:.6g}, B {qb.mean:.6g}" + (
            "; B is as good or better" if loss <= 0 else f"; B is worse by {loss:.6g}"
        )
        if not da or not db:
            side = "A" if not da else "B"
            doc["comparison"] = None
            doc["verdict"] = f"no speed-up: no run of {side} reached {metric} {'<=' if minimize else '>='} {target:g}"
            return doc
    c = compare_durations(doc["durations"]["a"], doc["durations"]["b"], alpha)
    doc["comparison"] = c.to_json()
    doc["delta"] = c.at_least
    doc["verdict"] = c.verdict
    return doc


def _timed(r: Run, t: float) -> float:
    """A time to target, which must be after the run's start: 0 s is what a log of one row, or a
    log whose first row already reaches the target with no trace to give the start, measures."""
    if not t > 0:
        raise InputError(
            f"{r.name}: reaches the target at {t:g} s, the run's start: nothing to time (the log's first row "
            "already reaches it); give the run as TRACE,LOG so its start is known, or a log from the start"
        )
    return t


def _durations(runs: Sequence[Run], get: Any, why: str) -> list[float]:
    out = []
    for r in runs:
        v = get(r)
        if v is None:
            raise InputError(f"{r.name}: {why}; compare needs steps from the torch hook (bottleneckd run or watch())")
        out.append(v)
    return out


def render_text(doc: dict[str, Any]) -> str:
    lines = [f"comparing B ({len(doc['runs']['b'])} runs) against A ({len(doc['runs']['a'])} runs): {doc['measure']}"]
    for side in ("a", "b"):
        vals = ", ".join(f"{x:.4g}" for x in doc["durations"][side])
        lines.append(f"  {side.upper()}: {vals or 'none'}")
    for side, names in (doc.get("did_not_reach_target") or {}).items():
        if names:
            lines.append(f"  {side.upper()} runs that never reached the target: {', '.join(names)}")
    c = doc.get("comparison")
    if c is None:
        lines.append(doc["verdict"])
    else:
        a, b = c["a"], c["b"]
        trim = lambda s: f" (olympic: fastest and slowest of {s['n'] + s['dropped']} dropped)" if s["dropped"] else ""  # noqa: E731
        lines.append(f"  mean A {a['mean']:.4g}{trim(a)}, mean B {b['mean']:.4g}{trim(b)}")
        lines.append(
            f"speed-up of B over A: x{c['speedup']:.3f}"
            + (f" ({1 - c['alpha']:.0%} CI x{c['ci'][0]:.3f} to x{c['ci'][1]:.3f})" if c["ci"] else "")
        )
        lines.append(f"  {c['verdict']}: {c['why']}")
        if c["at_least"] is not None:
            lines.append(
                f"(epsilon, delta): delta = x{c['at_least']:.3f}"
                f" (speed-up of at least this, one-sided, alpha {c['alpha']})"
                + (f", epsilon = {doc['epsilon']:.6g}" if doc.get("epsilon") is not None else ", epsilon unknown")
            )
    lines.append(f"  quality: {doc['epsilon_why']}")
    return "\n".join(lines)
