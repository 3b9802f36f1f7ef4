"""A DDP training job for the multi-rank tests, started by torchrun (one process per rank, gloo,
one CPU thread each). No bottleneckd code: ``bottleneckd run`` instruments it from outside.

--backbone N   a frozen feature extractor (no gradient): N matmuls of the batch in forward
--slow-rank R --extra F   rank R does F more forward work (its backbone runs (1 + F) x as long)
--slow-rank R --extra-other F   rank R does F x the backbone's work between steps (after the
                optimizer step, outside forward and backward: logging, evaluation, checkpoints)
--pin          rank r runs on core r % cores (sched_setaffinity), for tests of contention on one core
--head W       width of the trainable head: its gradients are all-reduced (W*W*4 bytes a layer)
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn


class Model(nn.Module):
    def __init__(self, width: int, head: int, backbone: int, extra: float) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.frozen = torch.randn(width, width, generator=g) / width**0.5  # not a parameter: no gradient, no all-reduce
        self.passes = backbone
        self.extra = extra
        self.head = nn.Sequential(
            nn.Linear(width, head), nn.ReLU(), nn.Linear(head, head), nn.ReLU(), nn.Linear(head, 4)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            h = x
            for _ in range(self.passes):
                h = torch.tanh(h @ self.frozen)
            if self.extra:
                burn = x
                for _ in range(max(1, round(self.passes * self.extra))):
                    burn = torch.tanh(burn @ self.frozen)
                h = h + 0 * burn[:, :1]
        return self.head(h)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--backbone", type=int, default=6)
    ap.add_argument("--head", type=int, default=256)
    ap.add_argument("--slow-rank", type=int, default=-1)
    ap.add_argument("--extra", type=float, default=0.0)
    ap.add_argument("--extra-other", type=float, default=0.0)
    ap.add_argument("--pin", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if a.pin:
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[rank % len(cores)]})
    g = torch.Generator().manual_seed(1)
    side = torch.randn(a.width, a.width, generator=g) / a.width**0.5
    side_passes = round(a.backbone * a.extra_other) if rank == a.slow_rank else 0
    model = nn.parallel.DistributedDataParallel(
        Model(a.width, a.head, a.backbone, a.extra if rank == a.slow_rank else 0.0)
    )
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(a.batch, a.width), torch.randint(0, 4, (a.batch,))
    end = time.monotonic() + a.seconds
    steps = 0
    while True:
        stop = torch.tensor([float(time.monotonic() > end)])
        if steps % 10 == 0:
            dist.all_reduce(stop)  # every rank stops at the same step
            if stop.item() > 0:
                break
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        h = x
        for _ in range(side_passes):  # between steps: outside forward, backward and the optimizer
            h = torch.tanh(h @ side)
        steps += 1
    if rank == 0:
        print(f"rank_job: {steps} steps on {dist.get_world_size()} ranks", flush=True)
    # The last collective's tensors are Python-owned: the gloo worker thread that drops them needs
    # the GIL, and if the interpreter is finalizing by then the rank aborts ("terminate called
    # without an active exception", SIGABRT; pytorch/pytorch#190489). Seen in 3 of 15 runs of this
    # job under `run --no-inject` beside a node sidecar (and in CI), and still in 3 of 13 with the
    # model deleted first. A pause with the GIL released lets that thread finish before exit.
    time.sleep(0.05)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
