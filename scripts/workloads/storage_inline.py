"""Labelled workload: storage bound with num_workers=0: the training process itself does the
small random O_DIRECT reads in __getitem__ (16 random 4 KiB records per sample) for a one-layer
model. Intervention: the same records served from memory."""

LABEL = "storage_bandwidth"
PATTERN = "the same reads with `num_workers=0` (in the training process)"
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
loader = DataLoader(RandomRecords(path, "memory" if args.intervene else "direct"), batch_size=32, num_workers=0)
train(linear_job(loader), lambda: loader, args.seconds)
