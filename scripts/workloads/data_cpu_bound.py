"""Labelled workload: data loading bound on CPU (costly per-sample transforms, one loader worker,
a small conv net). Intervention: the transform rounds removed (the same images). A second worker
(--also) measured x1.98 on a quiet 2-core VM, where the one worker left a core idle (0.8x once on
the same VM shared with other jobs: no idle core to give it)."""

LABEL = "cpu_compute"
PATTERN = "1 loader worker doing costly per-image transforms, small conv net"
STAGE = "data"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "simplify_augmentation"
INTERVENTION = "the per-sample transform rounds removed (same images, one worker)"
MIN_SPEEDUP = 2.0
ALSO_PROVES = "more_loader_workers"
ALSO_INTERVENTION = "num_workers=2 (the same transforms, a second loader worker)"
ALSO_MIN_SPEEDUP = 1.15

from common import costly_image_job, options, train

args = options(__doc__).parse_args()
loader, step = costly_image_job(workers=2 if args.also else 1, cost=0 if args.intervene else 24)
train(step, lambda: loader, args.seconds)
