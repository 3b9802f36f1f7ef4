"""Labelled workload: DDP over gloo, 2 ranks started with torch.multiprocessing.spawn, a small
MLP (1.3 M parameters) and a large batch (1024 per rank): each rank's forward and backward
dominate; the all-reduce of 5 MB of gradients is a small part of the step.
Intervention: half the batch per rank (the all-reduce unchanged): a compute-bound step is
nearly twice as fast, a communication-bound one would not be."""

LABEL = "cpu_compute"
PATTERN = "DDP over gloo, 2 ranks, 1.3 M-parameter MLP, batch 1024 per rank"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "smaller_model"
INTERVENTION = "half the per-rank batch, same model (the all-reduce is unchanged)"
MIN_SPEEDUP = 1.5
CONTROL = (
    "the per-rank batch in 8 chunks of 128 rows, gradients all-reduced once: the same FLOPs and all-"
    "reduce, an eighth of the activations in flight (cache-sized)"
)
CONTROL_MAX_SPEEDUP = 1.25


def rank_main(rank: int, port: int, seconds: float, batch: int, chunks: int) -> None:
    import contextlib

    import ranks
    import torch
    from common import mlp
    from torch.nn.parallel import DistributedDataParallel as DDP

    ranks.init(rank, 2, port)
    torch.manual_seed(0)
    model = DDP(mlp(512, 5, d_in=256))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 256)
    if chunks == 1:
        ranks.timed_loop(ranks.ddp_step(model, opt, x, sync=True), seconds)
        return

    def step() -> None:  # --control: the batch in cache-sized chunks, gradients all-reduced once
        parts = x.chunk(chunks)
        for k, part in enumerate(parts):
            with model.no_sync() if k < len(parts) - 1 else contextlib.nullcontext():
                model(part).pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    ranks.timed_loop(step, seconds)


if __name__ == "__main__":
    import torch.multiprocessing as mp
    from common import free_port, options

    args = options(__doc__).parse_args()
    chunks = 8 if args.control else 1
    mp.spawn(rank_main, args=(free_port(), args.seconds, 512 if args.intervene else 1024, chunks), nprocs=2)
