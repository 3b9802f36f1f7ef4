"""Labelled workload: data loading bound on CPU (costly per-sample transforms, one worker).
Label: cpu_compute (stage data)."""

import argparse

from common import costly_image_job, train

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=20)
args = ap.parse_args()
loader, step = costly_image_job(workers=1)
train(step, lambda: loader, args.seconds)
