"""Labelled workload: a `torch.compile`d model (the compute_bound MLP, 1024 -> 2048 -> 2048 -> 10,
batch 64, inductor on the CPU): compilation happens in the first, untimed step. Intervention:
the hidden width halved (2048 -> 1024)."""

LABEL = "cpu_compute"
PATTERN = "`torch.compile(model)` (inductor, CPU): MLP 1024-2048-2048-10, batch 64"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "smaller_model"
ALSO_PROVES = "mixed_precision"
ALSO_INTERVENTION = "bf16 autocast around the forward and the loss (common.mixed_precision)"
ALSO_MIN_SPEEDUP = 1.15
INTERVENTION = "hidden width halved (2048 -> 1024)"
MIN_SPEEDUP = 1.6
CONTROL = (
    "every layer's FLOPs kept with 16x the rows and a quarter of each width: 1/16 of the weight bytes, "
    "4x the activations"
)
CONTROL_MAX_SPEEDUP = 1.25
PROOF_SECONDS = 8  # compilation is untimed, but a short run measures too few steps after it

import torch
from common import classifier_step, mlp, options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = options(__doc__).parse_args()
set_threads()
width, d_in, batch = (512, 256, 1024) if args.control else (1024 if args.intervene else 2048, 1024, 64)
model = torch.compile(mlp(width, 2, d_in=d_in))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = TensorDataset(torch.randn(batch * 64, d_in), torch.randint(0, 10, (batch * 64,)))
train(classifier_step(model, opt, nn.CrossEntropyLoss()), lambda: DataLoader(data, batch_size=batch), args.seconds)
