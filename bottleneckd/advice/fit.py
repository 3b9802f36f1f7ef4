"""Whether a mitigation fits this job: already in effect (``skip_if``), or not applicable
(``requires``: every condition must hold, on facts that are known; ``unfit_if``: any condition
holding rules it out), and whether it comes first (``first_if``: any condition holding).
Conditions are data in data/mitigations.json over declared facts
(model/facts.py); ``{"all": [...]}`` combines several into one; ``"why"`` says in words what a
condition means (a knowledge base's caveat: "only helps while idle cores remain"), shown with the
measured values.

The machine's own facts are produced here, on the daemon side, from detection (never from
torch): ``cpu_fast_bf16`` (the CPU has amx_bf16 or avx512_bf16; without them bf16 on a CPU
measured 0.67x, issue 11) and ``gpu_count``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bottleneckd.advice.knowledge import Mitigation
from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.model.facts import Facts

FAST_BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})


def machine_facts(machine: Machine | None) -> Facts:
    """Facts about the machine the job runs on."""
    if machine is None:
        return Facts()
    out: dict[str, Any] = {"gpu_count": len(machine.gpus)}
    if machine.cpu.flags or "cpu" not in machine.unknown:
        out["cpu_fast_bf16"] = bool(FAST_BF16_FLAGS & set(machine.cpu.flags))
    return Facts(out)


def facts_read(cond: Mapping[str, Any]) -> list[str]:
    return [f for c in cond["all"] for f in facts_read(c)] if "all" in cond else [cond["fact"]]


def matches(cond: Mapping[str, Any], facts: Mapping[str, Any]) -> bool:
    """True when the condition holds on known facts (an unknown fact holds nothing)."""
    if "all" in cond:
        return all(matches(c, facts) for c in cond["all"])
    if cond["fact"] not in facts:
        return False
    v, op, want = facts[cond["fact"]], cond["op"], cond.get("value")
    if op == "truthy":
        return bool(v)
    if op == "falsy":
        return not v
    if op == "eq":
        return bool(v == want)
    if op == "ne":
        return bool(v != want)
    if op == "in":  # one of a list (data/mitigations.json's are lists of strings): anything else holds nothing
        return isinstance(want, (list, tuple)) and v in want
    if op == "has":  # a list fact holds the value
        return isinstance(v, tuple) and want in v
    try:
        return bool(v >= want if op == ">=" else v <= want)
    except TypeError:
        return False


def describe(cond: Mapping[str, Any], facts: Mapping[str, Any]) -> str:
    if "all" in cond:
        return " and ".join(describe(c, facts) for c in cond["all"])
    name = cond["fact"]
    if name not in facts:
        return f"{name} unknown"
    v = facts[name]
    if cond["op"] == "has":
        return (
            f"applied through the hook ({cond['value']})" if name == "mitigations" else f"{name} has {cond['value']!r}"
        )
    return f"{name}={v:.2f}" if isinstance(v, float) else f"{name}={v!r}"


def in_effect(m: Mitigation, facts: Mapping[str, Any]) -> str | None:
    """Why the mitigation is already in effect, or None."""
    if m.hook and not m.hook.in_effect_from_facts and m.hook.id in (facts.get("mitigations") or ()):
        return f"applied through the hook ({m.hook.id})"
    return next((describe(c, facts) for c in m.skip_if if matches(c, facts)), None)


def unfit(m: Mitigation, facts: Mapping[str, Any]) -> str | None:
    """Why the mitigation does not fit this job, or None."""
    for c in m.requires:
        if not matches(c, facts):
            return f"{c.get('why') or 'needs ' + _want(c)} (here {describe(c, facts)})"
    for c in m.unfit_if:
        if matches(c, facts):
            return f"{c['why']} (here {describe(c, facts)})" if "why" in c else f"not for {describe(c, facts)}"
    return None


def first(m: Mitigation, facts: Mapping[str, Any]) -> str | None:
    """Why the mitigation comes first for this job (its ``first_if``), or None."""
    c = next((c for c in m.first_if if matches(c, facts)), None)
    return None if c is None else f"{c['why']} (here {describe(c, facts)})"


def _want(cond: Mapping[str, Any]) -> str:
    if "all" in cond:
        return " and ".join(_want(c) for c in cond["all"])
    op = cond["op"]
    return cond["fact"] if op == "truthy" else f"{cond['fact']} {op} {cond.get('value')!r}"
