"""Labelled workload: data loading bound on CPU (costly per-sample transforms, one worker).
Label: cpu_compute (stage data)."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader

from bottleneckd.torch.demo import CostlyImages
from common import train

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=20)
args = ap.parse_args()
torch.set_num_threads(1)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(CostlyImages(100000, 24), batch_size=64, num_workers=1)
loss_fn = nn.CrossEntropyLoss()


def step(b):
    x, y = b
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()


train(step, lambda: loader, args.seconds)
