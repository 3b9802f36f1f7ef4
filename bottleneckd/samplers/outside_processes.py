"""The processes outside the job that take the host's CPU, by name and pid: the busiest few.

Where the job's threads wait for a CPU behind other processes, the first thing to do is to give the
job those cores back (the knowledge base's ``isolate_cores``), and the user needs to know which
processes they are, as the code of a stage is named. A scan reads every /proc/PID/stat (about
1 ms per 60 processes on this project's 2-core VM; psutil's Process objects take twice that), so it
runs only while the host's busy cores outside the job reach OUTSIDE_BUSY (the runtime gives the
CPU sampler the diagnosis's figure: rules/cpu_state.py says "other processes share these cores"
from it); a rate needs two scans, so the first such sample names none. The job's
processes, the sidecar and its own children (py-spy) are left out.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from bottleneckd.model.outside import OUTSIDE_TOP
from bottleneckd.samplers.threads import parse_name, parse_stat, stat_fields

__all__ = ["OutsideProcesses", "OutsideProcess", "descendants"]

#: the kernel's thread parent: its children are kernel threads (kswapd, ksoftirqd, kworker), whose
#: work is often the job's own (reclaim, network, I/O) and which no user stops; not named
KTHREADD = "2"


@dataclass(frozen=True)
class OutsideProcess:
    pid: int
    name: str  # its comm (at most 15 characters)
    cores: float  # CPU time over wall time since the last scan


class OutsideProcesses:
    """Rates of the processes outside ``exclude`` from two consecutive scans of ``proc_root``."""

    def __init__(self, proc_root: str = "/proc", shown: float = 0.0) -> None:
        """``shown``: the least cores a process is named at (the diagnosis's OUTSIDE_PROCESS_SHOWN)."""
        self._proc = Path(proc_root)
        self._shown = shown
        self._last: dict[int, tuple[str, float]] = {}  # pid -> (name, CPU seconds) at the last scan
        self._last_t: float | None = None

    def scan(self, exclude: set[int], now: float | None = None) -> list[OutsideProcess]:
        """The busiest processes outside ``exclude`` (the job's), this process and its descendants,
        at ``shown`` cores or more (at most OUTSIDE_TOP), from this scan and the previous one (a
        rate over the time between them: after a gap, the average over it); none on the first."""
        now = time.monotonic() if now is None else now
        cur: dict[int, tuple[str, float]] = {}
        parent: dict[int, int] = {}
        try:
            names = os.listdir(self._proc)
        except OSError:
            names = []
        for entry in names:
            if not entry.isdigit():
                continue
            try:
                line = (self._proc / entry / "stat").read_text()
                parsed = parse_stat(line)
                ppid = int(stat_fields(line)[1])
            except (OSError, ValueError, IndexError):
                continue
            if parsed is not None and entry != KTHREADD and ppid != int(KTHREADD):  # not a kernel thread
                cur[int(entry)] = (parse_name(line), parsed[1])
                parent[int(entry)] = ppid
        last, last_t = self._last, self._last_t
        self._last, self._last_t = cur, now
        if last_t is None or now <= last_t:
            return []
        dt = now - last_t
        left_out = exclude | descendants(os.getpid(), parent)
        found = [
            OutsideProcess(pid, name, (cpu - last[pid][1]) / dt)
            for pid, (name, cpu) in cur.items()
            if pid not in left_out and pid in last and last[pid][0] == name and cpu >= last[pid][1]
        ]
        found = [p for p in found if p.cores >= self._shown]
        return sorted(found, key=lambda p: -p.cores)[:OUTSIDE_TOP]


def descendants(root: int, parent: dict[int, int]) -> set[int]:
    """``root`` and every process below it, from a pid -> parent pid map."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = {root}, [root]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out
