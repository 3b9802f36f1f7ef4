"""Labelled workload: a Dataset that fetches each sample from a slow remote store (a 6 ms sleep per
sample, nothing busy) with one worker, batch 8, a small MLP. Intervention: no wait per sample."""

LABEL = "undetermined"
PATTERN = "6 ms sleep per sample in __getitem__, one worker"
STAGE = "data"
PROVES = "hide_loader_latency"
INTERVENTION = "no sleep per sample"
MIN_SPEEDUP = 3.0

import time

import torch
from common import classifier_step, options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, Dataset

args = options(__doc__).parse_args()
set_threads()


class Remote(Dataset):
    def __len__(self) -> int:
        return 4096

    def __getitem__(self, i: int):  # noqa: ANN204
        if not args.intervene:
            time.sleep(0.006)
        return torch.randn(256), i % 10


model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Remote(), batch_size=8, num_workers=1)
train(classifier_step(model, opt, nn.CrossEntropyLoss()), lambda: loader, args.seconds)
