"""Running a sidecar's loop in this thread until a signal, a duration or its stop sink (an
``Outputs.stop_when`` wired before)."""

from __future__ import annotations

import signal
import sys
import threading

from bottleneckd.runtime.sidecar import Sidecar


def run_foreground(side: Sidecar, duration: float | None, install_signals: bool = True) -> None:
    """Run the loop in this thread until SIGINT/SIGTERM (when ``install_signals``), ``duration``
    or the stop sink; the sidecar is closed on the way out (its outputs, then its receiver)."""
    stop = threading.Event()

    def handler(signum: int, _frame: object) -> None:
        stop.set()
        side.loop.stop()

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)} if install_signals else {}
    try:
        side.loop.run(duration)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        side.close()
        sys.stdout.flush()
