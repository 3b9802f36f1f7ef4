"""Labelled workload: host memory-capacity pressure. The job holds an in-RAM cache that leaves
about 6% of the machine's memory available, and reads random 4 KiB records (buffered) of a
dataset file twice that size: the page cache cannot keep the file, so most reads miss and go to
the disk. Intervention: the in-RAM cache not held (the same file, the same reads; the page
cache now keeps the whole file).

Runs with oom_score_adj 1000: should anything on a shared host need the memory, the kernel
kills this workload first."""

LABEL = "cpu_memory"
PATTERN = "an in-RAM cache leaving 6% of memory available; buffered random reads of a dataset twice that size"
STAGE = None
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = None  # no knowledge-base entry is "hold less in RAM" (its intervention frees the cache)
INTERVENTION = "the job's large in-RAM cache not allocated (the page cache then holds the dataset)"
MIN_SPEEDUP = 2.0


import psutil
import torch
from common import data_file, options, train
from records import RandomRecords, linear_job
from torch.utils.data import DataLoader

ap = options(__doc__)
ap.add_argument("--leave", type=float, default=0.06, help="fraction of memory left available")
args = ap.parse_args()
try:
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("1000")
except OSError:
    pass
total = psutil.virtual_memory().total
mib = max(1024, int(2 * args.leave * total) >> 20)
path = data_file(f"bottleneckd-records-{mib}.bin", mib)
cache = None
if not args.intervene:
    nbytes = int(psutil.virtual_memory().available - args.leave * total)
    cache = torch.ones(max(1, nbytes // 4), dtype=torch.float32)  # touched: resident, not just reserved
else:
    with open(path, "rb") as f:  # warm the page cache: it holds the whole file when the RAM is free
        while f.read(16 << 20):
            pass
dataset = RandomRecords(path, "buffered")
loader = DataLoader(dataset, batch_size=32, num_workers=0)
train(linear_job(loader), lambda: loader, args.seconds)
del cache
