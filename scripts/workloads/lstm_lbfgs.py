"""Labelled workload: a 2-layer LSTM (hidden 384, sequences of 16, batch 16) trained with LBFGS,
a closure optimizer: each optimizer.step() calls the closure (forward and backward) up to 3
times. The model's forward and backward are the work. Intervention: the hidden size halved
(384 -> 192)."""

LABEL = "cpu_compute"
PATTERN = "2-layer LSTM (hidden 384) with LBFGS (closure, up to 3 evaluations a step)"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "smaller_model"
INTERVENTION = "LSTM hidden size halved (384 -> 192)"
MIN_SPEEDUP = 1.6
CONTROL = (
    "the same FLOPs per time step with 16x the batch and a quarter of the hidden and input sizes (1/16 of"
    " the weight bytes)"
)
CONTROL_MAX_SPEEDUP = 1.25

import torch
from common import options, set_threads, train
from torch import nn

args = options(__doc__).parse_args()
set_threads()
torch.manual_seed(0)
# --control: the same FLOPs per time step (2*B*4H*(I+H)) with 16x the batch, a quarter of the hidden
# and input sizes: 1/16 of the weight bytes each step streams
hidden, features, batch = (96, 16, 256) if args.control else (192 if args.intervene else 384, 64, 16)


class Seq(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.lstm(x)[0][:, -1])


model = Seq()
opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=3, history_size=10)
x, y = torch.randn(batch, 16, features), torch.randn(batch, 1)


def step(_: object) -> None:
    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    opt.step(closure)


train(step, lambda: range(1_000_000), args.seconds)
