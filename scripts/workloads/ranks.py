"""Shared by the multi-rank workloads: process-group set-up and a timed loop that every rank
leaves at the same step (a one-element all-reduce of "time is up" after each step)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from common import report, set_threads


def init(rank: int, world: int, port: int | None = None) -> None:
    """Join a gloo process group (from torchrun's environment when ``port`` is None)."""
    import torch.distributed as dist

    set_threads()
    if port is not None:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
    else:
        dist.init_process_group("gloo")


def timed_loop(step: Callable[[], None], seconds: float, unit: str = "steps") -> None:
    """Run ``step`` until ``seconds`` have passed on every rank; rank 0 prints the throughput."""
    import torch
    import torch.distributed as dist

    step()  # warm-up: lazy initialisation and the first connections are not timed
    t0, steps = time.perf_counter(), 0
    while True:
        step()
        steps += 1
        done = torch.tensor([float(time.perf_counter() - t0 >= seconds)])
        dist.all_reduce(done, op=dist.ReduceOp.MAX)
        if done.item() > 0:
            break
    dt = time.perf_counter() - t0
    if dist.get_rank() == 0:
        report(steps, dt, unit)
    dist.destroy_process_group()


def ddp_step(model, opt, x, sync: bool) -> Callable[[], None]:  # noqa: ANN001
    """One DDP step on a fixed batch; ``sync=False`` runs it under no_sync() (no all-reduce)."""
    import contextlib

    def step() -> None:
        with contextlib.nullcontext() if sync else model.no_sync():
            model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step
