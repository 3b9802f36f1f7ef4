"""Labelled workload with a change of regime: memory-bandwidth bound on CPU (normalisation and
elementwise ops on large activations, data in memory) for the first half, then data-loading bound
(costly per-sample transforms, one worker) for the second. Labels: cpu_memory_bandwidth/compute,
then cpu_compute/data; the report names the change and its time."""

import argparse

import torch
from common import costly_image_job, train
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
loader, step_data = costly_image_job(workers=1)
train(step_data, lambda: loader, half)
