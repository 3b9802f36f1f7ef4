"""Labelled workload: a fine-tuning job (a frozen 100 MB embedding table, a small trainable head)
that writes a full checkpoint (torch.save of the state dict, fsync'd) every 2 steps: most of the
wall time is spent checkpointing, outside forward, backward and the optimizer.
Intervention: the checkpoint writes removed (the same steps).

The intervention proves the stage (other), not which resource the checkpoint waits on: on a host
with fast storage the serialisation (CPU) costs more than the write, on a slow disk the write
does; either resource is accepted, any other is wrong."""

LABEL = ("cpu_compute", "storage_bandwidth")
PATTERN = "frozen 100 MB embedding + small head, `torch.save` + fsync every 2 steps"
STAGE = "other"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "checkpoint_less_often"
INTERVENTION = "the checkpoint writes removed (same training steps)"
MIN_SPEEDUP = 2.0

import os
import tempfile

import torch
from common import options, train
from torch import nn

ap = options(__doc__)
ap.add_argument("--every", type=int, default=2, help="checkpoint every N steps")
args = ap.parse_args()
torch.manual_seed(0)
embed = nn.Embedding(100_000, 256).requires_grad_(False)  # frozen, but saved with the model
head = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
model = nn.ModuleDict({"embed": embed, "head": head})
opt = torch.optim.AdamW(head.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
folder = tempfile.mkdtemp(prefix="bottleneckd-ckpt-")
path = os.path.join(folder, "last.pt")
n = 0


def step(_: object) -> None:
    global n
    tokens = torch.randint(0, 100_000, (64, 32))
    y = torch.randint(0, 10, (64,))
    opt.zero_grad()
    loss_fn(head(embed(tokens).mean(1)), y).backward()
    opt.step()
    n += 1
    if n % args.every == 0 and not args.intervene:
        with open(path + ".tmp", "wb") as f:
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": n}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(path + ".tmp", path)


try:
    train(step, lambda: range(1_000_000), args.seconds)
finally:
    for p in (path, path + ".tmp"):
        if os.path.exists(p):
            os.remove(p)
    os.rmdir(folder)
