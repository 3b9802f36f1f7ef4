"""Per-thread CPU time and scheduler state from /proc/PID/task/TID/stat.

A process's CPU figure sums its threads; a Python step under the GIL, or a serial loader, shows
as one thread at ~100% of a core while the process (and the host) look half idle. The main
thread of a process is the thread whose id is the process id.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

TICK = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0


@dataclass(frozen=True)
class ThreadStat:
    pid: int
    tid: int
    state: str  # R running, S sleeping, D uninterruptible (disk) wait ...
    cpu_seconds: float


def parse_stat(text: str) -> tuple[str, float] | None:
    """(state, utime+stime seconds) from one /proc/.../stat line; the name may hold spaces or ')'."""
    end = text.rfind(")")
    if end < 0:
        return None
    f = text[end + 2:].split()
    if len(f) < 13:
        return None
    return f[0], (int(f[11]) + int(f[12])) / TICK


def threads(pid: int, proc_root: str = "/proc") -> list[ThreadStat]:
    out = []
    base = Path(proc_root) / str(pid) / "task"
    try:
        tids = os.listdir(base)
    except OSError:
        return out
    for t in tids:
        try:
            parsed = parse_stat((base / t / "stat").read_text())
        except (OSError, ValueError):
            continue
        if parsed is not None:
            out.append(ThreadStat(pid, int(t), parsed[0], parsed[1]))
    return out


class ThreadRates:
    """CPU cores each thread used over the last interval (a thread first seen has no rate yet)."""

    def __init__(self) -> None:
        self._prev: dict[int, tuple[float, float]] = {}

    def update(self, stats: list[ThreadStat], now: float | None = None) -> dict[int, float]:
        now = time.monotonic() if now is None else now
        out: dict[int, float] = {}
        cur: dict[int, tuple[float, float]] = {}
        for s in stats:
            cur[s.tid] = (now, s.cpu_seconds)
            prev = self._prev.get(s.tid)
            if prev is not None and now > prev[0] and s.cpu_seconds >= prev[1]:
                out[s.tid] = min(1.0, (s.cpu_seconds - prev[1]) / (now - prev[0]))
        self._prev = cur
        return out
