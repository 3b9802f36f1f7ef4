#!/usr/bin/env python3
"""Print each rank's figures as the straggler rule sees them, over a recorded trace's windows
(bottleneckd/diagnosis/straggler.py): busy time outside the collectives, own work (busy less its
wait for a CPU), its training thread's CPU and run-queue wait, every phase, in ms per step; how
often it was the busiest and the last to arrive; the top rank's ``overlap_lag`` (its backward
beyond what its forward predicts, where the all-reduce runs beside backward).

    bottleneckd run --trace job.trace -- torchrun ... job.py
    python scripts/rank_figures.py job.trace [--every 3] [--last 4]

What docs/measurements.md's "Stragglers that were the all-reduce" was read from.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bottleneckd.diagnosis.straggler import (  # noqa: E402
    LAST,
    MIN_INTERVALS,
    intervals,
    overlap_lag,
    rank_figures,
)
from bottleneckd.outputs.trace import read_trace  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--every", type=int, default=3, help="samples between the windows printed")
    ap.add_argument("--last", type=int, default=4, help="print only the last N windows (0: all)")
    a = ap.parse_args()
    _, samples = read_trace(a.trace)
    samples = list(samples)
    lines = []
    for end in range(LAST, len(samples) + 1, max(1, a.every)):
        window = intervals(samples[:end])
        if len(window) < MIN_INTERVALS:
            continue
        figs = sorted(rank_figures(window), key=lambda f: f.identity.rank)
        if len(figs) < 2:
            continue
        top = max(figs, key=lambda f: f.busy)
        ranks = " | ".join(
            f"r{f.identity.rank} busy {f.busy * 1e3:.1f} own {f.own * 1e3:.1f} "
            f"cpu {'-' if f.cpu is None else f'{f.cpu * 1e3:.1f}'} "
            f"rq {'-' if f.runqueue is None else f'{f.runqueue * 1e3:.1f}'} "
            f"busiest {f.slowest:g}/{len(window)} last {f.last_arrival:g} "
            + " ".join(f"{k} {v * 1e3:.1f}" for k, v in sorted(f.phases.items()) if v)
            for f in figs
        )
        lines.append(f"sample {end}: {ranks} || r{top.identity.rank} overlap_lag {overlap_lag(top, figs) * 1e3:.1f}")
    for line in lines[-a.last :] if a.last else lines:
        print(line)
    if not lines:
        print(f"no window of {MIN_INTERVALS} or more intervals with several ranks in {a.trace}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
