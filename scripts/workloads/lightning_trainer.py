"""Labelled workload: a Lightning Trainer fitting a LightningModule (the compute_bound MLP:
1024 -> 2048 -> 2048 -> 10, batch 64, data in memory) on the CPU, as a Lightning user writes it;
no bottleneckd code. Intervention: the hidden width halved (2048 -> 1024)."""

LABEL = "cpu_compute"
PATTERN = "Lightning `Trainer.fit` of a LightningModule (MLP 1024-2048-2048-10, batch 64)"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "smaller_model"
ALSO_PROVES = "mixed_precision"
ALSO_INTERVENTION = 'Trainer(precision="bf16-mixed")'
ALSO_MIN_SPEEDUP = 1.15
INTERVENTION = "hidden width halved (2048 -> 1024)"
MIN_SPEEDUP = 1.6
CONTROL = (
    "every layer's FLOPs kept with 16x the rows and a quarter of each width: 1/16 of the weight bytes, "
    "4x the activations"
)
CONTROL_MAX_SPEEDUP = 1.25


import lightning as L
import torch
from common import mlp, options, set_threads
from lightning_timed import fit_for
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = options(__doc__).parse_args()
set_threads()
width, d_in, batch = (512, 256, 1024) if args.control else (1024 if args.intervene else 2048, 1024, 64)


class Net(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = mlp(width, 2, d_in=d_in)

    def training_step(self, b, _i):  # noqa: ANN001, ANN201
        x, y = b
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):  # noqa: ANN201
        return torch.optim.SGD(self.parameters(), lr=0.01)


data = TensorDataset(torch.randn(batch * 64, d_in), torch.randint(0, 10, (batch * 64,)))
fit_for(
    args.seconds,
    Net(),
    DataLoader(data, batch_size=batch, shuffle=True),
    precision="bf16-mixed" if args.also else "32-true",
)
