"""The knowledge base of mitigations (data/mitigations.json), validated on load."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any

from bottleneckd.advice.conditions import check_condition
from bottleneckd.model.errors import InputError
from bottleneckd.model.files import read_json_file
from bottleneckd.model.resources import RESOURCES, STAGES

COMPONENTS = {
    "function": {"architecture", "model_parameters"},
    "data": {"training_data", "derived_data"},
    "optimization": {"training_objective", "training_algorithm"},
}
ACTIONS = frozenset({"remove", "restrict", "reorder", "replace", "retrofit"})
SCHEMA = "bottleneckd.mitigations/1"


@dataclass(frozen=True)
class Mitigation:
    id: str
    name: str
    resources: tuple[str, ...]
    component: str
    subcomponent: str
    action: str
    timing: str  # static | dynamic
    basis: str  # domain_knowledge | learning
    effect: str  # time_per_iteration | iterations | both
    changes_semantics: bool
    section: str
    cites: tuple[str, ...]
    hook: str | None
    strength: float
    cost: str
    skip_if: tuple[dict[str, Any], ...]
    description: str
    baseline: bool
    stages: tuple[str, ...] = ()
    #: conditions on facts (advice/fit.py): every one must hold for it to fit the job
    requires: tuple[dict[str, Any], ...] = ()
    #: it does not fit the job when any holds
    unfit_if: tuple[dict[str, Any], ...] = ()

    @property
    def taxonomy_path(self) -> str:
        return f"{self.action} -> {self.subcomponent.replace('_', ' ')} ({self.component}; {self.timing}, {self.basis.replace('_', ' ')})"

    @property
    def citation(self) -> str:
        return "; ".join(self.cites) or f"Bartoldson et al. (2023), section {self.section}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "resources": list(self.resources),
            "component": self.component,
            "subcomponent": self.subcomponent,
            "action": self.action,
            "mechanism": {"timing": self.timing, "basis": self.basis},
            "effect": self.effect,
            "changes_semantics": self.changes_semantics,
            "section": self.section,
            "cites": list(self.cites),
            "hook": self.hook,
            "stages": list(self.stages),
            "cost": self.cost,
            "baseline": self.baseline,
            "taxonomy_path": self.taxonomy_path,
            "description": self.description,
        }


def load_knowledge(path: str | Path | None = None) -> tuple[Mitigation, ...]:
    p = Path(path) if path else Path(str(importlib_resources.files("bottleneckd") / "data" / "mitigations.json"))
    doc = read_json_file(str(p), "knowledge base", "fix the file or reinstall bottleneckd")
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(f"{p}: schema: expected {SCHEMA!r}")
    out = []
    for i, m in enumerate(doc.get("mitigations", [])):
        where = f"{p}: mitigations[{i}]"
        bad = [r for r in m.get("resources", []) if r not in RESOURCES]
        if bad or not m.get("resources"):
            raise InputError(f"{where}.resources: unknown or missing resource ids {bad}; use: {', '.join(RESOURCES)}")
        if m.get("component") not in COMPONENTS or m.get("subcomponent") not in COMPONENTS[m["component"]]:
            raise InputError(
                f"{where}.component/subcomponent: {m.get('component')}/{m.get('subcomponent')} is not in the taxonomy"
            )
        if m.get("action") not in ACTIONS:
            raise InputError(f"{where}.action: {m.get('action')!r} is not one of {sorted(ACTIONS)}")
        mech = m.get("mechanism", {})
        if mech.get("timing") not in ("static", "dynamic") or mech.get("basis") not in ("domain_knowledge", "learning"):
            raise InputError(f"{where}.mechanism: expected timing static|dynamic and basis domain_knowledge|learning")
        bad_stages = [x for x in m.get("stages", []) if x not in STAGES]
        if bad_stages or not m.get("stages"):
            raise InputError(f"{where}.stages: unknown or missing stages {bad_stages}; use: {', '.join(STAGES)}")
        for key in ("skip_if", "requires", "unfit_if"):
            conds = m.get(key, [])
            if not isinstance(conds, list):
                raise InputError(f"{where}.{key}: expected a list of conditions")
            bad_cond = next((w for j, c in enumerate(conds) if (w := check_condition(c, f"{where}.{key}[{j}]"))), None)
            if bad_cond:
                raise InputError(bad_cond)
        out.append(
            Mitigation(
                id=m["id"],
                name=m["name"],
                resources=tuple(m["resources"]),
                component=m["component"],
                subcomponent=m["subcomponent"],
                action=m["action"],
                timing=mech["timing"],
                basis=mech["basis"],
                effect=m["effect"],
                changes_semantics=bool(m["changes_semantics"]),
                section=m["section"],
                cites=tuple(f"{c['authors']}, {c['year']}" for c in m.get("cites", [])),
                hook=m.get("hook"),
                strength=float(m.get("expected_strength", 0.5)),
                cost=m.get("cost", "medium"),
                skip_if=tuple(m.get("skip_if", [])),
                description=m.get("description", ""),
                baseline=bool(m.get("baseline", False)),
                stages=tuple(m.get("stages", ())),
                requires=tuple(m.get("requires", [])),
                unfit_if=tuple(m.get("unfit_if", [])),
            )
        )
    return tuple(out)
