"""What a run of the suite was made on (commit, machine, load, date), its record under
``docs/eval-results/``, and the merge of several runs' results into one summary (a workload in
two files is an error unless the later is asked to win, and then each replacement is said)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path

from eval_suite.workloads import ROOT

RESULTS = ROOT / "docs" / "eval-results"


def git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load() -> list[float]:
    """The 1, 5 and 15-minute load averages (what else ran on the machine)."""
    return [round(x, 2) for x in os.getloadavg()]


def meta() -> dict:
    """The code and machine a run was made on, at its start."""
    return {
        "commit": git("rev-parse", "HEAD") or None,
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cores": os.cpu_count(),
        "cpu": cpu_model(),
        "load_start": load(),
        "python": platform.python_version(),
    }


def record_path(m: dict, folder: Path = RESULTS) -> Path:
    """docs/eval-results/<date>-<commit>[-dirty].json"""
    stamp = m["date"].replace(":", "").replace("-", "")[:13]
    return folder / f"{stamp}-{(m['commit'] or 'nocommit')[:10]}{'-dirty' if m['dirty'] else ''}.json"


def write_record(doc: dict, folder: Path = RESULTS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = record_path(doc["meta"], folder)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    tmp.replace(path)
    return path


class DuplicateRows(ValueError):
    pass


def merge_rows(paths: list[str], later_wins: bool = False) -> tuple[dict[str, dict], list[str]]:
    """Rows by workload over several --json files, and the lines saying what was replaced. A
    workload in two files is an error (DuplicateRows names them) unless ``later_wins``."""
    rows: dict[str, dict] = {}
    origin: dict[str, str] = {}
    said = []
    for p in paths:
        for r in json.loads(Path(p).read_text())["workloads"]:
            name = r["name"]
            if name in rows:
                if not later_wins:
                    raise DuplicateRows(
                        f"{name} is in both {origin[name]} and {p}: drop one, or pass --later-wins to take {p}'s row"
                    )
                said.append(f"{name}: the row of {p} replaces the row of {origin[name]}")
            rows[name], origin[name] = r, p
    return rows, said
