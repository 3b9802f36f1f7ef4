"""Labelled workload: gradient accumulation (4 micro-batches of 16 per optimizer step) on a
compute-bound MLP (3 hidden layers of 1536), data in memory. Throughput counts optimizer steps.
Intervention: the hidden width halved (1536 -> 768)."""

LABEL = "cpu_compute"
PATTERN = "4 micro-batches per optimizer step, MLP 3x1536"
STAGE = "compute"
INTERVENTION = "hidden width halved (1536 -> 768)"
MIN_SPEEDUP = 1.6

import torch
from common import mlp, options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

ACCUMULATE = 4
args = options(__doc__).parse_args()
set_threads()
model = mlp(768 if args.intervene else 1536, 3, d_in=512)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
loader = DataLoader(TensorDataset(torch.randn(8192, 512), torch.randint(0, 10, (8192,))), batch_size=16, shuffle=True)


def epoch():  # noqa: ANN201
    """Groups of ACCUMULATE micro-batches; one optimizer step per group."""
    group = []
    for b in loader:
        group.append(b)
        if len(group) == ACCUMULATE:
            yield group
            group = []


def step(group) -> None:  # noqa: ANN001
    opt.zero_grad()
    for x, y in group:
        (loss_fn(model(x), y) / ACCUMULATE).backward()
    opt.step()


train(step, epoch, args.seconds)
