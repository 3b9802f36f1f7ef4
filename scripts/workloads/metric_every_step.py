"""Labelled workload: a training loop that, every step, builds a confusion matrix and per-class F1
in pure Python loops over the batch's predictions copied to lists (as hand-written metrics do);
a small MLP. Intervention: the metric computed every 50 steps."""

LABEL = "cpu_compute"
PATTERN = "pure-Python confusion matrix and F1 every step"
STAGE = "other"
PROVES = "per_step_python_work"
INTERVENTION = "metric every 50 steps"
MIN_SPEEDUP = 2.0

import torch
from common import options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = options(__doc__).parse_args()
set_threads()
model = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = TensorDataset(torch.randn(4096, 128), torch.randint(0, 10, (4096,)))
loader = DataLoader(data, batch_size=512, shuffle=True)
n = 0


def f1(pred: list, gold: list) -> float:
    cm = [[0] * 10 for _ in range(10)]
    for _ in range(6):
        for p, g in zip(pred, gold, strict=True):
            cm[g][p] += 1
    score = 0.0
    for k in range(10):
        tp = cm[k][k]
        fp = sum(cm[j][k] for j in range(10)) - tp
        fn = sum(cm[k]) - tp
        score += 2 * tp / max(1, 2 * tp + fp + fn)
    return score / 10


def step(b) -> None:  # noqa: ANN001
    global n
    x, y = b
    opt.zero_grad()
    out = model(x)
    nn.functional.cross_entropy(out, y).backward()
    opt.step()
    n += 1
    if not args.intervene or n % 50 == 0:
        f1(out.argmax(1).tolist() * 24, y.tolist() * 24)


train(step, lambda: loader, args.seconds)
