"""Labelled workload: a Dataset of many .npy files (1,024 arrays of 256 x 512 float32, 512 KiB
each, 512 MiB in a folder under the temp dir, made once), each sample `np.load`ed from its own file
by two loader workers, batch 32, a one-layer model on each array's column means; before each epoch
the folder's pages are evicted from the page cache (posix_fadvise DONTNEED on every file: the
job's own files only, as a dataset far larger than the page cache behaves), so every read of the
epoch goes to the disk.
Intervention: the same arrays loaded into memory once, before timing (same Dataset, same workers)."""

LABEL = "storage_bandwidth"
PATTERN = "1,024 `.npy` files (512 KiB each) `np.load`ed per sample by 2 workers, pages evicted before each epoch"
STAGE = "data"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "cache_locally"
INTERVENTION = "the same arrays loaded into memory once before timing (same Dataset and workers)"
MIN_SPEEDUP = 2.0

import os
import tempfile

import numpy as np
import torch
from common import options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, Dataset

ap = options(__doc__)
ap.add_argument("--files", type=int, default=1024)
args = ap.parse_args()
set_threads()
folder = os.path.join(tempfile.gettempdir(), f"bottleneckd-npy-{args.files}")
paths = [os.path.join(folder, f"{i:05d}.npy") for i in range(args.files)]
if not os.path.exists(os.path.join(folder, "done")):  # made once (the marker written last)
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    for p in paths:
        np.save(p, rng.standard_normal((256, 512), dtype=np.float32))
    os.sync()  # written back: DONTNEED can evict clean pages only
    open(os.path.join(folder, "done"), "w").close()


def evict() -> None:
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


class NpyFiles(Dataset):
    def __init__(self, in_memory: bool) -> None:
        self.arrays = [np.load(p) for p in paths] if in_memory else None

    def __len__(self) -> int:
        return len(paths)

    def __getitem__(self, i: int):  # noqa: ANN204
        a = self.arrays[i] if self.arrays is not None else np.load(paths[i])
        return torch.from_numpy(a.mean(axis=0)), i % 10


loader = DataLoader(NpyFiles(args.intervene), batch_size=32, shuffle=True, num_workers=2, persistent_workers=True)
model = nn.Linear(512, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def step(b) -> None:  # noqa: ANN001
    x, y = b
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


def epoch():  # noqa: ANN201
    if not args.intervene:
        evict()
    return loader


train(step, epoch, args.seconds)
