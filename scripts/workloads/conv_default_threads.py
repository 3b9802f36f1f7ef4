"""Labelled workload: a small conv net (3 conv layers, 64x64 images, batch 32) trained on data in
memory at PyTorch's default thread count (one intra-op thread per core). Intervention: every
conv layer's channels halved."""

LABEL = "cpu_compute"
PATTERN = "conv net 3 layers, 64x64, batch 32, default threads"
STAGE = "compute"
PROVES = "smaller_model"
INTERVENTION = "channels halved"
MIN_SPEEDUP = 1.5

import torch
from common import classifier_step, options, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = options(__doc__).parse_args()
c = 16 if args.intervene else 32
model = nn.Sequential(
    nn.Conv2d(3, c, 3, padding=1),
    nn.ReLU(),
    nn.Conv2d(c, 2 * c, 3, padding=1),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(2 * c, 2 * c, 3, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(2 * c, 10),
)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
data = TensorDataset(torch.randn(32 * 16, 3, 64, 64), torch.randint(0, 10, (32 * 16,)))
loader = DataLoader(data, batch_size=32, shuffle=True)
train(classifier_step(model, opt, nn.CrossEntropyLoss()), lambda: loader, args.seconds)
