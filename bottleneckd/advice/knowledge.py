"""The knowledge base of mitigations (data/mitigations.json), validated on load.

A :class:`Mitigation` is an entry: what the paper (or the source it names) says to do, mapped to
its taxonomy. Its ``hook``, where ``bottleneckd.torch`` can apply it, is a declared
:class:`~bottleneckd.model.hooks.Hook` (the same object the applying class holds), never a bare
string."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any

from bottleneckd.advice.conditions import check_condition
from bottleneckd.model.errors import InputError
from bottleneckd.model.files import read_json_file
from bottleneckd.model.hooks import HOOKS, Hook
from bottleneckd.model.resources import RESOURCES, STAGES, Resource, Stage

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
    resources: tuple[Resource, ...]
    component: str
    subcomponent: str
    action: str
    timing: str  # static | dynamic
    basis: str  # domain_knowledge | learning
    effect: str  # time_per_iteration | iterations | both
    changes_semantics: bool
    section: str
    cites: tuple[str, ...]
    hook: Hook | None  # the hook that applies it (model/hooks.py), or None
    strength: float
    cost: str
    skip_if: tuple[dict[str, Any], ...]
    description: str
    baseline: bool
    stages: tuple[Stage, ...] = ()
    #: conditions on facts (advice/fit.py): every one must hold for it to fit the job
    requires: tuple[dict[str, Any], ...] = ()
    #: it does not fit the job when any holds
    unfit_if: tuple[dict[str, Any], ...] = ()
    #: it is the first thing to do when any holds (each with its "why") and its gain is predicted
    #: (advice/recommend.py): the cheap change a performance engineer makes before weighing the rest
    first_if: tuple[dict[str, Any], ...] = ()
    #: where it is not one of the paper's (section 6.1): what shows it (documentation, a measurement)
    sources: tuple[str, ...] = ()
    #: it hides waiting no resource explains (a sleep, a remote service): advice for an undetermined
    #: verdict whose stage the step waits in with nothing busy (fact ``idle_wait_stage``)
    latency: bool = False
    #: stages in which it relieves only some of its resources (stage -> those resources)
    stage_resources: tuple[tuple[Stage, tuple[Resource, ...]], ...] = ()

    def acts_in(self, resource: str, stage: str) -> bool:
        """It relieves ``resource`` where the step spends its time in ``stage``."""
        if stage not in self.stages:
            return False
        only = dict[str, tuple[Resource, ...]](self.stage_resources).get(stage)
        return only is None or resource in only

    @property
    def taxonomy_path(self) -> str:
        sub, basis = self.subcomponent.replace("_", " "), self.basis.replace("_", " ")
        return f"{self.action} -> {sub} ({self.component}; {self.timing}, {basis})"

    @property
    def citation(self) -> str:
        return "; ".join(self.cites) or "; ".join(self.sources) or f"Bartoldson et al. (2023), section {self.section}"

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
            "sources": list(self.sources),
            "latency": self.latency,
            "hook": self.hook.id if self.hook else None,
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
        latency = m.get("latency", False)
        if type(latency) is not bool:
            raise InputError(f"{where}.latency: expected true/false")
        bad = [r for r in m.get("resources", []) if r not in RESOURCES]
        if bad or not (m.get("resources") or latency):
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
        sources = _sources(m.get("sources", []), f"{where}.sources")
        if not m.get("section") and not sources:
            raise InputError(f"{where}: give the paper's section, or sources for a mitigation beyond it")
        stage_resources = _stage_resources(m, where)
        for key in ("skip_if", "requires", "unfit_if", "first_if"):
            conds = m.get(key, [])
            if not isinstance(conds, list):
                raise InputError(f"{where}.{key}: expected a list of conditions")
            bad_cond = next((w for j, c in enumerate(conds) if (w := check_condition(c, f"{where}.{key}[{j}]"))), None)
            if bad_cond:
                raise InputError(bad_cond)
        if any("why" not in c for c in m.get("first_if", [])):
            raise InputError(f"{where}.first_if: each condition needs a 'why' (it is shown with the advice)")
        hook = m.get("hook")
        if hook is not None and (not isinstance(hook, str) or hook not in HOOKS):
            raise InputError(f"{where}.hook: {hook!r} is not a declared hook; use null or one of: {', '.join(HOOKS)}")
        out.append(
            Mitigation(
                id=m["id"],
                name=m["name"],
                resources=tuple(Resource(r) for r in m["resources"]),
                component=m["component"],
                subcomponent=m["subcomponent"],
                action=m["action"],
                timing=mech["timing"],
                basis=mech["basis"],
                effect=m["effect"],
                changes_semantics=bool(m["changes_semantics"]),
                section=m["section"],
                cites=tuple(f"{c['authors']}, {c['year']}" for c in m.get("cites", [])),
                hook=HOOKS[hook] if hook is not None else None,
                strength=float(m.get("expected_strength", 0.5)),
                cost=m.get("cost", "medium"),
                skip_if=tuple(m.get("skip_if", [])),
                description=m.get("description", ""),
                baseline=bool(m.get("baseline", False)),
                stages=tuple(Stage(x) for x in m.get("stages", ())),
                requires=tuple(m.get("requires", [])),
                unfit_if=tuple(m.get("unfit_if", [])),
                first_if=tuple(m.get("first_if", [])),
                sources=sources,
                latency=latency,
                stage_resources=stage_resources,
            )
        )
    return tuple(out)


def _sources(raw: Any, where: str) -> tuple[str, ...]:
    """Each source as one line: its title, and its address where it has one."""
    if not isinstance(raw, list):
        raise InputError(f"{where}: expected a list of {{title, url}}")
    out = []
    for i, src in enumerate(raw):
        if not isinstance(src, dict) or not isinstance(src.get("title"), str) or not src["title"].strip():
            raise InputError(f"{where}[{i}].title: say what the source is (documentation, a measurement)")
        url = src.get("url")
        if url is not None and (not isinstance(url, str) or not url.startswith("https://")):
            raise InputError(f"{where}[{i}].url: expected an https:// address")
        out.append(src["title"] + (f" <{url}>" if url else ""))
    return tuple(out)


def _stage_resources(m: dict[str, Any], where: str) -> tuple[tuple[Stage, tuple[Resource, ...]], ...]:
    raw = m.get("stage_resources", {})
    if not isinstance(raw, dict):
        raise InputError(f"{where}.stage_resources: expected {{stage: [resource ids]}}")
    for stage, rs in raw.items():
        if stage not in m.get("stages", []) or not isinstance(rs, list) or not set(rs) <= set(m.get("resources", [])):
            raise InputError(f"{where}.stage_resources.{stage}: a stage of the entry, with some of its resources")
    return tuple((Stage(k), tuple(Resource(r) for r in v)) for k, v in raw.items())
