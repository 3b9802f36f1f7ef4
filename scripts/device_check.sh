#!/usr/bin/env bash
# One prepared run on a GPU machine: real NVML detection, GPU calibration, and two labelled GPU
# workloads recorded by the sidecar and analysed. Writes everything under ${OUT:-/tmp/devout}.
set -u
OUT=${OUT:-/tmp/devout}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
B="python3 -m bottleneckd.cli"
nvidia-smi -L | tee "$OUT/smi.txt"
$B peaks > "$OUT/peaks.txt" 2>&1; $B peaks --json > "$OUT/peaks.json" 2>>"$OUT/peaks.txt"
tail -30 "$OUT/peaks.txt"
timeout 150 $B calibrate --seconds 0.5 --dir /tmp --output "$OUT/profile.json" > "$OUT/calibrate.txt" 2>&1; echo "calibrate rc=$?"
cat "$OUT/calibrate.txt" | tail -25
for wl in gpu_compute_bound gpu_memory_bandwidth_bound; do
  sock=/tmp/bn-$wl/bottleneckd.sock
  $B --profile "$OUT/profile.json" record -o "$OUT/$wl.jsonl" --force --duration 24 --socket "$sock" --quiet &
  rec=$!; sleep 3
  BOTTLENECKD_SOCKET=$sock timeout 60 python3 scripts/workloads/$wl.py --seconds 18 2>&1 | tail -5
  wait $rec
  echo "== $wl"; $B analyze "$OUT/$wl.jsonl" | head -12
done
python3 - <<'PY' 2>&1 | tee "$OUT/cuda_phases.txt"
import torch, time
from torch import nn
from bottleneckd.torch import watch
m = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096)).cuda()
o = torch.optim.SGD(m.parameters(), lr=1e-3)
data = [torch.randn(1024, 4096) for _ in range(8)]
w = watch(m, o, data * 25, print_epoch=False, local_sampling=False)
t0 = time.perf_counter()
for x in w.dataloader:
    x = x.cuda(non_blocking=True)
    o.zero_grad(); m(x).sum().backward(); o.step()
torch.cuda.synchronize(); wall = time.perf_counter() - t0
w._end_step  # noqa
r = w.epoch_reports[-1]
print("steps", r.steps, "phase sum", round(sum(r.phases.values()), 4), "wall", round(wall, 4), {k: round(v, 4) for k, v in r.phases.items()})
PY
