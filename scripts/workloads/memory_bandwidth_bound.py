"""Labelled workload: CPU memory-bandwidth bound (elementwise and normalisation ops on large
activations; almost no multiply-adds per byte). Label: cpu_memory_bandwidth."""

import argparse

import torch

from common import train
from memory_bandwidth_bound_model import Elementwise


ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=20)
args = ap.parse_args()
model = Elementwise(1024)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8192, 1024)  # 32 MiB activations, far past the caches


def step(b):
    opt.zero_grad()
    model(b).mean().backward()
    opt.step()


train(step, lambda: [x] * 8, args.seconds)
