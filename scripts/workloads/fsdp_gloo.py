"""Labelled workload: FSDP (fully_shard, per layer) over gloo, 2 ranks started with
torch.multiprocessing.spawn, a 25 M parameter MLP and a batch of 2 per rank: every layer's
parameters are all-gathered before its forward and backward, and its gradients reduce-scattered.
Intervention: world size 1 with the same per-rank work (the same model and batch on one rank;
its all-gather and reduce-scatter move nothing between processes)."""

LABEL = "inter_gpu_interconnect"
PATTERN = "FSDP2 (`fully_shard` per layer) over gloo, 2 ranks by spawn, 25 M parameters, batch 2"
STAGE = "communication"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "shard_less"
INTERVENTION = "world size 1 with the same per-rank model and batch (collectives move nothing)"
MIN_SPEEDUP = 1.5
PROOF_SECONDS = 8  # steps of about a second: a 4-second run counts too few


def rank_main(rank: int, world: int, port: int, seconds: float) -> None:
    import ranks
    import torch
    from common import mlp
    from torch.distributed.fsdp import fully_shard

    ranks.init(rank, world, port)
    torch.manual_seed(0)
    model = mlp(2048, 6)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(2, 2048)

    def step() -> None:
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    ranks.timed_loop(step, seconds)


if __name__ == "__main__":
    import torch.multiprocessing as mp
    from common import free_port, options

    args = options(__doc__).parse_args()
    world = 1 if args.intervene else 2
    mp.spawn(rank_main, args=(world, free_port(), args.seconds), nprocs=world)
