"""Labelled workload: an `accelerate launch` DDP job on the CPU (2 processes, gloo, as
`accelerate launch --multi_gpu --num_processes 2` starts it on a machine without GPUs: Accelerate
runs it as MULTI_CPU), `accelerator.prepare` wrapping a 33.6 M-parameter MLP in DDP, batch 2 per
process: the step waits on the gradient all-reduce (batch 4 gave no_sync() x1.45 at load 20, under
the 1.6 a communication-bound step shows; a smaller batch leaves the all-reduce as it is). This
script launches itself the way a user's shell would. Intervention: `accelerator.no_sync(model)`
on every step (no all-reduce)."""

LABEL = "inter_gpu_interconnect"
PATTERN = "`accelerate launch` (MULTI_CPU, gloo, 2 processes), `accelerator.prepare`d 33.6 M-parameter MLP, batch 2"
STAGE = "communication"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "less_frequent_sync"
INTERVENTION = "accelerator.no_sync(model) on every step: same per-process forward/backward, no all-reduce"
MIN_SPEEDUP = 1.6
PROOF_SECONDS = 8  # steps of about a second: a 4-second run counts too few

import contextlib
import os
import subprocess
import sys
import time


def train(seconds: float, intervene: bool) -> None:
    import torch
    from accelerate import Accelerator
    from common import mlp, report, set_threads

    set_threads()
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = mlp(2048, 8)
    model, opt = acc.prepare(model, torch.optim.SGD(model.parameters(), lr=1e-3))
    x = torch.randn(2, 2048)

    def step() -> None:
        with acc.no_sync(model) if intervene else contextlib.nullcontext():
            acc.backward(model(x).pow(2).mean())
        opt.step()
        opt.zero_grad()

    step()  # warm-up: lazy initialisation and the first connections are not timed
    t0, steps = time.perf_counter(), 0
    while True:
        step()
        steps += 1
        done = torch.tensor([float(time.perf_counter() - t0 >= seconds)])
        if acc.reduce(done, reduction="sum").item() > 0:  # every process stops at the same step
            break
    if acc.is_main_process:
        report(steps, time.perf_counter() - t0)


if __name__ == "__main__":
    from common import free_port, options

    args = options(__doc__).parse_args()
    if "LOCAL_RANK" in os.environ:
        train(args.seconds, args.intervene)
    else:
        launch = [os.path.join(os.path.dirname(sys.executable), "accelerate"), "launch", "--multi_gpu"]
        launch += ["--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no"]
        launch += ["--dynamo_backend", "no", "--main_process_port", str(free_port())]
        flags = ["--seconds", str(args.seconds), "--threads", args.threads] + (
            ["--intervene"] if args.intervene else []
        )
        sys.exit(subprocess.call(launch + [os.path.abspath(__file__), *flags]))
