"""Labelled workload: gradient accumulation (4 micro-batches of 16 per optimizer step) on a
compute-bound MLP (3 hidden layers of 1536), data in memory. Throughput counts optimizer steps.
Intervention: the hidden width halved (1536 -> 768)."""

LABEL = "cpu_compute"
PATTERN = "4 micro-batches per optimizer step, MLP 3x1536"
STAGE = "compute"
INTERVENTION = "hidden width halved (1536 -> 768)"
MIN_SPEEDUP = 1.6
CONTROL = (
    "every layer's FLOPs kept with 16x the rows and a quarter of each width: 1/16 of the weight bytes "
    "(the MLP's main traffic), 4x the activations"
)
CONTROL_MAX_SPEEDUP = 1.25

import torch
from common import mlp, options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

ACCUMULATE = 4
args = options(__doc__).parse_args()
set_threads()
# --control: the same FLOPs per layer as 16x the rows through a quarter of each width
width, d_in, micro = (384, 128, 256) if args.control else (768 if args.intervene else 1536, 512, 16)
model = mlp(width, 3, d_in=d_in)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
loader = DataLoader(
    TensorDataset(torch.randn(micro * 512, d_in), torch.randint(0, 10, (micro * 512,))), batch_size=micro, shuffle=True
)


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
