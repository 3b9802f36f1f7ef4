#!/usr/bin/env bash
# One prepared run of scripts/gpu_check.py on a GPU machine that has PyTorch but not py-spy or plotly:
# those come as wheels in .whl/ (see the device notes), installed into /tmp/site. Writes gpu_check.json,
# gpu_check.md, peaks.json and everything else (reports, traces) as gc.tgz under ${OUT:-/tmp/devout}.
#   bash scripts/device_check_gpu_check.sh [gpu_check.py options, e.g. --only bf16_matmul --seconds 8]
set -u
OUT=${OUT:-/tmp/devout}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
fi
export PYTHONUNBUFFERED=1
{ nvidia-smi -L; python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name(0))'; uname -r; nproc;
  command -v py-spy; } > "$OUT/machine.txt" 2>&1
PYTHONPATH=$PWD:${PYTHONPATH:-} timeout 60 python3 -m bottleneckd peaks --json > "$OUT/peaks.json" 2> "$OUT/peaks.err"
timeout "${GPU_CHECK_TIMEOUT:-480}" python3 scripts/gpu_check.py --out /tmp/gc "$@" > "$OUT/gc.log" 2>&1
echo "gpu_check rc=$?" >> "$OUT/gc.log"
cp /tmp/gc/gpu_check.json /tmp/gc/gpu_check.md "$OUT/" 2>/dev/null
tar czf "$OUT/gc.tgz" -C /tmp gc 2>/dev/null
cat "$OUT/machine.txt"; tail -c 6000 "$OUT/gc.log"
