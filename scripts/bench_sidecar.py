#!/usr/bin/env python3
"""Benchmark: a CPU training job's step throughput with and without the sidecar sampling it
(1 Hz and 10 Hz), interleaved, reported as ratios; the sidecar's CPU time per tick and its
resident memory.

    python scripts/bench_sidecar.py [--repeats 3] [--seconds 12]

Targets (issue 3): at most 1% throughput lost at 1 Hz; the sidecar under 1% of one core at 1 Hz
and under 60 MB resident.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "scripts" / "workloads" / "compute_bound.py"


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(JOB.parent)])}


def one(interval: float | None, seconds: float, tmp: Path) -> dict:
    job = subprocess.Popen(
        [sys.executable, str(JOB), "--seconds", str(seconds)], env=env(), stdout=subprocess.PIPE, text=True
    )
    side = None
    rss, cpu0 = [], None
    if interval is not None:
        out = tmp / f"t{time.monotonic_ns()}.jsonl"
        side = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bottleneckd.cli",
                "record",
                "-o",
                str(out),
                "--pid",
                str(job.pid),
                "--interval",
                str(interval),
                "--quiet",
                "--socket",
                str(tmp / "s" / "sock"),
            ],
            env=env(),
            stderr=subprocess.DEVNULL,
        )
        p = psutil.Process(side.pid)
        time.sleep(2.0)  # start-up (imports, detection) is not per-tick cost
        t = p.cpu_times()
        cpu0, w0 = t.user + t.system, time.monotonic()
    stdout_lines = []
    while job.poll() is None:
        if side is not None:
            try:
                rss.append(p.memory_info().rss)
            except psutil.Error:
                pass
        time.sleep(0.5)
    stdout_lines = job.stdout.read()
    res: dict = {"throughput": float(re.search(r"throughput: ([\d.]+)", stdout_lines).group(1))}
    if side is not None:
        t = p.cpu_times()
        elapsed = time.monotonic() - w0
        res["cpu_share_of_core"] = (t.user + t.system - cpu0) / elapsed
        res["cpu_ms_per_tick"] = (t.user + t.system - cpu0) / (elapsed / interval) * 1000
        res["rss_mb"] = max(rss) / 1e6
        side.terminate()
        side.wait()
    return res


def soak(seconds: float, interval: float) -> None:
    """The sidecar alone for a long run: its resident memory must stay flat (bounded windows)."""
    with tempfile.TemporaryDirectory() as tmp:
        side = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bottleneckd.cli",
                "serve",
                "--bind",
                "127.0.0.1:0",
                "--interval",
                str(interval),
                "--quiet",
                "--socket",
                f"{tmp}/s/sock",
                "--duration",
                str(seconds),
            ],
            env=env(),
            stderr=subprocess.DEVNULL,
        )
        p = psutil.Process(side.pid)
        points = []
        t0 = time.monotonic()
        while side.poll() is None:
            try:
                points.append((time.monotonic() - t0, p.memory_info().rss / 1e6))
            except psutil.Error:
                break
            time.sleep(5)
    warm = [r for t, r in points if t >= 20]
    if len(warm) < 2:
        print("soak: too short to judge")
        return
    slope = (warm[-1] - warm[0]) / max(1e-9, points[-1][0] - 20) * 3600
    print(
        f"soak at {1 / interval:g} Hz for {seconds:.0f} s: resident {warm[0]:.1f} MB at 20 s, "
        f"{warm[-1]:.1f} MB at the end, "
        f"max {max(warm):.1f} MB; drift {slope:+.2f} MB per hour"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=12)
    ap.add_argument(
        "--soak", type=float, default=0, help="instead: run the sidecar alone this many seconds and track its memory"
    )
    ap.add_argument("--soak-interval", type=float, default=0.1)
    args = ap.parse_args()
    if args.soak:
        soak(args.soak, args.soak_interval)
        return 0
    conds = [None, 1.0, 0.1]
    results: dict = {c: [] for c in conds}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            order = conds[r % 3 :] + conds[: r % 3]  # rotate the order: interleaved, no fixed position
            for c in order:
                results[c].append(one(c, args.seconds, Path(tmp)))
                print(f"repeat {r + 1} {'none' if c is None else f'{1 / c:g} Hz'}: {results[c][-1]}", flush=True)
    base = statistics.mean(x["throughput"] for x in results[None])
    print(f"\nbare job: {base:.3f} steps/s (mean of {args.repeats})")
    for c in conds[1:]:
        tp = statistics.mean(x["throughput"] for x in results[c])
        cpu = statistics.mean(x["cpu_share_of_core"] for x in results[c])
        tick = statistics.mean(x["cpu_ms_per_tick"] for x in results[c])
        rss = max(x["rss_mb"] for x in results[c])
        ratios = [x["throughput"] / base for x in results[c]]
        print(
            f"sidecar at {1 / c:g} Hz: throughput ratio {tp / base:.4f} "
            f"(runs {', '.join(f'{q:.3f}' for q in ratios)}); "
            f"sidecar {cpu * 100:.2f}% of one core, {tick:.2f} ms CPU per tick, {rss:.1f} MB resident (max)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
