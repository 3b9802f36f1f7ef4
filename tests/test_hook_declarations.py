"""One place per hook-applied mitigation: its class declares its hook and facts beside its code,
checked against data/mitigations.json when the class is defined and when the package is imported;
the registry and the daemon's fact table follow from them. Each way of bypassing that place fails
here: a class with a wrong declaration, a module with no declared hook, a declared hook with no
class, a fact set but not declared, a fact row written in model/facts.py, a hook named as a string
that is not declared."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bottleneckd.model.errors import InputError
from bottleneckd.model.facts import FACTS, FactSpec, with_hook_facts
from bottleneckd.model.hooks import HOOK_PACKAGE, HOOKS, Hook, HookFact, parse_hooks
from tests.conftest import ROOT

torch = pytest.importorskip("torch")
from bottleneckd.torch.mitigations import REGISTRY  # noqa: E402
from bottleneckd.torch.mitigations.base import (  # noqa: E402
    HookDeclarationError,
    HookMitigation,
    check_modules,
    check_registered,
    declared_hook,
)

KB_PATH = ROOT / "bottleneckd" / "data" / "mitigations.json"


def _doc() -> dict:
    return json.loads(KB_PATH.read_text())


def _define(module: str, hook: object, facts: object, changes_semantics: object = False) -> type:
    """A hook class defined as if in ``module`` (the check reads ``__module__``)."""
    return type(
        "Candidate",
        (HookMitigation,),
        {"__module__": module, "hook": hook, "facts": facts, "changes_semantics": changes_semantics},
    )


# --- the declaration beside the code -----------------------------------------------------------
def test_every_declared_hook_has_exactly_its_class_and_the_registry_is_derived():
    assert set(REGISTRY) == set(HOOKS.values()) and len(REGISTRY) == 11
    for hook, cls in REGISTRY.items():
        assert cls.hook is hook and cls.name == hook.id and cls.__module__ == hook.module
        assert set(cls.facts) == hook.fact_names and cls.changes_semantics is hook.changes_semantics
    files = {p.stem for p in (ROOT / "bottleneckd/torch/mitigations").glob("*.py")} - {"__init__", "base", "engine"}
    assert files == set(HOOKS), "a module in bottleneckd/torch/mitigations/ is not a declared hook (or one is missing)"


def test_a_hook_id_not_declared_in_the_knowledge_base_fails_when_the_class_is_defined():
    with pytest.raises(InputError, match="unknown hook 'turbo'.*declare it under 'hooks'"):
        _define(f"{HOOK_PACKAGE}.turbo", declared_hook("turbo"), {})
    with pytest.raises(HookDeclarationError, match="expected declared_hook"):
        _define(f"{HOOK_PACKAGE}.channels_last", "channels_last", {"channels_last": bool})  # a bare string


def test_a_class_whose_facts_differ_from_the_declaration_fails_when_defined():
    h = HOOKS["channels_last"]
    with pytest.raises(HookDeclarationError, match=r"declares \[\] but .* declares \['channels_last'\]"):
        _define(h.module, h, {})
    with pytest.raises(HookDeclarationError, match="declare every fact it sets"):
        _define(h.module, h, None)
    with pytest.raises(HookDeclarationError, match=r"facts\['channels_last'\]: .*int.* declared 'bool'"):
        _define(h.module, h, {"channels_last": int})


def test_a_class_outside_its_module_or_with_other_semantics_or_a_second_class_fails():
    h = HOOKS["channels_last"]
    with pytest.raises(HookDeclarationError, match="belongs in bottleneckd.torch.mitigations.channels_last"):
        _define("my_package.fast", h, {"channels_last": bool})
    with pytest.raises(HookDeclarationError, match="changes_semantics: must be False.*channels_last"):
        _define(h.module, h, {"channels_last": bool}, changes_semantics=True)
    with pytest.raises(HookDeclarationError, match="already applied by ChannelsLast"):
        _define(h.module, h, {"channels_last": bool})
    assert REGISTRY[h].__name__ == "ChannelsLast"


def test_a_declared_hook_with_no_class_and_a_module_with_no_hook_fail_the_package_check():
    extra = Hook(id="turbo", facts=(), applies=("x",), changes_semantics=False)
    with pytest.raises(HookDeclarationError, match="with no class: turbo"):
        check_registered(dict(REGISTRY), {**HOOKS, "turbo": extra})
    with pytest.raises(HookDeclarationError, match="turbo: a module here applies the hook of its name"):
        check_modules(HOOK_PACKAGE, [*HOOKS, "turbo"], HOOKS)
    check_registered(dict(REGISTRY), HOOKS)
    check_modules(HOOK_PACKAGE, list(HOOKS), HOOKS)


def _package_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "bottleneckd"
    shutil.copytree(ROOT / "bottleneckd", dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def _import_mitigations(tmp_path: Path) -> subprocess.CompletedProcess:
    code = "import bottleneckd.torch.mitigations"
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)


@pytest.mark.slow
def test_importing_the_package_fails_on_a_stray_module_and_on_a_hook_with_no_class(tmp_path):
    """The checks really run at import: a copy of the package with a rogue module, then with a
    declared hook whose module is gone."""
    pkg = _package_copy(tmp_path)
    (pkg / "torch/mitigations/turbo.py").write_text("class Turbo:\n    name = 'turbo'\n")
    r = _import_mitigations(tmp_path)
    assert r.returncode != 0 and "HookDeclarationError" in r.stderr and "turbo: a module here" in r.stderr
    (pkg / "torch/mitigations/turbo.py").unlink()
    (pkg / "torch/mitigations/selective_backprop.py").unlink()
    r = _import_mitigations(tmp_path)
    assert r.returncode != 0 and "with no class: selective_backprop" in r.stderr
    shutil.copy(ROOT / "bottleneckd/torch/mitigations/selective_backprop.py", pkg / "torch/mitigations")
    assert _import_mitigations(tmp_path).returncode == 0


# --- the facts a hook sets: declared once, enforced when set ------------------------------------
def test_a_hook_mitigation_that_sets_an_undeclared_fact_fails_where_it_is_applied(tmp_path):
    from bottleneckd.torch import watch
    from bottleneckd.torch.mitigations.base import UndeclaredFact
    from bottleneckd.torch.mitigations.channels_last import ChannelsLast

    class Sneaky(ChannelsLast):  # not a new hook: a variant of channels_last that sets another fact
        def apply(self, ctx):
            super().apply(ctx)
            ctx.facts.set("data_echoing", 2)

    model = torch.nn.Conv2d(3, 3, 1)
    w = watch(model, None, None, socket_path=f"{tmp_path}/n.sock", local_sampling=False, print_epoch=False)
    try:
        with pytest.raises(UndeclaredFact, match="Sneaky sets fact 'data_echoing' but declares only"):
            w.apply(Sneaky())
        assert "data_echoing" not in w.facts and "channels_last" not in w.facts
        assert not model._forward_pre_hooks, "what the failed apply did is undone"
        w.apply(ChannelsLast())
        assert w.facts["channels_last"] is True
    finally:
        w.close()


def test_hook_facts_come_from_the_knowledge_base_not_a_row_in_model_facts():
    src = (ROOT / "bottleneckd/model/facts.py").read_text()
    assert "torch.mitigations" not in src, "a hook's fact is declared under 'hooks' in data/mitigations.json"
    owned = {f.name: h for h in HOOKS.values() for f in h.facts if f.type}
    assert owned.keys() >= {"channels_last", "comm_hook", "data_echoing", "gradient_accumulation"}
    for name, h in owned.items():
        assert FACTS[name].producers[0] == h.module
    assert FACTS["loader_workers"].producers == (
        "bottleneckd.torch.probe",
        "bottleneckd.torch.mitigations.dataloader_settings",
    )


def test_a_fact_owned_twice_or_set_but_declared_nowhere_is_refused():
    core = {"device": FactSpec("device", "str", ("x",), "d")}
    h = Hook(id="a", facts=(HookFact("device", "str", "again"),), applies=("a",), changes_semantics=False)
    with pytest.raises(InputError, match="'device' is already declared in bottleneckd/model/facts.py"):
        with_hook_facts(core, {"a": h})
    h = Hook(id="a", facts=(HookFact("ghost"),), applies=("a",), changes_semantics=False)
    with pytest.raises(InputError, match="'ghost' is declared nowhere"):
        with_hook_facts(core, {"a": h})


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            lambda d: d["hooks"].append(copy.deepcopy(d["hooks"][0])),
            r"hooks\[11\].id: 'mixed_precision' declared twice",
        ),
        (lambda d: d["hooks"][1]["facts"][0].pop("doc"), r"hooks\[1\].facts\[0\].doc"),
        (lambda d: d["hooks"][1]["facts"][0].update(type="list"), r"hooks\[1\].facts\[0\].type: 'list'"),
        (lambda d: d["hooks"].append({"id": "turbo", "facts": []}), "no entry of 'mitigations' names hook 'turbo'"),
        (
            lambda d: next(m for m in d["mitigations"] if m["id"] == "pinned_memory").update(changes_semantics=True),
            "entries naming 'dataloader_settings' disagree on changes_semantics",
        ),
        (lambda d: d.pop("hooks"), "hooks: expected a list"),
    ],
)
def test_a_malformed_hooks_section_names_the_field(edit, problem):
    doc = _doc()
    edit(doc)
    with pytest.raises(InputError, match=problem):
        parse_hooks(doc, "mitigations.json")


# --- the typed link from a knowledge entry to its hook -----------------------------------------
def test_a_knowledge_entry_names_its_hook_as_the_declared_object(tmp_path):
    from bottleneckd.advice.knowledge import load_knowledge

    kb = {m.id: m for m in load_knowledge()}
    assert kb["channels_last"].hook is HOOKS["channels_last"] is REGISTRY[HOOKS["channels_last"]].hook
    assert kb["more_loader_workers"].hook is kb["pinned_memory"].hook is HOOKS["dataloader_settings"]
    assert kb["more_loader_workers"].to_json()["hook"] == "dataloader_settings"  # reports keep the id
    doc = _doc()
    i = next(i for i, m in enumerate(doc["mitigations"]) if m["id"] == "channels_last")
    doc["mitigations"][i]["hook"] = "channel_last"
    (tmp_path / "kb.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match=rf"mitigations\[{i}\].hook: 'channel_last' is not a declared hook"):
        load_knowledge(tmp_path / "kb.json")


def test_a_recommendation_or_entry_applies_through_its_hook(tmp_path):
    from bottleneckd.advice.knowledge import load_knowledge
    from bottleneckd.advice.recommend import Recommendation
    from bottleneckd.torch import watch

    kb = {m.id: m for m in load_knowledge()}
    model = torch.nn.Conv2d(3, 3, 1)
    w = watch(model, None, None, socket_path=f"{tmp_path}/n.sock", local_sampling=False, print_epoch=False)
    try:
        t = w.apply(kb["channels_last"])
        assert type(t.mitigation).__name__ == "ChannelsLast" and w.facts["channels_last"] is True
        w.revert("channels_last")
        t = w.apply(Recommendation(kb["channels_last"], "gpu_memory_bandwidth", 0.5, "addresses it"))
        assert type(t.mitigation).__name__ == "ChannelsLast" and w.facts["channels_last"] is True
        with pytest.raises(ValueError, match="shrink_tensors: bottleneckd.torch cannot apply it"):
            w.apply(kb["shrink_tensors"])
        with pytest.raises(ValueError, match="unknown mitigation 'turbo'"):
            w.apply("turbo")
    finally:
        w.close()
