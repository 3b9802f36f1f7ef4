"""Labelled workload: GPU compute bound. Wide bf16 linear layers, data already on the GPU.
Label: gpu_compute. Intervention: the width halved (a quarter of the multiply-adds)."""

LABEL = "gpu_compute"
PATTERN = "wide bf16 linear layers on the GPU"
STAGE = "compute"
NEEDS = "gpu"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "smaller_model"
INTERVENTION = "width halved (8192 -> 4096)"
MIN_SPEEDUP = 2.0

import argparse
import time

import torch
from torch import nn

from bottleneckd.torch import watch

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=20)
ap.add_argument("--width", type=int, default=8192)
ap.add_argument("--intervene", action="store_true", help="halve the width")
args = ap.parse_args()
if args.intervene:
    args.width //= 2
dev = "cuda"
model = nn.Sequential(*[nn.Linear(args.width, args.width, bias=False) for _ in range(4)]).to(dev, torch.bfloat16)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(8192, args.width, device=dev, dtype=torch.bfloat16)
w = watch(model, opt, [x] * 1000000, print_epoch=False)
w.facts["autocast_dtype"] = "bfloat16"
t0 = time.time()
for batch in w.dataloader:
    opt.zero_grad(set_to_none=True)
    model(batch).float().pow(2).mean().backward()
    opt.step()
    if time.time() - t0 > args.seconds:
        break
torch.cuda.synchronize()
w.close()
