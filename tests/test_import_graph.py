"""The package's import graph: no cycle, and every daemon-side module imports on its own.

A cycle among module-level imports works or breaks depending on which module is imported first;
a function-local import that closes a cycle only hides it. Both are found here by reading the
source (``ast``), and every daemon-side module is then imported first, on its own, with the rest
of the package unloaded.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PKG = ROOT / "bottleneckd"


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(body: list[ast.stmt], module_level: bool) -> list[ast.Import | ast.ImportFrom]:
    """Imports run when the module is imported (``module_level``), or all that run at some time
    (function-local ones too); never those under ``if TYPE_CHECKING:``."""
    out: list[ast.Import | ast.ImportFrom] = []
    for n in body:
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            out.append(n)
        elif isinstance(n, ast.If):
            if not _is_type_checking(n.test):
                out += _imports(n.body, module_level) + _imports(n.orelse, module_level)
        elif isinstance(n, ast.Try):
            out += (
                _imports(n.body, module_level) + _imports(n.orelse, module_level) + _imports(n.finalbody, module_level)
            )
            for h in n.handlers:
                out += _imports(h.body, module_level)
        elif not module_level:
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(n, field, None)
                if isinstance(inner, list):
                    out += _imports(
                        [x for x in inner if isinstance(x, ast.stmt)]
                        + [s for h in inner if isinstance(h, ast.ExceptHandler) for s in h.body],
                        False,
                    )
    return out


def import_graph(module_level: bool) -> dict[str, set[str]]:
    """Module -> the package's modules it imports. A module's own ancestor packages are left out:
    they are always initialised before it, so ``from pkg import sibling`` closes no cycle."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges: set[str] = set()
        for n in _imports(ast.parse(path.read_text()).body, module_level):
            if isinstance(n, ast.Import):
                edges |= {a.name for a in n.names if a.name in mods}
                continue
            base = n.module or ""
            if n.level:
                parts = here[: len(here) - (n.level - 1)]
                base = ".".join(parts + ([n.module] if n.module else []))
            edges |= {m for m in [base] + [f"{base}.{a.name}" for a in n.names] if m in mods}
        ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        graph[name] = edges - ancestors - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"b"}}) == []


@pytest.mark.slow
def test_no_import_cycle_among_module_level_imports():
    graph = import_graph(module_level=True)
    assert len(graph) > 80 and "bottleneckd.model.files" in graph["bottleneckd.peaks.catalog"]
    assert cycles(graph) == []


def test_no_function_local_import_hides_a_cycle():
    """A function-local import may defer a cost (the CLI's start-up); it must not dodge a cycle.
    bottleneckd.model.errors' read_json (errors -> files -> errors) is its owner's to remove: it
    has no caller left."""
    assert cycles(import_graph(module_level=False)) == []


@pytest.mark.slow
def test_every_daemon_side_module_imports_first_on_its_own():
    torch_side = ("bottleneckd.torch", "bottleneckd.integrations")  # the only packages that may import torch
    daemon = sorted(m for m in _modules() if not m.startswith(torch_side) and m != "bottleneckd.cli.__main__")
    code = (
        "import importlib, sys, traceback\n"
        f"bad = []\nfor m in {daemon!r}:\n"
        "    for k in [k for k in sys.modules if k == 'bottleneckd' or k.startswith('bottleneckd.')]:\n"
        "        del sys.modules[k]\n"
        "    try:\n        importlib.import_module(m)\n"
        "    except Exception:\n        bad.append(m + ': ' + traceback.format_exc().splitlines()[-1])\n"
        "    if 'torch' in sys.modules:\n        bad.append(m + ': imports torch')\n        break\n"
        "print('\\n'.join(bad))\nsys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(daemon) > 60


def test_the_channel_is_a_link_between_the_hook_and_the_sidecar():
    """Both ends import ``bottleneckd.channel``; it imports only the message model (``model/``), so
    the hook never pulls in the daemon's outputs and the daemon's outputs never own the hook's input."""
    graph = import_graph(module_level=False)
    channel = {m: e for m, e in graph.items() if m.startswith("bottleneckd.channel")}
    assert {"bottleneckd.channel.link", "bottleneckd.channel.socket_path", "bottleneckd.channel.report_file"} <= set(
        channel
    )
    assert not [
        (m, d) for m, e in channel.items() for d in e if not d.startswith(("bottleneckd.channel", "bottleneckd.model"))
    ]
    assert not [m for m in _modules() if m.startswith("bottleneckd.outputs.") and ("channel" in m or "socket" in m)]
    assert "bottleneckd.channel.link" in graph["bottleneckd.torch.transport"]
    assert not [d for d in graph["bottleneckd.torch.transport"] if d.startswith("bottleneckd.outputs")]


#: the packages in the order the data flows (README, Design): a package imports only from those
#: before it. model/ is the vocabulary every other package shares; torch/ and integrations/ are the
#: hook, on top of everything daemon-side they reuse (the in-process sidecar, the advice texts).
LAYERS = (
    ("model",),
    ("hardware",),
    ("peaks",),
    ("samplers",),
    ("diagnosis",),
    ("advice",),
    ("channel", "outputs"),
    ("compare",),
    ("runtime",),
    ("cli",),
    ("torch",),
    ("integrations",),
    ("__main__",),
)


def _layer(module: str) -> int | None:
    pkg = module.split(".")[1] if module.count(".") else None
    return next((k for k, names in enumerate(LAYERS) if pkg in names), None)


def test_every_import_follows_the_flow_of_the_data():
    """An import that runs back up the flow (model/ importing advice/, diagnosis/ importing
    advice/: both happened) ties a lower package to a higher one; found at any depth."""
    graph = import_graph(module_level=False)
    unplaced = sorted({m.split(".")[1] for m in graph if m.count(".") and _layer(m) is None})
    assert unplaced == [], f"packages missing from LAYERS: {unplaced}"
    back = sorted(
        f"{a} -> {b}"
        for a, bs in graph.items()
        for b in bs
        if a.count(".") and b.count(".") and a.split(".")[1] != b.split(".")[1] and _layer(b) >= _layer(a)
    )
    assert back == [], back
