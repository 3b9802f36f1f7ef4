"""Busy loops outside a workload's process tree: another user's program on the machine (the
other_processes workload). Kept out of common.py so that the other workloads' proofs, keyed by
their sources and the modules they import, stand."""

from __future__ import annotations

import os

#: a busy loop that ends when the process whose id it is given does (checked every ~2M iterations)
_BUSY_LOOP = """import os, sys
watched = int(sys.argv[1])
while True:
    for _ in range(2_000_000):
        pass
    try:
        os.kill(watched, 0)
    except OSError:
        break
"""


def busy_outside(n: int) -> None:
    """Start ``n`` busy loops outside this job's process tree (another user's work on the machine):
    each is forked twice, so it is a child of init, not of this process, and ends when this
    process does (as another program would not: it only spares the machine after the run)."""
    import sys

    me = os.getpid()
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                if os.fork() == 0:
                    os.execv(sys.executable, [sys.executable, "-c", _BUSY_LOOP, str(me)])
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
