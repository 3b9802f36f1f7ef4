#!/usr/bin/env python3
"""Run each labelled workload under `bottleneckd run` and under `bottleneckd attach`, print the
verdict beside the label, and (with --bench) each one's throughput against the bare job as ratios.

    python scripts/eval.py [--seconds 20] [--bench] [--only NAME ...] [--gpu]

The runs are interleaved workload by workload (bare, run, attach). A calibration profile is made
first (CPU only) so that peaks are this machine's measured ones. Exit code 1 if a label is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
W = ROOT / "scripts" / "workloads"
PY = sys.executable
BN = [PY, "-m", "bottleneckd.cli"]

WORKLOADS = [  # name, label, stage, needs
    ("data_cpu_bound", "cpu_compute", "data", "cpu"),
    ("compute_bound", "cpu_compute", "compute", "cpu"),
    ("memory_bandwidth_bound", "cpu_memory_bandwidth", "compute", "cpu"),
    ("storage_bound", "storage_bandwidth", "data", "cpu"),
    ("communication_bound", "inter_gpu_interconnect", "communication", "cpu"),
    ("memory_capacity", "cpu_memory", None, "cpu"),
    ("gpu_compute_bound", "gpu_compute", "compute", "gpu"),
    ("gpu_memory_bandwidth_bound", "gpu_memory_bandwidth", "compute", "gpu"),
]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(W)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}


def throughput(text: str) -> float | None:
    m = re.search(r"throughput: ([\d.]+) steps/s", text)
    return float(m.group(1)) if m else None


def bare(name: str, seconds: float) -> float | None:
    p = subprocess.run([PY, str(W / f"{name}.py"), "--seconds", str(seconds)], env=env(), capture_output=True, text=True, timeout=seconds * 6 + 120)
    return throughput(p.stdout)


def under_run(name: str, seconds: float, profile: str, out: Path) -> tuple[dict, float | None]:
    rep = out / f"{name}.run.json"
    p = subprocess.run(BN + ["--profile", profile, "run", "--quiet", "--force", "--report-json", str(rep), "--", PY, str(W / f"{name}.py"), "--seconds", str(seconds)],
                       env=env(), capture_output=True, text=True, timeout=seconds * 6 + 120)
    return json.loads(rep.read_text()) if rep.exists() else {"error": p.stderr[-500:]}, throughput(p.stdout)


def under_attach(name: str, seconds: float, profile: str, out: Path) -> tuple[dict, float | None]:
    rep = out / f"{name}.attach.json"
    job = subprocess.Popen([PY, str(W / f"{name}.py"), "--seconds", str(seconds)], env=env(), stdout=subprocess.PIPE, text=True)
    time.sleep(min(5.0, seconds / 4))  # let it start training
    subprocess.run(BN + ["--profile", profile, "attach", "--pid", str(job.pid), "--quiet", "--force", "--report-json", str(rep)],
                   env=env(), capture_output=True, text=True, timeout=seconds * 6 + 120)
    stdout, _ = job.communicate(timeout=seconds * 6 + 60)
    return json.loads(rep.read_text()) if rep.exists() else {"error": "no report"}, throughput(stdout)


def verdict(doc: dict) -> tuple[str, str]:
    v = doc.get("verdict", {})
    return v.get("resource", "error"), v.get("stage", "-")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--bench", action="store_true", help="also time the bare job and report ratios")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--gpu", action="store_true", help="include the GPU workloads")
    ap.add_argument("--out", default=None, help="folder for the JSON reports")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="bottleneckd-eval-"))
    out.mkdir(parents=True, exist_ok=True)
    profile = str(out / "profile.json")
    if not Path(profile).exists():
        subprocess.run(BN + ["calibrate", "--no-gpu", "--seconds", "1", "--output", profile], env=env(), check=True, capture_output=True)
    rows, misses = [], 0
    for name, label, stage, needs in WORKLOADS:
        if args.only and name not in args.only or (needs == "gpu" and not args.gpu):
            continue
        b = bare(name, args.seconds) if args.bench else None
        run_doc, run_tp = under_run(name, args.seconds, profile, out)
        att_doc, att_tp = under_attach(name, args.seconds, profile, out)
        rv, av = verdict(run_doc), verdict(att_doc)
        ok_run = rv[0] == label and (stage is None or rv[1] == stage)
        ok_att = av[0] == label and (stage is None or av[1] == stage)
        misses += (not ok_run) + (not ok_att)
        rows.append((name, f"{label}/{stage or '*'}", f"{rv[0]}/{rv[1]}", "ok" if ok_run else "MISS", f"{av[0]}/{av[1]}", "ok" if ok_att else "MISS",
                     f"{run_tp / b:.3f}" if b and run_tp else "-", f"{att_tp / b:.3f}" if b and att_tp else "-"))
        print(" | ".join(rows[-1]), flush=True)
    head = ("workload", "label", "run verdict", "", "attach verdict", "", "run/bare", "attach/bare")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    print("\n" + "  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    print(f"\n{sum(1 for r in rows for k in (3, 5) if r[k] == 'ok')} passed, {misses} failed (reports in {out})")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
