from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_nvml import FakeGpu, FakeNvml

ROOT = Path(__file__).resolve().parents[1]


from tests.fake_hardware import fake_tree_at, write  # noqa: E402,F401


@pytest.fixture
def fake_tree(tmp_path: Path) -> tuple[str, str]:
    """A fake /sys and /proc (see tests/fake_hardware.py)."""
    return fake_tree_at(tmp_path)


@pytest.fixture
def h100x2() -> FakeNvml:
    return FakeNvml([FakeGpu(), FakeGpu()])


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for CLI subprocesses: an empty profile home, so a user's profile never leaks in."""
    return {**os.environ, "BOTTLENECKD_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}


def run_cli(args: list[str], env: dict[str, str], timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bottleneckd.cli", *args], env=env, capture_output=True, text=True, timeout=timeout, **kw)
