"""The training job's process tree (main process and DataLoader workers), through psutil."""

from __future__ import annotations

import psutil


class ProcessTree:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._procs: dict[int, psutil.Process] = {}

    def alive(self) -> bool:
        return psutil.pid_exists(self.pid)

    def members(self) -> list[psutil.Process]:
        """Root and all descendants; Process objects are kept so cpu_percent() has a baseline."""
        try:
            root = self._procs.get(self.pid) or psutil.Process(self.pid)
            current = [root] + root.children(recursive=True)
        except psutil.Error:
            return []
        keep = {}
        for p in current:
            keep[p.pid] = self._procs.get(p.pid, p)
        self._procs = keep
        return list(keep.values())
