"""Labelled workload: a small Transformer language model (token embedding, 3 `nn.TransformerEncoder`
layers with a causal mask, d_model 256, 4 heads, feed-forward 1024, vocabulary 2000, sequence 64,
batch 8, AdamW) trained on random token ids in memory, next-token loss; the batches come from a
plain generator (no DataLoader).
Intervention: d_model and feed-forward halved (256 -> 128, 1024 -> 512): about a quarter of the
multiply-adds of each layer's matmuls."""

LABEL = "cpu_compute"
PATTERN = "`nn.TransformerEncoder` causal LM (3 x 256, sequence 64, batch 8), AdamW, generator batches"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "smaller_model"
INTERVENTION = "d_model and feed-forward halved (256 -> 128, 1024 -> 512)"
MIN_SPEEDUP = 1.5

import torch
from common import options, set_threads, train
from torch import nn

args = options(__doc__).parse_args()
set_threads()
VOCAB, SEQ, BATCH = 2000, 64, 8
d = 128 if args.intervene else 256


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(torch.zeros(SEQ, d))
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.1, batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
        self.head = nn.Linear(d, VOCAB)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(SEQ))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.embed(ids) + self.pos, mask=self.mask, is_causal=True))


torch.manual_seed(0)
model = TinyLM()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
corpus = torch.randint(0, VOCAB, (BATCH * 32, SEQ + 1))


def batches():  # noqa: ANN201
    for i in torch.randperm(len(corpus)).split(BATCH):
        yield corpus[i, :-1], corpus[i, 1:]


def step(b) -> None:  # noqa: ANN001
    x, y = b
    opt.zero_grad()
    nn.functional.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1)).backward()
    opt.step()


train(step, batches, args.seconds)
