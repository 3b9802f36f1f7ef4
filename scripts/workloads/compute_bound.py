"""Labelled workload: compute bound on CPU (wide linear layers, data already in memory).
Label: cpu_compute (stage compute)."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from common import classifier_step, train

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=20)
args = ap.parse_args()
model = nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = TensorDataset(torch.randn(4096, 1024), torch.randint(0, 10, (4096,)))
loader = DataLoader(data, batch_size=256, shuffle=True)
step = classifier_step(model, opt, nn.CrossEntropyLoss())


train(step, lambda: loader, args.seconds)
