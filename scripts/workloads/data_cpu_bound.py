"""Labelled workload: data loading bound on CPU (costly per-sample transforms, one loader worker,
a small conv net). Intervention: a second loader worker (the host has two cores; the training
step itself needs little of one)."""

LABEL = "cpu_compute"
STAGE = "data"
INTERVENTION = "num_workers raised from 1 to 2"
MIN_SPEEDUP = 1.35

from common import costly_image_job, options, train

args = options(__doc__).parse_args()
loader, step = costly_image_job(workers=2 if args.intervene else 1)
train(step, lambda: loader, args.seconds)
