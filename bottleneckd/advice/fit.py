"""Whether a mitigation fits this job: already in effect (``skip_if``), or not applicable
(``requires``: every condition must hold, on facts that are known; ``unfit_if``: any condition
holding rules it out). Conditions are data in data/mitigations.json over declared facts
(model/facts.py), read by advice/conditions.py.

The machine's own facts are produced here, on the daemon side, from detection (never from
torch): ``cpu_fast_bf16`` (the CPU has amx_bf16 or avx512_bf16; without them bf16 on a CPU
measured 0.67x, issue 11) and ``gpu_count``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bottleneckd.advice.conditions import describe, matches, want
from bottleneckd.advice.knowledge import Mitigation
from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.model.facts import Facts

FAST_BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})
#: hook ids whose state is described by facts of their own (a loader setting is not "the"
#: mitigation: pinned memory may still be missing after more workers were set)
OWN_FACTS_HOOKS = frozenset({"dataloader_settings"})


def machine_facts(machine: Machine | None) -> Facts:
    """Facts about the machine the job runs on."""
    if machine is None:
        return Facts()
    out: dict[str, Any] = {"gpu_count": len(machine.gpus)}
    if machine.cpu.flags or "cpu" not in machine.unknown:
        out["cpu_fast_bf16"] = bool(FAST_BF16_FLAGS & set(machine.cpu.flags))
    return Facts(out)


def in_effect(m: Mitigation, facts: Mapping[str, Any]) -> str | None:
    """Why the mitigation is already in effect, or None."""
    if m.hook and m.hook not in OWN_FACTS_HOOKS and m.hook in (facts.get("mitigations") or ()):
        return f"applied through the hook ({m.hook})"
    return next((describe(c, facts) for c in m.skip_if if matches(c, facts)), None)


def unfit(m: Mitigation, facts: Mapping[str, Any]) -> str | None:
    """Why the mitigation does not fit this job, or None."""
    for c in m.requires:
        if not matches(c, facts):
            return f"needs {want(c)} (here {describe(c, facts)})"
    return next((f"not for {describe(c, facts)}" for c in m.unfit_if if matches(c, facts)), None)
