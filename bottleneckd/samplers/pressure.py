"""Peak-free evidence from the kernel: pressure stall information (PSI) and the job's cgroup.

PSI (/proc/pressure/{cpu,io,memory}, and ``cpu.pressure`` etc. in a cgroup v2 directory) counts
the microseconds in which some (or all) runnable tasks were stalled on the resource. Read as a
rate of the cumulative ``total=`` over the sampling interval it says, with no peak known, which
fraction of the last interval the job waited on CPU, I/O or memory (kernel
Documentation/accounting/psi.rst). The ``avg10`` figure lags by ~10 s and is only the fallback.
"""

from __future__ import annotations

import os
from pathlib import Path

from bottleneckd.samplers.base import Rates


def read_psi(path: Path) -> dict[str, float]:
    """/proc/pressure/* -> {'some_avg10': fraction, 'some_total': seconds, 'full_...': ...}."""
    out: dict[str, float] = {}
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        kind, *fields = line.split()
        for f in fields:
            k, _, v = f.partition("=")
            try:
                if k == "avg10":
                    out[f"{kind}_avg10"] = float(v) / 100.0
                elif k == "total":
                    out[f"{kind}_total"] = float(v) / 1e6
            except ValueError:
                continue
    return out


class Pressure:
    """Stall fractions of one PSI file over each sampling interval (None until two reads)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._rates = Rates()

    def read(self, now: float | None = None) -> tuple[float | None, float | None, str]:
        """(some, full, why-unknown): fractions of the interval with some / all tasks stalled."""
        if self.path is None:
            return None, None, "no cgroup v2 pressure file for the job"
        psi = read_psi(self.path)
        if not psi:
            return None, None, f"pressure stall information not available ({self.path})"
        some = self._rates.rate("some", psi.get("some_total"), now)
        full = self._rates.rate("full", psi.get("full_total"), now)
        if some is None and "some_total" not in psi:
            some = psi.get("some_avg10")

        def clip(x: float | None) -> float | None:
            return None if x is None else max(0.0, min(1.0, x))

        return clip(some), clip(full), "" if some is not None else "first interval"


def cgroup_dir(pid: int, proc_root: str = "/proc", cgroup_root: str = "/sys/fs/cgroup") -> Path | None:
    """The cgroup v2 directory of a process (pure v2, or the unified hierarchy of a hybrid setup)."""
    try:
        text = (Path(proc_root) / str(pid) / "cgroup").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        hid, _, rest = line.partition(":")
        ctrl, _, rel = rest.partition(":")
        if hid == "0" and ctrl == "":
            for base in (Path(cgroup_root), Path(cgroup_root) / "unified"):
                d = base / rel.lstrip("/")
                if (d / "cgroup.procs").exists():
                    return d
    return None


def cgroup_v1_dir(
    pid: int, controller: str, proc_root: str = "/proc", cgroup_root: str = "/sys/fs/cgroup"
) -> Path | None:
    try:
        text = (Path(proc_root) / str(pid) / "cgroup").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and controller in parts[1].split(","):
            for name in (parts[1], controller):
                d = Path(cgroup_root) / name / parts[2].lstrip("/")
                if d.exists():
                    return d
    return None


def quota_cores(pid: int, proc_root: str = "/proc", cgroup_root: str = "/sys/fs/cgroup") -> float | None:
    """The job's CPU quota in cores (cgroup v2 ``cpu.max``, or v1 ``cpu.cfs_quota_us``); None if unlimited."""
    d = cgroup_dir(pid, proc_root, cgroup_root)
    try:
        if d is not None and (d / "cpu.max").exists():
            # "$MAX $PERIOD" (kernel Documentation/admin-guide/cgroup-v2.rst), $MAX "max" when unlimited
            quota, period = ((d / "cpu.max").read_text().split() + [""])[:2]
            return None if quota == "max" else float(quota) / float(period)
        d1 = cgroup_v1_dir(pid, "cpu", proc_root, cgroup_root)
        if d1 is not None:
            quota_us = float((d1 / "cpu.cfs_quota_us").read_text())  # -1 when unlimited
            return None if quota_us <= 0 else quota_us / float((d1 / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None


def usable_cores(pids: list[int], proc_root: str = "/proc", cgroup_root: str = "/sys/fs/cgroup") -> float | None:
    """Cores the job's processes may run on: the union of their CPU affinities, capped by the
    first one's cgroup quota (ranks of one job share a cgroup)."""
    cpus: set[int] = set()
    for pid in pids:
        try:
            cpus |= os.sched_getaffinity(pid)
        except OSError:
            continue
    if not cpus:
        return None
    q = quota_cores(pids[0], proc_root, cgroup_root)
    return float(len(cpus)) if q is None else min(float(len(cpus)), q)
