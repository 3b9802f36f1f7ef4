"""Labelled workload: a Python-heavy step: a tiny model, then per-sample bookkeeping in pure
Python after every optimizer step (a per-example loss history, a running confusion table and
a hand-rolled moving median over lists), the kind of metric code that runs under the GIL
outside forward, backward and the optimizer. Intervention: the bookkeeping removed."""

LABEL = "cpu_compute"
PATTERN = "tiny model + pure-Python per-sample bookkeeping after each step"
STAGE = "other"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "per_step_python_work"
INTERVENTION = "the per-step pure-Python bookkeeping removed (same model and steps)"
MIN_SPEEDUP = 2.0

import torch
from common import options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = options(__doc__).parse_args()
set_threads()
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss(reduction="none")
loader = DataLoader(TensorDataset(torch.randn(65536, 64), torch.randint(0, 10, (65536,))), batch_size=128, shuffle=True)
history: list[float] = []
confusion = [[0] * 10 for _ in range(10)]


def bookkeeping(losses: list[float], preds: list[int], labels: list[int]) -> float:
    for p, t in zip(preds, labels, strict=True):
        confusion[t][p] += 1
    history.extend(losses)
    del history[:-4096]
    window = sorted(history)  # a moving median the slow way
    total = 0.0
    for i, v in enumerate(window):
        total += v * (1 + (i % 7)) / (1 + len(window))
    return window[len(window) // 2] + total * 0.0


def step(b) -> None:  # noqa: ANN001
    x, y = b
    opt.zero_grad()
    out = model(x)
    losses = loss_fn(out, y)
    losses.mean().backward()
    opt.step()
    if not args.intervene:
        for _ in range(8):
            bookkeeping(losses.tolist(), out.argmax(1).tolist(), y.tolist())


train(step, lambda: loader, args.seconds)
