"""Labelled workload: a text classifier whose DataLoader's `collate_fn` tokenizes each batch of raw
sentences (a WordPiece `BertTokenizer` from `transformers`, the pure-Python one, built from a
vocabulary file written here: no download), padding to 128 tokens, `num_workers=0`; the model is a
small embedding bag and a linear layer. Intervention: the same batches tokenized once before
training (the collate_fn only stacks ids)."""

LABEL = "cpu_compute"
PATTERN = "`collate_fn` tokenizing raw sentences (pure-Python WordPiece `BertTokenizer`), `num_workers=0`"
STAGE = "data"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "cache_preprocessing"
INTERVENTION = "the same batches tokenized before training (the collate_fn stacks ids)"
MIN_SPEEDUP = 2.0

import os
import random
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from common import options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader
from transformers import BertTokenizer

args = options(__doc__).parse_args()
set_threads()
rng = random.Random(0)
syllables = ["ka", "lo", "mi", "tre", "vos", "an", "sel", "du", "rip", "on", "gra", "fe", "zu", "pol", "ne"]
words = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))) for _ in range(3000)})
vocab = os.path.join(tempfile.mkdtemp(prefix="vocab-"), "vocab.txt")
with open(vocab, "w") as f:
    f.write("\n".join(dict.fromkeys(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *syllables, *words])) + "\n")
tok = BertTokenizer(vocab)
sentences = [" ".join(rng.choice(words) + rng.choice(["", "s", "ed"]) for _ in range(90)) for _ in range(512)]
labels = [i % 4 for i in range(len(sentences))]


def tokenize(batch: list) -> tuple[torch.Tensor, torch.Tensor]:
    texts, ys = zip(*batch, strict=True)
    enc = tok(list(texts), padding="max_length", truncation=True, max_length=128, return_tensors="pt")
    return enc["input_ids"], torch.tensor(ys)


data = list(zip(sentences, labels, strict=True))
if args.intervene:  # tokenized once, up front: the loader only hands out ready tensors
    ready = [tokenize(data[i : i + 16]) for i in range(0, len(data), 16)]
    loader = DataLoader(ready, batch_size=None, shuffle=True)
else:
    loader = DataLoader(data, batch_size=16, shuffle=True, collate_fn=tokenize, num_workers=0)
model = nn.Sequential(nn.EmbeddingBag(tok.vocab_size, 64), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def step(b) -> None:  # noqa: ANN001
    ids, y = b
    opt.zero_grad()
    nn.functional.cross_entropy(model(ids), y).backward()
    opt.step()


train(step, lambda: loader, args.seconds)
