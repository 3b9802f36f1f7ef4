"""The job's CPU quota from its cgroup (samplers/pressure.py), on fake /proc and /sys/fs/cgroup trees."""

from __future__ import annotations

from pathlib import Path

from bottleneckd.samplers.pressure import quota_cores

PID = 4242


def _v2(tmp_path: Path, cpu_max: str) -> tuple[str, str]:
    proc, cg = tmp_path / "proc", tmp_path / "cgroup"
    (proc / str(PID)).mkdir(parents=True)
    (proc / str(PID) / "cgroup").write_text("0::/job.slice/train\n")
    d = cg / "job.slice" / "train"
    d.mkdir(parents=True)
    (d / "cgroup.procs").write_text(f"{PID}\n")
    (d / "cpu.max").write_text(cpu_max)
    return str(proc), str(cg)


def _v1(tmp_path: Path, quota_us: str, period_us: str) -> tuple[str, str]:
    proc, cg = tmp_path / "proc", tmp_path / "cgroup"
    (proc / str(PID)).mkdir(parents=True)
    (proc / str(PID) / "cgroup").write_text("4:cpu,cpuacct:/job/train\n")
    d = cg / "cpu,cpuacct" / "job" / "train"
    d.mkdir(parents=True)
    (d / "cpu.cfs_quota_us").write_text(quota_us)
    (d / "cpu.cfs_period_us").write_text(period_us)
    return str(proc), str(cg)


def test_v2_quota_in_cores(tmp_path: Path) -> None:
    # 150 ms of CPU every 100 ms: 1.5 cores (read None before: the period was taken from an empty third field)
    assert quota_cores(PID, *_v2(tmp_path, "150000 100000\n")) == 1.5


def test_v2_unlimited(tmp_path: Path) -> None:
    assert quota_cores(PID, *_v2(tmp_path, "max 100000\n")) is None


def test_v1_quota_in_cores(tmp_path: Path) -> None:
    assert quota_cores(PID, *_v1(tmp_path, "300000\n", "100000\n")) == 3.0


def test_v1_unlimited(tmp_path: Path) -> None:
    assert quota_cores(PID, *_v1(tmp_path, "-1\n", "100000\n")) is None
