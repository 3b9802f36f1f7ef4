"""How soon the verdict follows a change of stage: a CPU job compute-bound for --before seconds,
then input-bound (the same CPU, cpu_compute: stage compute -> data) at a known time, run under
`bottleneckd run --trace` at 1 Hz; the trace is replayed through the same Pipeline and the
latency from the switch to the first stable verdict naming the data stage is reported.

    python scripts/bench_regime_latency.py [--before 15] [--after 15] [--repeat 1]

Prints one JSON line per run and a summary; the requirement (issue 11, item 9) is <= 3 s at 1 Hz.
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def workload(before: float, after: float, mark: str) -> None:
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset

    torch.set_num_threads(1)
    state = {"slow": False}

    class Switching(Dataset):
        def __len__(self) -> int:
            return 10**9

        def __getitem__(self, i: int):
            if state["slow"]:  # a costly Python transform: the main thread builds each sample
                acc = 0.0
                for k in range(20_000):
                    acc += (k * i) % 7
                return torch.full((256,), acc % 3)
            return torch.ones(256)

    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    t0 = time.time()
    for x in DataLoader(Switching(), batch_size=64, num_workers=0):
        now = time.time()
        if not state["slow"] and now - t0 >= before:
            state["slow"] = True
            with open(mark, "w") as f:
                f.write(repr(now))
        if now - t0 >= before + after:
            break
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()


def measure(before: float, after: float, keep: str | None) -> dict:
    sys.path.insert(0, ROOT)
    from bottleneckd.diagnosis.pipeline import Pipeline
    from bottleneckd.outputs.trace import read_trace

    d = tempfile.mkdtemp(prefix="bottleneckd-regime-")
    trace, mark = os.path.join(d, "trace.jsonl"), os.path.join(d, "switch")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [
        sys.executable,
        "-m",
        "bottleneckd",
        "run",
        "--quiet",
        "--interval",
        "1",
        "--trace",
        trace,
        "--",
        sys.executable,
        os.path.abspath(__file__),
        "--workload",
        "--before",
        str(before),
        "--after",
        str(after),
        "--mark",
        mark,
    ]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    switch = float(open(mark).read())
    header, samples = read_trace(trace)
    p = Pipeline(header.peaks)
    raw_t = stable_t = None
    rows = []
    for s in samples:
        snap = p(s)
        rows.append((round(s.t - switch, 2), snap.verdict.resource, snap.verdict.stage))
        if s.t < switch:
            continue
        from bottleneckd.diagnosis.classify import classify

        raw = classify(snap.stats, header.peaks)
        if raw_t is None and raw.stage == "data":
            raw_t = s.t
        if stable_t is None and snap.verdict.stage == "data" and snap.verdict.resource != "undetermined":
            stable_t = s.t
    changes = [c for c in p.tracker.changes if c.t >= switch and c.after_stage == "data"]
    if keep:
        os.replace(trace, keep)
    return {
        "switch_at_s": before,
        "raw_latency_s": None if raw_t is None else round(raw_t - switch, 2),
        "stable_latency_s": None if stable_t is None else round(stable_t - switch, 2),
        "regime_change_reported": bool(changes),
        "label": changes[0].label if changes else None,
        "verdicts_after_switch": [r for r in rows if -2 <= r[0] <= 8],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=float, default=15.0)
    ap.add_argument("--after", type=float, default=15.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--keep-trace", default=None, help="keep the (last) trace here")
    ap.add_argument("--workload", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--mark", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.workload:
        workload(a.before, a.after, a.mark)
        return
    stable = []
    for _ in range(a.repeat):
        r = measure(a.before, a.after, a.keep_trace)
        print(json.dumps(r))
        if r["stable_latency_s"] is not None:
            stable.append(r["stable_latency_s"])
    if stable:
        print(
            f"stable verdict followed the switch in median {statistics.median(stable):.2f} s "
            f"(max {max(stable):.2f} s) over {len(stable)} runs at 1 Hz"
        )
    else:
        print("the verdict never named the data stage after the switch")


if __name__ == "__main__":
    main()
