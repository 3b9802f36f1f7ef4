"""The sidecar in a background thread of the training process, used when no sidecar listens.
It is the one sidecar assembly (runtime.sidecar.build_sidecar) without a socket: the watcher
hands it messages through ``receiver.ingest``, and its report is the run's (``Run.report``).
Only daemon-side modules run here; they do not touch torch. A thread samples the training
thread's own stacks (``samplers/self_stacks.py``) to name the code of the bottleneck's stage."""

from __future__ import annotations

import threading
from typing import Any

from bottleneckd.runtime.sidecar import build_sidecar
from bottleneckd.samplers.self_stacks import SelfStackSampler
from bottleneckd.samplers.stacks import StackSampler

#: py-spy dumps of one DataLoader worker per second (only while the process has workers): ~12 ms
#: of CPU each (py-spy 0.4.3), ~1% of a core
WORKER_RATE_HZ = 1.0


def worker_stacks(pid: int) -> StackSampler | None:
    """py-spy on this process's DataLoader workers, when py-spy is installed (their code is the data
    stage's; a thread of ours cannot read another process's frames)."""
    s = StackSampler(pid, WORKER_RATE_HZ, main=False)
    return s.start() if s.exe is not None else None


class LocalSidecar:
    def __init__(self, pid: int, interval: float = 1.0, thread_id: int | None = None) -> None:
        self.side = build_sidecar(interval=interval, pid=pid, listen=False)
        self.receiver = self.side.receiver
        self.loop = self.side.loop
        # the thread that built the watcher is the one that trains
        self.stacks = SelfStackSampler(threading.get_ident() if thread_id is None else thread_id)
        self.side.code_sources.append(self.stacks.drain)
        self.stacks.start()
        self.workers = worker_stacks(pid)
        if self.workers is not None:
            self.side.code_sources.append(self.workers.drain_code)
        self.loop.start()

    def report(self) -> dict[str, Any] | None:
        self.loop.tick()  # include the phases just flushed
        return self.side.run.report(current=True)

    def stop(self) -> None:
        self.stacks.stop()
        if self.workers is not None:
            self.workers.stop()
        self.loop.stop()
        self.side.close()
