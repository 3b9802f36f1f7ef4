"""Labelled workload: storage bound through the page cache: two loader workers read random 4 KiB
records with plain buffered pread, and each record's pages are dropped right after it is read
(posix_fadvise DONTNEED; the whole file's at start), as a dataset far larger than the page cache
behaves. Intervention: the same records served from memory."""

LABEL = "storage_bandwidth"
PATTERN = (
    "2 workers, buffered `pread`, each record's pages dropped with `posix_fadvise(DONTNEED)` (the whole "
    "file's at start)"
)
STAGE = "data"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "cache_locally"
INTERVENTION = "the same records served from memory (file read into RAM before timing)"
MIN_SPEEDUP = 2.0

from common import data_file, options, train
from records import RandomRecords, linear_job
from torch.utils.data import DataLoader

ap = options(__doc__)
ap.add_argument("--mib", type=int, default=256)
args = ap.parse_args()
path = data_file(f"bottleneckd-records-{args.mib}.bin", args.mib)
loader = DataLoader(
    RandomRecords(path, "memory" if args.intervene else "dropped"),
    batch_size=64,
    num_workers=2,
    persistent_workers=True,
)
train(linear_job(loader), lambda: loader, args.seconds)
