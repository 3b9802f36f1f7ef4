#!/usr/bin/env python3
"""Benchmark every rank reporting: the hook's cost per step on each rank with all 4 ranks
instrumented, against rank 0 alone (the old behaviour) and none; and the node sidecar's CPU with 4
ranks reporting against 1.

    python scripts/bench_ranks.py [--ranks 4] [--steps 300] [--reps 3] [--json out.json]

Each run is a real torchrun job (gloo, one CPU thread per rank, a small DDP model) whose ranks
install the same instrumentation as ``bottleneckd run`` (bottleneckd.torch.inject.install, which
also wraps DDP's comm hook) when their mode says so, and report to one ``bottleneckd serve`` on a
private socket; the sidecar's CPU time is read from /proc through psutil. Modes are interleaved
and repeated so that the machine's drift falls on all of them alike. Cost per step = the mode's
median step time minus the uninstrumented run's, per rank.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
WORKER = r"""
import json, os, sys, time
import torch, torch.distributed as dist
from torch import nn
mode, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
torch.set_num_threads(1)
rank = int(os.environ["RANK"])
if mode == "all" or (mode == "rank0" and rank == 0):
    from bottleneckd.torch.inject import install
    install()
dist.init_process_group("gloo")
m = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
times = []
for i in range(steps + 30):
    t = time.perf_counter()
    opt.zero_grad(); nn.functional.cross_entropy(m(x), y).backward(); opt.step()
    if i >= 30:
        times.append(time.perf_counter() - t)
open(os.path.join(out, f"rank{rank}.json"), "w").write(json.dumps(times))
dist.destroy_process_group()
"""


def port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(mode: str, ranks: int, steps: int, work: Path) -> dict:
    out = work / f"{mode}-{time.monotonic_ns()}"
    out.mkdir()
    sock = str(work / "sock" / "bottleneckd.sock")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BOTTLENECKD_SOCKET": sock, "OMP_NUM_THREADS": "1"}
    side = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bottleneckd.cli",
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--socket",
            sock,
            "--quiet",
            "--disable",
            "storage",
            "--disable",
            "storage_network",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(3.0)  # the sidecar's start-up is not the cost of ranks reporting
    sp = psutil.Process(side.pid)
    c0, t0 = sum(sp.cpu_times()[:2]), time.monotonic()
    job = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            str(ranks),
            "--master-port",
            str(port()),
            str(work / "worker.py"),
            mode,
            str(steps),
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    c1, t1 = sum(sp.cpu_times()[:2]), time.monotonic()
    side.terminate()
    side.wait(timeout=10)
    if job.returncode != 0:
        raise SystemExit(f"job failed ({mode}): {job.stderr[-1500:]}")
    per_rank = {r: statistics.median(json.loads((out / f"rank{r}.json").read_text())) for r in range(ranks)}
    return {"mode": mode, "step_median_s": per_rank, "sidecar_cpu_s_per_s": (c1 - c0) / (t1 - t0), "wall_s": t1 - t0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        (work / "worker.py").write_text(WORKER)
        (work / "sock").mkdir(mode=0o700)
        for rep in range(a.reps):
            for mode in ("none", "rank0", "all"):
                r = one_run(mode, a.ranks, a.steps, work)
                runs.append(r)
                print(
                    f"rep {rep} {mode:5s}: step medians (ms) "
                    + " ".join(f"{v * 1e3:.2f}" for v in r["step_median_s"].values())
                    + f"; sidecar {r['sidecar_cpu_s_per_s'] * 100:.1f}% of a core",
                    flush=True,
                )
    base = {r: statistics.median(x["step_median_s"][r] for x in runs if x["mode"] == "none") for r in range(a.ranks)}
    summary = {}
    for mode in ("rank0", "all"):
        sel = [x for x in runs if x["mode"] == mode]
        cost = {r: statistics.median(x["step_median_s"][r] for x in sel) - base[r] for r in range(a.ranks)}
        summary[mode] = {
            "cost_per_step_us": {r: round(c * 1e6, 1) for r, c in cost.items()},
            "cost_share": {r: round(cost[r] / base[r], 4) for r in cost},
            "sidecar_cpu_cores": round(statistics.median(x["sidecar_cpu_s_per_s"] for x in sel), 4),
        }
    summary["none"] = {
        "step_ms": {r: round(v * 1e3, 3) for r, v in base.items()},
        "sidecar_cpu_cores": round(statistics.median(x["sidecar_cpu_s_per_s"] for x in runs if x["mode"] == "none"), 4),
    }
    print(json.dumps(summary, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps({"runs": runs, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
