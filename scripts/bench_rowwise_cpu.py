#!/usr/bin/env python3
"""What makes a CPU step of row-wise operators (LayerNorm + GELU + residual, the suite's two
memory-bandwidth jobs) faster: the knowledge base's ``cache_sized_blocks`` entry and the
mixed-precision condition rest on these figures (issue 20).

Four arms of the same training step (forward, backward, SGD), interleaved in a shuffled order
each round, one torch thread:

- eager: the whole batch at once (activations far past the caches);
- blocked: the same rows in blocks whose activations fit the per-core cache, gradients summed
  over the blocks (identical arithmetic: each row's operators act on it alone);
- compiled: ``torch.compile`` (inductor: the elementwise and normalisation operators fused);
- bf16: bf16 autocast around the forward (on a CPU it lowers matrix products and convolutions
  only; this step has none).

Each arm is reported against eager as the median of the per-round ratios eager/arm (> 1: faster)
with its bootstrap 95% CI. Refused (exit 3) when the load average moved by more than 0.5.

    python scripts/bench_rowwise_cpu.py [--shape wide|tall] [--rounds 8] [--steps 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "workloads"))

from ab_stats import LoadCheck, bootstrap_median_ci, load1  # noqa: E402

#: (width, layers, rows, rows per block): the two workloads' shapes
SHAPES = {"tall": (1024, 6, 8192, 64), "wide": (65536, 4, 256, 8)}


def arm(kind: str, d: int, depth: int, rows: int, block: int) -> Callable[[], None]:
    import torch
    from memory_bandwidth_bound_model import Elementwise

    torch.manual_seed(0)
    model = Elementwise(d, depth)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(rows, d)
    f = torch.compile(model) if kind == "compiled" else model
    blocks = x.split(block) if kind == "blocked" else (x,)

    def step() -> None:
        opt.zero_grad()
        for b in blocks:
            if kind == "bf16":
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    out = f(b).sum() / x.numel()
            else:
                out = f(b).sum() / x.numel()
            out.backward()
        opt.step()

    return step


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=sorted(SHAPES), default="tall")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3, help="steps per arm per round")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    start = load1()
    arms = {k: arm(k, *SHAPES[a.shape]) for k in ("eager", "blocked", "compiled", "bf16")}
    for step in arms.values():  # warm-up (and the compilation)
        step()
        step()
    times: dict[str, list[float]] = {k: [] for k in arms}
    rng = random.Random(0)
    for _ in range(a.rounds):
        order = list(arms)
        rng.shuffle(order)
        for k in order:
            t = time.perf_counter()
            for _ in range(a.steps):
                arms[k]()
            times[k].append((time.perf_counter() - t) / a.steps)
    load = LoadCheck(start, load1())
    print("\n".join(load.lines()))
    if load.refused:
        print(f"refused: {load.refused}")
        return 3
    print(f"shape {a.shape} {SHAPES[a.shape]}: eager {statistics.median(times['eager']) * 1e3:.1f} ms/step")
    for k in ("blocked", "compiled", "bf16"):
        r = [e / t for e, t in zip(times["eager"], times[k], strict=True)]
        lo, hi = bootstrap_median_ci(r)
        print(f"{k:9} x{statistics.median(r):.2f} (95% CI x{lo:.2f}-x{hi:.2f}) over {len(r)} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
