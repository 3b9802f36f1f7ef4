"""Labelled workload: a small convolutional net (3 conv layers, 32-64 channels, 32x32 images,
batch 16) with the data already in memory: the convolutions are the work.
Intervention: half the channels in every layer."""

LABEL = "cpu_compute"
PATTERN = "3 conv layers, 32-64 channels, 32x32 images, batch 16"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "smaller_model"
ALSO_PROVES = "mixed_precision"
ALSO_INTERVENTION = "bf16 autocast around the forward and the loss (common.mixed_precision)"
ALSO_MIN_SPEEDUP = 1.15
INTERVENTION = "half the channels in every conv layer"
MIN_SPEEDUP = 1.6
CONTROL = (
    "the same FLOPs per convolution at half the height and width with twice the channels (half the activation bytes)"
)
CONTROL_MAX_SPEEDUP = 1.25

import torch
from common import classifier_step, options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

args = options(__doc__).parse_args()
set_threads()
# --control: the same FLOPs per convolution (H*W*Cin*Cout*9) at half the height and width with twice
# the channels: half the activation bytes (the convolutions' main traffic)
c = 64 if args.control else 16 if args.intervene else 32
cin, side = (6, 16) if args.control else (3, 32)
model = nn.Sequential(
    nn.Conv2d(cin, c, 3, padding=1),
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
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loader = DataLoader(
    TensorDataset(torch.randn(2048, cin, side, side), torch.randint(0, 10, (2048,))), batch_size=16, shuffle=True
)
train(classifier_step(model, opt, nn.CrossEntropyLoss()), lambda: loader, args.seconds)
