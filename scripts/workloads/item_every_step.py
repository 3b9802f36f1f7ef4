"""Labelled workload: a compute-bound MLP (2 hidden layers of 2048, batch 64) whose loop reads
`.item()` of the loss and of the accuracy every step and logs a running mean: on a CPU `.item()`
waits for nothing, so the step stays compute bound. Intervention: the hidden width halved."""

LABEL = "cpu_compute"
PATTERN = "loss and accuracy `.item()` every step, MLP 2x2048"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "smaller_model"
ALSO_PROVES = "mixed_precision"
ALSO_INTERVENTION = "bf16 autocast around the forward and the loss (common.mixed_precision)"
ALSO_MIN_SPEEDUP = 1.15
INTERVENTION = "hidden width halved (2048 -> 1024)"
MIN_SPEEDUP = 1.6
CONTROL = (
    "every layer's FLOPs kept with 16x the rows and a quarter of each width: 1/16 of the weight bytes "
    "(the MLP's main traffic), 4x the activations"
)
CONTROL_MAX_SPEEDUP = 1.25

import torch
from common import mixed_precision, mlp, options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = options(__doc__).parse_args()
set_threads()
# --control: the same FLOPs per layer as 16x the rows through a quarter of each width
width, d_in, batch = (512, 256, 1024) if args.control else (1024 if args.intervene else 2048, 1024, 64)
model = mlp(width, 2, d_in=d_in)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
loader = DataLoader(
    TensorDataset(torch.randn(batch * 64, d_in), torch.randint(0, 10, (batch * 64,))), batch_size=batch, shuffle=True
)
running = {"loss": 0.0, "acc": 0.0, "n": 0}


def step(b) -> None:  # noqa: ANN001
    x, y = b
    opt.zero_grad()
    with mixed_precision():
        out = model(x)
        loss = loss_fn(out, y)
    loss.backward()
    opt.step()
    running["loss"] += loss.item()
    running["acc"] += (out.argmax(1) == y).float().mean().item()
    running["n"] += 1


train(step, lambda: loader, args.seconds)
