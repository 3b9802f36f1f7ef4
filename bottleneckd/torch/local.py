"""The sidecar in a background thread of the training process, used when no sidecar listens.
It is the one sidecar assembly (runtime.sidecar.build_sidecar) without a socket: the watcher
hands it messages through ``receiver.ingest``, and its report is the run's (``Run.report``).
Only daemon-side modules run here; they do not touch torch."""

from __future__ import annotations

from typing import Any

from bottleneckd.runtime.sidecar import build_sidecar


class LocalSidecar:
    def __init__(self, pid: int, interval: float = 1.0) -> None:
        self.side = build_sidecar(interval=interval, pid=pid, listen=False)
        self.receiver = self.side.receiver
        self.loop = self.side.loop
        self.loop.start()

    def report(self) -> dict[str, Any] | None:
        self.loop.tick()  # include the phases just flushed
        return self.side.run.report(current=True)

    def stop(self) -> None:
        self.loop.stop()
        self.side.close()
