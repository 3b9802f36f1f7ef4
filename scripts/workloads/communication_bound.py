"""Labelled workload: communication bound (two gloo ranks on this node, a large model, a tiny
batch; gradients all-reduced after each backward). Label: inter_gpu_interconnect (stage
communication): rank-to-rank traffic inside one node, which gloo over loopback stands in for.

Launched like torchrun: this script starts one process per rank with RANK/WORLD_SIZE set.
Intervention: the gradients' all-reduce skipped (the same forward, backward and optimizer step)."""

LABEL = "inter_gpu_interconnect"
PATTERN = "2 gloo ranks (torchrun-like env launcher), manual `all_reduce` of each gradient, 12.6 M parameters"
STAGE = "communication"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "less_frequent_sync"
INTERVENTION = "each gradient's all_reduce skipped: same per-rank forward/backward/step"
MIN_SPEEDUP = 1.5

import os
import subprocess
import sys
import time


def rank_main(rank: int, seconds: float, intervene: bool) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn

    set_threads()
    dist.init_process_group("gloo", rank=rank, world_size=2)
    model = nn.Sequential(nn.Linear(2048, 2048), nn.Linear(2048, 2048), nn.Linear(2048, 2048))  # 12.6 M parameters
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(2, 2048)
    t0, steps = time.perf_counter(), 0
    while True:
        opt.zero_grad()
        model(x).sum().backward()
        for p in model.parameters():
            if not intervene:
                dist.all_reduce(p.grad)
        opt.step()
        steps += 1
        done = torch.tensor([float(time.perf_counter() - t0 >= seconds)])
        dist.all_reduce(done)
        if done.item() > 0:
            break
    if rank == 0:
        dt = time.perf_counter() - t0
        print(f"throughput: {steps / dt:.3f} steps/s ({steps} steps in {dt:.1f} s)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    from common import free_port, options, set_threads

    ap = options(__doc__)
    ap.add_argument("--port", type=int, default=None, help="rendezvous port (default: a free one)")
    ap.add_argument("--rank", type=int, default=None)
    args = ap.parse_args()
    if args.rank is not None:
        rank_main(args.rank, args.seconds, args.intervene)
    else:
        env = dict(
            os.environ,
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(args.port or free_port()),
            WORLD_SIZE="2",
            LOCAL_WORLD_SIZE="2",
        )
        procs = [
            subprocess.Popen(
                [sys.executable, __file__, "--rank", str(r), "--seconds", str(args.seconds)]
                + (["--intervene"] if args.intervene else []),
                env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
            )
            for r in range(2)
        ]
        sys.exit(max(p.wait() for p in procs))
