"""The demo's data-bound CPU job with a quality log, for ``bottleneckd compare`` (docs/compare-example.md).

The data pipeline is the demo's (costly per-sample CPU transforms, one loader worker by default);
labels come from a fixed random teacher over the image, so accuracy rises and a target can be
reached. Every ``--eval-every`` steps the held-out accuracy is appended to ``--log`` as a JSON
line {"elapsed": seconds since start, "step": k, "accuracy": a}. With ``--mitigate`` the
mitigation bottleneckd recommends for this job (DataLoader settings: more workers) is applied
through the watcher before training starts.

    bottleneckd run --no-inject --trace A1.jsonl -- python scripts/compare_example.py --log A1.jsonl.q
    bottleneckd run --no-inject --trace B1.jsonl -- python scripts/compare_example.py --log B1.jsonl.q --mitigate
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from bottleneckd.torch import watch


class TeacherImages(Dataset):
    def __init__(self, n: int, cost: int, offset: int = 0) -> None:
        self.n, self.cost, self.offset = n, cost, offset
        self.teacher = torch.randn(10, 3 * 4 * 4, generator=torch.Generator().manual_seed(1234))

    def __len__(self) -> int:
        return self.n

    def clean(self, i: int) -> torch.Tensor:
        return torch.randn(3, 64, 64, generator=torch.Generator().manual_seed(self.offset + i))

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.clean(i)
        for _ in range(self.cost):  # the demo's augmentation: CPU work per sample
            x = nn.functional.avg_pool2d(x.unsqueeze(0), 3, 1, 1).squeeze(0) * 1.01
        x = nn.functional.interpolate(x.unsqueeze(0), size=32, mode="bilinear").squeeze(0)
        x = x / x.std()
        y = self.teacher @ nn.functional.adaptive_avg_pool2d(x, 4).flatten()  # a label the model can learn
        return x, y.argmax()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--log", required=True)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--samples", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--transform-cost", type=int, default=24)
    ap.add_argument("--eval-every", type=int, default=8)
    ap.add_argument("--mitigate", action="store_true", help="apply dataloader_settings (2 workers) through the watcher")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = DataLoader(
        TeacherImages(args.samples, args.transform_cost), batch_size=args.batch, num_workers=1, shuffle=True
    )
    held = TeacherImages(256, args.transform_cost, offset=10**6)
    xs, ys = zip(*(held[i] for i in range(len(held))), strict=True)
    hx, hy = torch.stack(xs), torch.stack(ys)
    w = watch(model, opt, loader)
    if args.mitigate:
        w.apply("dataloader_settings", num_workers=2)
    loss_fn = nn.CrossEntropyLoss()
    t0, step = time.perf_counter(), 0
    with open(args.log, "w", encoding="utf-8") as log:
        for _ in range(args.epochs):
            for x, y in w.dataloader:
                opt.zero_grad(set_to_none=True)
                loss_fn(model(x), y).backward()
                opt.step()
                step += 1
                if step % args.eval_every == 0:
                    with torch.no_grad():
                        acc = float((model(hx).argmax(1) == hy).float().mean())
                    log.write(
                        json.dumps({"elapsed": round(time.perf_counter() - t0, 3), "step": step, "accuracy": acc})
                        + "\n"
                    )
                    log.flush()
    w.close()


if __name__ == "__main__":
    main()
