"""A DDP job whose loaders wait on latency: 2 ranks over gloo, started by torchrun's elastic agent
in this process (as `torchrun --standalone --nproc-per-node 2` would), each reading a Dataset that
waits 4 ms per sample on a slow store (a sleep: nothing busy) with no loader worker. Every rank
waits for its batch, and the all-reduce makes each wait for the slowest: the fix is more workers on
every rank at once, which `bottleneckd run --tune` tries with the ranks in step (README,
tests/test_tune_ranks.py, `scripts/eval.py --tune-suite`'s DDP job). Arguments: seconds to run,
and optionally each sample's wait in ms (4 by default). The ranks stop together: a flag
all-reduced each step says when one has run its time."""

import os
import sys
import time

import torch
import torch.distributed as dist
from latency_loader import Remote  # the same slow store (this file's folder is on sys.path)
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0


def rank_main() -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    t0 = time.time()
    for x in DataLoader(Remote(), batch_size=4):  # the loader held by nothing but its epoch
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        done = torch.tensor([float(time.time() - t0 > SECONDS)])
        dist.all_reduce(done, op=dist.ReduceOp.MAX)
        if done.item() > 0:
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    if "LOCAL_RANK" in os.environ:
        rank_main()
    else:
        from torch.distributed.run import main as torchrun

        torchrun(["--standalone", "--nproc-per-node", "2", os.path.abspath(__file__), *sys.argv[1:]])
