from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fake_nvml import FakeGpu, FakeNvml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


from tests.fake_hardware import fake_tree_at, write  # noqa: E402,F401


@pytest.fixture(autouse=True)
def _own_profile_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the user's ~/.config/bottleneckd: ``bottleneckd run`` keeps the CPU
    peaks it measures there (auto-profile.json), and a job started with this process's environment
    would. A test that needs a home of its own sets BOTTLENECKD_HOME itself (``cli_env``)."""
    monkeypatch.setenv("BOTTLENECKD_HOME", str(tmp_path_factory.mktemp("home")))


@pytest.fixture
def fake_tree(tmp_path: Path) -> tuple[str, str]:
    """A fake /sys and /proc (see tests/fake_hardware.py)."""
    return fake_tree_at(tmp_path)


@pytest.fixture(scope="session")
def scenario_report() -> Callable[[str], tuple[Any, dict[str, Any]]]:
    """``scenario_report(name)``: the Run and the report of the labelled scenario
    ``tests/data/<name>/trace.jsonl`` replayed as ``analyze`` does, computed once per session and
    shared by the tests that read it (read them, never change them)."""
    from bottleneckd.runtime.replay import load

    done: dict[str, tuple[Any, dict[str, Any]]] = {}

    def get(name: str) -> tuple[Any, dict[str, Any]]:
        if name not in done:
            rep = load((str(DATA / name / "trace.jsonl"),))
            rep.feed()
            done[name] = (rep.run, rep.run.report())
        return done[name]

    return get


@pytest.fixture
def h100x2() -> FakeNvml:
    return FakeNvml([FakeGpu(), FakeGpu()])


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for CLI subprocesses: an empty profile home, so a user's profile never leaks in,
    and a channel socket of their own."""
    # a channel socket of the test's own: the default path is shared by every sidecar of this user,
    # and a second sidecar on a live socket is refused (issue 16 item 6)
    return {
        **os.environ,
        "BOTTLENECKD_HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(ROOT),
        "BOTTLENECKD_SOCKET": str(tmp_path / "channel" / "bottleneckd.sock"),
    }


def run_cli(args: list[str], env: dict[str, str], timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bottleneckd.cli", *args], env=env, capture_output=True, text=True, timeout=timeout, **kw
    )


def job_output(r: subprocess.CompletedProcess, chars: int = 3000) -> str:
    """What a failed ``run`` printed before its report (the job's own errors: a rank's traceback,
    torchrun's ChildFailedError), then the report's first lines: the report alone fills a tail."""
    before, mark, report = r.stderr.partition("=== bottleneckd report ===")
    return f"exit {r.returncode}; before the report:\n{before[-chars:]}\n{mark}\n{report[:600]}"
