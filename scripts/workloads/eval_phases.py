"""Labelled workload: training with an evaluation phase every 10 steps (20 batches under
torch.no_grad, model.eval()), a compute-bound MLP (2 hidden layers of 2048), data in memory.
Throughput counts training steps (the evaluation's time included).
Intervention: the hidden width halved (2048 -> 1024), in training and evaluation alike."""

LABEL = "cpu_compute"
PATTERN = "an evaluation phase (20 batches, `no_grad`, `eval()`) every 10 steps, MLP 2x2048"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "smaller_model"
ALSO_PROVES = "mixed_precision"
ALSO_INTERVENTION = "bf16 autocast around the training forward and loss (common.mixed_precision)"
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
width, d_in, batch = (512, 256, 512) if args.control else (1024 if args.intervene else 2048, 1024, 32)
model = mlp(width, 2, d_in=d_in)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
train_loader = DataLoader(
    TensorDataset(torch.randn(batch * 128, d_in), torch.randint(0, 10, (batch * 128,))), batch_size=batch, shuffle=True
)
val_loader = DataLoader(
    TensorDataset(torch.randn(20 * batch, d_in), torch.randint(0, 10, (20 * batch,))), batch_size=batch
)
n = 0


def evaluate() -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum()
    model.train()
    return float(correct) / len(val_loader.dataset)


def step(b) -> None:  # noqa: ANN001
    global n
    x, y = b
    opt.zero_grad()
    with mixed_precision():
        loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    n += 1
    if n % 10 == 0:
        evaluate()


train(step, lambda: train_loader, args.seconds)
