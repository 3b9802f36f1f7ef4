"""The training job's processes, each with its role: the launcher that only starts and waits
(torchrun's elastic agent, ``torch.multiprocessing.spawn``'s parent, ``accelerate launch``, a shell
script), the ranks that train, and the DataLoader workers (and other helpers) under a rank.

Roles come from what the kernel shows, not from the job's code: a process whose command line names
a launcher, or that has children carrying ``RANK``/``LOCAL_RANK`` while it carries none, or whose
``spawn_main`` children have used far more CPU than it has, is a launcher; the first non-launcher on
each branch is a rank; everything below a rank is a worker.
"""

from __future__ import annotations

import os
import time

import psutil

LAUNCHER = "launcher"
RANK = "rank"
WORKER = "worker"
ROLES = (RANK, WORKER, LAUNCHER)

SHELLS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "fish", "env", "timeout", "nohup", "srun", "mpirun", "mpiexec", "time"}
)
LAUNCHER_WORDS = (
    "torchrun",
    "torch.distributed.run",
    "torch.distributed.launch",
    "accelerate",
    "deepspeed",
    "composer",
    "lightning run",
    "horovodrun",
)
SPAWN_WORDS = ("spawn_main", "--multiprocessing-fork")
#: multiprocessing's own helpers: part of the launching machinery, not ranks
HELPER_WORDS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver", "multiprocessing.semaphore_tracker")
#: a spawner using under this many cores while a spawned child uses WAITER_RATIO times more
#: (for WAITER_TICKS intervals in a row) only waits for them
WAITER_CORES = 0.05
WAITER_RATIO = 5.0
WAITER_TICKS = 2


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def _has_rank_env(p: psutil.Process) -> bool:
    try:
        env = p.environ()
    except psutil.Error:
        return False
    return "RANK" in env or "LOCAL_RANK" in env


def _cpu_total(p: psutil.Process) -> float:
    try:
        t = p.cpu_times()
        return t.user + t.system
    except psutil.Error:
        return 0.0


def _demand_total(p: psutil.Process) -> float:
    """CPU seconds used plus seconds the main thread waited on a run queue (schedstat): what the
    process asked of the CPU, which on a contended machine says more than what it got."""
    wait = 0.0
    try:
        with open(f"/proc/{p.pid}/schedstat") as f:
            wait = int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        pass
    return _cpu_total(p) + wait


def names_launcher(cmd: list[str]) -> bool:
    """A command line that starts a job rather than training: a shell, torchrun, accelerate launch ..."""
    if not cmd:
        return False
    exe = os.path.basename(cmd[0])
    if exe in SHELLS:
        return True
    head = " ".join(os.path.basename(c) if i < 2 else c for i, c in enumerate(cmd[:4]))
    if exe.startswith("python") and len(cmd) > 2 and cmd[1] == "-m":
        head = cmd[2] + " " + " ".join(cmd[3:4])
    if any(w in head for w in LAUNCHER_WORDS):
        return "accelerate" not in head or "launch" in head
    return False


def is_helper(cmd: list[str]) -> bool:
    line = " ".join(cmd)
    return any(w in line for w in HELPER_WORDS)


def spawned(kids: list[psutil.Process]) -> list[psutil.Process]:
    return [k for k in kids if any(w in " ".join(_cmdline(k)) for w in SPAWN_WORDS) and not is_helper(_cmdline(k))]


def is_launcher(p: psutil.Process, kids: list[psutil.Process]) -> bool:
    """By command line or environment alone (``torch.multiprocessing.spawn`` needs CPU rates too)."""
    if not kids:
        return False
    if names_launcher(_cmdline(p)):
        return True
    return not _has_rank_env(p) and any(_has_rank_env(k) for k in kids)


class ProcessTree:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._procs: dict[int, psutil.Process] = {}
        self._roles: dict[int, str] = {}
        self._cpu: dict[int, tuple[float, float]] = {}  # pid -> (monotonic, cpu seconds) at the last call
        self._rate: dict[int, float] = {}
        self._waiting: dict[int, int] = {}
        self._walked = 0.0  # pid -> intervals in a row it looked like a waiting spawner

    def alive(self) -> bool:
        return psutil.pid_exists(self.pid)

    def members(self, max_age: float = 0.5) -> list[psutil.Process]:
        """Root and all descendants; Process objects are kept so cpu_percent() has a baseline.
        Samplers of one tick share one walk (and one role assignment): a walk younger than
        ``max_age`` seconds is reused."""
        if self._procs and time.monotonic() - self._walked < max_age:
            return list(self._procs.values())
        self._walked = time.monotonic()
        try:
            root = self._procs.get(self.pid) or psutil.Process(self.pid)
            current = [root] + root.children(recursive=True)
        except psutil.Error:
            return []
        keep = {}
        for p in current:
            keep[p.pid] = self._procs.get(p.pid, p)
        self._procs = keep
        self._update_rates(keep)
        self._roles = self._assign(keep)
        return list(keep.values())

    def role(self, pid: int) -> str:
        """rank, worker or launcher (as of the last ``members()``); the root is a rank by default."""
        return self._roles.get(pid, RANK)

    def by_role(self) -> dict[str, list[psutil.Process]]:
        out: dict[str, list[psutil.Process]] = {r: [] for r in ROLES}
        for pid, p in self._procs.items():
            out[self.role(pid)].append(p)
        return out

    def _update_rates(self, procs: dict[int, psutil.Process]) -> None:
        now = time.monotonic()
        cur, rate = {}, {}
        for pid, p in procs.items():
            c = _demand_total(p)
            cur[pid] = (now, c)
            prev = self._cpu.get(pid)
            if prev is not None and now > prev[0]:
                rate[pid] = max(0.0, (c - prev[1]) / (now - prev[0]))
        self._cpu, self._rate = cur, rate

    def _spawner_waits(
        self, p: psutil.Process, kids: list[psutil.Process], kids_of: dict[int, list[psutil.Process]] | None = None
    ) -> bool:
        """``torch.multiprocessing.spawn``: the parent joins two or more spawned children and asks
        next to nothing of the CPU while they work (a spawn-context DataLoader's parent trains
        itself). The same for a script that starts its ranks through a shell (``sh -c 'python r0 &
        python r1 & wait'``): the shell's Python children count as its own. Rates are CPU used plus
        run-queue wait, so a contended machine does not hide it."""
        sp = spawned(kids)
        for k in kids:  # ranks started through a shell or another launcher the script runs
            if names_launcher(_cmdline(k)):
                sp += [g for g in (kids_of or {}).get(k.pid, []) if "python" in " ".join(_cmdline(g)[:1])]
        mine = self._rate.get(p.pid)
        theirs = max((self._rate.get(k.pid, 0.0) for k in sp), default=0.0)
        waits = len(sp) >= 2 and mine is not None and mine < WAITER_CORES and theirs > WAITER_RATIO * max(mine, 0.01)
        self._waiting[p.pid] = self._waiting.get(p.pid, 0) + 1 if waits else 0
        return self._waiting[p.pid] >= WAITER_TICKS

    def _assign(self, procs: dict[int, psutil.Process]) -> dict[int, str]:
        kids: dict[int, list[psutil.Process]] = {}
        for p in procs.values():
            try:
                ppid = p.ppid()
            except psutil.Error:
                continue
            if ppid in procs and p.pid != self.pid:
                kids.setdefault(ppid, []).append(p)
        roles: dict[int, str] = {}
        old = self._roles

        def walk(p: psutil.Process, parent: str | None) -> None:
            mine = kids.get(p.pid, [])
            if parent in (RANK, WORKER):
                role = WORKER
            elif old.get(p.pid) == LAUNCHER or parent == LAUNCHER and is_helper(_cmdline(p)):
                role = LAUNCHER  # a launcher stays one; multiprocessing's helpers belong to it
            else:
                role = LAUNCHER if is_launcher(p, mine) or self._spawner_waits(p, mine, kids) else RANK
            roles[p.pid] = role
            for k in kids.get(p.pid, []):
                walk(k, role)

        root = procs.get(self.pid)
        if root is not None:
            walk(root, None)
        return roles


#: the process name torch gives its DataLoader workers (torch/utils/data/_utils/worker.py, prctl)
WORKER_NAME = "pt_data_worker"


def loader_workers(pid: int) -> list[int]:
    """The DataLoader workers of the training process: its children torch named ``pt_data_worker``,
    else its Python children, helpers (multiprocessing's resource tracker, forkserver) left out. A
    dump is counted only if its stack is a worker's (``worker_frames``)."""
    try:
        kids = psutil.Process(pid).children()
    except psutil.Error:
        return []
    named, python = [], []
    for k in kids:
        try:
            name, cmd = k.name().lower(), k.cmdline()
            if name == WORKER_NAME:
                named.append(k.pid)
            elif ("python" in name or (cmd and "python" in os.path.basename(cmd[0]))) and not is_helper(cmd):
                python.append(k.pid)
        except psutil.Error:
            continue
    return sorted(named or python)  # torch names its workers; an older one leaves them "python"
