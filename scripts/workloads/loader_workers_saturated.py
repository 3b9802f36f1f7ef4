"""Labelled workload: a loader whose two workers (one per core) saturate the CPUs with costly
per-sample transforms (blur and jitter rounds) feeding a small conv net: adding workers cannot
help, the cores are busy preparing data. Intervention: the augmentation removed (the same
images without the transform rounds)."""

LABEL = "cpu_compute"
PATTERN = "2 loader workers (one per core) doing blur/jitter rounds per image, small conv net"
STAGE = "data"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "simplify_augmentation"
INTERVENTION = "the per-sample transform rounds removed (same images, same model)"
MIN_SPEEDUP = 2.0

import torch
from common import CostlyImages, classifier_step, options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader

args = options(__doc__).parse_args()
set_threads()
model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 10)
)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(
    CostlyImages(100000, 0 if args.intervene else 32), batch_size=16, num_workers=2, persistent_workers=True
)
train(classifier_step(model, opt, nn.CrossEntropyLoss()), lambda: loader, args.seconds)
