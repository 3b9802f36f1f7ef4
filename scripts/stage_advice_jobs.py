#!/usr/bin/env python3
"""The small jobs behind the knowledge base's entries beyond the paper's section 6.1 (issue 20):
each job's step time as written and with the change its advice names, in interleaved blocks (the
machine's load falls on both), and the verdict and first recommendation bottleneckd gives the job
as written (``watch()`` with the in-process sidecar).

    python scripts/stage_advice_jobs.py [--blocks 4] [--steps 30] [--only metric|checkpoint|latency]

- metric: a pure-Python metric over the batch every step, vs every 10 steps (stage other).
- checkpoint: torch.save + fsync every step, vs every 10 steps without fsync (stage other, storage).
- latency: a Dataset that sleeps 4 ms in __getitem__ (nothing busy), num_workers=0 vs 4 workers
  with prefetch_factor=4 (stage data, undetermined: latency).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bottleneckd.torch import watch  # noqa: E402

torch.set_num_threads(1)


def py_metric(x: torch.Tensor) -> float:
    """A metric written in plain Python over every element (what a user's accuracy helper does)."""
    vals = x.detach().flatten().tolist()
    return sum(v * v for v in vals) / max(1, len(vals)) + sum(1 for v in vals if v > 0)


class Sleepy(Dataset):
    def __init__(self, n: int, sleep: float) -> None:
        self.n, self.sleep = n, sleep

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(self.sleep)
        return torch.full((64,), float(i))


def model_opt() -> tuple[nn.Module, torch.optim.Optimizer]:
    m = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    return m, torch.optim.SGD(m.parameters(), lr=0.01)


def metric_job(every: int, steps: int) -> float:
    m, opt = model_opt()
    x = torch.randn(256, 64)
    t0 = time.perf_counter()
    for s in range(steps):
        opt.zero_grad()
        out = m(x)
        out.pow(2).mean().backward()
        opt.step()
        if s % every == 0:
            py_metric(torch.cat([x, out], dim=1))
    return (time.perf_counter() - t0) / steps


def checkpoint_job(every: int, fsync: bool, steps: int, where: str) -> float:
    m, opt = model_opt()
    big = nn.Linear(1024, 1024)  # ~4 MB of state saved with the model
    x = torch.randn(64, 64)
    path = os.path.join(where, "ckpt.pt")
    t0 = time.perf_counter()
    for s in range(steps):
        opt.zero_grad()
        m(x).pow(2).mean().backward()
        opt.step()
        if s % every == 0:
            with open(path, "wb") as f:
                torch.save({"m": m.state_dict(), "big": big.state_dict()}, f)
                if fsync:
                    f.flush()
                    os.fsync(f.fileno())
    return (time.perf_counter() - t0) / steps


def latency_job(workers: int, steps: int) -> float:
    m, opt = model_opt()
    kw = {"num_workers": workers, "prefetch_factor": 4, "persistent_workers": True} if workers else {}
    loader = DataLoader(Sleepy(steps * 4 + 16 * max(1, workers), 0.004), batch_size=4, **kw)
    it = iter(loader)
    next(it)  # worker start-up is not the step
    t0 = time.perf_counter()
    for _ in range(steps):
        x = next(it)
        opt.zero_grad()
        m(x).pow(2).mean().backward()
        opt.step()
    return (time.perf_counter() - t0) / steps


def ab(name: str, a, b, blocks: int) -> None:
    """Interleaved blocks of A (as written) and B (with the advice); median step time of each."""
    ta, tb = [], []
    for _ in range(blocks):
        ta.append(a())
        tb.append(b())
    ma, mb = statistics.median(ta), statistics.median(tb)
    print(
        f"{name}: as written {1000 * ma:.2f} ms/step, with the advice {1000 * mb:.2f} ms/step: x{ma / mb:.2f} "
        f"(blocks A {', '.join(f'{1000 * t:.1f}' for t in ta)}; B {', '.join(f'{1000 * t:.1f}' for t in tb)})"
    )


def watched(kind: str, steps: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        m, opt = model_opt()
        if kind == "latency":
            data = DataLoader(Sleepy(steps * 4, 0.004), batch_size=4)
        else:
            data = [torch.randn(256, 64) for _ in range(steps)]
        w = watch(m, opt, data, socket_path=f"{d}/s.sock", local_sampling=True, interval=0.25, print_epoch=False)
        for _ in range(3):
            for x in w.dataloader:
                opt.zero_grad()
                out = m(x)
                out.pow(2).mean().backward()
                opt.step()
                if kind == "metric":
                    py_metric(torch.cat([x, out], dim=1))
                elif kind == "checkpoint":
                    with open(f"{d}/ckpt.pt", "wb") as f:
                        torch.save({"m": m.state_dict(), "big": nn.Linear(1024, 1024).state_dict()}, f)
                        f.flush()
                        os.fsync(f.fileno())
        rep = w.epoch_reports[-1]
        w.close()
        doc = rep.report or {}
        v = doc.get("verdict", {})
        recs = [r["id"] for r in doc.get("recommendations", [])][:3]
        print(f"  bottleneckd on {kind} as written: {v.get('resource')} / {v.get('stage')}; advice {recs}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--only", choices=("metric", "checkpoint", "latency"))
    a = ap.parse_args()
    n = a.steps
    if a.only in (None, "metric"):
        ab("metric", lambda: metric_job(1, n), lambda: metric_job(10, n), a.blocks)
        watched("metric", n)
    if a.only in (None, "checkpoint"):
        with tempfile.TemporaryDirectory(dir=os.getcwd()) as d:
            ab(
                "checkpoint",
                lambda: checkpoint_job(1, True, n, d),
                lambda: checkpoint_job(10, False, n, d),
                a.blocks,
            )
        watched("checkpoint", n)
    if a.only in (None, "latency"):
        ab("latency", lambda: latency_job(0, n), lambda: latency_job(4, n), a.blocks)
        watched("latency", n)


if __name__ == "__main__":
    main()
