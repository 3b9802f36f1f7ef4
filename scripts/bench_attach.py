#!/usr/bin/env python3
"""The cost, on the training job, of being watched from outside or run under the sidecar:

- ``attach``: ``bottleneckd attach --pid`` at its default stack-sampling rate (py-spy dumps,
  non-blocking: the job is never paused; the cost is the CPU py-spy and the sidecar take);
- ``run``: ``bottleneckd run -- python job.py`` (hook injected, sidecar, its code-naming stack
  sampler where it has one); ``run-nostacks``: the same with ``--no-stacks`` (when ``run`` has
  that option), so that the sampler's own cost is ``run`` minus ``run-nostacks``;

against the job alone, interleaved (the order alternates each repetition). The job trains the
3-layer MLP of bench_watcher.py (batch 128, one torch thread) for ``--seconds`` and records each
step's wall time and the CPU time of all its threads (``time.process_time``: the job's own work,
which a non-blocking sampler should not change and an in-process sampling thread does). The first
``--skip`` seconds (start-up of the job and of the sidecar) are left out.

    python scripts/bench_attach.py [--modes bare,attach] [--seconds 20] [--skip 6] [--reps 3]
        [--rate R] [--stack-rate R] [--show-anyway]

Wall-clock figures are not reported when the load average moved by more than 0.5 during the run
(ab_stats.LoadCheck); the CPU figures are, labelled with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_stats import LoadCheck, bootstrap_median_ci, load1  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
JOB = r"""
import json, sys, time
import torch
from torch import nn
seconds, out = float(sys.argv[1]), sys.argv[2]
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(128, 256), torch.randint(0, 10, (128,))
loss_fn = nn.CrossEntropyLoss()
t_start = time.time()
rows = []
while time.time() - t_start < seconds:
    t, c = time.perf_counter(), time.process_time()
    opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    rows.append((time.time() - t_start, time.perf_counter() - t, time.process_time() - c))
open(out, "w").write(json.dumps(rows))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def _watcher_cpu(p: psutil.Process, skip: set[int]) -> float | None:
    """CPU seconds of the watcher: its own threads, its live children (the sidecar's py-spy dumps)
    and the reaped ones, leaving out the processes in ``skip`` and their children (under ``run``
    the job is the sidecar's child; it is measured apart). None once the watcher is gone."""
    try:
        t = p.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for c in p.children(recursive=True):
            try:
                if c.pid in skip or c.ppid() in skip:
                    continue
                ct = c.cpu_times()
                total += ct.user + ct.system
            except psutil.Error:
                pass
    except psutil.Error:
        return None
    return total


def _job_under(run: psutil.Process, marker: str) -> int | None:
    """The pid of the job ``run`` started (its command line holds ``marker``)."""
    try:
        for c in run.children(recursive=True):
            try:
                if any(marker in a for a in c.cmdline()):
                    return c.pid
            except psutil.Error:
                pass
    except psutil.Error:
        pass
    return None


def one(mode: str, seconds: float, work: Path, rate: float | None, stack_rate: float | None, skip_s: float) -> dict:
    out = work / f"{mode}-{time.monotonic_ns()}.json"
    job_cmd = [sys.executable, str(work / "job.py"), str(seconds), str(out)]
    side = None
    if mode in ("run", "run-nostacks"):
        cmd = [sys.executable, "-m", "bottleneckd.cli", "run", "--quiet"]
        if mode == "run-nostacks":
            cmd.append("--no-stacks")
        elif stack_rate is not None:
            cmd += ["--stack-rate", str(stack_rate)]
        job = subprocess.Popen([*cmd, "--", *job_cmd], env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        watcher = psutil.Process(job.pid)  # the sidecar is `run` itself; the job is its child
    else:
        job = subprocess.Popen(job_cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        watcher = None
        if mode == "attach":
            cmd = [sys.executable, "-m", "bottleneckd.cli", "attach", "--pid", str(job.pid), "--quiet"]
            cmd += ["--socket", str(work / "s" / "sock")]
            if rate is not None:
                cmd += ["--rate", str(rate)]
            side = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            watcher = psutil.Process(side.pid)
    skip: set[int] = set()
    start = time.monotonic()
    c0 = c1 = None  # the watcher's CPU from skip_s on (the start-up of the job and of the sidecar left out)
    t0 = t1 = start
    deadline = start + seconds + 300
    while job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
        if watcher is None:
            continue
        if mode != "attach":  # the job is run's child: left out, and reaped (then counted) at its end
            pid = _job_under(watcher, str(out))
            if pid is None and skip:
                break  # the job has ended: run's reaped-children time would now include it
            if pid is not None:
                skip.add(pid)
        c = _watcher_cpu(watcher, skip)
        if c is None or time.monotonic() - start < skip_s:
            continue
        if c0 is None:
            c0, t0 = c, time.monotonic()
        c1, t1 = c, time.monotonic()
    try:  # run ends after its final report; past the deadline the job is stuck
        _, err = job.communicate(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        job.kill()
        _, err = job.communicate()
    if side is not None:
        side.terminate()
        side.wait(timeout=30)
    if job.returncode != 0 or not out.exists():
        raise SystemExit(f"job failed ({mode}, exit status {job.returncode}): {err.decode(errors='replace')[-1500:]}")
    cores = (c1 - c0) / (t1 - t0) if c0 is not None and c1 is not None and t1 > t0 else 0.0
    return {"mode": mode, "rows": json.loads(out.read_text()), "watcher_cpu_s_per_s": cores}


def summarise(runs: list[dict], skip: float) -> dict:
    out = {}
    for r in runs:
        rows = [x for x in r["rows"] if x[0] >= skip]
        r["wall"] = statistics.median(x[1] for x in rows)
        r["cpu"] = statistics.median(x[2] for x in rows)
        r["steps_per_s"] = len(rows) / max(1e-9, rows[-1][0] - rows[0][0]) if len(rows) > 1 else 0.0
    for mode in dict.fromkeys(r["mode"] for r in runs):
        sel = [r for r in runs if r["mode"] == mode]
        out[mode] = {
            "wall_ms": statistics.median(r["wall"] for r in sel) * 1e3,
            "cpu_ms": statistics.median(r["cpu"] for r in sel) * 1e3,
            "steps_per_s": statistics.median(r["steps_per_s"] for r in sel),
            "watcher_cores": statistics.median(r["watcher_cpu_s_per_s"] for r in sel),
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default="bare,attach")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--skip", type=float, default=6.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rate", type=float, default=None, help="attach's --rate (default: attach's own default)")
    ap.add_argument("--stack-rate", type=float, default=None, help="run's --stack-rate (default: run's own)")
    ap.add_argument("--show-anyway", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    if modes[0] != "bare" or not set(modes) <= {"bare", "attach", "run", "run-nostacks"}:
        ap.error("--modes: bare first, then any of attach, run, run-nostacks")
    load = LoadCheck(load1(), None)
    runs = []
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        (work / "job.py").write_text(JOB)
        (work / "s").mkdir(mode=0o700)
        for rep in range(a.reps):
            for mode in modes if rep % 2 == 0 else modes[::-1]:
                r = one(mode, a.seconds, work, a.rate, a.stack_rate, a.skip)
                r["rep"] = rep
                runs.append(r)
                print(f"rep {rep} {mode}: {len(r['rows'])} steps", flush=True)
    load = LoadCheck(load.start, load1())
    s = summarise(runs, a.skip)
    for line in load.lines():
        print(line)
    for mode in modes[1:]:
        pairs = [
            (x, next(b for b in runs if b["mode"] == "bare" and b["rep"] == x["rep"]))
            for x in runs
            if x["mode"] == mode
        ]
        for key, what in (("cpu", "job CPU per step (all its threads)"), ("wall", "job wall per step")):
            ratios = [x[key] / b[key] for x, b in pairs]
            med = statistics.median(ratios)
            lo, hi = bootstrap_median_ci(ratios) if len(ratios) > 1 else (med, med)
            if key == "wall" and load.refused and not a.show_anyway:
                print(f"{mode}: {what} NOT REPORTED: {load.refused}")
                continue
            tag = f"PROVISIONAL ({load.refused}): " if key == "wall" and load.refused else ""
            print(
                f"{tag}{mode} / bare, {what}: {med:.4f} (95% CI {lo:.4f}-{hi:.4f}, {len(ratios)} repetitions; "
                f"bare {s['bare'][key + '_ms']:.3f} ms, {mode} {s[mode][key + '_ms']:.3f} ms)"
            )
        who = "attach and its py-spy dumps" if mode == "attach" else "the run process (sidecar; the job excluded)"
        print(f"{mode}: {who}: {s[mode]['watcher_cores'] * 100:.2f}% of a core")
    print(json.dumps(s, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps({"summary": s, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
