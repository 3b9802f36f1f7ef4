"""Labelled workload: idle, blocked on a lock: a background "metrics uploader" thread holds a
lock for 150 ms out of every 160 ms (it sleeps while holding it, as a client waiting on a slow
endpoint does), and the training loop takes that lock to log after every small step. The job's
threads are asleep on a futex most of the time; no resource limits it: the right verdict is
`undetermined`. Intervention: the uploader does not hold the lock while it waits."""

LABEL = "undetermined"
PATTERN = "the loop takes a lock that an uploader thread holds while it waits"
STAGE = None
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "per_step_python_work"
INTERVENTION = "the uploader thread releases the lock before it waits"
MIN_SPEEDUP = 3.0

import threading
import time

import torch
from common import classifier_step, options, set_threads, train
from torch import nn

args = options(__doc__).parse_args()
set_threads()
lock = threading.Lock()
log: list[float] = []


def uploader() -> None:
    while True:
        with lock:
            if not args.intervene:
                time.sleep(0.15)
            del log[:]
        time.sleep(0.15 if args.intervene else 0.01)


threading.Thread(target=uploader, daemon=True).start()
model = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
train_step = classifier_step(model, opt, nn.CrossEntropyLoss())
batch = (torch.randn(64, 128), torch.randint(0, 10, (64,)))


def step(_: object) -> None:
    train_step(batch)
    with lock:
        log.append(time.time())


train(step, lambda: range(1_000_000), args.seconds)
