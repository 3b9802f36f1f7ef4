"""Labelled workload: storage bound, two loader workers each doing small random reads below the
page cache (16 random 4 KiB records per sample, O_DIRECT) for a one-layer model.
Intervention: the same records served from memory (the file read into RAM once, before timing)."""

LABEL = "storage_bandwidth"
PATTERN = "2 workers, 16 random 4 KiB `O_DIRECT` reads per sample"
STAGE = "data"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "cache_locally"
INTERVENTION = "the same records served from memory (file read into RAM before timing)"
MIN_SPEEDUP = 2.0

from common import data_file, options, train
from records import RandomRecords, linear_job
from torch.utils.data import DataLoader

ap = options(__doc__)
ap.add_argument("--mib", type=int, default=256, help="size of the data file under the temp dir (disk-backed: O_DIRECT)")
args = ap.parse_args()
path = data_file(f"bottleneckd-records-{args.mib}.bin", args.mib)
loader = DataLoader(
    RandomRecords(path, "memory" if args.intervene else "direct"), batch_size=64, num_workers=2, persistent_workers=True
)
train(linear_job(loader), lambda: loader, args.seconds)
