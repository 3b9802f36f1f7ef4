"""What ``run --tune`` found, one ``TuneOutcome`` per mitigation it considered, as the hook sends it
to the sidecar and the report shows it.

The hook sends each outcome once decided as an ``Event`` of kind ``tune_result`` (``name``: the hook
id) whose note is the outcome's compact JSON (the protocol's 256-character text: the longest,
``why``, is cut to fit), and ``tune_stopped`` (note: why it stopped trying) when it stops before
trying everything. The sidecar's report collects them (``tune_section``); a note that does not parse
as an outcome is left out, never trusted: it comes from any local process that can reach the socket.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bottleneckd.advice.code_change import code_change, documentation

RESULT, STOPPED, SUMMARY = "tune_result", "tune_stopped", "tune_summary"
#: what became of a mitigation: kept (won significantly), reverted (did not), refused (changes
#: semantics without --allow-semantics-change, or cannot be coordinated), failed (could not be
#: applied), unfinished (the job ended before the trial was decided: reverted)
STATUSES = ("kept", "reverted", "refused", "failed", "unfinished")
NOTE_MAX = 256  # model/protocol.py's MAX_TEXT
Scalar = bool | int | float | str


@dataclass(frozen=True)
class TuneOutcome:
    hook: str
    recommendation: str  # the knowledge-base entry the sidecar recommended (its id)
    status: str
    params: Mapping[str, Scalar] = field(default_factory=dict)
    #: measured: throughput with / without (the interleaved blocks' ratio), its interval and p-value
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    #: predicted (advice/predict.py) from the window before the trial
    predicted: float | None = None
    predicted_low: float | None = None
    predicted_high: float | None = None
    model: str = ""
    why: str = ""

    @property
    def code(self) -> str:
        return code_change(self.hook, self.params)

    def to_note(self) -> str:
        """Compact JSON of at most NOTE_MAX characters (``why`` shortened to fit)."""
        d: dict[str, Any] = {"r": self.recommendation, "s": self.status, "p": dict(self.params)}
        if self.ratio is not None:
            d["x"] = [
                _r(self.ratio),
                _r(self.low),
                _r(self.high),
                None if self.p_value is None else float(f"{self.p_value:.3g}"),
            ]
        if self.predicted is not None:
            d["e"] = [_r(self.predicted), _r(self.predicted_low), _r(self.predicted_high), self.model[:24]]
        d["w"] = ""
        room = NOTE_MAX - len(json.dumps(d, separators=(",", ":")))
        d["w"] = _fit(self.why, room)
        return json.dumps(d, separators=(",", ":"))

    @staticmethod
    def from_event(name: str, note: str) -> TuneOutcome | None:
        """The outcome an event carried, or None when its note is not one."""
        try:
            d = json.loads(note)
            x = d.get("x") or [None] * 4
            e = d.get("e") or [None, None, None, ""]
            params = {str(k): v for k, v in dict(d.get("p") or {}).items() if isinstance(v, (bool, int, float, str))}
            out = TuneOutcome(
                hook=str(name),
                recommendation=str(d["r"]),
                status=str(d["s"]),
                params=params,
                ratio=_num(x[0]),
                low=_num(x[1]),
                high=_num(x[2]),
                p_value=_num(x[3]),
                predicted=_num(e[0]),
                predicted_low=_num(e[1]),
                predicted_high=_num(e[2]),
                model=str(e[3] or ""),
                why=str(d.get("w", "")),
            )
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return None
        return out if out.status in STATUSES else None

    def to_json(self) -> dict[str, Any]:
        return {
            "hook": self.hook,
            "recommendation": self.recommendation,
            "status": self.status,
            "params": dict(self.params),
            "code": self.code if self.status == "kept" else None,
            "documentation": documentation(self.hook),
            "measured": None
            if self.ratio is None
            else {"speedup": self.ratio, "ci": [self.low, self.high], "p_value": self.p_value},
            "predicted": None
            if self.predicted is None
            else {
                "speedup": self.predicted,
                "low": self.predicted_low,
                "high": self.predicted_high,
                "model": self.model,
            },
            "why": self.why,
        }

    @staticmethod
    def from_json(o: Mapping[str, Any]) -> TuneOutcome | None:
        """An outcome from its report JSON (``to_json``), or None."""
        try:
            m, p = o.get("measured") or {}, o.get("predicted") or {}
            ci = m.get("ci") or [None, None]
            return TuneOutcome(
                hook=str(o["hook"]),
                recommendation=str(o["recommendation"]),
                status=str(o["status"]),
                params=dict(o.get("params") or {}),
                ratio=m.get("speedup"),
                low=ci[0],
                high=ci[1],
                p_value=m.get("p_value"),
                predicted=p.get("speedup"),
                predicted_low=p.get("low"),
                predicted_high=p.get("high"),
                model=str(p.get("model", "")),
                why=str(o.get("why", "")),
            )
        except (KeyError, TypeError, AttributeError, IndexError):
            return None

    def line(self) -> str:
        """One line: what it was, what became of it, measured beside predicted."""
        what = f"{self.hook} ({self.recommendation})"
        if self.params:
            what += " " + ", ".join(f"{k}={v}" for k, v in self.params.items())
        got = (
            f"measured x{self.ratio:.2f} (x{self.low:.2f} to x{self.high:.2f}, p={self.p_value:.3g})"
            if self.ratio is not None and self.low is not None and self.high is not None and self.p_value is not None
            else "not measured"
        )
        pred = (
            f"predicted x{self.predicted:.2f} (x{self.predicted_low:.2f} to x{self.predicted_high:.2f}, {self.model})"
            if self.predicted is not None and self.predicted_low is not None and self.predicted_high is not None
            else "no prediction"
        )
        return f"{self.status}: {what}: {got}; {pred}" + (f"; {self.why}" if self.why else "")


def tune_section(events: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The report's ``tune`` section from the job's events (JSON form), or None without any: each
    mitigation's last outcome, what to change in the code (the kept ones), and why it stopped."""
    outcomes: dict[str, TuneOutcome] = {}
    stopped: list[str] = []
    step_ms: dict[str, float] | None = None
    for e in events:
        if e.get("kind") == SUMMARY:
            step_ms = step_times(str(e.get("note", "")))
        if e.get("kind") == RESULT:
            o = TuneOutcome.from_event(str(e.get("name", "")), str(e.get("note", "")))
            if o is not None:
                outcomes[f"{o.hook}:{o.recommendation}:{sorted(o.params.items())}"] = o
        elif e.get("kind") == STOPPED:
            stopped.append(str(e.get("note", "")))
    if not outcomes and not stopped:
        return None
    return {
        "outcomes": [o.to_json() for o in outcomes.values()],
        "change_in_code": changes(list(outcomes.values())),
        "stopped": stopped[-1] if stopped else None,
        # the mean step time before the first trial and over the last steps: not an A/B (the load moves)
        "step_ms": step_ms,
    }


def summary_note(before_ms: float | None, after_ms: float | None) -> str:
    return json.dumps({"before": _r(before_ms, 3), "after": _r(after_ms, 3)})


def step_times(note: str) -> dict[str, float] | None:
    try:
        d = json.loads(note)
        out = {k: float(d[k]) for k in ("before", "after") if _num(d.get(k)) is not None}
    except (ValueError, TypeError, AttributeError):
        return None
    return out if len(out) == 2 else None


def changes(outcomes: list[TuneOutcome]) -> list[dict[str, Any]]:
    """What to change in the code: per hook, the last setting kept (a later trial of the same hook
    started from the one before it), with the measured speed-up of each step that led there (each
    over the setting before it)."""
    by_hook: dict[str, list[TuneOutcome]] = {}
    for o in outcomes:
        if o.status == "kept" and o.ratio is not None:
            by_hook.setdefault(o.hook, []).append(o)
    return [{"hook": h, "code": kept[-1].code, "steps": [o.ratio for o in kept]} for h, kept in by_hook.items()]


def render_tune(section: Mapping[str, Any] | None) -> list[str]:
    """The text report's lines for the ``tune`` section."""
    if not section:
        return []
    lines = ["tuned (run --tune: each mitigation applied in the running job, interleaved A/B, kept only if faster):"]
    for o in section.get("outcomes", []):
        t = TuneOutcome.from_json(o)
        if t is not None:
            lines.append(f"  {t.line()}")
    todo = section.get("change_in_code") or []
    if todo:
        lines.append("  change in the code to keep these gains without the hook:")
        lines += [f"    {change_line(c)}" for c in todo]
    else:
        lines.append("  nothing to change: no mitigation was proved faster; the job runs as it started")
    ms = section.get("step_ms")
    if ms:
        lines.append(
            f"  step time {ms['before']:.1f} ms before the first trial, {ms['after']:.1f} ms at the end "
            "(not an A/B: the machine's load may have moved between them)"
        )
    if section.get("stopped"):
        lines.append(f"  stopped trying: {section['stopped']}")
    return lines


def change_line(c: Mapping[str, Any]) -> str:
    steps = [x for x in c.get("steps") or [] if isinstance(x, (int, float))]
    how = " then ".join(f"x{x:.2f}" for x in steps)
    each = ", each over the setting before" if len(steps) > 1 else ""
    return f"{c['code']}  (measured {how}{each})"


def _r(v: float | None, digits: int = 4) -> float | None:
    return None if v is None else round(float(v), digits)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _fit(text: str, room: int) -> str:
    """``text`` JSON-encoded in at most ``room`` characters (cut with an ellipsis)."""
    if room <= 2:
        return ""
    while len(json.dumps(text)) > room:
        text = text[: max(0, len(text) - max(1, len(json.dumps(text)) - room) - 1)] + "…"
        if len(text) <= 1:
            return ""
    return text


def tune_report(events: Iterable[dict[str, Any]], allow_semantics: bool) -> dict[str, Any]:
    """The report's ``tune`` section of a ``run --tune`` (``tune_section`` of the hook's events), or
    why it has none."""
    section = tune_section(events) or {
        "outcomes": [],
        "change_in_code": [],
        "stopped": "the hook reported no tuning: the job ended before its first timed steps, or never imported torch",
    }
    return {**section, "allow_semantics_change": allow_semantics}
