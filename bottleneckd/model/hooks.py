"""The mitigations ``bottleneckd.torch`` can apply ("hooks"), as the daemon side knows them: read
from the ``hooks`` section of data/mitigations.json, without importing torch.

A :class:`Hook` is the typed link between a knowledge-base entry (advice/knowledge.py, whose
``hook`` is one of these) and the class that applies it (torch/mitigations/<id>.py, whose ``hook``
is the same object; that package checks at import that each declared hook has exactly one class
and that the class declares the same facts). The facts a hook owns are declared here, typed, and
nowhere else: model/facts.py adds them to the fact table, so the daemon validates them.

A malformed section is an :class:`InputError` naming the file and the field, raised at import:
the package's own data is broken, nothing can be diagnosed with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources as importlib_resources
from typing import Any

from bottleneckd.model.errors import InputError
from bottleneckd.model.files import read_json_file

#: the types a fact may have (model/facts.py checks values against them)
FACT_TYPES = ("bool", "int", "float", "str", "strs")
#: the package that holds one module per hook, named by its id
HOOK_PACKAGE = "bottleneckd.torch.mitigations"
_ID = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


@dataclass(frozen=True)
class HookFact:
    """A fact a hook sets. ``type`` None: declared in model/facts.py or by another hook, which
    this hook also sets; otherwise the hook's own, declared here."""

    name: str
    type: str | None = None
    doc: str = ""
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hook:
    """A mitigation the hook can apply. ``in_effect_from_facts``: the knowledge entries naming it
    are in effect according to their own ``skip_if`` facts, not merely because it was applied."""

    id: str
    facts: tuple[HookFact, ...]
    #: the knowledge-base entries it applies (their ``hook`` is this one)
    applies: tuple[str, ...]
    #: what those entries say (they must agree): applying it changes training semantics
    changes_semantics: bool
    in_effect_from_facts: bool = False

    @property
    def module(self) -> str:
        """The module whose class applies it."""
        return f"{HOOK_PACKAGE}.{self.id}"

    @property
    def fact_names(self) -> frozenset[str]:
        return frozenset(f.name for f in self.facts)

    def __str__(self) -> str:
        return self.id


def _fact(raw: Any, where: str) -> HookFact:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not _ID.match(raw["name"]):
        raise InputError(f"{where}.name: expected a lower-case identifier")
    extra = set(raw) - {"name", "type", "doc", "choices"}
    if extra:
        raise InputError(f"{where}: unknown fields {sorted(extra)}")
    if "type" not in raw:
        if set(raw) != {"name"}:
            raise InputError(f"{where}: a fact declared elsewhere has only a name; give type and doc to own it")
        return HookFact(raw["name"])
    if raw["type"] not in FACT_TYPES:
        raise InputError(f"{where}.type: {raw['type']!r} is not one of {', '.join(FACT_TYPES)}")
    if not isinstance(raw.get("doc"), str) or not raw["doc"].strip():
        raise InputError(f"{where}.doc: say what the fact means")
    choices = raw.get("choices", [])
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise InputError(f"{where}.choices: expected a list of strings")
    return HookFact(raw["name"], raw["type"], raw["doc"], tuple(choices))


def parse_hooks(doc: Any, path: str) -> dict[str, Hook]:
    """The hooks a knowledge-base document declares, by id (InputError naming the field)."""
    raw = doc.get("hooks") if isinstance(doc, dict) else None
    if not isinstance(raw, list):
        raise InputError(f"{path}: hooks: expected a list of the mitigations bottleneckd.torch applies")
    out: dict[str, Hook] = {}
    owners: dict[str, str] = {}
    for i, h in enumerate(raw):
        where = f"{path}: hooks[{i}]"
        if not isinstance(h, dict) or not isinstance(h.get("id"), str) or not _ID.match(h["id"]):
            raise InputError(f"{where}.id: expected a lower-case identifier (the module's name)")
        if h["id"] in out:
            raise InputError(f"{where}.id: {h['id']!r} declared twice")
        extra = set(h) - {"id", "facts", "in_effect_from_facts"}
        if extra:
            raise InputError(f"{where}: unknown fields {sorted(extra)}")
        if not isinstance(h.get("facts"), list):
            raise InputError(f"{where}.facts: expected a list (empty when it sets no fact)")
        facts = tuple(_fact(f, f"{where}.facts[{j}]") for j, f in enumerate(h["facts"]))
        if len({f.name for f in facts}) != len(facts):
            raise InputError(f"{where}.facts: a fact named twice")
        for f in facts:
            if f.type is not None:
                if f.name in owners:
                    raise InputError(f"{where}.facts: {f.name!r} is already owned by hook {owners[f.name]!r}")
                owners[f.name] = h["id"]
        flag = h.get("in_effect_from_facts", False)
        if type(flag) is not bool:
            raise InputError(f"{where}.in_effect_from_facts: expected true/false")
        entries = _entries_naming(doc, h["id"])
        if not entries:
            raise InputError(f"{where}.id: no entry of 'mitigations' names hook {h['id']!r}: say what it applies")
        semantics = {bool(e.get("changes_semantics")) for e in entries}
        if len(semantics) != 1:
            raise InputError(f"{where}: the entries naming {h['id']!r} disagree on changes_semantics")
        out[h["id"]] = Hook(
            id=h["id"],
            facts=facts,
            applies=tuple(str(e.get("id")) for e in entries),
            changes_semantics=semantics.pop(),
            in_effect_from_facts=flag,
        )
    return out


def _entries_naming(doc: dict[str, Any], hook_id: str) -> list[dict[str, Any]]:
    entries = doc.get("mitigations")
    return [e for e in entries if isinstance(e, dict) and e.get("hook") == hook_id] if isinstance(entries, list) else []


def _load() -> dict[str, Hook]:
    path = str(importlib_resources.files("bottleneckd") / "data" / "mitigations.json")
    return parse_hooks(read_json_file(path, "knowledge base", "fix the file or reinstall bottleneckd"), path)


#: every hook, by id (the package's data/mitigations.json)
HOOKS: dict[str, Hook] = _load()


def declared_hook(hook_id: str) -> Hook:
    """The declared hook of that id; InputError naming the ids there are."""
    try:
        return HOOKS[hook_id]
    except (KeyError, TypeError):
        raise InputError(
            f"unknown hook {hook_id!r}: declare it under 'hooks' in bottleneckd/data/mitigations.json; "
            f"declared: {', '.join(HOOKS)}"
        ) from None
