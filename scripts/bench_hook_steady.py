#!/usr/bin/env python3
"""The hook's steady-state cost per step, A/B interleaved a few steps at a time (issue 23).

On this VM the same bare loop drifts by up to 50% over seconds (1.44 to 2.27 ms a step in
consecutive 500-step blocks, no CPU steal: the host's load on the shared core and memory), so
block-level A/B pairs a second apart differ by ~190 us a step (the standard deviation of
adjacent bare blocks) and their median's confidence interval stays ~+-15 us after 150 pairs
(bench_hook_floor.py). Alternating every few steps cancels that drift: two identical models,
each with its own optimizer and batches, train side by side; one is watched by a watcher that
stays attached for the whole run (its hooks are on that model and optimizer only: ``watch()``
installs nothing global), the other has nothing of ours. Each round runs ``--steps`` steps of one
and then of the other (which goes first alternates, so each model runs 2 x ``--steps`` steps in
a row but the first), on this thread's CPU clock; the round's difference per step is one pair.
Halfway the roles swap (the watcher is closed and a new one put on the other model, past its
startup again), so that any difference between the two models themselves (where their tensors
lie) cancels. Before each half the watcher's first ``--settle`` steps are run untimed: what a
job pays once after attaching (bench_hook_floor.py measures it).

The watcher sees the wall time of both models' steps between its own: its step looks twice as
long as it is, as long as each of its windows of timed steps (16, sampling.WINDOW_STEPS) spans a
run of the other model's steps, which ``--steps`` at most 8 ensures. What it is allowed per step
(sampling.py: the overhead budget times the step) and how often it reports (every 0.5 s of wall
time, a window of timed steps after each) would double per step of its own; both are corrected
here: the budget is half the default (the share of the watched model's true step stays the
default 0.5%) and ``report_every`` twice the default (as many reports per watched step as a job
of its step length would see). ``--every-step`` times every step instead
(``overhead_budget=None``): what a timed step costs.

This measures ``watch()``; ``bottleneckd run``'s instrumentation installs global optimizer hooks
and the loader's ``__iter__`` for every DataLoader, which would see both models: it is measured by
bench_hook_floor.py's ``injected`` arm. Refused (exit 3) when the load average moved by more than
0.5 besides the benchmark's own thread (scripts/ab_stats.py).

    python scripts/bench_hook_steady.py [--rounds 2000] [--steps 8] [--settle 60] [--null] [--every-step]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_stats import LoadCheck, PairedAB, load1  # noqa: E402
from bench_watcher import _watch, one_thread_cpu_clock, small_model  # noqa: E402

from bottleneckd.torch import sampling  # noqa: E402

#: the watched model's share of the wall time: its steps alternate with the other model's
WATCHED_SHARE = 0.5
#: the watcher's default report_every (Watcher, 0.5 s) stretched by the other model's steps
REPORT_EVERY_S = 0.5 / WATCHED_SHARE
#: the default budget (sampling.OVERHEAD_BUDGET) of a step that looks 1 / WATCHED_SHARE as long
BUDGET = sampling.OVERHEAD_BUDGET * WATCHED_SHARE
#: the longest run of one model's steps a round for which every window of timed steps
#: (sampling.WINDOW_STEPS) spans the other model's steps (runs of 2 x steps in a row, but the first)
MAX_STEPS = sampling.WINDOW_STEPS // 2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2000, help="rounds, each a run of steps of both models")
    ap.add_argument("--steps", type=int, default=8, help="steps of one model a round, 1 to 8 (the docstring)")
    ap.add_argument("--settle", type=int, default=60, help="the watched model's first steps, untimed (startup)")
    ap.add_argument("--null", action="store_true", help="no watcher on either model: the design's own noise and bias")
    ap.add_argument("--every-step", action="store_true", help="time every step (overhead_budget=None)")
    a = ap.parse_args()
    if a.rounds < 4 or a.rounds % 4 or not 1 <= a.steps <= MAX_STEPS or a.settle < 0:
        print(
            f"--rounds must be a multiple of 4 (each half as many rounds of each order), --steps 1 to {MAX_STEPS} "
            "(each window of timed steps spans the other model's steps), --settle not negative",
            file=sys.stderr,
        )
        return 2
    load = LoadCheck(load1(), None)
    began = time.monotonic()
    now = one_thread_cpu_clock()
    loss_fn = nn.CrossEntropyLoss()
    models = [small_model(), small_model()]
    opts = [torch.optim.SGD(m.parameters(), lr=0.01) for m in models]
    batches = [(torch.randn(128, 256), torch.randint(0, 10, (128,))) for _ in models]
    half = a.rounds // 2
    need = a.settle + (half + 1) * a.steps + 1

    def run(k: int, it: Any, n: int) -> float:
        model, opt = models[k], opts[k]
        t = now()
        for _ in range(n):
            xb, yb = next(it)
            opt.zero_grad()
            loss_fn(model(xb), yb).backward()
            opt.step()
        return (now() - t) / n if n else 0.0

    bare: list[float] = []
    watched: list[float] = []
    shares: list[float] = []
    for watched_k in (0, 1):
        bare_k = 1 - watched_k
        data = [batches[watched_k]] * need
        budget = None if a.every_step else BUDGET
        w = (
            None
            if a.null
            else _watch(models[watched_k], opts[watched_k], data, report_every=REPORT_EVERY_S, overhead_budget=budget)
        )
        try:
            its = {watched_k: iter(w.dataloader if w else data), bare_k: iter([batches[bare_k]] * need)}
            run(watched_k, its[watched_k], a.settle)  # the startup: paid once per attach
            run(bare_k, its[bare_k], a.settle)
            for r in range(half):
                order = (watched_k, bare_k) if r % 2 == 0 else (bare_k, watched_k)
                got = {k: run(k, its[k], a.steps) for k in order}
                bare.append(got[bare_k])
                watched.append(got[watched_k])
            if w is not None:
                w.flush()
                shares.append(float(w.facts.get("timed_step_share") or 0.0))
        finally:
            if w is not None:
                w.close()
    load = LoadCheck(load.start, load1(), own=1.0, seconds=time.monotonic() - began)
    print(
        f"{2 * half} rounds of {a.steps} steps of each model, interleaved, roles swapped halfway "
        "(thread CPU time, one torch thread)"
    )
    for line in load.lines():
        print(line)
    if load.refused:
        print(f"NOT REPORTED: {load.refused}. Rerun on a quiet machine.")
        return 3
    print(
        "share of the watched steps timed in the last report of each half (a partial interval, not the "
        f"steady state's): {', '.join(f'{s:.3f}' for s in shares)}"
    )
    what = "none (--null)" if a.null else "every step timed" if a.every_step else "sampled steps, the default budget"
    print(f"-- watched (watch(), {what}) vs bare, the steady state")
    for line in PairedAB(bare, watched).lines():
        print("  " + line)
    for k, name in ((slice(0, half), "first half"), (slice(half, None), "second half")):
        d = [w_ - b_ for b_, w_ in zip(bare[k], watched[k], strict=True)]
        print(
            f"  {name} (the watcher on model {0 if k.start == 0 else 1}): "
            f"median {statistics.median(d) * 1e6:+.2f} us/step"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
