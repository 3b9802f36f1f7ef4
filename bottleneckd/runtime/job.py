"""``bottleneckd run -- CMD``: start the job, instrument it (no code change), diagnose it live,
report when it ends. The job's exit code is passed through; its output is left untouched (ours
goes to stderr)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from bottleneckd.runtime.sidecar import Sidecar

INJECT_DIR = str(Path(__file__).resolve().parent.parent / "torch" / "_inject")
PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


def job_env(socket_path: str, inject: bool) -> dict[str, str]:
    env = dict(os.environ)
    env["BOTTLENECKD_SOCKET"] = socket_path
    if inject:
        env["BOTTLENECKD_INJECT"] = "1"
        env["BOTTLENECKD_EPOCH_PRINT"] = "stderr"
        parts = [INJECT_DIR, PACKAGE_PARENT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
        env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def start_job(command: tuple[str, ...], env: dict[str, str]) -> subprocess.Popen:
    try:
        return subprocess.Popen(list(command), env=env)
    except FileNotFoundError as e:
        from bottleneckd.model.errors import InputError

        raise InputError(f"cannot start {command[0]!r}: no such program; check the command after '--'") from e
    except PermissionError as e:
        from bottleneckd.model.errors import InputError

        raise InputError(f"cannot start {command[0]!r}: permission denied") from e


def exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def supervise(side: Sidecar, job: subprocess.Popen, on_tick: Callable[[Any], None] | None) -> int:
    """Sample until the job exits. SIGINT (the terminal's Ctrl-C reaches the job too) and SIGTERM
    stop sampling and are passed on to the job; then we wait for it."""
    from bottleneckd.runtime.foreground import run_foreground

    def forward(signum: int, _frame: object) -> None:
        try:
            job.send_signal(signal.SIGTERM if signum == signal.SIGTERM else signal.SIGINT)
        except ProcessLookupError:
            pass
        side.loop.stop()

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        # run_foreground installs its own handlers; ours wrap them by stopping the job as well
        side.loop.sinks.append(lambda _s: side.loop.stop() if job.poll() is not None else None)
        run_foreground(side, None, on_tick, install_signals=False)
    finally:
        try:
            job.wait(timeout=30)
        except subprocess.TimeoutExpired:
            job.terminate()
            job.wait()
        for s, h in old.items():
            signal.signal(s, h)
    return exit_code(job.returncode)


def temp_socket() -> str:
    return os.path.join(tempfile.mkdtemp(prefix="bottleneckd-run-"), "bottleneckd.sock")


def write_json(path: str, doc: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(doc, indent=1))


def is_python_torch_job(command: tuple[str, ...]) -> bool:
    """Injection only matters for Python processes; it is harmless for the others."""
    exe = os.path.basename(command[0]) if command else ""
    return exe.startswith("python") or exe in ("torchrun", "accelerate", "deepspeed") or command[0].endswith(".py")


__all__ = ["job_env", "start_job", "supervise", "temp_socket", "write_json", "sys"]
