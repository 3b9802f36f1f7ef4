"""Labelled workload: a Lightning Trainer whose Dataset does per-sample numpy work (an FFT low-pass
of a 96x96 image, re-drawn per index) in __getitem__, num_workers=0; a small MLP on the result.
Intervention: the samples precomputed once (the same tensors, from memory)."""

LABEL = "cpu_compute"
PATTERN = "Lightning, numpy FFT per sample in __getitem__, no workers"
STAGE = "data"
PROVES = "cache_preprocessing"
INTERVENTION = "samples precomputed once"
MIN_SPEEDUP = 1.5
ALSO_PROVES = "more_loader_workers"
ALSO_INTERVENTION = "num_workers=2, persistent_workers=True (the same __getitem__, in two loader workers)"
ALSO_MIN_SPEEDUP = 1.15


import lightning as L
import numpy as np
import torch
from common import options, set_threads
from lightning_timed import fit_for
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

args = options(__doc__).parse_args()
set_threads()
N = 512


def sample(i: int) -> np.ndarray:
    r = np.random.default_rng(i).standard_normal((96, 96))
    for _ in range(6):
        f = np.fft.fft2(r)
        f[20:76, 20:76] = 0
        r = np.real(np.fft.ifft2(f))
    return r[::3, ::3].astype(np.float32).reshape(-1)


class Images(Dataset):
    def __len__(self) -> int:
        return N

    def __getitem__(self, i: int):  # noqa: ANN204
        return torch.from_numpy(sample(i)), i % 10


class Net(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1024, 256), nn.ReLU(), nn.Linear(256, 10))

    def training_step(self, b, _i):  # noqa: ANN001, ANN201
        x, y = b
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):  # noqa: ANN201
        return torch.optim.SGD(self.parameters(), lr=0.01)


if args.intervene:
    data = TensorDataset(torch.stack([torch.from_numpy(sample(i)) for i in range(N)]), torch.arange(N) % 10)
else:
    data = Images()
loader_kw = {"num_workers": 2, "persistent_workers": True} if args.also else {}
fit_for(args.seconds, Net(), DataLoader(data, batch_size=32, shuffle=True, **loader_kw))
