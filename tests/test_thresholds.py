"""Every threshold of the diagnosis is registered (bottleneckd/diagnosis/thresholds.py) with its
source, its unit and the figure it is compared with; the rules compare with no number that is not;
docs/thresholds.md is generated from the registry and the suite's results (scripts/thresholds_table.py)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from bottleneckd.diagnosis import thresholds
from bottleneckd.diagnosis.sensitivity import RUN_STATISTICS, WINDOW_STATISTICS, replay_statistics, unknown_statistics
from bottleneckd.diagnosis.thresholds import REGISTRY
from bottleneckd.outputs.trace import read_trace

ROOT = Path(__file__).resolve().parents[1]
DIAGNOSIS = ROOT / "bottleneckd" / "diagnosis"
#: the modules whose decisions compare figures with thresholds
DECIDING = sorted((DIAGNOSIS / "rules").glob("*.py")) + [
    DIAGNOSIS / n for n in ("classify.py", "stability.py", "straggler.py", "straggler_history.py", "pipeline.py")
]
ALLOWED = (0, 1)  # comparisons with zero or one (none, some, one of) are not thresholds
FIXTURE = ROOT / "tests" / "data" / "eval_results_small.json"

spec = importlib.util.spec_from_file_location("thresholds_table", ROOT / "scripts" / "thresholds_table.py")
table = importlib.util.module_from_spec(spec)
sys.modules["thresholds_table"] = table
spec.loader.exec_module(table)


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _registered_names(tree: ast.Module) -> set[str]:
    """Local names bound to a registered threshold: imported from the registry (with or without
    ``as``), or a module-level alias of such a name (``MARGIN = STRAGGLER_MARGIN``)."""
    names: set[str] = set()
    for n in tree.body:
        if isinstance(n, ast.ImportFrom) and n.module == "bottleneckd.diagnosis.thresholds":
            names |= {a.asname or a.name for a in n.names if a.name in REGISTRY}
    for n in tree.body:
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in names:
            names |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    return names


def _numbers_outside_text(fn: ast.AST) -> list[ast.Constant]:
    """Numeric literals in a function, leaving out f-strings (units in evidence text) and indices."""
    skip = {
        id(m)
        for n in ast.walk(fn)
        if isinstance(n, (ast.JoinedStr, ast.Subscript))
        for m in ast.walk(n.slice if isinstance(n, ast.Subscript) else n)
    }
    return [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Constant)
        and type(n.value) in (int, float)
        and n.value not in ALLOWED
        and id(n) not in skip
    ]


@pytest.mark.parametrize("path", DECIDING, ids=lambda p: p.name)
def test_no_number_in_a_decision_is_unnamed(path: Path) -> None:
    """Thresholds are registered and scores are named constants: a function of the diagnosis holds
    no numeric literal but 0 and 1 (outside evidence text)."""
    tree = ast.parse(path.read_text())
    found = [
        f"{path.name}:{c.lineno}: {c.value!r}"
        for fn in ast.walk(tree)
        if isinstance(fn, (ast.FunctionDef, ast.Lambda))
        for c in _numbers_outside_text(fn)
    ]
    assert not found, "name these (a threshold in diagnosis/thresholds.py, a score as a module constant): " + str(found)


@pytest.mark.parametrize("path", DECIDING, ids=lambda p: p.name)
def test_every_constant_a_rule_compares_with_is_a_registered_threshold(path: Path) -> None:
    tree = ast.parse(path.read_text())
    module = importlib.import_module(_module_name(path))
    registered = _registered_names(tree)
    unregistered = set()
    for cmp in (n for n in ast.walk(tree) if isinstance(n, ast.Compare)):
        for name in (n for n in ast.walk(cmp) if isinstance(n, ast.Name) and n.id.isupper()):
            value = getattr(module, name.id, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and name.id not in registered:
                unregistered.add(f"{path.name}:{name.lineno}: {name.id}")
    assert not unregistered, f"compared with, but not in diagnosis/thresholds.py: {sorted(unregistered)}"


def test_the_ast_checks_catch_an_inline_threshold_and_an_unregistered_constant() -> None:
    src = "LOCAL = 0.4\ndef rule(x):\n    return x >= 0.55 or x < LOCAL\n"
    tree = ast.parse(src)
    fn = tree.body[1]
    assert [c.value for c in _numbers_outside_text(fn)] == [0.55]
    assert "LOCAL" not in _registered_names(tree)
    ok = ast.parse("from bottleneckd.diagnosis.thresholds import STRAGGLER_HOLD as HOLD\nALIAS = HOLD\n")
    assert _registered_names(ok) == {"HOLD", "ALIAS"}
    assert _numbers_outside_text(ast.parse("def f(x):\n    return f'{x * 100:.0f}%', x[2]").body[0]) == []


def test_every_threshold_has_a_value_unit_source_and_a_statistic_that_is_computed() -> None:
    assert len(REGISTRY) >= 60
    used = table.used_in()
    for t in REGISTRY.values():
        assert t.source and t.unit, t.name
        assert used.get(t.name) or t.name.startswith("ROOFLINE_MISSING"), f"{t.name} is registered but no rule uses it"
        assert getattr(thresholds, t.name) == t.value, t.name
        assert t.statistic == "" or t.statistic in WINDOW_STATISTICS or t.statistic in RUN_STATISTICS, t.name
    assert unknown_statistics() == []


def test_the_roofline_threshold_is_registered_as_the_hook_has_it() -> None:
    roofline = pytest.importorskip("bottleneckd.torch.roofline")
    assert REGISTRY["ROOFLINE_MISSING_SHARE"].value == roofline.MISSING_SHARE
    assert REGISTRY["ROOFLINE_MISSING_FLOPS_PER_BYTE"].value == roofline.MISSING_FLOPS_PER_BYTE


def test_known_weak_thresholds_say_so() -> None:
    """Issue 21: the ones set from one workload or between two test cases carry a caveat."""
    for name in ("SHARED_COMM_HIGH", "SIDE_THREADS_SMALL", "DOMINANT_UNDETERMINED_RATIO", "ROOFLINE_MISSING_SHARE"):
        assert REGISTRY[name].caveat, name
    assert "below it compute is the larger cost" not in REGISTRY["SHARED_COMM_HIGH"].source


def test_statistics_replayed_from_a_trace_match_the_rules_figures() -> None:
    """The cpu_compute_training scenario (recorded): the figures the sensitivity table uses come out
    of the same window code the rules read: a compute share near 1, a thread at a full core."""
    header, samples = read_trace(str(ROOT / "tests" / "data" / "cpu_compute_training" / "trace.jsonl"))
    stats = replay_statistics(header.peaks, samples)
    assert stats["compute_share"]["median"] > thresholds.COMPUTE_FULL
    assert stats["hottest_thread"]["median"] >= thresholds.ONE_CORE
    assert stats["top_score"]["median"] >= thresholds.ACTIVE
    assert stats["dominant_held_intervals"]["median"] >= thresholds.DOMINANT_INTERVALS
    for s in stats.values():
        assert s["min"] <= s["median"] <= s["max"] and s["windows"] >= 1


def _fixture_rows() -> list[dict]:
    return table.load_rows([str(FIXTURE)])


def test_the_table_puts_each_workloads_figure_beside_the_threshold_and_flags_the_near_ones(tmp_path: Path) -> None:
    rows = _fixture_rows()
    assert rows and all("statistics" in r["run"] for r in rows)
    # a synthetic row 5% above INPUT_HIGH (near) and one 50% below (not)
    near = {
        "name": "zz_near",
        "label": "x/data",
        "run": {"statistics": {"data_share": {"median": 0.21, "min": 0.19, "max": 0.3, "last": 0.2, "windows": 4}}},
    }
    far = {
        "name": "zz_far",
        "label": "x/data",
        "run": {"statistics": {"data_share": {"median": 0.1, "min": 0.1, "max": 0.1, "last": 0.1, "windows": 4}}},
    }
    text = table.render(rows + [near, far], ["fixture.json"])
    for t in REGISTRY.values():
        assert f"| `{t.name}` |" in text, t.name
    section = text.split("### `INPUT_HIGH`")[1].split("###")[0]
    assert "| zz_near | x/data | run | 0.21 | 0.19-0.3 | 4 | +5% | near crossed |" in section
    assert "| zz_far | x/data | run | 0.1 | 0.1-0.1 | 4 | -50% |  |" in section
    flagged = text.split("## Within 10%")[1].split("##")[0]
    assert (
        "`INPUT_HIGH` | 0.2 | zz_near (x/data) | run | 0.21 | +5.0%" in flagged
        and "zz_far" not in flagged.split("INPUT_MODERATE")[0]
    )


@pytest.mark.slow
def test_the_generator_writes_the_doc_and_checks_it(tmp_path: Path) -> None:
    out = tmp_path / "t.md"
    assert table.main([str(FIXTURE), "--out", str(out)]) == 0
    assert table.main([str(FIXTURE), "--out", str(out), "--check"]) == 0
    out.write_text(out.read_text() + "edited by hand\n")
    assert table.main([str(FIXTURE), "--out", str(out), "--check"]) == 1
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert table.main([str(bad), "--out", str(out)]) == 2


def test_docs_thresholds_lists_every_registered_threshold_with_its_value() -> None:
    """docs/thresholds.md is regenerated when a threshold is added or changed."""
    doc = (ROOT / "docs" / "thresholds.md").read_text()
    for t in REGISTRY.values():
        assert f"| `{t.name}` | {table.fmt(t.value)} |" in doc, f"{t.name}: run scripts/thresholds_table.py"


def test_the_fixture_is_eval_output_with_statistics() -> None:
    doc = json.loads(FIXTURE.read_text())
    assert {"args", "workloads"} <= set(doc)
    assert all(r["run"]["statistics"].get("compute_share") for r in doc["workloads"])
