"""Running a sidecar's loop in this thread until a signal, a duration or a stop condition; the
report file the hook reads at epoch end is refreshed as it runs."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Callable

from bottleneckd.channel.report_file import remove_report_file, write_report_file
from bottleneckd.diagnosis.pipeline import Snapshot
from bottleneckd.outputs.report import build_report
from bottleneckd.runtime.sidecar import Sidecar

log = logging.getLogger(__name__)


class ReportFile:
    """A sink: every ``every`` ticks, the current report beside the channel socket."""

    def __init__(self, side: Sidecar, every: int = 2) -> None:
        self.side = side
        self.every = every
        self.n = 0
        self.failed = False

    def __call__(self, _sample: object) -> None:
        self.n += 1
        if self.failed or self.n % self.every:
            return
        try:
            write_report_file(self.side.receiver.path, build_report(self.side.pipeline, current=True))
        except OSError as e:  # the hook then prints its block without the sidecar's verdict
            log.warning(
                "cannot write the report file for the hook (%s); epoch-end blocks go without it", e.strerror or e
            )
            self.failed = True


def run_foreground(
    side: Sidecar,
    duration: float | None,
    on_tick: Callable[[Snapshot], None] | None = None,
    stop_when: Callable[[], bool] | None = None,
    install_signals: bool = True,
) -> None:
    """Run the loop in this thread until SIGINT/SIGTERM (when ``install_signals``), ``duration``
    or ``stop_when()``; the receiver is closed and its files removed on the way out."""
    stop = threading.Event()

    def handler(signum: int, _frame: object) -> None:
        stop.set()
        side.loop.stop()

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)} if install_signals else {}
    side.loop.add_sink("report_file", ReportFile(side))
    if on_tick is not None:
        side.loop.add_sink("view", lambda _s: on_tick(side.pipeline.latest) if side.pipeline.latest else None)
    if stop_when is not None:
        side.loop.add_sink("stop", lambda _s: side.loop.stop() if stop_when() else None)
    try:
        side.loop.run(duration)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        remove_report_file(side.receiver.path)
        side.close()
        sys.stdout.flush()
