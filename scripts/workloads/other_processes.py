"""Labelled workload: compute bound on CPU cores that other processes share. An MLP step
(1024 -> 1024 -> 1024 -> 10, batch 128, data in memory) beside as many busy loops as the job has
cores, started outside the job's process tree (another user's program on the machine): the
training thread gets a part of a core and waits on the run queue for the rest.
Intervention: no busy loops beside the job (its cores its own)."""

LABEL = "cpu_compute"
PATTERN = "MLP step beside one busy process per core outside the job"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "isolate_cores"
INTERVENTION = "no busy loops beside the job"
MIN_SPEEDUP = 1.4

import os

from busy_outside import busy_outside
from common import classifier_step, mlp, options, set_threads, train

args = options(__doc__).parse_args()
if not args.intervene:  # before torch: a fork of a process with OpenMP threads is not safe
    busy_outside(len(os.sched_getaffinity(0)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

set_threads()
model = mlp(1024, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = TensorDataset(torch.randn(128 * 32, 1024), torch.randint(0, 10, (128 * 32,)))
loader = DataLoader(data, batch_size=128, shuffle=True)
train(classifier_step(model, opt, nn.CrossEntropyLoss()), lambda: loader, args.seconds)
