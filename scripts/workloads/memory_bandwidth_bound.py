"""Labelled workload: CPU memory-bandwidth bound (6 LayerNorm + GELU + residual layers on 8192 x
1024 activations, 32 MiB each, far past the caches; almost no multiply-adds per byte).
Intervention: the same rows processed in cache-sized blocks of 64 rows (the identical
arithmetic, since LayerNorm and GELU act on each row alone; each block's activations fit in
the cache)."""

LABEL = "cpu_memory_bandwidth"
PATTERN = "LayerNorm + GELU x6 on 8192 x 1024"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "cache_sized_blocks"
ALSO_PROVES = "mixed_precision"
ALSO_INTERVENTION = "bf16 autocast around the forward (common.mixed_precision): half the activation bytes"
ALSO_MIN_SPEEDUP = 1.15
INTERVENTION = "the same rows in cache-sized blocks (identical arithmetic, 256 KiB activations)"
MIN_SPEEDUP = 1.5

import torch
from common import mixed_precision, options, set_threads, train
from memory_bandwidth_bound_model import Elementwise

args = options(__doc__).parse_args()
set_threads()
model = Elementwise(1024)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8192, 1024)
blocks = x.split(64) if args.intervene else (x,)


def step(_: object) -> None:
    opt.zero_grad()
    for b in blocks:
        with mixed_precision():
            out = model(b).sum() / x.numel()
        out.backward()
    opt.step()


train(step, lambda: range(1_000_000), args.seconds)
