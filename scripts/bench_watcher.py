#!/usr/bin/env python3
"""Benchmark the torch hook: (1) the watcher's per-step cost on a small CPU model, interleaved
blocks of steps with and without it; (2) each mitigation's measured speed-up (wall clock,
verify=True) on a workload with the matching bottleneck beside one without it.

    python scripts/bench_watcher.py [--blocks 40] [--steps 500] [--settle 40] [--only overhead|mitigations]
        [--device cpu|cuda] [--clock wall|cpu] [--loader list|dataloader] [--show-anyway]

Target (issue 23): A/B at most 10 microseconds and 0.5% of the step, on a quiet machine (load
average below 0.5), the instrumentation's own work at most 5 us. The overhead figure is the median
of paired differences with a bootstrap 95% confidence interval, its low tails and the ratio; it is
not reported (exit status 3) when the load average moved by more than 0.5 during the run. On a busy
shared machine use --clock cpu and many short blocks, and the load-independent counts of
scripts/bench_hook_counts.py (calls, allocations, instructions per step).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).resolve().parent / "workloads"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bottleneckd.torch import watch  # noqa: E402
from bottleneckd.torch.demo import CostlyImages  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_stats import LoadCheck, PairedAB, load1  # noqa: E402


def one_thread_cpu_clock() -> Callable[[], float]:
    """The A/B benchmarks' clock on a shared machine: one torch thread, seeded, and this thread's CPU
    time (time spent waiting for a core is not counted)."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    return time.thread_time


def small_model() -> nn.Module:
    return nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


class _NullStep(nn.Module):
    """A forward that does nothing: the hooks' own work is what remains of a null step."""

    def forward(self, x):
        return x


class _NullOptimizer(torch.optim.Optimizer):
    """An optimizer whose step does nothing, through torch's step-hook machinery (profile_hook_step)."""

    def __init__(self, params) -> None:
        super().__init__(params, {})

    def step(self, closure=None):  # noqa: D102
        return None


def _watch(model, opt, loader, **kw):
    return watch(
        model,
        opt,
        loader,
        local_sampling=False,
        print_epoch=False,
        roofline_step=None,
        socket_path="/nonexistent/sock",
        **kw,
    )


def overhead(
    blocks: int,
    steps: int,
    device: str = "cpu",
    clock: str = "wall",
    settle: int = 40,
    loader: str = "list",
    show_anyway: bool = False,
) -> int:
    """``clock="cpu"``: one torch thread and this thread's CPU time, which a busy shared machine
    does not inflate (time spent waiting for a core is not counted); ``"wall"``: the default.

    Blocks of bare and watched steps alternate (bare, watched, then watched, bare, ...); each pair
    of adjacent blocks gives one difference and one ratio. Each block first runs ``settle`` untimed
    steps, in both arms: the watcher is attached anew for every block, and the first steps after
    attaching (or detaching) run slower while the interpreter's inline caches at torch's call sites
    re-specialise (measured: ~0.6 ms in all over the first ~6 steps, then nothing), and a sampling
    watcher times its first two windows of steps (~34) to learn the step's length before its first
    rest (sampling.py); a training run pays both once, not per step. That one-time cost is printed
    on its own. The steps after it are the steady state: ``steps`` long enough to span the
    watcher's reports and the window of timed steps after each (500 at the default).

    The load average is read at start and end: when it moved by more than 0.5 the A/B figure is
    not reported (``show_anyway`` prints it, labelled provisional). Returns the exit status."""
    load = LoadCheck(load1(), None)
    began = time.monotonic()
    if clock == "cpu":
        now = one_thread_cpu_clock()
    else:
        torch.manual_seed(0)
        now = time.perf_counter
    model = small_model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(128, 256, device=device), torch.randint(0, 10, (128,), device=device)
    n_items = settle + steps + 1
    if loader == "dataloader":  # the loader object instrumented in place (its class swapped), as `watch(m, o, loader)`
        from torch.utils.data import TensorDataset

        data = DataLoader(TensorDataset(x.cpu().repeat(n_items, 1), y.cpu().repeat(n_items)), batch_size=128)
    else:
        data = [(x, y)] * n_items
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
    bare, watched, settling = [], [], []
    for b in range(blocks):
        pair = {}
        for mode in ("bare", "watched") if b % 2 == 0 else ("watched", "bare"):  # interleaved, alternating order
            if mode == "bare":
                pair[mode] = run(data)
                pair["bare_first"] = first[-1]
            else:  # attached for this block only: the bare arm runs a loop with nothing of ours in it
                w = _watch(model, opt, data)
                pair[mode] = run(w.dataloader)
                pair["watched_first"] = first[-1]
                w.close()
        settling.append(pair["watched_first"] - pair["bare_first"])
        bare.append(pair["bare"])
        watched.append(pair["watched"])
    # the benchmark's own runnable threads (torch's, this one among them): their part of the load's rise
    load = LoadCheck(load.start, load1(), own=float(torch.get_num_threads()), seconds=time.monotonic() - began)
    print(f"overhead on {device} ({clock} clock, {loader} loader): {blocks} pairs of {steps} steps, interleaved")
    for line in load.lines():
        print(line)
    ab = PairedAB(bare, watched)
    refused = load.refused
    if refused and not show_anyway:
        print(f"A/B NOT REPORTED: {refused}. Rerun on a quiet machine (or --show-anyway for provisional figures).")
        status = 3
    else:
        if refused:
            print(f"PROVISIONAL figures (--show-anyway): {refused}")
        tag = "PROVISIONAL: " if refused else ""
        for line in ab.lines():
            print(tag + line)
        status = 0
    print(
        f"one-time cost of attaching, over the first {settle} steps (not in the figures above): "
        f"median {statistics.median(settling) * 1e3:+.2f} ms"
    )
    own = own_work(device)
    b = statistics.median(bare)
    print(
        f"instrumentation work alone, through its hooks (null step, watched minus bare, thread CPU time): "
        f"{own * 1e6:.2f} us per step = {own / b * 100:.2f}% of this step"
    )
    return status


def own_work(device: str = "cpu", n: int = 450, reps: int = 40) -> float:
    """The instrumentation's own work per step, through the entry points a training loop calls:
    the timed iterator's ``next``, the forward wrapper, the optimizer's step hooks (torch's own
    dispatch of them included) and its share of the reports (``report_every`` spans ~``n`` steps).
    A null step (a forward returning its input, an optimizer step doing nothing) is timed bare and
    watched, interleaved, on this thread's CPU clock; the median difference per step is returned."""
    model = _NullStep()
    p = nn.Parameter(torch.zeros(1, device=device))
    opt = _NullOptimizer([p])
    x = torch.zeros(128, 1, device=device)
    data = [(x, None)] * (n + 1)

    def loop(loader, flush=None) -> float:
        it = iter(loader)
        t0 = time.thread_time()
        for _ in range(n):
            xb, _ = next(it)
            model(xb)
            opt.step()
        if flush is not None:
            flush()  # one report's drain and send per ~n steps, as at the default 0.5 s on a ~1 ms step
        return (time.thread_time() - t0) / n

    diffs = []
    for r in range(reps):
        pair = {}
        for mode in ("bare", "watched") if r % 2 == 0 else ("watched", "bare"):
            if mode == "bare":
                pair[mode] = loop(data)
            else:
                w = _watch(model, opt, data, report_every=1e9)
                loop(w.dataloader)  # settle (inline caches), then measure
                pair[mode] = loop(w.dataloader, w.flush)
                w.close()
        diffs.append(pair["watched"] - pair["bare"])
    return statistics.median(diffs)


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
    ap.add_argument(
        "--steps",
        type=int,
        default=500,
        help="overhead: a block's steps after --settle; 500 steps of ~1.5 ms span the watcher's reports "
        "(every 0.5 s) and the windows of timed steps after each (sampling.py): the steady state",
    )
    ap.add_argument(
        "--settle",
        type=int,
        default=40,
        help="overhead: a block's first steps, timed apart (the one-time cost of attaching: inline caches "
        "re-specialise over ~6 steps; a sampling watcher times its first ~34 steps before its first rest)",
    )
    ap.add_argument("--only", choices=["overhead", "mitigations"], default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--clock", choices=["wall", "cpu"], default="wall", help="cpu: this thread's CPU time, one torch thread"
    )
    ap.add_argument("--cases", nargs="*", help="only these mitigations")
    ap.add_argument(
        "--loader",
        choices=["list", "dataloader"],
        default="list",
        help="overhead: batches from a list (timed through a proxy) or a DataLoader (its class swapped in place)",
    )
    ap.add_argument(
        "--show-anyway",
        action="store_true",
        help="overhead: print the A/B even when the load moved by more than 0.5 (labelled provisional)",
    )
    args = ap.parse_args()
    status = 0
    if args.only in (None, "overhead"):
        status = overhead(
            args.blocks,
            args.steps,
            args.device,
            args.clock,
            settle=args.settle,
            loader=args.loader,
            show_anyway=args.show_anyway,
        )
    if args.only in (None, "mitigations"):
        mitigations(args.device, args.cases)
    return status


if __name__ == "__main__":
    sys.exit(main())
