"""The built-in default job: a small CPU training run whose data pipeline does costly per-sample
transforms, so it is data-loading bound on CPU. ``bottleneckd demo`` runs it under the sidecar.

    python -m bottleneckd.torch.demo --epochs 2 --workers 1
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from bottleneckd.torch import watch


class CostlyImages(Dataset):
    """Synthetic 3x32x32 images with an expensive augmentation done on the CPU per sample."""

    def __init__(self, n: int, transform_cost: int) -> None:
        self.n = n
        self.cost = transform_cost

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(i)
        x = torch.randn(3, 64, 64, generator=g)
        for _ in range(self.cost):  # blur + jitter repeatedly: CPU work per sample
            x = torch.nn.functional.avg_pool2d(x.unsqueeze(0), 3, 1, 1).squeeze(0) * 1.01
        x = torch.nn.functional.interpolate(x.unsqueeze(0), size=32, mode="bilinear").squeeze(0)
        return x, torch.tensor(i % 10)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--samples", type=int, default=1536)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--transform-cost", type=int, default=24)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(
        CostlyImages(args.samples, args.transform_cost), batch_size=args.batch, num_workers=args.workers
    )
    w = watch(model, opt, loader)
    assert w.dataloader is not None  # watch() wraps the loader it is given
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(args.epochs):
        for x, y in w.dataloader:
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
    w.close()


if __name__ == "__main__":
    main()
