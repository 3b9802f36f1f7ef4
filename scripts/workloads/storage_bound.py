"""Labelled workload: storage bound (small random reads below the page cache, O_DIRECT).
Label: storage_bandwidth (stage data)."""

import argparse
import mmap
import os
import random
import tempfile

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from common import train

RECORD = 4096


class RandomRecords(Dataset):
    """Each sample is 16 random 4 KiB records read with O_DIRECT: IOPS-bound, not byte-bound."""

    def __init__(self, path: str, records: int) -> None:
        self.path, self.records = path, records
        self.fd = None

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
            self.buf = mmap.mmap(-1, RECORD)
        rng = random.Random(i)
        vals = []
        for _ in range(16):
            os.preadv(self.fd, [self.buf], rng.randrange(self.records) * RECORD)
            vals.append(self.buf[0])
        return torch.tensor(vals, dtype=torch.float32)


def make_file(path: str, mib: int) -> None:
    if os.path.exists(path) and os.path.getsize(path) >= mib << 20:
        return
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(block)


ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=20)
ap.add_argument("--file", default=os.path.join(tempfile.gettempdir(), "bottleneckd-storage-workload.bin"), help="on a disk-backed file system (O_DIRECT)")
ap.add_argument("--mib", type=int, default=1024)
args = ap.parse_args()
make_file(args.file, args.mib)
torch.set_num_threads(1)
model = nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(RandomRecords(args.file, (args.mib << 20) // RECORD), batch_size=64, num_workers=2)


def step(x):
    opt.zero_grad()
    model(x).mean().backward()
    opt.step()


train(step, lambda: loader, args.seconds)
