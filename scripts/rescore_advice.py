#!/usr/bin/env python3
"""The suite's advice score on recorded runs, re-derived by the current code: `bottleneckd analyze`
on each scored workload's recorded `run` trace (nothing re-run), its top recommendation against the
recommendation its interventions proved (the record's proof, and ``--also``'s where it held). The
label is the workload's PROVES as it reads now (scripts/workloads/): the intervention and its proof
are the record's, the knowledge-base id it proves may have been named since (a line says so).

    python scripts/rescore_advice.py RECORD.json TRACES_DIR [--also ALSO.json ...]

RECORD.json: a full record under docs/eval-results/; TRACES_DIR: that run's --out folder (the
``<workload>.run.trace.jsonl`` files); ALSO.json: ``eval.py --also-proofs --json`` outputs (a
workload's proof in a later file replaces an earlier one)."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("record")
    ap.add_argument("traces")
    ap.add_argument("--also", nargs="*", default=[])
    a = ap.parse_args()
    rec = json.loads(Path(a.record).read_text())
    also = {k: v for f in a.also for k, v in json.loads(Path(f).read_text())["also"].items()}
    n = top = top3 = 0
    for w in rec["workloads"]:
        if not w.get("proves") or not w.get("scored"):
            continue
        trace = Path(a.traces) / f"{w['name']}.run.trace.jsonl"
        if not trace.exists():
            print(f"{w['name']}: no recorded trace ({trace})", file=sys.stderr)
            continue
        r = subprocess.run(
            [sys.executable, "-m", "bottleneckd", "analyze", "--format", "json", str(trace)],
            capture_output=True,
            text=True,
            check=True,
        )
        ids = [x["id"] for x in json.loads(r.stdout)["recommendations"]]
        label = proves_now(w["name"]) or w["proves"]
        if label != w["proves"]:
            print(f"{w['name']}: its intervention proves {label} (recorded as {w['proves']})", file=sys.stderr)
        p = also.get(w["name"])
        proved = {label} | ({p["proves"]} if p and p.get("proven") else set())
        n += 1
        hit = bool(ids) and ids[0] in proved
        top += hit
        top3 += bool(proved & set(ids[:3]))
        first = ids[0] if ids else "-"
        print(f"{w['name'][:26]:26} proved {'/'.join(sorted(proved)):34} top {first:24} {'yes' if hit else 'no'}")
    print(f"top recommendation proved {top}/{n}; proved one in the top 3 {top3}/{n}")
    return 0


def proves_now(name: str) -> str | None:
    """The workload's PROVES in its file now (None where the file or the line is gone)."""
    f = Path(__file__).parent / "workloads" / f"{name}.py"
    m = re.search(r'^PROVES = "([a-z_]+)"', f.read_text(), re.M) if f.exists() else None
    return m.group(1) if m else None


if __name__ == "__main__":
    sys.exit(main())
