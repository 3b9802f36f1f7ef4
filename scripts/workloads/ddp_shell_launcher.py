"""Labelled workload: DDP over gloo, 2 ranks started by a shell script (`sh -c 'python rank 0 &
python rank 1 & wait'`, as many cluster launch scripts do), a 16.8 M parameter MLP and a batch
of 2 per rank: the step waits on the gradient all-reduce. Intervention: no_sync() on every step."""

LABEL = "inter_gpu_interconnect"
PATTERN = "DDP over gloo, 2 ranks started by `sh -c 'python ... & python ... & wait'`, 16.8 M parameters, batch 2"
STAGE = "communication"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "less_frequent_sync"
INTERVENTION = "no_sync() on every step: same per-rank forward/backward, no gradient all-reduce"
MIN_SPEEDUP = 1.6
PROOF_SECONDS = 8  # steps of about a second: a 4-second run counts too few

import os
import shlex
import subprocess
import sys


def rank_main(rank: int, seconds: float, intervene: bool) -> None:
    import ranks
    import torch
    from common import mlp
    from torch.nn.parallel import DistributedDataParallel as DDP

    ranks.init(rank, 2, int(os.environ["MASTER_PORT"]))
    torch.manual_seed(0)
    model = DDP(mlp(2048, 4))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(2, 2048)
    ranks.timed_loop(ranks.ddp_step(model, opt, x, sync=not intervene), seconds)


if __name__ == "__main__":
    from common import free_port, options

    ap = options(__doc__)
    ap.add_argument("--rank", type=int, default=None)
    args = ap.parse_args()
    if args.rank is not None:
        rank_main(args.rank, args.seconds, args.intervene)
    else:
        me = [sys.executable, os.path.abspath(__file__), "--seconds", str(args.seconds)] + (
            ["--intervene"] if args.intervene else []
        )
        script = " & ".join(shlex.join(me + ["--rank", str(r)]) for r in range(2)) + " & wait"
        env = dict(os.environ, MASTER_PORT=str(free_port()))
        sys.exit(subprocess.call(["sh", "-c", script], env=env))
