"""Labelled workload: host memory-capacity pressure (a dataset cached in RAM that leaves under
8% of the machine's memory available). Label: cpu_memory."""

import argparse

import psutil
import torch
from torch import nn

from common import train

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=20)
ap.add_argument("--leave", type=float, default=0.06, help="fraction of memory to leave available")
args = ap.parse_args()
vm = psutil.virtual_memory()
nbytes = int(vm.available - args.leave * vm.total)
cache = torch.ones(max(1, nbytes // 4), dtype=torch.float32)  # touched: resident, not just reserved
model = nn.Linear(1024, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
n = cache.numel() // 1024


def step(i):
    j = (i * 7919) % max(1, n - 64)
    x = cache[j * 1024:(j + 64) * 1024].view(64, 1024)
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()


train(step, lambda: range(1000), args.seconds)
