"""Labelled workload: LayerNorm + GELU on 256 x 65,536 activations (64 MiB each; arithmetic
intensity about 0.1 FLOP/byte), 4 layers with residuals, trained with SGD: the step streams
activations through DRAM. Intervention: the same rows processed in cache-sized blocks of 8 rows
(identical arithmetic, since LayerNorm and GELU act on each row alone; 2 MiB activations)."""

LABEL = "cpu_memory_bandwidth"
PATTERN = "LayerNorm + GELU (+ residual) x4 on 256 x 65,536 activations"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "cache_sized_blocks"
ALSO_PROVES = "mixed_precision"
ALSO_INTERVENTION = "bf16 autocast around the forward (common.mixed_precision): half the activation bytes"
ALSO_MIN_SPEEDUP = 1.15
INTERVENTION = "the same rows in cache-sized blocks (identical arithmetic, 2 MiB activations)"
MIN_SPEEDUP = 1.5

import torch
from common import mixed_precision, options, set_threads, train
from memory_bandwidth_bound_model import Elementwise

args = options(__doc__).parse_args()
set_threads()
model = Elementwise(65536, depth=4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(256, 65536)
blocks = x.split(8) if args.intervene else (x,)


def step(_: object) -> None:
    opt.zero_grad()
    for b in blocks:
        with mixed_precision():
            out = model(b).sum() / x.numel()
        out.backward()
    opt.step()


train(step, lambda: range(1_000_000), args.seconds)
