#!/usr/bin/env python3
"""The hook's per-step cost in measures that do not depend on the machine's load: Python and C
function calls, memory blocks kept, gen-0 collections (at the default thresholds, and at threshold
1, where each collection marks two container objects made and alive at once) and
(``--callgrind``) instructions and allocator calls, per step, bare vs watched, on three loops:

- ``real``: the step of ``bench_watcher.py --only overhead`` (a 3-layer MLP, batch 128, SGD,
  batches from a list), one torch thread;
- ``ddp``: the ``real`` step with the model in DistributedDataParallel (a gloo group of one rank
  in this process: the reducer, its bucket hook and ours run as on every rank);
- ``null``: a forward that returns its input and an optimizer step that does nothing, through
  torch's own module call and step-hook machinery: what remains is the instrumentation's work.

    python scripts/bench_hook_counts.py [--steps 600] [--report-steps 300] [--loader list|dataloader]
        [--callgrind] [--root PATH]

Reports are made every ``--report-steps`` steps (explicit ``flush()``; ``report_every`` is set out
of reach), so that a report's share per step is the same at any speed: 300 steps is about the
default half second at this benchmark's ~1.5 ms step. ``--callgrind`` re-runs this script under
``valgrind --tool=callgrind`` and counts each loop's instructions (Ir) and calls of pymalloc's
allocator (``_PyObject_Malloc``/``_PyObject_Calloc``) per step, exactly and repeatably
(``--dump-after`` of a driver function around each loop). Under valgrind torch runs its AVX2
kernels (no AVX-512), so the bare step's instructions differ from a native run's; the watched
minus bare difference is Python code and does not. ``--root`` measures another checkout.
"""

from __future__ import annotations

import argparse
import collections
import functools
import gc
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOC_FUNCS = ("_PyObject_Malloc", "_PyObject_Calloc")


def _setup(root: str) -> None:
    sys.path.insert(0, root)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def make_loops(kind: str, loader: str, total: int):
    """(step(it), bare iterable, model, optimizer) for the ``real`` or ``null`` loop."""
    import torch
    from bench_watcher import _NullOptimizer, _NullStep, small_model  # after _setup: the checkout measured
    from torch import nn

    torch.manual_seed(0)
    torch.set_num_threads(1)
    if kind in ("real", "ddp"):
        model = small_model()
        if kind == "ddp":
            model = nn.parallel.DistributedDataParallel(model, process_group=_one_rank_group())
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(128, 256), torch.randint(0, 10, (128,))
        loss_fn = nn.CrossEntropyLoss()

        def step(it) -> None:
            xb, yb = next(it)
            opt.zero_grad()
            loss_fn(model(xb), yb).backward()
            opt.step()

    else:
        model = _NullStep()
        opt = _NullOptimizer([nn.Parameter(torch.zeros(1))])
        x, y = torch.zeros(128, 1), None

        def step(it) -> None:
            xb, _ = next(it)
            model(xb)
            opt.step()

    if loader == "dataloader":
        from torch.utils.data import DataLoader, TensorDataset

        ys = y.repeat(total) if y is not None else torch.zeros(128 * total)
        data = DataLoader(TensorDataset(x.repeat(total, 1), ys), batch_size=128)
    else:
        data = [(x, y)] * total
    return step, data, model, opt


def _one_rank_group():
    """A gloo process group of one rank in this process: DDP's reducer and bucket hook run as on
    every rank of a real job; the all-reduce has no peer to wait for."""
    import socket

    import torch.distributed as dist

    if not dist.is_initialized():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    return dist.group.WORLD


def _watch(model, opt, data):
    from bottleneckd.torch import watch

    return watch(
        model,
        opt,
        data,
        local_sampling=False,
        print_epoch=False,
        roofline_step=None,
        socket_path="/nonexistent/sock",
        report_every=1e12,
    )


def run_steps(step, it, n: int, report_steps: int, w) -> None:
    for i in range(n):
        step(it)
        if w is not None and (i + 1) % report_steps == 0:
            w.flush()


def counts(kind: str, steps: int, report_steps: int, loader: str) -> dict:
    """Calls, blocks and collections per step, bare and watched."""
    step, data, model, opt = make_loops(kind, loader, 4 * steps + 200)
    gen0 = [0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start" and info.get("generation") == 0:
            gen0[0] += 1

    out = {}
    for mode in ("bare", "watched"):
        w = _watch(model, opt, data) if mode == "watched" else None
        it = iter(w.dataloader if w is not None else data)
        run_steps(step, it, 50, report_steps, w)  # settle: inline caches, allocator
        if w is not None:
            w.flush()
        calls: collections.Counter = collections.Counter()

        def prof(frame, event, arg, calls=calls) -> None:
            if event == "call":
                calls["python"] += 1
            elif event == "c_call":
                calls["c"] += 1

        sys.setprofile(prof)
        run_steps(step, it, steps, report_steps, w)
        sys.setprofile(None)
        gc.callbacks.append(on_gc)
        gen0[0] = 0
        run_steps(step, it, steps, report_steps, w)
        default_gen0 = gen0[0]
        # the threshold at 1: a collection whenever two container objects made since the last one
        # are alive at once; a count of the containers the path makes, exact and repeatable
        old = gc.get_threshold()
        gc.collect()
        gen0[0] = 0
        gc.set_threshold(1, 1 << 30, 1 << 30)
        try:
            run_steps(step, it, steps, report_steps, w)
        finally:
            gc.set_threshold(*old)
        gc.callbacks.remove(on_gc)
        b0 = sys.getallocatedblocks()  # what the hot path keeps between two reports
        run_steps(step, it, steps, steps + 1, w)
        b1 = sys.getallocatedblocks()
        if w is not None:
            w.flush()
        out[mode] = {
            "python_calls": calls["python"] / steps,
            "c_calls": calls["c"] / steps,
            "blocks_kept": (b1 - b0) / steps,  # between two reports
            "gen0_per_1000": default_gen0 * 1000 / steps,
            "gen0_threshold1_per_step": gen0[0] / steps,
        }
        if w is not None:
            w.close()
        del it
    return out


# --- callgrind ----------------------------------------------------------------------------------
def _region(step, it, n: int, report_steps: int, w) -> None:
    """One measured loop inside functools.reduce, the C function callgrind collects and dumps around."""

    def body(acc, i):
        step(it)
        if w is not None and (i + 1) % report_steps == 0:
            w.flush()
        return None

    functools.reduce(body, range(n), None)


def under_callgrind(steps: int, report_steps: int, loader: str) -> None:
    """The child under valgrind: four regions, one dump each, in ORDER."""
    for kind in KINDS:
        step, data, model, opt = make_loops(kind, loader, steps + 200)
        for mode in ("bare", "watched"):
            w = _watch(model, opt, data) if mode == "watched" else None
            it = iter(w.dataloader if w is not None else data)
            run_steps(step, it, 50, report_steps, w)
            if w is not None:
                w.flush()
            _region(step, it, steps, report_steps, w)
            if w is not None:
                w.close()
            del it


KINDS = ("real", "null", "ddp")
ORDER = [(k, m) for k in KINDS for m in ("bare", "watched")]


def _parse(path: str) -> tuple[int, dict[str, int]]:
    """(Ir total, calls per allocator function) of one callgrind dump."""
    total, names, calls = 0, {}, collections.Counter()
    cfn = None
    for line in open(path, errors="replace"):
        if line.startswith("totals:") or line.startswith("summary:"):
            total = int(line.split()[1])
        elif line.startswith("cfn="):
            m = re.match(r"cfn=\((\d+)\)(?: (.*))?", line.strip())
            if m:
                if m.group(2):
                    names[m.group(1)] = m.group(2)
                cfn = names.get(m.group(1))
            else:
                cfn = line.strip()[4:]
        elif line.startswith("calls=") and cfn is not None:
            if cfn in ALLOC_FUNCS:
                calls[cfn] += int(line[6:].split()[0])
            cfn = None
    return total, dict(calls)


def callgrind(steps: int, report_steps: int, loader: str, root: str) -> dict:
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=functools_reduce",
            "--dump-after=functools_reduce",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--child",
            "--steps",
            str(steps),
            "--report-steps",
            str(report_steps),
            "--loader",
            loader,
            "--root",
            root,
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1"}
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        parts = sorted(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
        parts = [p for p in parts if _parse(p)[0] > 0]
        if len(parts) != len(ORDER):
            raise SystemExit(f"expected {len(ORDER)} callgrind dumps, got {len(parts)}")
        res: dict = {}
        for (kind, mode), p in zip(ORDER, parts, strict=True):
            ir, calls = _parse(p)
            res.setdefault(kind, {})[mode] = {"instructions": ir / steps, "allocs": sum(calls.values()) / steps}
        return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--report-steps", type=int, default=300)
    ap.add_argument("--loader", choices=["list", "dataloader"], default="list")
    ap.add_argument("--callgrind", action="store_true", help="also instructions and allocator calls (slow)")
    ap.add_argument("--cg-steps", type=int, default=300, help="steps per loop under callgrind")
    ap.add_argument("--root", default=str(ROOT), help="the checkout to measure (default: this one)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    _setup(a.root)
    if a.child:
        under_callgrind(a.steps, a.report_steps, a.loader)
        return 0
    result: dict = {"root": a.root, "steps": a.steps, "report_steps": a.report_steps, "loader": a.loader}
    for kind in KINDS:
        c = counts(kind, a.steps, a.report_steps, a.loader)
        result[kind] = c
        for mode in ("bare", "watched"):
            v = c[mode]
            print(
                f"{kind:4s} {mode:7s}: {v['python_calls']:7.2f} Python calls, {v['c_calls']:7.2f} C calls, "
                f"{v['blocks_kept']:+6.3f} blocks kept, {v['gen0_per_1000']:6.2f} gen-0 collections per 1000 steps, "
                f"{v['gen0_threshold1_per_step']:6.2f} gen-0 at threshold 1 per step"
            )
        d = {k: c["watched"][k] - c["bare"][k] for k in c["bare"]}
        print(
            f"{kind:4s} watched - bare: {d['python_calls']:+.2f} Python calls, {d['c_calls']:+.2f} C calls, "
            f"{d['blocks_kept']:+.3f} blocks kept, {d['gen0_per_1000']:+.2f} gen-0 collections per 1000 steps, "
            f"{d['gen0_threshold1_per_step']:+.2f} gen-0 at threshold 1 per step"
        )
    if a.callgrind:
        cg = callgrind(a.cg_steps, a.report_steps, a.loader, a.root)
        result["callgrind"] = cg
        for kind, v in cg.items():
            b, w = v["bare"], v["watched"]
            print(
                f"{kind:4s} callgrind: bare {b['instructions']:,.0f} instructions and {b['allocs']:.1f} allocations "
                f"per step; watched {w['instructions'] - b['instructions']:+,.0f} instructions "
                f"({(w['instructions'] / b['instructions'] - 1) * 100:+.2f}%) and {w['allocs'] - b['allocs']:+.1f} "
                "allocations per step"
            )
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
