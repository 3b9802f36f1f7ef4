#!/usr/bin/env python3
"""The hook's cost against the least any Python-level hook can cost at the same points (issue 23).

Eight arms, interleaved in a shuffled order each round, on bench_watcher.py's real step (3-layer
MLP, batch 128, SGD, one torch thread, this thread's CPU time):

- bare: the loop with nothing of ours;
- watched: ``watch(model, opt, loader)`` as it comes: on this short step it times a sample of the
  steps and rests between (sampling.py, the default overhead budget);
- every step timed: the same with ``overhead_budget=None``, each step on the hot path (hot_path.py);
- untimed: the same after its first window of timed steps with the least share of steps timed
  (a rest longer than the block): what an untimed step costs (sampling.UNTIMED_STEP_COST_S);
- full path: the same watcher with its hot path off (every step through the full entry points,
  as before the hot path existed);
- minimal: the floor, hand-written hooks at the same points that do the least the phases need
  (a forward wrapper storing two timestamps and the rows, optimizer step pre- and post-hooks
  storing a timestamp and copying the step's floats into an array, an iterator storing two
  timestamps): what a Python-level hook costs here before it does anything of its own;
- bare loader / injected: the same step fed by a ``DataLoader`` over the same batches
  (``batch_size=None``), with nothing of ours, and under ``bottleneckd run``'s no-code-change
  instrumentation (``inject.GlobalWatcher``: global optimizer hooks, the loader's ``__iter__``
  patched, the model found at the first step), the way a job run by ``bottleneckd run`` is watched.

Each arm is reported against bare (median of paired differences with its bootstrap 95% CI),
watched against minimal, and injected against bare loader. Refused (exit 3) when the load average
moved by more than 0.5.

Each block attaches anew and first runs ``--settle`` steps that are timed apart: what a job pays
once after attaching (the interpreter's inline caches re-specialise over ~6 steps; a sampling
watcher times its first two windows, ~34 steps, to learn the step's length before its first rest).
That one-time cost is printed as "startup" (microseconds in all, not per step). The block's
``--steps`` then measure the steady state: 500 steps of ~2 ms span two of the watcher's reports
(every 0.5 s), each followed by a window of timed steps, so a sampled arm runs at its share.

    python scripts/bench_hook_floor.py [--rounds 250] [--steps 500] [--settle 40]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from array import array
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_stats import LoadCheck, PairedAB, bootstrap_median_ci, load1  # noqa: E402
from bench_watcher import _watch, one_thread_cpu_clock, small_model  # noqa: E402

ARMS = ("bare", "watched", "every step timed", "untimed", "full path", "minimal", "bare loader", "injected")


def minimal_hooks(model: nn.Module, opt: torch.optim.Optimizer) -> tuple[Any, Any]:
    """The floor's hooks; returns (iterator wrapper, undo)."""
    cur = [0.0] * 9
    buf = array("d")
    pc = time.perf_counter
    original = model.forward
    is_compiling = torch.compiler.is_compiling
    tensor = torch.Tensor

    def forward(*args: Any, **kwargs: Any) -> Any:
        if is_compiling():
            return original(*args, **kwargs)
        if not cur[2]:
            cur[2] = pc()
        if args and type(f := args[0]) is tensor and f.ndim:
            cur[8] += f.size(0)
        out = original(*args, **kwargs)
        cur[3] = pc()
        return out

    def pre(_o: Any, _a: Any, _k: Any) -> None:
        if not cur[4]:
            cur[4] = pc()

    def post(_o: Any, _a: Any, _k: Any, fresh: tuple = (0.0,) * 9) -> None:
        cur[5] = pc()
        buf.extend(cur)
        cur[:] = fresh

    class Timed:
        __slots__ = ("n",)

        def __init__(self, it: Any) -> None:
            self.n = it.__next__

        def __iter__(self) -> Timed:
            return self

        def __next__(self) -> Any:
            if not cur[0]:
                cur[0] = pc()
            b = self.n()
            cur[1] = pc()
            return b

    model.forward = forward  # type: ignore[method-assign]
    handles = [opt.register_step_pre_hook(pre), opt.register_step_post_hook(post)]

    def undo() -> None:
        model.__dict__.pop("forward", None)
        for h in handles:
            h.remove()

    return Timed, undo


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=250)
    ap.add_argument("--steps", type=int, default=500, help="a block's steps after its startup (the steady state)")
    ap.add_argument("--settle", type=int, default=40, help="a block's first steps, timed apart: the one-time startup")
    ap.add_argument("--arms", default=",".join(ARMS), help="the arms to run, comma-separated (bare always)")
    a = ap.parse_args()
    arms = tuple(dict.fromkeys(["bare", *(x.strip() for x in a.arms.split(",") if x.strip())]))
    if any(x not in ARMS for x in arms):
        print(f"--arms: unknown arm in {a.arms!r}; known: {', '.join(ARMS)}", file=sys.stderr)
        return 2
    load = LoadCheck(load1(), None)
    began = time.monotonic()
    now = one_thread_cpu_clock()
    model = small_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(128, 256), torch.randint(0, 10, (128,))
    loss_fn = nn.CrossEntropyLoss()
    data = [(x, y)] * (a.settle + a.steps + 1)

    startup: dict[str, list[float]] = {}  # each block's first --settle steps, seconds in all
    arm_name = [""]

    def timed_steps(it: Any) -> float:
        def step() -> None:
            xb, yb = next(it)
            opt.zero_grad()
            loss_fn(model(xb), yb).backward()
            opt.step()

        t = now()
        for _ in range(a.settle):  # after attaching: inline caches, the first windows (docstring)
            step()
        t1 = now()
        startup.setdefault(arm_name[0], []).append(t1 - t)
        for _ in range(a.steps):
            step()
        return (now() - t1) / a.steps

    def arm(name: str) -> float:
        arm_name[0] = name
        if name == "bare":
            return timed_steps(iter(data))
        if name == "minimal":
            wrap, undo = minimal_hooks(model, opt)
            try:
                return timed_steps(wrap(iter(data)))
            finally:
                undo()
        if name == "bare loader":
            return timed_steps(iter(DataLoader(data, batch_size=None)))
        if name == "injected":
            from bottleneckd.torch.inject import GlobalWatcher

            g = GlobalWatcher(
                socket_path="/nonexistent/sock", local_sampling=False, print_epoch=False, roofline_step=None
            )
            try:
                return timed_steps(iter(DataLoader(data, batch_size=None)))
            finally:
                g.close()
        w = _watch(model, opt, data, overhead_budget=None if name in ("every step timed", "full path") else "env")
        if name == "full path":
            w._plain_now = lambda: False  # type: ignore[method-assign]
        if name == "untimed":
            w.overhead_budget = 1e-12  # the least share timed (sampling.MIN_TIMED_SHARE), whatever the step
        try:
            return timed_steps(iter(w.dataloader))
        finally:
            w.flush()
            shares.setdefault(name, []).append(float(w.facts.get("timed_step_share") or 0.0))
            w.close()

    shares: dict[str, list[float]] = {}  # the share of steps timed in each block's last report
    for name in arms:  # warm-up
        arm(name)
    startup.clear()
    res: dict[str, list[float]] = {k: [] for k in arms}
    for r in range(a.rounds):
        order = list(arms)
        random.Random(r).shuffle(order)
        for name in order:
            res[name].append(arm(name))
    # one runnable thread of its own (one torch thread, this loop): its part of the load's rise
    load = LoadCheck(load.start, load1(), own=1.0, seconds=time.monotonic() - began)
    print(f"{a.rounds} rounds of {a.steps} steps, {len(arms)} arms interleaved in a shuffled order (thread CPU time)")
    for line in load.lines():
        print(line)
    if load.refused:
        print(f"NOT REPORTED: {load.refused}. Rerun on a quiet machine.")
        return 3
    for name, sh in shares.items():
        print(f"-- {name}: share of steps timed in a block's last report, median {statistics.median(sh):.3f}")
    against_bare = ("watched", "every step timed", "untimed", "full path", "minimal")
    pairs = [(name, "bare", f"{name} vs bare") for name in against_bare]
    pairs += [
        ("injected", "bare loader", "injected vs bare loader (bottleneckd run's instrumentation, the same DataLoader)"),
        ("watched", "minimal", "watched vs minimal (what the watcher adds over the floor)"),
    ]
    for name, base, title in pairs:
        if name in res and base in res:
            print(f"-- {title}")
            for line in PairedAB(res[base], res[name]).lines():
                print("  " + line)
            d = [w - b for b, w in zip(startup[base], startup[name], strict=True)]
            lo, hi = bootstrap_median_ci(d)
            print(
                f"  startup, once per attach (the first {a.settle} steps, in all): "
                f"median {statistics.median(d) * 1e6:+.0f} us, 95% CI [{lo * 1e6:+.0f}, {hi * 1e6:+.0f}]"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
