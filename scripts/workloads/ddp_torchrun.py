"""Labelled workload: DDP over gloo, 2 ranks started by torchrun (the elastic agent runs in this
process, as `torchrun --standalone --nproc-per-node 2` would), a 6-layer 2048-wide MLP
(25 M parameters) and a batch of 2 per rank: the step waits on the gradient all-reduce.
Intervention: no_sync() on every step."""

LABEL = "inter_gpu_interconnect"
PATTERN = "DDP over gloo, 2 ranks by torchrun's elastic agent (in the launched process), 25 M parameters, batch 2"
STAGE = "communication"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "less_frequent_sync"
INTERVENTION = "no_sync() on every step: same per-rank forward/backward, no gradient all-reduce"
MIN_SPEEDUP = 1.6
PROOF_SECONDS = 8  # steps of about a second: a 4-second run counts too few

import os
import sys


def rank_main(seconds: float, intervene: bool) -> None:
    import ranks
    import torch
    from common import mlp
    from torch.nn.parallel import DistributedDataParallel as DDP

    ranks.init(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    torch.manual_seed(0)
    model = DDP(mlp(2048, 6))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(2, 2048)
    ranks.timed_loop(ranks.ddp_step(model, opt, x, sync=not intervene), seconds)


if __name__ == "__main__":
    from common import options

    args = options(__doc__).parse_args()
    if "LOCAL_RANK" in os.environ:
        rank_main(args.seconds, args.intervene)
    else:
        from torch.distributed.run import main as torchrun

        torchrun(["--standalone", "--nproc-per-node", "2", os.path.abspath(__file__), *sys.argv[1:]])
