"""Labelled workload: compute bound on CPU (a big-matmul MLP: 1024 -> 2048 -> 2048 -> 10, batch
64, data already in memory). Intervention: the hidden width halved (2048 -> 1024): about a
third of the multiply-adds."""

LABEL = "cpu_compute"
PATTERN = "big-matmul MLP 1024-2048-2048-10, batch 64"
STAGE = "compute"
INTERVENTION = "hidden width halved (2048 -> 1024)"
MIN_SPEEDUP = 1.6

import torch
from common import classifier_step, mlp, options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = options(__doc__).parse_args()
set_threads()
model = mlp(1024 if args.intervene else 2048, 2, d_in=1024)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = TensorDataset(torch.randn(4096, 1024), torch.randint(0, 10, (4096,)))
loader = DataLoader(data, batch_size=64, shuffle=True)
train(classifier_step(model, opt, nn.CrossEntropyLoss()), lambda: loader, args.seconds)
