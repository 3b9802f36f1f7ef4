"""Labelled workload with a change of regime: compute bound on CPU (data in memory) for the
first half, then data-loading bound (costly per-sample transforms, one worker) for the second.
Labels: cpu_compute/compute, then cpu_compute/data; the report names the change and its time.
For the scenario suite, the two halves use different resources: the first half is the
memory-bandwidth-bound model (cpu_memory_bandwidth), the second the costly loader (cpu_compute)."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader

from bottleneckd.torch.demo import CostlyImages
from common import train
from memory_bandwidth_bound_model import Elementwise

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=30)
args = ap.parse_args()
half = args.seconds / 2
model = Elementwise(1024)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8192, 1024)


def step_mem(b):
    opt.zero_grad()
    model(b).mean().backward()
    opt.step()


train(step_mem, lambda: [x] * 8, half)
torch.set_num_threads(1)
small = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 10))
opt2 = torch.optim.SGD(small.parameters(), lr=0.01)
loader = DataLoader(CostlyImages(100000, 24), batch_size=64, num_workers=1)
loss_fn = nn.CrossEntropyLoss()


def step_data(b):
    xb, yb = b
    opt2.zero_grad()
    loss_fn(small(xb), yb).backward()
    opt2.step()


train(step_data, lambda: loader, half)
