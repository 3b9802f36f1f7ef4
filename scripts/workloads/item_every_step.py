"""Labelled workload: a compute-bound MLP (2 hidden layers of 2048, batch 64) whose loop reads
`.item()` of the loss and of the accuracy every step and logs a running mean: on a CPU `.item()`
waits for nothing, so the step stays compute bound. Intervention: the hidden width halved."""

LABEL = "cpu_compute"
PATTERN = "loss and accuracy `.item()` every step, MLP 2x2048"
STAGE = "compute"
INTERVENTION = "hidden width halved (2048 -> 1024)"
MIN_SPEEDUP = 1.6

import torch
from common import mlp, options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = options(__doc__).parse_args()
set_threads()
model = mlp(1024 if args.intervene else 2048, 2, d_in=1024)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
loader = DataLoader(TensorDataset(torch.randn(4096, 1024), torch.randint(0, 10, (4096,))), batch_size=64, shuffle=True)
running = {"loss": 0.0, "acc": 0.0, "n": 0}


def step(b) -> None:  # noqa: ANN001
    x, y = b
    opt.zero_grad()
    out = model(x)
    loss = loss_fn(out, y)
    loss.backward()
    opt.step()
    running["loss"] += loss.item()
    running["acc"] += (out.argmax(1) == y).float().mean().item()
    running["n"] += 1


train(step, lambda: loader, args.seconds)
