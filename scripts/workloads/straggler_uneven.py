"""Labelled workload: DDP over gloo, 2 ranks by torch.multiprocessing.spawn, an MLP and a global
batch of 2048 rows split unevenly (rank 0 256 rows, rank 1 1792: a length-bucketed or hand-split
shard): rank 1 computes about six times as long, rank 0 waits for it in the all-reduce every step.
Intervention: the same global batch split evenly (1024 rows each): the same work, the same
all-reduce, no rank waiting for another."""

LABEL = "cpu_compute"
PATTERN = "DDP over gloo, 2 ranks by spawn, MLP, global batch 2048 split 256 / 1792 (rank 1 straggles)"
STAGE = "compute"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "balance_ranks"
INTERVENTION = "the global batch split evenly (1024 rows a rank): the same work and all-reduce"
MIN_SPEEDUP = 1.35
#: the rank every other rank waits for (scripts/eval.py checks the verdict names it)
STRAGGLER = 1

GLOBAL_BATCH = 2048
UNEVEN = (256, 1792)


def rank_main(rank: int, port: int, seconds: float, intervene: bool) -> None:
    import ranks
    import torch
    from common import mlp
    from torch.nn.parallel import DistributedDataParallel as DDP

    ranks.init(rank, 2, port)
    torch.manual_seed(0)
    model = DDP(mlp(512, 5, d_in=256))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    rows = GLOBAL_BATCH // 2 if intervene else UNEVEN[rank]
    x = torch.randn(rows, 256)
    ranks.timed_loop(ranks.ddp_step(model, opt, x, sync=True), seconds)


if __name__ == "__main__":
    import torch.multiprocessing as mp
    from common import free_port, options

    args = options(__doc__).parse_args()
    mp.spawn(rank_main, args=(free_port(), args.seconds, args.intervene), nprocs=2)
