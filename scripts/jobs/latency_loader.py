"""A Dataset that waits 4 ms per sample on a slow store (a sleep: nothing busy), no loader workers:
the job `bottleneckd run --tune` is shown and tested on (README, tests/test_tune.py) and that
`scripts/eval.py --tune-suite` runs as its latency-bound loader. Arguments: seconds to run, and
optionally each sample's wait in ms (4 by default)."""

import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

WAIT_S = (float(sys.argv[2]) if len(sys.argv) > 2 else 4.0) / 1000


class Remote(Dataset):  # each sample waits on a slow store: latency, nothing busy
    def __len__(self) -> int:
        return 200_000

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(WAIT_S)
        return torch.randn(16)


if __name__ == "__main__":  # Remote is also the DDP job's (ddp_latency_loader.py)
    torch.set_num_threads(1)
    model = torch.nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    t0 = time.time()
    for x in DataLoader(Remote(), batch_size=4):  # the loader held by nothing but its epoch
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        if time.time() - t0 > float(sys.argv[1]):
            break
