"""Labelled workload: gradient accumulation (4 micro-batches of 16 rows per optimizer step) on an
MLP of 3 hidden layers of 1536, data in memory. Throughput counts optimizer steps. Each micro-batch
streams every weight matrix (9.4 MB a layer) for 16 rows: 8 FLOPs per weight byte, the memory side.
Intervention: the same FLOPs per layer with 16x the rows through a quarter of each width (1/16 of
the weight bytes).

Relabelled (issue 21 item 4): labelled cpu_compute/compute and proved by halving the width (which
cuts FLOPs and bytes together, x3.68), its control - the same FLOPs with 1/16 of the bytes - made it
x2.48 faster, significantly (p < 0.05; 3 runs a side at load 13-15): the weight bytes, not the
multiply-adds, set its step."""

LABEL = "cpu_memory_bandwidth"
PATTERN = "4 micro-batches of 16 rows per optimizer step, MLP 3x1536"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "more_compute_per_byte"
ALSO_PROVES = "mixed_precision"
ALSO_INTERVENTION = "bf16 autocast around the forward and the loss (common.mixed_precision): half the activation bytes"
ALSO_MIN_SPEEDUP = 1.15
INTERVENTION = (
    "every layer's FLOPs kept with 16x the rows and a quarter of each width: 1/16 of the weight bytes "
    "(the MLP's main traffic), 4x the activations"
)
MIN_SPEEDUP = 1.5

import torch
from common import mixed_precision, mlp, options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

ACCUMULATE = 4
args = options(__doc__).parse_args()
set_threads()
# --intervene: the same FLOPs per layer as 16x the rows through a quarter of each width
width, d_in, micro = (384, 128, 256) if args.intervene else (1536, 512, 16)
model = mlp(width, 3, d_in=d_in)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
loader = DataLoader(
    TensorDataset(torch.randn(micro * 512, d_in), torch.randint(0, 10, (micro * 512,))), batch_size=micro, shuffle=True
)


def epoch():  # noqa: ANN201
    """Groups of ACCUMULATE micro-batches; one optimizer step per group."""
    group = []
    for b in loader:
        group.append(b)
        if len(group) == ACCUMULATE:
            yield group
            group = []


def step(group) -> None:  # noqa: ANN001
    opt.zero_grad()
    for x, y in group:
        with mixed_precision():
            loss = loss_fn(model(x), y) / ACCUMULATE
        loss.backward()
    opt.step()


train(step, epoch, args.seconds)
