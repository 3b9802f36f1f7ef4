#!/usr/bin/env python3
"""The cost on a training step of watch()'s in-process stack sampling (samplers/self_stacks.py):
interleaved blocks of steps of a small CPU model with the sampling thread running and without it,
in alternating order, as ratios (sampled / bare step time). Also the cost of one sample on this
thread's CPU clock, and the share of a step it takes at the sampling rate.

    python scripts/bench_self_stacks.py [--pairs 20] [--steps 60] [--rate 5] [--rate 10]

Brief by design (a few seconds per rate): the sampler must not slow training measurably; the
ratio's interval (bottleneckd compare's Welch interval over the blocks) says what "measurably" is
on this machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bottleneckd.compare.stats import compare_durations  # noqa: E402
from bottleneckd.samplers.self_stacks import SELF_RATE_HZ, SelfStackSampler  # noqa: E402


def nested(depth: int, fn):  # a training loop called from a few levels of the user's code, as in a real script
    return fn() if depth == 0 else nested(depth - 1, fn)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=20, help="pairs of blocks (one sampled, one bare) per rate")
    ap.add_argument("--steps", type=int, default=60, help="training steps per block")
    ap.add_argument("--rate", type=float, action="append", help=f"samples per second (default {SELF_RATE_HZ} and 10)")
    args = ap.parse_args()
    rates = args.rate or [SELF_RATE_HZ, 10.0]
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(256, 256), torch.randint(0, 10, (256,))
    loss_fn = nn.CrossEntropyLoss()

    def block() -> float:
        t0 = time.perf_counter()
        for _ in range(args.steps):
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        return (time.perf_counter() - t0) / args.steps

    for _ in range(3):
        nested(20, block)  # warm-up
    for rate in rates:
        bare, sampled, ratios = [], [], []
        taken = 0
        for p in range(args.pairs):
            pair = {}
            for mode in ("bare", "sampled") if p % 2 == 0 else ("sampled", "bare"):
                if mode == "bare":
                    pair[mode] = nested(20, block)
                else:
                    s = SelfStackSampler(rate_hz=rate).start()
                    pair[mode] = nested(20, block)
                    s.stop()
                    taken += s.samples_total
            bare.append(pair["bare"])
            sampled.append(pair["sampled"])
            ratios.append(pair["sampled"] / pair["bare"])
        c = compare_durations(sampled, bare)  # speed-up of bare over sampled: the sampler's slowdown
        lo, hi = c.ci or (float("nan"), float("nan"))
        print(
            f"rate {rate:g} Hz: bare {statistics.median(bare) * 1e3:.2f} ms/step; sampled/bare step time per adjacent "
            f"pair: median x{statistics.median(ratios):.4f} (quartiles x{statistics.quantiles(ratios, n=4)[0]:.4f}, "
            f"x{statistics.quantiles(ratios, n=4)[2]:.4f}); over blocks x{c.speedup:.4f} "
            f"(95% CI x{lo:.4f} to x{hi:.4f}, {c.verdict}); {taken} stack samples in {args.pairs} blocks"
        )
    # one sample's own cost, away from the noise of training steps: this thread's CPU clock
    s = SelfStackSampler()
    import threading

    done = threading.Event()
    t = threading.Thread(target=lambda: nested(20, lambda: done.wait()), daemon=True)
    t.start()
    s.thread_id = t.ident
    n = 2000
    t0 = time.thread_time()
    for _ in range(n):
        s.sample_once()
    per = (time.thread_time() - t0) / n
    done.set()
    step = statistics.median(bare)
    for rate in rates:
        per_s, per_step = per * rate, per * rate * step
        print(
            f"one sample of a {20 + 3}-frame stack: {per * 1e6:.1f} us of CPU; at {rate:g} Hz {per_s * 1e6:.0f} us per "
            f"second = {per_s * 100:.3f}% of one core ({per_step * 1e6:.2f} us per {step * 1e3:.2f} ms step)"
        )


if __name__ == "__main__":
    main()
