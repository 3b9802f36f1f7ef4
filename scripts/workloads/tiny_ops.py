"""Labelled workload: many tiny ops (300 layers of Linear(16, 16) + tanh, batch 8): every
operator's dispatch and autograd bookkeeping costs more than its arithmetic; one thread of the
training process is busy all the time. Intervention: half the layers (half the ops)."""

LABEL = "cpu_compute"
PATTERN = "300 x (Linear(16,16) + tanh), batch 8: dispatch-bound"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "smaller_model"
ALSO_PROVES = "mixed_precision"
ALSO_INTERVENTION = "bf16 autocast around the forward and the loss (common.mixed_precision)"
ALSO_MIN_SPEEDUP = 1.15
INTERVENTION = "half the layers (300 -> 150 tiny Linear+tanh)"
MIN_SPEEDUP = 1.6
CONTROL = "the same 600 operators and FLOPs on 16x the rows of a quarter of the width (1/16 of the weight bytes)"
CONTROL_MAX_SPEEDUP = 1.25

import torch
from common import mixed_precision, options, set_threads, train
from torch import nn

args = options(__doc__).parse_args()
set_threads()
depth = 150 if args.intervene else 300
# --control: the same operators and FLOPs on 16x the rows of a quarter of the width (bytes in cache either way)
width, rows = (4, 128) if args.control else (16, 8)
model = nn.Sequential(*[m for _ in range(depth) for m in (nn.Linear(width, width), nn.Tanh())])
opt = torch.optim.SGD(model.parameters(), lr=0.01, foreach=False)
x = torch.randn(rows, width)


def step(_: object) -> None:
    opt.zero_grad()
    with mixed_precision():
        loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()


train(step, lambda: range(1_000_000), args.seconds)
