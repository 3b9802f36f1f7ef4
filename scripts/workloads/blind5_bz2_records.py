"""Labelled workload (blind set 5): an image classifier fed from a record file on local disk: 2048
images of 3x128x128 uint8, each stored as one bz2-compressed record (~4x smaller) in a single
file with an offset index (the kind of packed shard a dataset converter writes). One persistent
loader worker opens the file and, per sample, reads its record with os.pread at its offset (a
small random read, ~12 KiB), bz2-decompresses it, then random-crops 112x112, flips and normalises;
batches of 32 go to a small conv net (2 strided convs, 1 intra-op thread). The file (~25 MiB) is
in the page cache after its first pass, so the read returns at memory speed and the worker's time
goes to bz2's decompression: the training process waits on the loader.
Intervention: the same images stored uncompressed in the same record layout (the same random
preads, of 48 KiB, and the same crop/flip/normalise), i.e. the decoded form cached on disk."""

# Label: the job waits on its loader, and the loader's time is CPU decompression of records that
# come from the page cache (reads cost little): CPU compute in the data stage, not storage
# bandwidth -- an intervention that removes the decompression but keeps the reads removes it.
LABEL = "cpu_compute"
PATTERN = "record file on local disk, random pread + bz2 decompress per sample, 1 loader worker, small conv net"
STAGE = "data"
PROVES = "cache_preprocessing"
INTERVENTION = "the records stored uncompressed (the same file layout, random preads and augmentation)"
MIN_SPEEDUP = 1.5

import bz2
import os
import tempfile

import numpy as np
import torch
from common import options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, Dataset

N, C, H = 2048, 3, 128
CROP = 112


def image(i: int) -> np.ndarray:
    """A smooth synthetic image (upsampled 16x16 colour field plus mild noise): compressible."""
    rng = np.random.default_rng(i)
    low = rng.integers(0, 256, (C, 16, 16)).astype(np.int16)
    img = np.repeat(np.repeat(low, 8, axis=1), 8, axis=2) + rng.integers(-3, 4, (C, H, H))
    return np.clip(img, 0, 255).astype(np.uint8)


def record_file(compressed: bool) -> tuple[str, np.ndarray]:
    """The record file and its index (offsets, N+1), written once under the temp dir."""
    name = os.path.join(tempfile.gettempdir(), f"blind5_records_{'bz2' if compressed else 'raw'}_v1")
    if not (os.path.exists(name + ".bin") and os.path.exists(name + ".idx.npy")):
        offsets = [0]
        tmp = f"{name}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            for i in range(N):
                raw = image(i).tobytes()
                f.write(bz2.compress(raw, 9) if compressed else raw)
                offsets.append(f.tell())
        np.save(f"{tmp}.npy", np.array(offsets, np.int64))
        os.replace(f"{tmp}.npy", name + ".idx.npy")
        os.replace(tmp, name + ".bin")
    return name + ".bin", np.load(name + ".idx.npy")


class Records(Dataset):
    def __init__(self, compressed: bool) -> None:
        self.path, self.offsets = record_file(compressed)
        self.compressed = compressed
        self.fd: int | None = None  # opened in the worker that reads

    def __len__(self) -> int:
        return N

    def __getitem__(self, i: int):  # noqa: ANN204
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY)
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        buf = os.pread(self.fd, hi - lo, lo)
        if self.compressed:
            buf = bz2.decompress(buf)
        img = np.frombuffer(buf, np.uint8).reshape(C, H, H)
        rng = np.random.default_rng()
        y0, x0 = rng.integers(0, H - CROP + 1, 2)
        crop = img[:, y0 : y0 + CROP, x0 : x0 + CROP]
        if rng.random() < 0.5:
            crop = crop[:, :, ::-1]
        x = (torch.from_numpy(np.ascontiguousarray(crop)).float() / 255.0 - 0.5) / 0.25
        return x, i % 10


args = options(__doc__).parse_args()
set_threads()
data = Records(compressed=not args.intervene)
loader = DataLoader(data, batch_size=32, shuffle=True, num_workers=1, persistent_workers=True, drop_last=True)
model = nn.Sequential(
    nn.Conv2d(C, 16, 5, stride=4, padding=2),
    nn.ReLU(),
    nn.Conv2d(16, 32, 3, stride=2, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(32, 10),
)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()


def step(b) -> None:  # noqa: ANN001
    x, y = b
    opt.zero_grad(set_to_none=True)
    loss_fn(model(x), y).backward()
    opt.step()


train(step, lambda: loader, args.seconds)
