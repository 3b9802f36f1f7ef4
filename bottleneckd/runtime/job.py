"""``run``'s job under a sidecar: start it, follow its process tree, sample until it exits, pass
signals on once, and stop a job that will not stop. The job's exit code is passed through (a
signal n as 128+n).

SIGHUP is a stop like SIGTERM (the terminal hung up, or a supervisor stops us): passed on and the
job supervised to its end, the report written and the run's directory removed; SIGUSR1 and
SIGUSR2 are the job's (Slurm's ``--signal`` warns of the time limit with them): passed on, every
time, and the sampling goes on (issue 25 item 5: both killed ``run`` with exit 129 or 138, the job
orphaned and ``/tmp/bottleneckd-run-*`` left behind)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bottleneckd.model.errors import InputError
from bottleneckd.runtime.foreground import handled, run_foreground
from bottleneckd.runtime.job_env import STACK_BURST_RATE, STACK_BURST_SECONDS, STACK_RATE
from bottleneckd.runtime.sidecar import Sidecar
from bottleneckd.runtime.sinks import Outputs

if TYPE_CHECKING:
    from bottleneckd.outputs.metrics_server import MetricsServer, WebConfig
    from bottleneckd.outputs.timeline import Timeline

DEFAULT_GRACE = 30.0
#: the job's own signals: passed on each time, sampling goes on
PASS_ON = (signal.SIGUSR1, signal.SIGUSR2)


#: why a program cannot start, as start_job and check_program say it
NOT_FOUND = "no such program; check the command after '--'"
NOT_EXECUTABLE = "permission denied"


def cannot_start(program: str, why: str) -> InputError:
    return InputError(f"cannot start {program!r}: {why}")


def start_job(command: tuple[str, ...], env: dict[str, str]) -> subprocess.Popen:
    """The job started (``command`` with ``env``). Raises InputError, naming the program, when it
    cannot start: not found, not executable, or another OSError."""
    try:
        return subprocess.Popen(list(command), env=env)
    except FileNotFoundError as e:
        raise cannot_start(command[0], NOT_FOUND) from e
    except PermissionError as e:
        raise cannot_start(command[0], NOT_EXECUTABLE) from e
    except OSError as e:
        raise cannot_start(command[0], str(e.strerror or e)) from e


def check_program(command: tuple[str, ...]) -> None:
    """Before any work starts: ``command``'s program exists and may be executed (``start_job``
    says the same if that changes before it starts). Raises InputError naming the program."""
    prog = command[0]
    path = prog if os.sep in prog else shutil.which(prog)
    if path is None or not os.path.exists(path):
        raise cannot_start(prog, NOT_FOUND)
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise cannot_start(prog, NOT_EXECUTABLE)


def exit_code(returncode: int) -> int:
    """The shell's exit code for a job's ``returncode``: 128 + N for a job killed by signal N."""
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
        side.wire(Outputs(stop_when=lambda: job.poll() is not None))
        run_foreground(side, None, install_signals=False)
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


def node_sidecar_socket() -> str | None:
    """A ``bottleneckd serve`` already receiving on this node (bound to the default socket, in a
    directory only this user can write): the job's ranks report to it, not to a second sidecar."""
    import stat

    from bottleneckd.channel.socket_path import default_socket_path, is_live, untrusted_dir

    path = default_socket_path()
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if (
        not stat.S_ISSOCK(st.st_mode)
        or st.st_uid != os.geteuid()
        or untrusted_dir(os.path.dirname(os.path.abspath(path)))
    ):
        return None
    return path if is_live(path) else None


@dataclass(frozen=True)
class JobRun:
    """A job run to its end under a sidecar."""

    side: Sidecar
    code: int  # the job's exit code
    #: what the report adds about the run (instrumentation; the node sidecar joined, if any)
    extra: dict[str, Any]
    timeline: Timeline | None
    #: the report of the node's sidecar the job's ranks reported to, when ``run`` joined one
    node_report: dict[str, Any] | None = None
    #: the metrics server, left running with ``keep_serving`` (``linger_then_stop`` stops it)
    server: MetricsServer | None = None


def rejected_note(rejected: int, why: str) -> str | None:
    """What the report says when the hook's messages were refused: never silent (the job would
    otherwise read as not training while it trained)."""
    if not rejected:
        return None
    return (
        f"{rejected} of the hook's messages were refused by this sidecar (last: {why}); the step phases "
        "of those intervals are missing: a bottleneckd of another version in the job, or a bug to report"
    )


def job_stacks(side: Sidecar, pid: int, rate: float) -> tuple[Any, str | None]:
    """A py-spy sampler of the job's stacks feeding the sidecar's code attribution, or None and why not."""
    from bottleneckd.samplers.stacks import StackSampler

    burst = (max(rate, STACK_BURST_RATE), STACK_BURST_SECONDS)  # a short job's code named too
    s = StackSampler(pid, rate, copies=bool(side.machine.gpus), burst=burst)
    if s.exe is None:
        return None, "py-spy is not installed (pip install py-spy): the code is not named"
    side.code_sources.append(s.drain_code)
    return s.start(), None


def run_job(
    build: Callable[[str], Sidecar],
    command: tuple[str, ...],
    inject: bool,
    outputs: Outputs,
    *,
    bind: str | None = None,
    web_config: WebConfig | None = None,
    grace: float = DEFAULT_GRACE,
    say: Callable[[str], None] = print,
    keep_serving: bool = False,
    stack_rate: float | None = STACK_RATE,
    tune: str | None = None,
) -> JobRun:
    """Start ``command`` under the sidecar ``build`` makes (listening on a socket of a run
    directory of its own), with ``outputs`` wired and metrics on ``bind``, and supervise it to
    the end. Nothing is left in /tmp. With ``keep_serving`` the metrics server outlives the job
    (``JobRun.server``), for a last scrape of the final state. With ``stack_rate`` the job's stacks
    (and its loader workers') are sampled with py-spy at that rate to name the code its bottleneck
    runs (the hook's timings still give the phases). ``tune`` ("preserving", or "semantics" to allow
    semantics-changing mitigations): the hook tunes the job (``torch/tune.py``, ``run --tune``)."""
    from bottleneckd.channel.report_file import read_report_file
    from bottleneckd.outputs.live import LiveView, unknown_reasons
    from bottleneckd.outputs.metrics_server import serve_metrics, stop_metrics, url_of
    from bottleneckd.runtime.job_env import SOCKET_NAME, job_env, no_phases_note, run_directory, uninstrumented_reason

    joined = stacks = None
    stacks_note = "not sampled (--no-stacks)" if not stack_rate else None
    with run_directory() as run_dir:
        sock = os.path.join(run_dir, SOCKET_NAME)
        side = build(sock)
        view = outputs.view
        if isinstance(view, LiveView):  # the live screen says why each unsampled resource is unknown
            view.reasons = unknown_reasons(side.peaks)
        server = None
        try:
            wired = side.wire(outputs)
            if bind:
                server = serve_metrics(side.run, bind, web_config)
                say(f"bottleneckd: serving metrics on {url_of(server, bind)}")
            blind = uninstrumented_reason(command) if inject else None
            if blind:
                say(f"bottleneckd: {blind}; the job runs without step phases")
            joined = node_sidecar_socket() if inject else None
            if joined:
                say(f"bottleneckd: joined the sidecar serving this node ({joined}): the job's ranks report there")
            job = start_job(command, job_env(run_dir, joined or sock, inject, tune))
            side.follow(job.pid)
            if stack_rate:
                stacks, stacks_note = job_stacks(side, job.pid, stack_rate)
            code = supervise(side, job, grace, say)
        except BaseException:
            stop_metrics(server)  # an error: nothing outlives it
            server = None
            raise
        finally:
            if stacks is not None:
                stacks.stop()
            if isinstance(view, LiveView):
                view.close()  # leave the live screen before the report is printed
            if not keep_serving:
                stop_metrics(server)
            side.close()
    extra: dict[str, Any] = {
        "instrumentation": {
            "injected": inject,
            "phase_messages": side.receiver.received,
            "rejected_messages": side.receiver.rejected + side.receiver.unknown_version,
            "note": rejected_note(side.receiver.rejected + side.receiver.unknown_version, side.receiver.last_error)
            or (None if side.run.steps() or joined else no_phases_note(command, inject)),
            "stack_samples": stacks.samples_total if stacks is not None else 0,
            "stacks_note": stacks_note or (stacks.error if stacks is not None and not stacks.samples_total else None),
        }
    }
    if tune:
        from bottleneckd.advice.tune import tune_report

        extra["tune"] = tune_report((e.to_json() for e in side.run.events()), tune == "semantics")
    if joined:
        extra["node_sidecar"] = joined
    node = read_report_file(joined) if joined else None  # the node sidecar's view of every rank
    return JobRun(side, code, extra, wired.timeline, node, server if keep_serving else None)


def linger_then_stop(server: MetricsServer | None, seconds: float, say: Callable[[str], None] = print) -> None:
    """Keep the final state on /metrics for a last scrape (Ctrl-C ends the wait), then stop the server."""
    import time

    from bottleneckd.outputs.metrics_server import stop_metrics

    if server is None:
        return
    if seconds > 0:
        say(f"bottleneckd: the job ended; /metrics stays up {seconds:g} s for a last scrape (--linger, Ctrl-C)")
        try:
            time.sleep(seconds)
        except KeyboardInterrupt:
            pass
    stop_metrics(server)
