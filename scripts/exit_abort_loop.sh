#!/bin/bash
# How often a 2-rank gloo job aborts at exit (pytorch/pytorch#190489: "terminate called without an
# active exception", SIGABRT), under `bottleneckd run` beside a node sidecar (`bottleneckd serve` on
# loopback), as tests/test_ranks_job.py's test_run_joins_the_sidecar_already_serving_on_the_node runs it.
#
#   bash scripts/exit_abort_loop.sh RUNS [SECONDS] [JOB] [RUN FLAGS...]
#
# JOB defaults to tests/rank_job.py (which pauses before exit); pass a copy without its pause
# (`git show 55bd974:tests/rank_job.py > /tmp/job.py`) to see the abort, and `--no-inject` among the
# run flags to run the job without the hook (whose own pause is torch/collectives.py's
# EXIT_GRACE_SECONDS). Prints each failed run and "F of N failed"; outputs stay in a temporary
# directory, named at the end. Needs about 17 s a run on a 2-core machine with SECONDS=12.
set -u
cd "$(dirname "$0")/.."
runs=${1:?usage: exit_abort_loop.sh RUNS [SECONDS] [JOB] [RUN FLAGS...]}
seconds=${2:-12}
job=${3:-tests/rank_job.py}
shift $(($# < 3 ? $# : 3))
py=${PYTHON:-.venv/bin/python}
dir=$(mktemp -d)
mkdir -p "$dir/home" "$dir/channel"
free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
export BOTTLENECKD_HOME="$dir/home" BOTTLENECKD_SOCKET="$dir/channel/bottleneckd.sock" PYTHONPATH="$PWD"
port=$(free_port)
"$py" -m bottleneckd.cli serve --bind "127.0.0.1:$port" --quiet --duration $((runs * 60 + 60)) 2>/dev/null &
serve=$!
trap 'kill $serve 2>/dev/null' EXIT
sleep 4
failed=0
for i in $(seq "$runs"); do
    master=$(free_port)
    "$py" -m bottleneckd.cli run --quiet --force "$@" --report-json "$dir/r.json" -- \
        "$py" -m torch.distributed.run --nproc-per-node 2 --master-port "$master" "$job" --seconds "$seconds" \
        >"$dir/out_$i.txt" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        failed=$((failed + 1))
        echo "run $i: exit $rc$(grep -q 'terminate called' "$dir/out_$i.txt" && echo ', a rank aborted (terminate called)')"
    fi
done
echo "$failed of $runs failed (outputs in $dir)"
