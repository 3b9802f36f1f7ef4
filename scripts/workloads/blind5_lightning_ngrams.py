"""Labelled workload (blind set 5): a Lightning Trainer fed by a LightningDataModule whose Dataset
builds each sample in pure Python in __getitem__: a synthetic document of 600-900 words is made
from the index, lower-cased and turned into a 2048-bucket hashed bag of character 3/4/5-grams and
word bigrams (zlib.crc32 per n-gram, Python lists), L2-normalised; num_workers=0, so the training
process builds every batch itself (~4 ms a sample, ~140 ms a batch of 32) while the 3-layer MLP
step takes a few ms. Intervention: the features precomputed once (the same tensors, from memory).
(Two loader workers were tried first as the intervention: no gain on this shared 2-core host,
where another job keeps most of one core busy, so more_loader_workers is not claimed.)"""

# Label: the step waits on the loader, and the loader is pure-Python CPU work in the training
# process (no I/O, nothing to wait on), so the CPU is the limiting resource, in the data stage.
LABEL = "cpu_compute"
PATTERN = "Lightning DataModule, pure-Python hashed n-gram features per sample in __getitem__, no workers"
STAGE = "data"
PROVES = "cache_preprocessing"
INTERVENTION = "the hashed features precomputed once at start-up (a TensorDataset of the same tensors)"
MIN_SPEEDUP = 2.0

import random
import zlib

import lightning as L
import torch
from common import options, set_threads
from lightning_timed import fit_for
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

args = options(__doc__).parse_args()
set_threads()
N = 512
DIM = 2048
CLASSES = 20
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ve", "zu", "qua", "bri", "dro", "fle", "gri", "sna"]


def document(i: int) -> str:
    rng = random.Random(i)
    n = rng.randint(600, 900)
    return " ".join("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(n)).title()


def hashed_ngrams(text: str) -> list[float]:
    v = [0.0] * DIM
    words = text.lower().split()
    for w in words:
        w = f"<{w}>"
        for n in (3, 4, 5):
            for k in range(len(w) - n + 1):
                v[zlib.crc32(w[k : k + n].encode()) % DIM] += 1.0
    for a, b in zip(words, words[1:]):
        v[zlib.crc32(f"{a}_{b}".encode()) % DIM] += 1.0
    norm = sum(x * x for x in v) ** 0.5 or 1.0
    return [x / norm for x in v]


class Documents(Dataset):
    def __len__(self) -> int:
        return N

    def __getitem__(self, i: int):  # noqa: ANN204
        return torch.tensor(hashed_ngrams(document(i))), i % CLASSES


class DocsData(L.LightningDataModule):
    def __init__(self, workers: int, precompute: bool) -> None:
        super().__init__()
        self.workers, self.precompute = workers, precompute

    def setup(self, stage: str | None = None) -> None:
        if self.precompute:
            ds = Documents()
            x = torch.stack([ds[i][0] for i in range(N)])
            self.data = TensorDataset(x, torch.arange(N) % CLASSES)
        else:
            self.data = Documents()

    def train_dataloader(self) -> DataLoader:
        kw = {"num_workers": self.workers, "persistent_workers": True} if self.workers else {}
        return DataLoader(self.data, batch_size=32, shuffle=True, drop_last=True, **kw)


class BagClassifier(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(DIM, 512), nn.ReLU(), nn.Dropout(0.1), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, CLASSES)
        )

    def training_step(self, batch, _i):  # noqa: ANN001, ANN201
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):  # noqa: ANN201
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


fit_for(args.seconds, BagClassifier(), datamodule=DocsData(0, args.intervene))
