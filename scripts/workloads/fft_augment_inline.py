"""Labelled workload: num_workers=0, each sample's numpy FFT augmentation (random band-pass and
phase jitter on a 16,384-point signal, 12 rounds) done in __getitem__ in the training process,
feeding a small MLP. Intervention: the augmentation removed (the same signals)."""

LABEL = "cpu_compute"
PATTERN = "`num_workers=0`, numpy FFT band-pass/phase augmentation in `__getitem__`"
STAGE = "data"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "simplify_augmentation"
INTERVENTION = "the FFT augmentation removed from __getitem__ (same signals, same model)"
MIN_SPEEDUP = 2.0
ALSO_PROVES = "more_loader_workers"
ALSO_INTERVENTION = "num_workers=2 (the same augmentation, in two loader workers)"
ALSO_MIN_SPEEDUP = 1.15

import torch
from common import FftSignals, classifier_step, mlp, options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader

args = options(__doc__).parse_args()
set_threads()
model = mlp(256, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
signals = FftSignals(100000, 16384, 0 if args.intervene else 12)
loader = DataLoader(signals, batch_size=8, num_workers=2 if args.also else 0)
train(classifier_step(model, opt, nn.CrossEntropyLoss()), lambda: loader, args.seconds)
