"""Knowledge-base conditions over declared facts (model/facts.py): checked when the file is read
(advice/knowledge.py), evaluated when a mitigation is fitted to a job (advice/fit.py). A condition
is ``{"fact": NAME, "op": OP, "value": V}``; ``{"all": [...]}`` combines several into one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bottleneckd.model.facts import FACTS

OPS = ("truthy", "falsy", "eq", "ne", "in", ">=", "<=")


def check_condition(cond: Any, where: str) -> str | None:
    """Why a knowledge-base condition is malformed, or None."""
    if isinstance(cond, dict) and set(cond) == {"all"}:
        if not isinstance(cond["all"], list) or not cond["all"]:
            return f"{where}.all: expected a non-empty list of conditions"
        return next((w for i, c in enumerate(cond["all"]) if (w := check_condition(c, f"{where}.all[{i}]"))), None)
    if not isinstance(cond, dict) or cond.get("fact") not in FACTS:
        return f"{where}.fact: {cond.get('fact') if isinstance(cond, dict) else cond!r} is not a declared fact (model/facts.py)"
    if cond.get("op") not in OPS:
        return f"{where}.op: {cond.get('op')!r} is not one of {', '.join(OPS)}"
    if cond["op"] not in ("truthy", "falsy") and "value" not in cond:
        return f"{where}.value: missing for op {cond['op']!r}"
    return None


def facts_read(cond: Mapping[str, Any]) -> list[str]:
    """The names of the facts the condition reads."""
    return [f for c in cond["all"] for f in facts_read(c)] if "all" in cond else [cond["fact"]]


def matches(cond: Mapping[str, Any], facts: Mapping[str, Any]) -> bool:
    """True when the condition holds on known facts (an unknown fact holds nothing)."""
    if "all" in cond:
        return all(matches(c, facts) for c in cond["all"])
    if cond["fact"] not in facts:
        return False
    v, op, value = facts[cond["fact"]], cond["op"], cond.get("value")
    if op == "truthy":
        return bool(v)
    if op == "falsy":
        return not v
    if op == "eq":
        return v == value
    if op == "ne":
        return v != value
    if op == "in":
        return v in value
    try:
        return v >= value if op == ">=" else v <= value
    except TypeError:
        return False


def describe(cond: Mapping[str, Any], facts: Mapping[str, Any]) -> str:
    """The facts the condition reads, as they are (``has_conv=False``, ``input_rank unknown``)."""
    if "all" in cond:
        return " and ".join(describe(c, facts) for c in cond["all"])
    name = cond["fact"]
    return f"{name}={facts[name]!r}" if name in facts else f"{name} unknown"


def want(cond: Mapping[str, Any]) -> str:
    """What the condition asks for, in words (``has_conv``, ``input_rank eq 4``)."""
    if "all" in cond:
        return " and ".join(want(c) for c in cond["all"])
    op = cond["op"]
    return cond["fact"] if op == "truthy" else f"{cond['fact']} {op} {cond.get('value')!r}"
