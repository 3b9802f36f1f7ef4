"""Labelled workload: DDP over gloo, 2 ranks started with torch.multiprocessing.spawn, a small
MLP (1.3 M parameters) and a large batch (1024 per rank): each rank's forward and backward
dominate; the all-reduce of 5 MB of gradients is a small part of the step.
Intervention: half the batch per rank (the all-reduce unchanged): a compute-bound step is
nearly twice as fast, a communication-bound one would not be."""

LABEL = "cpu_compute"
PATTERN = "DDP over gloo, 2 ranks, 1.3 M-parameter MLP, batch 1024 per rank"
STAGE = "compute"
INTERVENTION = "half the per-rank batch, same model (the all-reduce is unchanged)"
MIN_SPEEDUP = 1.5


def rank_main(rank: int, port: int, seconds: float, batch: int) -> None:
    import ranks
    import torch
    from common import mlp
    from torch.nn.parallel import DistributedDataParallel as DDP

    ranks.init(rank, 2, port)
    torch.manual_seed(0)
    model = DDP(mlp(512, 5, d_in=256))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 256)
    ranks.timed_loop(ranks.ddp_step(model, opt, x, sync=True), seconds)


if __name__ == "__main__":
    import torch.multiprocessing as mp
    from common import free_port, options

    args = options(__doc__).parse_args()
    mp.spawn(rank_main, args=(free_port(), args.seconds, 512 if args.intervene else 1024), nprocs=2)
