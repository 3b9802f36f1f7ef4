#!/usr/bin/env python3
"""Wall time spent inside each of the hook's per-step entry points, in situ: the overhead
benchmark's real step (bench_watcher.py's 3-layer MLP, batch 128, SGD, one torch thread) with
each entry point wrapped in a perf_counter_ns timer (~0.1 us a call of its own), and the same
entry points in a null step (a forward returning its input, an optimizer step doing nothing),
where what they touch stays in the caches between calls.

    python scripts/bench_hook_insitu.py [--steps 3000]

Issue 23: the null step's own work is ~10-15 us, the A/B of the real step ~60-80 us; this shows
where the difference is spent (inside our entry points, run between the model's kernels)."""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_watcher import _NullOptimizer, _NullStep, _watch, small_model  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bottleneckd.torch import hot_path  # noqa: E402

ENTRY_POINTS = ("fetch_batch", "forward", "optimizer_pre", "optimizer_post")


def _patched_hot_path(acc: collections.Counter[str]):  # noqa: ANN202
    """hot_path's factories, returning closures timed with perf_counter_ns; the forward wrapper's
    time excludes the model's own forward (timed apart and subtracted), the loader's the loader's
    own next()."""
    pc = time.perf_counter_ns
    real_loader, real_forward, real_opt = hot_path.loader_marks, hot_path.forward_wrapper, hot_path.optimizer_marks

    def timed(name: str, f, minus: str | None = None):  # noqa: ANN001, ANN202
        def g(*a, **k):  # noqa: ANN002, ANN003, ANN202
            t = pc()
            try:
                return f(*a, **k)
            finally:
                acc[name] += pc() - t

        return g

    def inner(name: str, f):  # noqa: ANN001, ANN202  (time spent in the user's code, subtracted)
        def g(*a, **k):  # noqa: ANN002, ANN003, ANN202
            t = pc()
            try:
                return f(*a, **k)
            finally:
                acc[name] -= pc() - t

        return g

    def loader_marks(w, cur):  # noqa: ANN001, ANN202
        timed_fetch = timed("fetch_batch", real_loader(w, cur))
        return lambda nxt: timed_fetch(inner("fetch_batch", nxt))

    def forward_wrapper(w, cur, original, traced):  # noqa: ANN001, ANN202
        return timed("forward", real_forward(w, cur, inner("forward", original), traced))

    def optimizer_marks(w, cur, buf, examples):  # noqa: ANN001, ANN202
        pre, post = real_opt(w, cur, buf, examples)
        return timed("optimizer_pre", pre), timed("optimizer_post", post)

    return loader_marks, forward_wrapper, optimizer_marks


def inside(model: nn.Module, opt: torch.optim.Optimizer, x, y, steps: int, real: bool) -> dict[str, float]:
    """Microseconds per step inside each entry point."""
    loss_fn = nn.CrossEntropyLoss()
    data = [(x, y)] * (steps + 50)
    acc: collections.Counter[str] = collections.Counter()
    saved = hot_path.loader_marks, hot_path.forward_wrapper, hot_path.optimizer_marks
    hot_path.loader_marks, hot_path.forward_wrapper, hot_path.optimizer_marks = _patched_hot_path(acc)
    try:
        w = _watch(model, opt, data, report_every=1e12)
    finally:
        hot_path.loader_marks, hot_path.forward_wrapper, hot_path.optimizer_marks = saved
    it = iter(w.dataloader)
    for i in range(steps + 20):
        if i == 20:
            acc.clear()  # after the first steps (inline caches, allocator)
        xb, yb = next(it)
        opt.zero_grad()
        out = model(xb)
        if real:
            loss_fn(out, yb).backward()
        opt.step()
    plain = bool(w.hot[hot_path.PLAIN])
    w.close()
    assert plain, "the watched loop was not on the fast path"
    return {k: acc[k] / steps / 1e3 for k in ENTRY_POINTS}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=3000)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = small_model()
    real = inside(
        model,
        torch.optim.SGD(model.parameters(), lr=0.01),
        torch.randn(128, 256),
        torch.randint(0, 10, (128,)),
        a.steps,
        True,
    )
    null = inside(
        _NullStep(), _NullOptimizer([nn.Parameter(torch.zeros(1))]), torch.zeros(128, 1), None, a.steps, False
    )
    print(f"{'entry point':24s} {'real step':>10s} {'null step':>10s}  (us per step inside it)")
    for k in ENTRY_POINTS:
        print(f"{k:24s} {real[k]:10.2f} {null[k]:10.2f}")
    print(f"{'total':24s} {sum(real.values()):10.2f} {sum(null.values()):10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
