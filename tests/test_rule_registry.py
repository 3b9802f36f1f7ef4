"""Adding a rule is one place to change (CONTRIBUTING.md, "Adding a rule"): its module in
``bottleneckd/diagnosis/rules/``, its entry in ``RULES`` (``rules/__init__.py``), which ``classify``
runs, and its thresholds in ``diagnosis/thresholds.py`` (checked by tests/test_thresholds.py, which
reads every module of ``rules/``). These tests fail when a rule is written but never run: a function
of ``rules/`` that returns findings and that no entry of ``RULES`` reaches, or a module of ``rules/``
that nothing imports."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from bottleneckd.diagnosis import classify as classify_module
from bottleneckd.diagnosis.classify import classify
from bottleneckd.diagnosis.rules import RULES
from bottleneckd.diagnosis.verdict import Finding
from tests.windows import NO_PEAKS, window

ROOT = Path(__file__).resolve().parents[1]
RULES_DIR = ROOT / "bottleneckd" / "diagnosis" / "rules"
PACKAGE = "bottleneckd.diagnosis.rules"

Key = tuple[str, str]  # (module name, function name)


def _definitions(rules_dir: Path) -> dict[Key, ast.AST]:
    """Every module-level function and assignment of the rules package, by (module, name): an
    assignment can hold rules (``DECISIONS = (_untimed_ddp, ...)``)."""
    out: dict[Key, ast.AST] = {}
    for path in sorted(rules_dir.glob("*.py")):
        module = PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef):
                out[module, node.name] = node
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                out[module, node.target.id] = node
            elif isinstance(node, ast.Assign):
                out |= {(module, t.id): node for t in node.targets if isinstance(t, ast.Name)}
    return out


def _imported_names(rules_dir: Path) -> dict[str, dict[str, Key]]:
    """For each module of the package, the local names it imports from its sibling modules."""
    out: dict[str, dict[str, Key]] = {}
    for path in sorted(rules_dir.glob("*.py")):
        module = PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"
        names: dict[str, Key] = {}
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE + "."):
                for a in node.names:
                    names[a.asname or a.name] = (node.module or "", a.name)
        out[module] = names
    return out


def _returns_findings(node: ast.AST) -> bool:
    """A rule, or a part of one: a function whose return annotation names ``Finding``
    (``list[Finding]``, ``Finding | None``)."""
    return isinstance(node, ast.FunctionDef) and node.returns is not None and "Finding" in ast.unparse(node.returns)


def unreached_rules(rules_dir: Path, roots: list[Key]) -> list[str]:
    """The functions of ``rules_dir`` that return findings but that no root reaches: calls, or
    names in a tuple of decisions, directly or through other definitions of the package (a rule
    written and never run)."""
    definitions = _definitions(rules_dir)
    imports = _imported_names(rules_dir)
    reached: set[Key] = set()
    todo = [k for k in roots if k in definitions]
    while todo:
        key = todo.pop()
        if key in reached:
            continue
        reached.add(key)
        module = key[0]
        for node in ast.walk(definitions[key]):
            if isinstance(node, ast.Name):
                local = (module, node.id)
                target = local if local in definitions else imports[module].get(node.id)
                if target in definitions and target not in reached:
                    todo.append(target)
    return sorted(f"{m}.{n}" for (m, n), d in definitions.items() if _returns_findings(d) and (m, n) not in reached)


def unimported_modules(rules_dir: Path, importers: list[Path]) -> list[str]:
    """The modules of ``rules_dir`` that neither a sibling nor any of ``importers`` imports."""
    imported: set[str] = set()
    for path in [*rules_dir.glob("*.py"), *importers]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
                imported |= {f"{node.module}.{a.name}" for a in node.names}  # from ...rules import cpu_state
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
    return sorted(
        p.stem for p in rules_dir.glob("*.py") if p.stem != "__init__" and f"{PACKAGE}.{p.stem}" not in imported
    )


def _roots() -> list[Key]:
    return [(f.__module__, f.__name__) for f in RULES]


def test_every_function_that_returns_findings_is_reached_from_rules() -> None:
    """A rule module whose rule is not in ``RULES`` (nor called by one that is) is never run."""
    assert unreached_rules(RULES_DIR, _roots()) == [], (
        "add the rule to RULES in bottleneckd/diagnosis/rules/__init__.py"
    )


def test_every_module_of_rules_is_imported() -> None:
    importers = [p for p in (ROOT / "bottleneckd").rglob("*.py") if RULES_DIR not in p.parents]
    assert unimported_modules(RULES_DIR, importers) == []


def test_a_rule_left_out_of_rules_is_caught(tmp_path: Path) -> None:
    """The check on a copy of the package: a new rule module, and a rule dropped from ``RULES``."""
    copy = tmp_path / "rules"
    shutil.copytree(RULES_DIR, copy)
    (copy / "surge.py").write_text(
        "from bottleneckd.diagnosis.verdict import Finding\n\n\ndef surge(w, peaks) -> list[Finding]:\n    return []\n"
    )
    assert unreached_rules(copy, _roots()) == [f"{PACKAGE}.surge.surge"]
    assert unimported_modules(copy, []) == ["surge"]
    without_transfer = [k for k in _roots() if k[1] != "transfer"]
    assert f"{PACKAGE}.transfer.transfer" in unreached_rules(RULES_DIR, without_transfer)
    # a rule's helpers are reached through it: gpu_memory through capacity
    assert f"{PACKAGE}.gpu_memory.gpu_memory" in unreached_rules(RULES_DIR, [k for k in _roots() if k[1] != "capacity"])


def test_classify_runs_every_rule_in_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """``RULES`` is what classify runs: each entry is called once per window, and its finding can
    name the bottleneck."""
    called: list[str] = []

    def spy(rule):
        def run(w, peaks):
            called.append(rule.__name__)
            return rule(w, peaks)

        return run

    def loud(w, peaks) -> list[Finding]:
        return [Finding(resource="storage_bandwidth", stage="data", score=0.99, evidence=("the test's own rule",))]

    monkeypatch.setattr(classify_module, "RULES", (*(spy(r) for r in RULES), loud))
    v = classify(window({"cpu_compute/host/utilization": 0.1}, {"data": 0.5, "forward": 0.5}), NO_PEAKS)
    assert called == [r.__name__ for r in RULES]
    assert v.resource == "storage_bandwidth" and v.evidence == ("the test's own rule",)
