"""Labelled workload: a binary classifier (MLP 256 -> 256 -> 1, batch 256, data in memory) whose
loop, after every optimizer step, appends the batch's scores to a window of the last 2^16 scores
and labels and recomputes a running ROC-AUC and average precision over that whole window with
numpy (argsort, cumulative sums, trapezoid), as a hand-written "live metrics" callback does.
Intervention: the metric computed every 50 steps (the window still updated every step)."""

LABEL = "cpu_compute"
PATTERN = "numpy ROC-AUC + average precision over a 2^16-score window after every step"
STAGE = "other"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "per_step_python_work"
INTERVENTION = "the metric computed every 50 steps (window still updated every step)"
MIN_SPEEDUP = 2.0

import numpy as np
import torch
from common import options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = options(__doc__).parse_args()
set_threads()
WINDOW = 1 << 16
model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(256 * 64, 256)
y = (x[:, :8].sum(1) + 0.5 * torch.randn(len(x)) > 0).float()
loader = DataLoader(TensorDataset(x, y), batch_size=256, shuffle=True)
rng = np.random.default_rng(0)
scores = rng.standard_normal(WINDOW).astype(np.float32)  # the window starts full (a resumed run)
truth = rng.integers(0, 2, WINDOW).astype(np.int8)
pos = 0
n = 0


def auc_ap(s: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    order = np.argsort(-s, kind="stable")
    t = t[order].astype(np.float64)
    tp = np.cumsum(t)
    fp = np.cumsum(1.0 - t)
    tpr, fpr = tp / max(tp[-1], 1.0), fp / max(fp[-1], 1.0)
    auc = float(np.trapezoid(tpr, fpr))
    precision = tp / np.arange(1, len(t) + 1)
    ap = float((precision * t).sum() / max(t.sum(), 1.0))
    return auc, ap


def step(b) -> None:  # noqa: ANN001
    global pos, n
    xb, yb = b
    opt.zero_grad()
    out = model(xb).squeeze(1)
    nn.functional.binary_cross_entropy_with_logits(out, yb).backward()
    opt.step()
    k = len(yb)
    scores[pos : pos + k] = out.detach().numpy()
    truth[pos : pos + k] = yb.numpy()
    pos = (pos + k) % WINDOW
    n += 1
    if not args.intervene or n % 50 == 0:
        auc_ap(scores, truth)


train(step, lambda: loader, args.seconds)
