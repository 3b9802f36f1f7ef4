"""Labelled workload: DDP over gloo, 2 ranks started with torch.multiprocessing.spawn, a 33 M
parameter MLP and a batch of 4 per rank: the step waits on the gradient all-reduce.
Intervention: DDP's no_sync() on every step (the same forward and backward on each rank,
gradients never all-reduced)."""

LABEL = "inter_gpu_interconnect"
PATTERN = "DDP over gloo, 2 ranks by `torch.multiprocessing.spawn`, 33.6 M-parameter MLP, batch 4"
STAGE = "communication"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "less_frequent_sync"
INTERVENTION = "no_sync() on every step: same per-rank forward/backward, no gradient all-reduce"
MIN_SPEEDUP = 1.6
PROOF_SECONDS = 8  # steps of about a second: a 4-second run counts too few


def rank_main(rank: int, port: int, seconds: float, intervene: bool) -> None:
    import ranks
    import torch
    from common import mlp
    from torch.nn.parallel import DistributedDataParallel as DDP

    ranks.init(rank, 2, port)
    torch.manual_seed(0)
    model = DDP(mlp(2048, 8))  # 33.6 M parameters
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(4, 2048)
    ranks.timed_loop(ranks.ddp_step(model, opt, x, sync=not intervene), seconds)


if __name__ == "__main__":
    import torch.multiprocessing as mp
    from common import free_port, options

    args = options(__doc__).parse_args()
    mp.spawn(rank_main, args=(free_port(), args.seconds, args.intervene), nprocs=2)
