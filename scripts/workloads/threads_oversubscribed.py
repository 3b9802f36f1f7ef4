"""Labelled workload: PyTorch's intra-op threads set for cores the job does not have: a container
whose CPU quota is this machine's cores while PyTorch (which reads the host's cores, not the
quota) starts 4x as many threads, as on a 32-core host with an 8-CPU limit. A 512-wide MLP, batch
64, data in memory; the threads wait for one another on the run queue. Intervention: the threads
set to the cores the job may use (``torch.set_num_threads(len(os.sched_getaffinity(0)))``), what
the recommendation says."""

LABEL = "cpu_compute"
PATTERN = "MLP 512-512-512-10, batch 64, 4x as many intra-op threads as cores"
STAGE = "compute"
PROVES = "match_threads_to_cores"
INTERVENTION = "torch.set_num_threads(cores the job may use)"
MIN_SPEEDUP = 1.3

import os

import torch
from common import classifier_step, mlp, options, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = options(__doc__).parse_args()
cores = len(os.sched_getaffinity(0))
# not set_threads(): the threads are this workload's subject, not a setting of the run
torch.set_num_threads(cores if args.intervene else 4 * cores)
model = mlp(512, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = TensorDataset(torch.randn(64 * 64, 512), torch.randint(0, 10, (64 * 64,)))
loader = DataLoader(data, batch_size=64, shuffle=True)
train(classifier_step(model, opt, nn.CrossEntropyLoss()), lambda: loader, args.seconds)
