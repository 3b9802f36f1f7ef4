"""The form of a knowledge-base condition, checked when data/mitigations.json is read
(advice/knowledge.py); advice/fit.py evaluates conditions on a job's facts. A condition is
``{"fact": NAME, "op": OP, "value": V, "why": SENTENCE}``; ``{"all": [...]}`` combines several."""

from __future__ import annotations

from typing import Any

from bottleneckd.model.facts import FACTS

OPS = ("truthy", "falsy", "eq", "ne", "in", "has", ">=", "<=")


def check_condition(cond: Any, where: str) -> str | None:
    """Why a knowledge-base condition is malformed, or None."""
    if isinstance(cond, dict) and "why" in cond and (not isinstance(cond["why"], str) or not cond["why"].strip()):
        return f"{where}.why: expected a sentence"
    if isinstance(cond, dict) and set(cond) - {"why"} == {"all"}:
        if not isinstance(cond["all"], list) or not cond["all"]:
            return f"{where}.all: expected a non-empty list of conditions"
        return next((w for i, c in enumerate(cond["all"]) if (w := check_condition(c, f"{where}.all[{i}]"))), None)
    if not isinstance(cond, dict) or cond.get("fact") not in FACTS:
        got = cond.get("fact") if isinstance(cond, dict) else repr(cond)
        return f"{where}.fact: {got} is not a declared fact (model/facts.py)"
    if cond.get("op") not in OPS:
        return f"{where}.op: {cond.get('op')!r} is not one of {', '.join(OPS)}"
    if cond["op"] not in ("truthy", "falsy") and "value" not in cond:
        return f"{where}.value: missing for op {cond['op']!r}"
    return None
