"""Shared by the storage workloads: a dataset whose samples are random 4 KiB records of a file,
read with O_DIRECT, read buffered with the pages dropped (posix_fadvise DONTNEED) after each read,
or served from memory (the intervention: the same records, the file's bytes held in RAM)."""

from __future__ import annotations

import mmap
import os
import random

import torch
from common import set_threads
from torch.utils.data import Dataset

RECORD = 4096


class RandomRecords(Dataset):
    """Each sample: ``per_sample`` records at random offsets (seeded by the index), their first
    bytes as features. ``how`` is "direct", "dropped", "buffered" (plain page-cache reads) or
    "memory"."""

    def __init__(self, path: str, how: str, per_sample: int = 16) -> None:
        self.path, self.how, self.per_sample = path, how, per_sample
        self.records = os.path.getsize(path) // RECORD
        self.fd: int | None = None
        self.data = None
        if how == "memory":
            with open(path, "rb") as f:
                self.data = f.read()
        elif how == "dropped":
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # start with none of it cached
            os.close(fd)

    def __len__(self) -> int:
        return 1_000_000

    def _open(self) -> None:
        if self.how == "direct":
            self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
            self.buf = mmap.mmap(-1, RECORD)  # page-aligned, as O_DIRECT needs
        else:
            self.fd = os.open(self.path, os.O_RDONLY)
            os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_RANDOM)

    def read(self, offset: int) -> bytes:
        if self.how == "memory":
            return self.data[offset : offset + RECORD]
        if self.fd is None:
            self._open()
        if self.how == "direct":
            os.preadv(self.fd, [self.buf], offset)
            return self.buf[:RECORD]
        rec = os.pread(self.fd, RECORD, offset)
        if self.how == "dropped":
            os.posix_fadvise(self.fd, offset, RECORD, os.POSIX_FADV_DONTNEED)
        return rec

    def __getitem__(self, i: int) -> torch.Tensor:
        rng = random.Random(i)
        vals = [self.read(rng.randrange(self.records) * RECORD)[0] for _ in range(self.per_sample)]
        return torch.tensor(vals, dtype=torch.float32)


def linear_job(loader):  # noqa: ANN001, ANN201
    """A one-layer model on the records: the step itself costs almost nothing."""
    from torch import nn

    set_threads()
    model = nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(x: torch.Tensor) -> None:
        opt.zero_grad()
        model(x).mean().backward()
        opt.step()

    return step
