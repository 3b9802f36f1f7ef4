#!/usr/bin/env python3
"""Benchmark the torch hook: (1) the watcher's per-step cost on a small CPU model, interleaved
blocks of steps with and without it; (2) each mitigation's measured speed-up (wall clock,
verify=True) on a workload with the matching bottleneck beside one without it.

    python scripts/bench_watcher.py [--blocks 40] [--steps 100] [--only overhead|mitigations] [--device cpu|cuda] [--clock wall|cpu]

Target (issue 10): A/B at most 20 microseconds and 1% of the step. On a busy shared machine use
--clock cpu and many short blocks; the low-tail figures are the least sensitive to other processes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).resolve().parent / "workloads"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bottleneckd.torch import watch  # noqa: E402
from bottleneckd.torch.demo import CostlyImages  # noqa: E402


def small_model() -> nn.Module:
    return nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


def overhead(blocks: int, steps: int, device: str = "cpu", clock: str = "wall", settle: int = 10) -> None:
    """``clock="cpu"``: one torch thread and this thread's CPU time, which a busy shared machine
    does not inflate (time spent waiting for a core is not counted); ``"wall"``: the default.

    Each block first runs ``settle`` untimed steps, in both arms: the watcher is attached anew for
    every block, and the first steps after attaching (or detaching) run slower while the
    interpreter's inline caches at torch's call sites re-specialise (measured: ~0.6 ms in all over
    the first ~6 steps, then nothing); a training run pays that once, not per step. That one-time
    cost is printed on its own."""
    torch.manual_seed(0)
    now = time.perf_counter
    if clock == "cpu":
        torch.set_num_threads(1)
        now = time.thread_time
    model = small_model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(128, 256, device=device), torch.randint(0, 10, (128,), device=device)
    data = [(x, y)] * (settle + steps + 1)
    loss_fn = nn.CrossEntropyLoss()

    def step(it) -> None:
        xb, yb = next(it)
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()

    def run(loader) -> float:
        it = iter(loader)  # never exhausted inside the timed region: the epoch-end report is not a step's cost
        t0 = now()
        for _ in range(settle):
            step(it)
        if device == "cuda":
            torch.cuda.synchronize()
        t1 = now()
        for _ in range(steps):
            step(it)
        if device == "cuda":
            torch.cuda.synchronize()  # the benchmark's own clock; the watcher never synchronises
        first.append(t1 - t0)
        return (now() - t1) / steps

    first: list[float] = []
    for _ in range(3):
        run(data)  # warm-up: allocator, caches, clock frequency
    diffs, bare, watched, settling = [], [], [], []
    for b in range(blocks):
        pair = {}
        for mode in ("bare", "watched") if b % 2 == 0 else ("watched", "bare"):  # interleaved, alternating order
            if mode == "bare":
                pair[mode] = run(data)
                pair["bare_first"] = first[-1]
            else:  # attached for this block only: the bare arm runs a loop with nothing of ours in it
                w = watch(
                    model,
                    opt,
                    data,
                    local_sampling=False,
                    print_epoch=False,
                    roofline_step=None,
                    socket_path="/nonexistent/sock",
                )
                pair[mode] = run(w.dataloader)
                pair["watched_first"] = first[-1]
                w.close()
        settling.append(pair["watched_first"] - pair["bare_first"])
        diffs.append(pair["watched"] - pair["bare"])
        bare.append(pair["bare"])
        watched.append(pair["watched"])
    b, d = statistics.median(bare), statistics.median(diffs)
    q = statistics.quantiles(diffs, n=4)
    print(
        f"overhead on {device} ({clock} clock): bare {b * 1e6:.1f} us/step; watched minus bare, per adjacent pair of blocks: "
        f"median {d * 1e6:+.1f} us/step (quartiles {q[0] * 1e6:+.1f}, {q[2] * 1e6:+.1f}) over {blocks} pairs of {steps} steps"
    )
    print(f"overhead: {d / b * 100:+.2f}% of step time (ratio watched/bare {(b + d) / b:.4f})")
    print(
        f"one-time cost of attaching, over the first {settle} steps (not in the figures above): "
        f"median {statistics.median(settling) * 1e3:+.2f} ms"
    )
    qb, qw = statistics.quantiles(bare, n=10)[0], statistics.quantiles(watched, n=10)[0]
    print(
        f"low tails (less sensitive to other processes): 10th percentile watched minus bare {(qw - qb) * 1e6:+.1f} us/step, "
        f"fastest block watched minus bare {(min(watched) - min(bare)) * 1e6:+.1f} us/step"
    )
    # the instrumentation's own work, without the noise of training steps around it: the marks of
    # a step and its share of the reports (drain + send), on this thread's CPU clock
    w = watch(
        model,
        opt,
        None,
        local_sampling=False,
        print_epoch=False,
        roofline_step=None,
        socket_path="/nonexistent/sock",
        hooks=False,
        report_every=1e9,
    )
    n = 450  # about one report interval of these steps
    costs = []
    for _ in range(40):
        t0 = time.thread_time()
        for _ in range(n):
            w.mark("step_start")
            w.mark("data_ready")
            w.forward_start((x,))
            w.mark("forward_end")
            w.before_optimizer_step((opt,), {})
            w.after_optimizer_step()
        w.flush()
        costs.append((time.thread_time() - t0) / n)
    if device == "cuda":
        torch.cuda.synchronize()
    direct = statistics.median(costs)
    w.close()
    print(
        f"instrumentation work alone (marks + reports, thread CPU time): {direct * 1e6:.2f} us per step = {direct / b * 100:.2f}% of this step"
    )


def trial(
    make, mitigation: str, kwargs: dict, device: str, before: int = 30, steps: int = 30, settle: int = 10
) -> float | None:
    """``settle`` steps first (start-up, caches, cuDNN autotuning), then ``before`` steps of
    baseline, then the mitigation measured over ``steps`` steps."""
    before += settle
    model, opt, loader, step, loss = make(device)
    w = watch(
        model,
        opt,
        loader,
        local_sampling=False,
        print_epoch=False,
        roofline_step=None,
        socket_path="/nonexistent/sock",
        cuda_sample_every=1,
    )  # every step timed: the baseline and the trial are both measured in full
    it = iter(w.dataloader)
    t = None
    deadline = time.monotonic() + 120
    for k in range(100000):  # until the trial decides (accumulation makes steps k times longer), or 2 minutes
        if time.monotonic() > deadline:
            break
        try:
            b = next(it)
        except StopIteration:
            it = iter(w.dataloader)
            b = next(it)
        step(model, opt, b, loss)
        if k == before - 1:
            if "loss_module" in kwargs:
                kwargs = {**kwargs, "loss_module": loss}
            try:
                t = w.apply(mitigation, verify=True, steps=steps, warmup=4, **kwargs)
            except ValueError as e:  # does not apply to this workload (e.g. no DataLoader)
                print(f"  {mitigation} on {make.__name__}: not applicable ({e})")
                w.close()
                return None
        if t is not None and t.kept is not None:
            break
    if device == "cuda":
        torch.cuda.synchronize()
    w.close()
    return None if t is None else t.ratio


def loss_step(model, opt, b, loss) -> None:
    x, y = b
    x, y = (
        x.to(next(model.parameters()).device, non_blocking=True),
        y.to(next(model.parameters()).device, non_blocking=True),
    )
    opt.zero_grad()
    loss(model(x), y).backward()
    opt.step()


def data_bound(device: str):
    torch.set_num_threads(1)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 10)
    ).to(device)
    loader = DataLoader(CostlyImages(100000, 24), batch_size=32, num_workers=1)
    return model, torch.optim.SGD(model.parameters(), lr=0.01), loader, loss_step, nn.CrossEntropyLoss()


def compute_bound(device: str):
    torch.set_num_threads(2)
    width = 2048 if device == "cpu" else 8192
    model = nn.Sequential(
        nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10)
    ).to(device)
    xs = [
        (
            torch.randn(256 if device == "cpu" else 4096, width),
            torch.randint(0, 10, (256 if device == "cpu" else 4096,)),
        )
    ] * 100000
    return model, torch.optim.SGD(model.parameters(), lr=0.01), xs, loss_step, nn.CrossEntropyLoss()


def conv_bound(device: str):
    torch.set_num_threads(2)
    model = nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(64, 64, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 10),
    ).to(device)
    n = 32 if device == "cpu" else 256
    xs = [(torch.randn(n, 3, 64, 64), torch.randint(0, 10, (n,)))] * 100000
    return model, torch.optim.SGD(model.parameters(), lr=0.01), xs, loss_step, nn.CrossEntropyLoss()


CASES = [  # mitigation, kwargs, matching workload, other workload
    ("data_echoing", {"factor": 2}, data_bound, compute_bound),
    (
        "dataloader_settings",
        {"num_workers": 2, "persistent_workers": True, "prefetch_factor": 4},
        data_bound,
        compute_bound,
    ),
    ("mixed_precision", {"dtype": "bfloat16"}, compute_bound, data_bound),
    ("channels_last", {}, conv_bound, data_bound),
    ("progressive_resizing", {"total_steps": 400, "start_scale": 0.5, "until": 0.9}, conv_bound, data_bound),
    ("selective_backprop", {"loss_module": None, "keep": 0.5}, compute_bound, data_bound),
    ("activation_checkpointing", {}, compute_bound, data_bound),
    ("gradient_accumulation", {"k": 4}, compute_bound, data_bound),
]


def mitigations(device: str, only: list[str] | None = None) -> None:
    print(f"\nmitigation speed-ups on {device} (wall-clock throughput after / before, verify=True, 30 steps each)")
    print(f"{'mitigation':<26} {'matching workload':<30} {'ratio':>7}   {'other workload':<30} {'ratio':>7}")
    for name, kw, match, other in CASES:
        if only and name not in only:
            continue
        if name == "dataloader_settings" and device == "cuda":
            kw = {**kw, "pin_memory": True}
        r1 = trial(match, name, dict(kw), device)
        r2 = trial(other, name, dict(kw), device)
        f = lambda r: "n/a" if r is None else f"{r:.3f}"  # noqa: E731
        print(f"{name:<26} {match.__name__:<30} {f(r1):>7}   {other.__name__:<30} {f(r2):>7}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--blocks", type=int, default=40)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--only", choices=["overhead", "mitigations"], default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--clock", choices=["wall", "cpu"], default="wall", help="cpu: this thread's CPU time, one torch thread"
    )
    ap.add_argument("--cases", nargs="*", help="only these mitigations")
    args = ap.parse_args()
    if args.only in (None, "overhead"):
        overhead(args.blocks, args.steps, args.device, args.clock)
    if args.only in (None, "mitigations"):
        mitigations(args.device, args.cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
