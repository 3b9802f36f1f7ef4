"""Labelled workload: sleep bound: each step is a few milliseconds of a small model, then the loop
sleeps 100 ms (as a job polling a rate-limited service or throttled on purpose does). No
resource limits it: the right verdict is `undetermined` (the job is mostly idle).
Intervention: the sleep removed."""

LABEL = "undetermined"
PATTERN = "a few ms of work, then `time.sleep(0.1)` per step"
STAGE = None
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "per_step_python_work"
INTERVENTION = "the 100 ms sleep per step removed"
MIN_SPEEDUP = 3.0

import time

import torch
from common import classifier_step, options, set_threads, train
from torch import nn

args = options(__doc__).parse_args()
set_threads()
model = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
train_step = classifier_step(model, opt, nn.CrossEntropyLoss())
batch = (torch.randn(64, 128), torch.randint(0, 10, (64,)))


def step(_: object) -> None:
    train_step(batch)
    if not args.intervene:
        time.sleep(0.1)


train(step, lambda: range(1_000_000), args.seconds)
