"""Shared by the labelled workloads: a timed training loop that reports its throughput."""

from __future__ import annotations

import time
from typing import Callable, Iterable


def train(step: Callable[[object], None], batches: Callable[[], Iterable], seconds: float) -> None:
    """Run epochs of ``batches()`` until ``seconds`` have passed; print steps per second."""
    t0 = time.perf_counter()
    steps = 0
    while time.perf_counter() - t0 < seconds:
        for b in batches():
            step(b)
            steps += 1
            if time.perf_counter() - t0 >= seconds:
                break
    dt = time.perf_counter() - t0
    print(f"throughput: {steps / dt:.3f} steps/s ({steps} steps in {dt:.1f} s)", flush=True)


def classifier_step(model, opt, loss_fn):  # noqa: ANN001, ANN201
    """One plain training step on an (inputs, labels) batch."""

    def step(b) -> None:  # noqa: ANN001
        x, y = b
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return step


def costly_image_job(workers: int = 1):  # noqa: ANN201
    """A small conv net fed by a loader with costly per-sample transforms: data-loading bound."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader

    from bottleneckd.torch.demo import CostlyImages

    torch.set_num_threads(1)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(CostlyImages(100000, 24), batch_size=64, num_workers=workers)
    return loader, classifier_step(model, opt, nn.CrossEntropyLoss())
