"""What the CLI commands share: the context object, options, input checks, the sidecar they build
(through the one assembly, runtime/sidecar.py) and the report, printed and written the same way by
every command. Commands only parse options and call the runtime (``Run``, ``replay``)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from bottleneckd.model.errors import InputError
from bottleneckd.model.files import under_kernel_tree
from bottleneckd.runtime.job_env import MAX_SOCKET_PATH

if TYPE_CHECKING:  # the CLI imports these only when a command needs them (start-up time)
    from bottleneckd.hardware.detect.machine import Machine
    from bottleneckd.peaks.catalog import Catalog
    from bottleneckd.peaks.profile import Profile
    from bottleneckd.peaks.resolve import PeakTable
    from bottleneckd.runtime.sidecar import Sidecar

F = TypeVar("F", bound=Callable[..., Any])
#: the highest process id Linux can hand out (PID_MAX_LIMIT in include/linux/threads.h, 64-bit)
PID_MAX_LIMIT = 4 * 1024 * 1024


class Context:
    """The options every command shares; the catalog and profile are read (and checked) once, on
    first use, however many steps of a command ask for them."""

    def __init__(self, debug: bool, catalog: str | None, profile: str | None) -> None:
        self.debug = debug
        self.catalog_path = catalog
        self.profile_path = profile
        self._catalog: Catalog | None = None
        self._profile: tuple[Profile | None] | None = None  # a 1-tuple once read: None is a valid profile

    def catalog(self) -> Catalog:
        """The peak catalog (``--catalog``, else the packaged one), read once. Raises InputError
        naming the file and field when it is not a valid catalog."""
        from bottleneckd.peaks.catalog import load_catalog

        if self._catalog is None:
            self._catalog = load_catalog(self.catalog_path)
        return self._catalog

    def profile(self) -> Profile | None:
        """The calibration profile (``--profile``, else the default one) with the CPU peaks ``run``
        measured on this machine where it lacks them (auto_profile.py), read once; None when there
        is neither. Raises InputError when a named one is missing or either is invalid."""
        from bottleneckd.peaks.auto_profile import load_auto, merged
        from bottleneckd.peaks.profile import load_profile

        if self._profile is None:
            self._profile = (merged(load_profile(self.profile_path), load_auto()),)
        return self._profile[0]

    def measure_peaks(self) -> None:
        """``run`` and ``demo``, before the job starts: measure the CPU peaks the roofline needs and
        no profile gives, on a quiet machine, and keep them for this machine (auto_profile.py)."""
        from bottleneckd.peaks.auto_profile import measure_missing, merged

        got = measure_missing(self.profile())
        if got.line:
            say(got.line)
        if got.profile is not None:
            self._profile = (merged(self.profile(), got.profile),)

    def peak_table(self, machine: Machine | None = None) -> tuple[Machine, PeakTable]:
        """``machine`` (this one, detected, when None) and the peaks resolved for it from the
        catalog and the profile. Raises InputError as ``catalog`` and ``profile`` do."""
        from bottleneckd.hardware.detect import detect_machine
        from bottleneckd.peaks.resolve import resolve_peaks

        catalog, profile = self.catalog(), self.profile()
        machine = machine or detect_machine()
        return machine, resolve_peaks(machine, catalog, profile)


def emit_json(doc: Any) -> None:
    """``doc`` as indented JSON on stdout."""
    click.echo(json.dumps(doc, indent=1))


def say(line: str) -> None:
    """A status line on stderr (a log record under ``--log-format json``)."""
    from bottleneckd.cli.logs import STATUS, json_lines

    if json_lines():
        STATUS.info(line.removeprefix("bottleneckd: "))
    else:
        click.echo(line, err=True)


def sidecar_options(f: F) -> F:
    """``f`` with the options every sampling command takes (``--interval``, ``--pid``,
    ``--disable``, ``--duration``, ``--socket``)."""
    from bottleneckd.runtime.sidecar import SAMPLER_NAMES

    f = click.option(
        "--interval",
        type=click.FloatRange(0.1, 60),
        default=1.0,
        show_default=True,
        help="Seconds between samples (0.1 = 10 Hz).",
    )(f)
    f = click.option(
        "--pid", type=int, default=None, help="The training job's main process (its tree is sampled too)."
    )(f)
    f = click.option(
        "--disable",
        "disabled",
        multiple=True,
        type=click.Choice(SAMPLER_NAMES),
        help="Turn a sampler off (repeatable).",
    )(f)
    f = click.option(
        "--duration", type=click.FloatRange(0, None, min_open=True), default=None, help="Stop after this many seconds."
    )(f)
    f = click.option("--socket", "socket_path", default=None, help="Channel the torch hook sends step phases to.")(f)
    return f


def check_socket(path: str | None) -> None:
    """A socket path that cannot be bound, refused before anything starts: raises InputError (too
    long for a Unix socket, under a file, under /proc or /sys, or a non-socket file already there)."""
    from bottleneckd.channel.socket_path import default_socket_path

    p = os.path.abspath(path or default_socket_path())
    if len(os.fsencode(p)) > MAX_SOCKET_PATH:
        raise InputError(
            f"--socket {p}: longer than {MAX_SOCKET_PATH} bytes, the most a Unix socket path can hold;"
            " choose a shorter path"
        )
    d = os.path.dirname(p)
    while d and not os.path.exists(d):
        d = os.path.dirname(d)
    if d and not os.path.isdir(d):
        raise InputError(f"--socket {p}: {d} is a file, not a directory; choose another path")
    if under_kernel_tree(os.path.dirname(p)):
        raise InputError(f"--socket {p}: /proc and /sys are kernel interfaces; choose a path under your own directory")
    if os.path.lexists(p) and not stat.S_ISSOCK(os.lstat(p).st_mode):
        raise InputError(f"--socket {p}: a file that is not a socket is there; choose another path (it is not removed)")


def build(
    obj: Context, interval: float, pid: int | None, disabled: tuple[str, ...] = (), socket_path: str | None = None
) -> Sidecar:
    """The sidecar for a command, after its inputs are checked. Raises InputError for a ``pid``
    that is not a running process, a socket path ``check_socket`` refuses or one that cannot be
    bound, and a catalog or profile that cannot be read."""
    from bottleneckd.runtime.sidecar import build_sidecar, job_paths

    if pid is not None:
        import psutil

        if not 0 < pid <= PID_MAX_LIMIT:  # psutil raised OverflowError past 2**31 - 1
            raise InputError(
                f"--pid {pid}: no such process (Linux's process ids are 1 to {PID_MAX_LIMIT}); pass the PID of the "
                "running training job"
            )
        if not psutil.pid_exists(pid):
            raise InputError(f"--pid {pid}: no such process; pass the PID of the running training job")
    check_socket(socket_path)
    catalog, profile = obj.catalog(), obj.profile()
    try:
        return build_sidecar(
            None, catalog, profile, interval, pid, job_paths(), frozenset(disabled), socket_path=socket_path
        )
    except OSError as e:  # the socket could not be bound
        raise InputError(
            f"--socket {socket_path or 'default'}: cannot listen ({e.strerror or e}); choose another path"
        ) from e


def check_outputs(force: bool, **paths: str | None) -> None:
    """Every output a command will write, checked before any work starts (one line, exit 2)."""
    from bottleneckd.model.files import check_output

    for option, path in paths.items():
        if path is not None:
            check_output(path, "--" + option.replace("_", "-"), force)


def print_report(
    doc: dict[str, Any],
    report_json: str | None,
    force: bool,
    title: str = "bottleneckd report",
    to_stdout: bool = False,
) -> bool:
    """The end of a run: the report (``Run.report``) as text, and as JSON when asked. False when
    the JSON could not be written (said in one line; the caller decides the exit code)."""
    from bottleneckd.model.files import write_text
    from bottleneckd.outputs.report import render_text

    click.echo(f"\n=== {title} ===\n" + render_text(doc), err=not to_stdout)
    if not report_json:
        return True
    try:
        write_text(report_json, json.dumps(doc, indent=1) + "\n", "--report-json", force)
    except InputError as e:
        say(f"bottleneckd: error: {e}")
        return False
    return True
