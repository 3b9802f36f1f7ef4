"""Labelled workload: two loader workers (one per core), each sample's numpy FFT augmentation
(random band-pass and phase jitter on a 16,384-point signal, 6 rounds) in __getitem__, feeding
a small MLP: the workers saturate the cores. Intervention: the augmentation removed."""

LABEL = "cpu_compute"
PATTERN = "the same augmentation in 2 workers (cores saturated)"
STAGE = "data"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "simplify_augmentation"
INTERVENTION = "the FFT augmentation removed from __getitem__ (same signals, same model, same workers)"
MIN_SPEEDUP = 2.0

import torch
from common import FftSignals, classifier_step, mlp, options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader

args = options(__doc__).parse_args()
set_threads()
model = mlp(256, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(
    FftSignals(100000, 16384, 0 if args.intervene else 6), batch_size=8, num_workers=2, persistent_workers=True
)
train(classifier_step(model, opt, nn.CrossEntropyLoss()), lambda: loader, args.seconds)
