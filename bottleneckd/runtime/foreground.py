"""Running a sidecar's loop in this thread until a signal, a duration or its stop sink (an
``Outputs.stop_when`` wired before).

The signals a terminal or a supervisor sends all stop it cleanly (issue 25 item 5): SIGINT,
SIGTERM, SIGHUP (the terminal hung up; a supervisor's stop), and SIGUSR1/SIGUSR2, whose default
action would kill the process with no clean-up (a trace left in its hidden temporary file). A
signal that was ignored when we started (``nohup`` ignores SIGHUP) stays ignored."""

from __future__ import annotations

import signal
import sys
import threading

from bottleneckd.runtime.sidecar import Sidecar

#: always handled (as before issue 25), even when inherited as ignored
ALWAYS_HANDLED = (signal.SIGINT, signal.SIGTERM)
#: handled unless ignored at start: their default action ends the process without clean-up
UNLESS_IGNORED = (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)


def handled(sigs: tuple[int, ...]) -> tuple[int, ...]:
    """Of ``sigs``, those to handle: every one of ALWAYS_HANDLED, the others unless ignored now
    (``nohup`` and supervisors that ignore SIGHUP mean it to stay ignored)."""
    return tuple(s for s in sigs if s in ALWAYS_HANDLED or signal.getsignal(s) is not signal.SIG_IGN)


def run_foreground(side: Sidecar, duration: float | None, install_signals: bool = True) -> None:
    """Run the loop in this thread until a signal that stops it (when ``install_signals``),
    ``duration`` or the stop sink; the sidecar is closed on the way out (its outputs, the report
    file among them, then its receiver)."""
    stop = threading.Event()

    def handler(signum: int, _frame: object) -> None:
        stop.set()
        side.loop.stop()

    sigs = handled(ALWAYS_HANDLED + UNLESS_IGNORED) if install_signals else ()
    old = {s: signal.signal(s, handler) for s in sigs}
    try:
        side.loop.run(duration)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        side.close()
        sys.stdout.flush()
