"""Labelled workload: GPU memory-bandwidth bound. Elementwise and normalisation ops on large
activations, little arithmetic per byte. Label: gpu_memory_bandwidth. No intervention yet
(scripts/eval.py reports it unproven)."""

LABEL = "gpu_memory_bandwidth"
PATTERN = "LayerNorm/GELU on 65536 x 4096 on the GPU"
STAGE = "compute"
NEEDS = "gpu"
#: the recommendation its intervention proves: none (it has no intervention)
PROVES = None
INTERVENTION = None
MIN_SPEEDUP = None

import argparse
import time

import torch
from torch import nn

from bottleneckd.torch import watch


class Elementwise(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(8))
        self.scale = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for n in self.norms:
            x = torch.nn.functional.gelu(n(x)) * self.scale + x
        return x


ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=20)
args = ap.parse_args()
dev = "cuda"
model = Elementwise(4096).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(65536, 4096, device=dev)
w = watch(model, opt, [x] * 1000000, print_epoch=False)
t0 = time.time()
for batch in w.dataloader:
    opt.zero_grad(set_to_none=True)
    model(batch).mean().backward()
    opt.step()
    if time.time() - t0 > args.seconds:
        break
torch.cuda.synchronize()
w.close()
