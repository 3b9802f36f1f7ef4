#!/usr/bin/env bash
# GPU check, after sampling CUDA steps (1 in 8 timed) and caching static NVML fields: the
# watcher's cost on CUDA, mitigations on the GPU, and the sampler's cost per tick at 10 Hz.
set -u
OUT=${OUT:-/tmp/devout}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:$PWD/scripts/workloads PYTHONUNBUFFERED=1
timeout 100 python3 scripts/bench_watcher.py --only overhead --device cuda --blocks 20 --steps 200 2>&1 | tee "$OUT/overhead_cuda.txt"
timeout 150 python3 scripts/bench_watcher.py --only mitigations --device cuda --cases mixed_precision channels_last gradient_accumulation data_echoing 2>&1 | grep -v "^\[bottleneckd\]" | tee "$OUT/mitigations_cuda.txt"
python3 -m bottleneckd.cli record -o "$OUT/gpu_10hz.jsonl" --force --interval 0.1 --duration 12 --socket /tmp/bn10/s.sock --quiet &
rec=$!; sleep 1
BOTTLENECKD_SOCKET=/tmp/bn10/s.sock timeout 40 python3 scripts/workloads/gpu_compute_bound.py --seconds 9 2>&1 | tail -2
wait $rec
python3 - "$OUT/gpu_10hz.jsonl" <<'PY'
import json, sys, statistics
s = [json.loads(l) for l in open(sys.argv[1])][1:]
per = {}
for x in s:
    for k, v in x["samplers"].items(): per.setdefault(k, []).append(v[1])
print("10 Hz:", len(s), "samples; sampler ms per tick (median, p95):", {k: (round(statistics.median(v) * 1e3, 2), round(sorted(v)[int(0.95 * len(v))] * 1e3, 2)) for k, v in per.items()})
PY
python3 -m bottleneckd.cli analyze "$OUT/gpu_10hz.jsonl" --window 20 | head -4
