"""Per-thread CPU time, run-queue wait and scheduler state from /proc/PID/task/TID/{stat,schedstat}.

A process's CPU figure sums its threads; a Python step under the GIL, or a serial loader, shows
as one thread at ~100% of a core while the process (and the host) look half idle. The main
thread of a process is the thread whose id is the process id.

On a shared machine a thread can want a full core and get a fifth of one: ``schedstat``'s second
field is the time it spent runnable, waiting on a run queue (kernel Documentation/scheduler/
sched-stats.rst). Running plus waiting is what the thread asks of the CPU, whatever else runs there.

A thread's name (``comm``, the parenthesised field of its stat line) tells what it is: PyTorch's
autograd engine runs each CUDA device's backward on a thread of its own named ``pt_autograd_<device>``
(``Engine::thread_init`` in torch/csrc/autograd/engine.cpp), which launches backward's kernels while
the main thread waits in ``backward()``.
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
    wait_seconds: float | None = None  # runnable but not running (schedstat); None where not kept
    name: str = ""  # the thread's comm (at most 15 characters): gloo's "pt_gloo_runloop", "gloo_tcp_loop" ...


#: the name prefix of PyTorch's autograd device threads (torch/csrc/autograd/engine.cpp)
AUTOGRAD_THREAD = "pt_autograd_"


def parse_name(text: str) -> str:
    """The comm of one /proc/.../stat line: between the first '(' and the last ')'."""
    start, end = text.find("("), text.rfind(")")
    return text[start + 1 : end] if 0 <= start < end else ""


def stat_fields(text: str) -> list[str]:
    """The fields of one /proc/.../stat line after the name (state, ppid, ...; proc(5)'s third
    field on); the name may hold spaces or ')'. Empty where the line has no name."""
    end = text.rfind(")")
    return text[end + 2 :].split() if end >= 0 else []


def parse_stat(text: str) -> tuple[str, float] | None:
    """(state, utime+stime seconds) from one /proc/.../stat line."""
    f = stat_fields(text)
    if len(f) < 13:
        return None
    return f[0], (int(f[11]) + int(f[12])) / TICK


def schedstat(pid: int, tid: int | None = None, proc_root: str = "/proc") -> tuple[float, float] | None:
    """Seconds thread ``tid`` of process ``pid`` (its main thread when None) has run on a CPU, and
    has spent runnable but not running: schedstat's first two fields, in nanoseconds (kernel
    Documentation/scheduler/sched-stats.rst). The work it did, and the CPU it wanted that other
    threads or processes had. None where schedstat is not kept or the thread is gone."""
    try:
        with open(f"{proc_root}/{pid}/task/{pid if tid is None else tid}/schedstat") as f:
            run, wait = f.read().split()[:2]
        return int(run) / 1e9, int(wait) / 1e9
    except (OSError, ValueError):
        return None


def threads(pid: int, proc_root: str = "/proc") -> list[ThreadStat]:
    out: list[ThreadStat] = []
    base = Path(proc_root) / str(pid) / "task"
    try:
        tids = os.listdir(base)
    except OSError:
        return out
    for t in tids:
        try:
            line = (base / t / "stat").read_text()
            parsed = parse_stat(line)
        except (OSError, ValueError):
            continue
        if parsed is None:
            continue
        sched = schedstat(pid, int(t), proc_root)
        out.append(ThreadStat(pid, int(t), parsed[0], parsed[1], sched[1] if sched else None, parse_name(line)))
    return out


@dataclass(frozen=True)
class ThreadRate:
    cpu: float  # cores used over the interval (0..1)
    wait: float | None  # share of the interval spent runnable on a run queue (0..1)

    @property
    def demand(self) -> float:
        """What the thread asked of the CPU: running plus waiting to run (0..1)."""
        return min(1.0, self.cpu + (self.wait or 0.0))


class ThreadRates:
    """Per thread, CPU used and run-queue wait over the last interval (a thread first seen has no rate yet)."""

    def __init__(self) -> None:
        self._prev: dict[int, tuple[float, float, float | None]] = {}

    def update(self, stats: list[ThreadStat], now: float | None = None) -> dict[int, ThreadRate]:
        now = time.monotonic() if now is None else now
        out: dict[int, ThreadRate] = {}
        cur: dict[int, tuple[float, float, float | None]] = {}
        for s in stats:
            cur[s.tid] = (now, s.cpu_seconds, s.wait_seconds)
            prev = self._prev.get(s.tid)
            if prev is not None and now > prev[0] and s.cpu_seconds >= prev[1]:
                dt = now - prev[0]
                wait = None
                if s.wait_seconds is not None and prev[2] is not None and s.wait_seconds >= prev[2]:
                    wait = min(1.0, (s.wait_seconds - prev[2]) / dt)
                out[s.tid] = ThreadRate(min(1.0, (s.cpu_seconds - prev[1]) / dt), wait)
        self._prev = cur
        return out
