"""Labelled workload: a Hugging Face `Trainer` fine-tuning a small BERT built from a config (no
download: 4 layers, hidden 256, 4 heads, sequence 128, vocabulary 2000) on random token ids in
memory, batch 8, on the CPU; no bottleneckd code. Intervention: half the hidden and
intermediate sizes (256 -> 128, 1024 -> 512): about a quarter of the multiply-adds."""

LABEL = "cpu_compute"
PATTERN = "Hugging Face `Trainer`, BERT from a config (4 x 256, sequence 128), batch 8, tokens in memory"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "smaller_model"
ALSO_PROVES = "mixed_precision"
ALSO_INTERVENTION = "TrainingArguments(bf16=True)"
ALSO_MIN_SPEEDUP = 1.15
INTERVENTION = "hidden and intermediate sizes halved (256 -> 128, 1024 -> 512)"
MIN_SPEEDUP = 1.5
CONTROL = (
    "the batch of 8 as 4 accumulated micro-batches of 2 (gradient_accumulation_steps=4): the same FLOPs "
    "per optimizer step, a quarter of the activations in flight"
)
CONTROL_MAX_SPEEDUP = 1.25
PROOF_SECONDS = 10  # steps of a few hundred ms on a busy machine: a 6-second run counts too few

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import torch
from common import options, set_threads
from hf_timed import train_for
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification

args = options(__doc__).parse_args()
set_threads()
hidden = 128 if args.intervene else 256
config = BertConfig(
    vocab_size=2000,
    hidden_size=hidden,
    num_hidden_layers=4,
    num_attention_heads=4,
    intermediate_size=4 * hidden,
    max_position_embeddings=128,
)
torch.manual_seed(0)
model = BertForSequenceClassification(config)


class Tokens(Dataset):
    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int) -> dict:
        g = torch.Generator().manual_seed(i)
        return {"input_ids": torch.randint(0, 2000, (128,), generator=g), "labels": i % 2}


accumulate = 4 if args.control else 1
train_for(
    args.seconds,
    model,
    Tokens(),
    per_device_train_batch_size=8 // accumulate,
    gradient_accumulation_steps=accumulate,
    bf16=args.also,
)
