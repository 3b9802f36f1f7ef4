"""The environment ``run`` gives its job: the channel socket, and (no code change) the injected
sitecustomize on PYTHONPATH. The job's own modules keep precedence: only a directory holding our
package (a link to it, in the run's temporary directory) is added, after the job's own entries,
never the project directory with its ``tests`` and ``scripts``."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: py-spy dumps per second under ``run`` (and as many of one loader worker): each costs ~12 ms of CPU
#: (measured: 20 dumps of a 3-process DataLoader job, py-spy 0.4.3), so 1 Hz takes ~2.5% of a core
STACK_RATE = 1.0
#: ... and this many for the job's first STACK_BURST_SECONDS (attach's default rate): a job of 20 s
#: sampled at 1 Hz gave 8 stack samples of its data stage, too few to name its code
#: (hf_trainer_collator under run, docs/eval-results/verdicts-only/20261205T0110-e336812.json;
#: attach at 2 Hz named it from 20); a long job then costs what it did. ~12 ms of CPU a dump: the
#: burst takes ~5% of a core (main thread and a loader worker at 2 Hz) for its minute
STACK_BURST_RATE = 2.0
STACK_BURST_SECONDS = 60.0

INJECT_DIR = str(Path(__file__).resolve().parent.parent / "torch" / "_inject")
PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
#: Python launchers the instrumentation reaches through PYTHONPATH
PYTHON_LAUNCHERS = ("torchrun", "accelerate", "deepspeed")
#: interpreter flags under which our sitecustomize cannot load
NO_SITE_FLAGS = {
    "S": "python -S skips the site module, so the instrumentation (a sitecustomize) never loads",
    "I": "python -I ignores PYTHONPATH, so the instrumentation never loads",
    "E": "python -E ignores PYTHONPATH, so the instrumentation never loads",
}


SOCKET_NAME = "bottleneckd.sock"
MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with its NUL


@contextmanager
def run_directory() -> Iterator[str]:
    """An owner-only temporary directory for one run (socket, report file, package link), removed
    on every way out."""
    d = tempfile.mkdtemp(prefix="bottleneckd-run-")
    if len(os.fsencode(os.path.join(d, SOCKET_NAME))) > MAX_SOCKET_PATH:  # a long TMPDIR: the socket would not bind
        os.rmdir(d)
        d = tempfile.mkdtemp(prefix="bottleneckd-run-", dir="/tmp")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def job_env(run_dir: str, socket_path: str, inject: bool, tune: str | None = None) -> dict[str, str]:
    """The job's environment: this one with the channel's socket, and with ``inject`` the hook's
    sitecustomize and this package put on ``PYTHONPATH`` (linked under ``run_dir``). ``tune``:
    "preserving" or "semantics" (``run --tune [--allow-semantics-change]``): the hook's tuner reads
    BOTTLENECKD_TUNE and BOTTLENECKD_TUNE_SEMANTICS (torch/watch.py)."""
    env = dict(os.environ)
    env["BOTTLENECKD_SOCKET"] = socket_path
    for k in ("BOTTLENECKD_TUNE", "BOTTLENECKD_TUNE_SEMANTICS"):
        env.pop(k, None)  # only this run's flags decide
    if tune:
        env["BOTTLENECKD_TUNE"] = "1"
        if tune == "semantics":
            env["BOTTLENECKD_TUNE_SEMANTICS"] = "1"
    if inject:
        env["BOTTLENECKD_INJECT"] = "1"
        env["BOTTLENECKD_EPOCH_PRINT"] = "stderr"
        pkg = os.path.join(run_dir, "pkg")
        os.makedirs(pkg, exist_ok=True)
        if not os.path.lexists(os.path.join(pkg, "bottleneckd")):
            os.symlink(PACKAGE_DIR, os.path.join(pkg, "bottleneckd"))
        parts = [INJECT_DIR] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []) + [pkg]
        env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def _python_flags(args: list[str]) -> set[str]:
    """Single-letter interpreter flags before the script, -c or -m (``-W arg``, ``-X opt`` skipped)."""
    out: set[str] = set()
    k = 0
    while k < len(args):
        a = args[k]
        if not a.startswith("-") or a in ("-", "--") or a.startswith("--"):
            break
        for j, ch in enumerate(a[1:], 1):
            if ch in "cm":
                return out
            if ch in "WX":
                k += 1 if j == len(a) - 1 else 0  # its argument is the next word
                break
            out.add(ch)
        k += 1
    return out


def uninstrumented_reason(command: tuple[str, ...]) -> str | None:
    """Why the instrumentation cannot reach this command's Python, when the command line shows it."""
    args = list(command)
    while args:
        exe = os.path.basename(args[0])
        if exe == "env":
            rest = args[1:]
            while rest and (rest[0].startswith("-") or "=" in rest[0]):
                if rest[0] in ("-i", "--ignore-environment", "-"):
                    return "env -i clears the environment (PYTHONPATH, the socket), so the instrumentation never loads"
                if rest[0] in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
                    rest = rest[1:]
                rest = rest[1:]
            args = rest
            continue
        if exe.startswith("python"):
            for flag in ("S", "I", "E"):
                if flag in _python_flags(args[1:]):
                    return NO_SITE_FLAGS[flag]
        return None
    return None


def no_phases_note(command: tuple[str, ...], injected: bool) -> str:
    """What the report says when the job sent no step phases."""
    if not injected:
        return "the job was not instrumented (--no-inject)"
    why = uninstrumented_reason(command)
    if why:
        return f"{why}; call bottleneckd.torch.watch in the script to instrument it explicitly"
    exe = os.path.basename(command[0]) if command else ""
    via = (
        f" (started through {exe!r}, which may reset the environment or start Python with -S, -I or -E)"
        if not (exe.startswith("python") or exe in PYTHON_LAUNCHERS or exe.endswith(".py"))
        else ""
    )
    return (
        f"no step phases came from the job{via}: either it does not train with torch, or its Python ran without the "
        "instrumentation; call bottleneckd.torch.watch in the script to instrument it explicitly"
    )
