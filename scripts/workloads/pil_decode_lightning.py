"""Labelled workload: a Lightning Trainer fed by a LightningDataModule whose Dataset holds JPEG
bytes in memory (256 smooth 384x384 photos-like images, encoded once with Pillow) and decodes and
resizes each sample with Pillow in __getitem__ (decode, RGB, bilinear resize to 64x64), one
persistent loader worker, batch 16; a small conv net. Intervention: the same images decoded and
resized once in setup() (the loader hands out the cached tensors, the same worker)."""

LABEL = "cpu_compute"
PATTERN = "Lightning DataModule, Pillow JPEG decode + resize per sample in __getitem__, 1 worker"
STAGE = "data"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "cache_preprocessing"
INTERVENTION = "the images decoded and resized once in setup() (same tensors, same worker)"
MIN_SPEEDUP = 2.0

import io

import lightning as L
import numpy as np
import torch
from common import options, set_threads
from lightning_timed import fit_for
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

args = options(__doc__).parse_args()
set_threads()
N, SIDE, OUT = 256, 384, 64


def jpeg(i: int) -> bytes:
    """A smooth image with some texture (compresses like a photo, unlike white noise)."""
    rng = np.random.default_rng(i)
    yy, xx = np.mgrid[0:SIDE, 0:SIDE] / SIDE
    chans = [np.sin(rng.uniform(2, 12) * xx + rng.uniform(0, 6)) * np.cos(rng.uniform(2, 12) * yy) for _ in range(3)]
    img = (np.stack(chans, -1) * 100 + 128 + rng.normal(0, 12, (SIDE, SIDE, 3))).clip(0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def decode(blob: bytes) -> torch.Tensor:
    img = Image.open(io.BytesIO(blob)).convert("RGB").resize((OUT, OUT), Image.BILINEAR)
    return torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1).contiguous()


class Jpegs(Dataset):
    def __init__(self, blobs: list) -> None:
        self.blobs = blobs

    def __len__(self) -> int:
        return len(self.blobs)

    def __getitem__(self, i: int):  # noqa: ANN204
        return decode(self.blobs[i]), i % 10


class Photos(L.LightningDataModule):
    def setup(self, stage: str) -> None:
        blobs = [jpeg(i) for i in range(N)]
        if args.intervene:  # decoded once: the worker only hands out cached tensors
            self.data = TensorDataset(torch.stack([decode(b) for b in blobs]), torch.arange(N) % 10)
        else:
            self.data = Jpegs(blobs)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.data, batch_size=16, shuffle=True, num_workers=1, persistent_workers=True)


class Net(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(32, 10),
        )

    def training_step(self, b, _i):  # noqa: ANN001, ANN201
        x, y = b
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):  # noqa: ANN201
        return torch.optim.SGD(self.parameters(), lr=0.01)


fit_for(args.seconds, Net(), datamodule=Photos())
