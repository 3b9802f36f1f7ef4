#!/usr/bin/env bash
# GPU check: the hook on CUDA (per-step cost, no-code-change injection), mitigations measured
# on the GPU, the sidecar at 10 Hz with real NVML, and a trace with a mitigation applied.
set -u
OUT=${OUT:-/tmp/devout}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:$PWD/scripts/workloads PYTHONUNBUFFERED=1
B="python3 -m bottleneckd.cli"
echo "== watcher overhead on cuda"
timeout 90 python3 scripts/bench_watcher.py --only overhead --device cuda --blocks 10 --steps 200 2>&1 | tee "$OUT/overhead_cuda.txt"
echo "== mitigations on cuda"
timeout 200 python3 scripts/bench_watcher.py --only mitigations --device cuda --cases mixed_precision channels_last activation_checkpointing gradient_accumulation 2>&1 | tee "$OUT/mitigations_cuda.txt"
echo "== 10 Hz sidecar with NVML during a GPU job, mixed precision applied with verify"
cat > /tmp/gpu_amp.py <<'PY'
import time, torch
from torch import nn
from bottleneckd.torch import watch
m = nn.Sequential(*[nn.Linear(8192, 8192) for _ in range(4)]).cuda()
o = torch.optim.SGD(m.parameters(), lr=1e-4)
x = torch.randn(4096, 8192, device="cuda")
w = watch(m, o, [x] * 100000, print_epoch=False)
t0 = time.time(); k = 0
for b in w.dataloader:
    o.zero_grad(set_to_none=True); m(b).float().pow(2).mean().backward(); o.step(); k += 1
    if k == 40: w.apply("mixed_precision", dtype="bfloat16", verify=True, steps=30)
    if time.time() - t0 > 14: break
torch.cuda.synchronize(); w.close()
print("trials", [(t.name, t.kept, t.ratio) for t in w.trials])
PY
$B record -o "$OUT/gpu_amp_10hz.jsonl" --force --interval 0.1 --duration 20 --socket /tmp/bn10/bottleneckd.sock --quiet &
rec=$!; sleep 2
BOTTLENECKD_SOCKET=/tmp/bn10/bottleneckd.sock timeout 60 python3 /tmp/gpu_amp.py 2>&1 | tail -4
wait $rec
$B analyze "$OUT/gpu_amp_10hz.jsonl" --window 20 | head -8
python3 - "$OUT/gpu_amp_10hz.jsonl" <<'PY'
import json, sys, statistics
d = [json.loads(l) for l in open(sys.argv[1])]
s = [x for x in d if x.get("type") == "sample"]
per = {}
for x in s:
    for k, v in x["samplers"].items(): per.setdefault(k, []).append(v[1])
print("samples", len(s), "events", [x for x in d if x.get("type") == "event"])
print("sampler seconds per tick (median, max):", {k: (round(statistics.median(v) * 1e3, 2), round(max(v) * 1e3, 2)) for k, v in per.items()}, "ms")
PY
echo "== no-code-change run on cuda"
cat > /tmp/gpu_plain.py <<'PY'
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
m = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 10)).cuda()
o = torch.optim.AdamW(m.parameters())
dl = DataLoader(TensorDataset(torch.randn(8192, 4096), torch.randint(0, 10, (8192,))), batch_size=256, pin_memory=True)
lf = nn.CrossEntropyLoss()
for epoch in range(3):
    for x, y in dl:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        o.zero_grad(); lf(m(x), y).backward(); o.step()
print("plain job done")
PY
timeout 120 $B run --report-json "$OUT/run_plain.json" -- python3 /tmp/gpu_plain.py 2>&1 | tail -14
