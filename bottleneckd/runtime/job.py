"""Starting ``run``'s job and supervising it: sample until it exits, pass signals on once, and
stop a job that will not stop. The job's exit code is passed through (a signal n as 128+n).

SIGHUP is a stop like SIGTERM (the terminal hung up, or a supervisor stops us): passed on and the
job supervised to its end, the report written and the run's directory removed; SIGUSR1 and
SIGUSR2 are the job's (Slurm's ``--signal`` warns of the time limit with them): passed on, every
time, and the sampling goes on (issue 25 item 5: both killed ``run`` with exit 129 or 138, the job
orphaned and ``/tmp/bottleneckd-run-*`` left behind)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from typing import Any

from bottleneckd.model.errors import InputError
from bottleneckd.runtime.foreground import handled, run_foreground
from bottleneckd.runtime.sidecar import Sidecar

DEFAULT_GRACE = 30.0
#: the job's own signals: passed on each time, sampling goes on
PASS_ON = (signal.SIGUSR1, signal.SIGUSR2)


def start_job(command: tuple[str, ...], env: dict[str, str]) -> subprocess.Popen:
    try:
        return subprocess.Popen(list(command), env=env)
    except FileNotFoundError as e:
        raise InputError(f"cannot start {command[0]!r}: no such program; check the command after '--'") from e
    except PermissionError as e:
        raise InputError(f"cannot start {command[0]!r}: permission denied") from e
    except OSError as e:
        raise InputError(f"cannot start {command[0]!r}: {e.strerror or e}") from e


def exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _same_group(job: subprocess.Popen) -> bool:
    try:
        return os.getpgid(job.pid) == os.getpgrp()
    except OSError:
        return False


def _send(job: subprocess.Popen, sig: int) -> None:
    try:
        job.send_signal(sig)
    except (ProcessLookupError, OSError):
        pass


def stop_job(job: subprocess.Popen, grace: float, term_sent: bool, say: Callable[[str], None]) -> None:
    """Wait ``grace`` seconds for a job asked to stop; then SIGTERM (unless sent), wait again, then
    SIGKILL, saying each step."""
    steps = [] if term_sent else [(signal.SIGTERM, "SIGTERM")]
    steps.append((signal.SIGKILL, "SIGKILL"))
    for sig, name in steps:
        try:
            job.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            what = "ignored SIGTERM" if term_sent or sig == signal.SIGKILL else "has not exited"
            say(f"bottleneckd: the job (pid {job.pid}) {what} for {grace:g} s; sending {name} (--grace sets the wait)")
            _send(job, sig)
            term_sent = term_sent or sig == signal.SIGTERM
    job.wait()


def supervise(
    side: Sidecar,
    job: subprocess.Popen,
    on_tick: Callable[[Any], None] | None,
    grace: float = DEFAULT_GRACE,
    say: Callable[[str], None] = print,
) -> int:
    """Sample until the job exits. SIGTERM and SIGHUP are passed on to the job (and stop the
    sampling), SIGUSR1 and SIGUSR2 passed on each time (sampling goes on). SIGINT is passed on only when
    the job is in another process group: Ctrl-C at a terminal reaches the whole foreground group,
    the job included, and a second SIGINT would cut the job's own clean-up short. Once asked to
    stop, a job that is still running after ``grace`` seconds gets SIGTERM, then SIGKILL."""
    got: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        if signum in PASS_ON:
            _send(job, signum)
            return
        first = not got
        got.append(signum)
        side.loop.stop()
        if first and (signum in (signal.SIGTERM, signal.SIGHUP) or not _same_group(job)):
            _send(job, signum)

    sigs = handled((signal.SIGINT, signal.SIGTERM, signal.SIGHUP) + PASS_ON)
    old = {s: signal.signal(s, on_signal) for s in sigs}
    try:
        run_foreground(side, None, on_tick, stop_when=lambda: job.poll() is not None, install_signals=False)
        if job.poll() is None:
            stop_job(job, grace, term_sent=bool(got) and got[0] == signal.SIGTERM, say=say)
    finally:
        if job.poll() is None:  # an error of ours: never leave the job behind
            _send(job, signal.SIGTERM)
            try:
                job.wait(timeout=min(grace, 5.0))
            except subprocess.TimeoutExpired:
                job.kill()
                job.wait()
        for s, h in old.items():
            signal.signal(s, h)
    return exit_code(job.returncode)
