"""The labelled workloads: ``scripts/workloads/*.py`` that declare a LABEL, read with ``ast``
(never imported), and a hash of each one's source with the workload modules it imports, so that
a proof is reused only for the same code."""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
W = ROOT / "scripts" / "workloads"
LAST = ("memory_capacity",)  # the one that squeezes the host's memory runs last
#: module-level literals a workload may declare
LITERALS = (
    "LABEL",
    "PATTERN",
    "STAGE",
    "INTERVENTION",
    "MIN_SPEEDUP",
    "NEEDS",
    "PROOF_SECONDS",
    "CONTROL",
    "CONTROL_MAX_SPEEDUP",
    "PROVES",
    "ALSO_PROVES",
    "ALSO_INTERVENTION",
    "ALSO_MIN_SPEEDUP",
    "STRAGGLER",
)


@dataclass(frozen=True)
class Workload:
    name: str
    labels: tuple[str, ...]  # accepted resource ids (or "undetermined")
    stage: str | None  # None: any stage
    intervention: str | None
    min_speedup: float | None
    needs: str  # "cpu" or "gpu"
    proof_seconds: float | None = None  # a floor on --proof-seconds for slow steps (a few steps a second)
    #: a second intervention (``--control``) that would speed the job up if another resource limited
    #: it (for a compute label: the same FLOPs with fewer bytes); the label holds only while it
    #: gives less than ``control_max``
    control: str | None = None
    control_max: float | None = None
    sha256: str = ""  # the workload's source and the workload modules it imports
    pattern: str = ""  # what the job does, in a line (docs/eval.md's table)
    #: the recommendation (knowledge-base id) its intervention proves: the advice the report should
    #: put first (None: its intervention proves no entry of the knowledge base)
    proves: str | None = None
    #: a second recommendation a second intervention (``--also``) proves, on its own runs: what a
    #: performance engineer would try first where the label's intervention changes the model (a
    #: compute label: bf16 autocast proves mixed precision where it speeds the step up by
    #: ``also_min_speedup``, significantly)
    also_proves: str | None = None
    also_intervention: str | None = None
    also_min_speedup: float | None = None
    #: the rank every other rank waits for: the verdict is right only when it names that rank as the
    #: straggler (None: no straggler to name)
    straggler: int | None = None

    @property
    def label(self) -> str:
        return f"{'|'.join(self.labels)}/{self.stage or '*'}"


def local_imports(path: Path) -> set[str]:
    """Names of the workload-local modules (``scripts/workloads/X.py``) that ``path`` imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return {n for n in names if (path.parent / f"{n}.py").exists()}


def source_hash(path: Path) -> str:
    """sha256 over the workload's file and, recursively, every workload module it imports (by
    name order): a change to ``common.py`` changes every workload that uses it."""
    seen: dict[str, Path] = {}
    todo = [path]
    while todo:
        p = todo.pop()
        if p.stem in seen:
            continue
        seen[p.stem] = p
        todo += [p.parent / f"{n}.py" for n in local_imports(p)]
    h = hashlib.sha256()
    for name in sorted(seen):
        h.update(name.encode() + b"\0" + seen[name].read_bytes() + b"\0")
    return h.hexdigest()


def literals(path: Path) -> dict:
    out = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in LITERALS:
                out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def discover(folder: Path = W) -> list[Workload]:
    """Every workload that declares a LABEL, in name order (LAST at the end)."""
    found = []
    for path in sorted(folder.glob("*.py")):
        c = literals(path)
        if "LABEL" not in c:
            continue
        label = c["LABEL"]
        found.append(
            Workload(
                path.stem,
                tuple(label) if isinstance(label, (tuple, list)) else (label,),
                c.get("STAGE"),
                c.get("INTERVENTION"),
                c.get("MIN_SPEEDUP"),
                c.get("NEEDS", "cpu"),
                c.get("PROOF_SECONDS"),
                c.get("CONTROL"),
                c.get("CONTROL_MAX_SPEEDUP"),
                source_hash(path),
                c.get("PATTERN", ""),
                proves=c.get("PROVES"),
                also_proves=c.get("ALSO_PROVES"),
                also_intervention=c.get("ALSO_INTERVENTION"),
                also_min_speedup=c.get("ALSO_MIN_SPEEDUP"),
                straggler=c.get("STRAGGLER"),
            )
        )
    return sorted(found, key=lambda w: (w.name in LAST, w.name))
