"""Running a sidecar's loop in this thread until a signal, a duration or a stop condition; the
report file the hook reads at epoch end is refreshed as it runs.

The signals a terminal or a supervisor sends all stop it cleanly (issue 25 item 5): SIGINT,
SIGTERM, SIGHUP (the terminal hung up; a supervisor's stop), and SIGUSR1/SIGUSR2, whose default
action would kill the process with no clean-up (a trace left in its hidden temporary file). A
signal that was ignored when we started (``nohup`` ignores SIGHUP) stays ignored."""

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

#: always handled (as before issue 25), even when inherited as ignored
ALWAYS_HANDLED = (signal.SIGINT, signal.SIGTERM)
#: handled unless ignored at start: their default action ends the process without clean-up
UNLESS_IGNORED = (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)


def handled(sigs: tuple[int, ...]) -> tuple[int, ...]:
    """Of ``sigs``, those to handle: every one of ALWAYS_HANDLED, the others unless ignored now
    (``nohup`` and supervisors that ignore SIGHUP mean it to stay ignored)."""
    return tuple(s for s in sigs if s in ALWAYS_HANDLED or signal.getsignal(s) is not signal.SIG_IGN)


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
        if self.side.receiver.dir is None:  # no socket: no hook to read it
            return
        try:
            write_report_file(self.side.receiver.dir, build_report(self.side.pipeline, current=True))
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
    """Run the loop in this thread until a signal that stops it (when ``install_signals``), ``duration``
    or ``stop_when()``; the receiver is closed and its files removed on the way out."""
    stop = threading.Event()

    def handler(signum: int, _frame: object) -> None:
        stop.set()
        side.loop.stop()

    sigs = handled(ALWAYS_HANDLED + UNLESS_IGNORED) if install_signals else ()
    old = {s: signal.signal(s, handler) for s in sigs}
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
        remove_report_file(side.receiver.dir)
        side.close()
        sys.stdout.flush()
