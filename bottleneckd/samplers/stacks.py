"""Stack sampling of a running job with py-spy (non-blocking: the target is never paused).

Each dump's training thread is read by ``stack_frames`` (the stage of the step its whole stack is
in); counts over an interval become step phases, so attach-mode jobs go through the same rules as
hooked ones. A launcher that only waits is followed to the rank that trains.

Each stack is also counted by the user's own innermost frame (``code_sites``): under ``attach``
and under ``run`` (where the hook's timings give the phases) that names the code the bottleneck's
stage runs. The training process's DataLoader workers are dumped too, one per sample in turn
(py-spy's ``--subprocesses`` is not available with ``--json``): the data stage's code runs there.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter, deque

import psutil

from bottleneckd.model.code import MAIN, WORKER, StackCounts
from bottleneckd.model.resources import Phase
from bottleneckd.model.sample import RankPhases, StepPhases
from bottleneckd.samplers.code_sites import StackTally, data_draws, user_site
from bottleneckd.samplers.process_tree import LAUNCHER, RANK, ProcessTree, loader_workers
from bottleneckd.samplers.rank_stacks import RankStacks, classify_rank_sample
from bottleneckd.samplers.stack_frames import (
    STARTUP,
    classify_frames,
    op_intensity,
    thread_idle,
    worker_frames,
    wrappers,
)

log = logging.getLogger(__name__)

PERMISSION_HINT = (
    "py-spy cannot read process {pid}: ptrace is not permitted. Run as root, or grant CAP_SYS_PTRACE "
    "(docker: --cap-add SYS_PTRACE; Kubernetes: securityContext.capabilities.add: [SYS_PTRACE]), or set "
    "kernel.yama.ptrace_scope=0. Diagnosing without stacks."
)


def find_py_spy() -> str | None:
    """py-spy on PATH, or beside this interpreter (a virtual environment not activated)."""
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return shutil.which("py-spy") or (beside if os.access(beside, os.X_OK) else None)


#: py-spy dumps tried before attach goes on without stacks
CHECK_TRIES = 3
#: recent "other" stack samples whose idle flag makes the ``other_idle_share`` fact
IDLE_MEMORY = 60
#: dumps between two looks for the job's rank processes (attach's per-rank view)
RANK_LOOK_EVERY = 4
#: dumps between two looks for the training process's DataLoader workers (they start at each
#: epoch unless persistent: a look every few seconds at 1-2 Hz follows them)
WORKER_LOOK_EVERY = 5


def main_thread(dump: list[dict], pid: int) -> dict | None:
    for t in dump:
        if t.get("pid", pid) == pid and (t.get("thread_name") == "MainThread" or t.get("os_thread_id") == pid):
            return t
    return None


WAIT_FRAMES = (
    "Popen.wait",
    "Popen._wait",
    "Popen._try_wait",
    "waitpid",
    "BaseProcess.join",
    "Popen.poll",
    "_wait_for_tstate_lock",
    "start_processes",
    "ProcessContext.join",
    "SimpleElasticAgent",
    "LocalElasticAgent",
)


def _environ(p: psutil.Process) -> dict[str, str]:
    try:
        return p.environ()
    except Exception:  # noqa: BLE001
        return {}


def training_process(pid: int, frames: list[dict], idle: bool = False) -> int:
    """A launcher (torchrun, mp.spawn, a script that starts its ranks) only waits: follow it to
    the process that trains, rank 0 when ranks are named, else the busiest Python child. A main
    thread that is ``idle`` outside every phase with Python children is taken for a launcher too."""
    if not idle and not any(w in f.get("name", "") for f in frames[:6] for w in WAIT_FRAMES):
        return pid
    try:
        kids = [k for k in psutil.Process(pid).children(recursive=True) if "python" in k.name().lower()]
    except psutil.Error:
        return pid
    if not kids:
        return pid
    for k in kids:
        env = _environ(k)
        if env.get("LOCAL_RANK", env.get("RANK")) == "0":
            return k.pid

    def busy(k: psutil.Process) -> float:
        try:
            t = k.cpu_times()
            return t.user + t.system
        except psutil.Error:
            return -1.0

    return max(kids, key=busy).pid


class StackSampler:
    def __init__(
        self,
        pid: int,
        rate_hz: float = 2.0,
        py_spy: str | None = None,
        workers: bool = True,
        main: bool = True,
        ranks: bool = False,
        copies: bool = True,
        burst: tuple[float, float] | None = None,
    ) -> None:
        """``main``: dump the training process's main thread (phases and code); ``workers``: its
        DataLoader workers in turn (code of the data stage); ``ranks``: every rank of a
        multi-process job on CPUs in turn (``drain_ranks``: attach's per-rank view, which names
        the straggler; under ``run`` the hook in every rank reports it). ``copies``: the machine
        has a GPU, so a copy line outside the model is the transfer stage (stack_frames.COPY_LINE);
        without one it is a cast in host memory, the other stage. ``burst``: (rate, seconds), a
        higher rate for the first seconds (``run``'s code naming: a short job's few samples; not
        with ``ranks``)."""
        self.pid = pid
        self.copies = copies
        self.target = pid
        self.interval = 1.0 / rate_hz
        if burst is not None and (ranks or burst[0] <= rate_hz):
            burst = None  # the rank view counts its samples at one rate
        self._burst = burst
        self.exe = py_spy or find_py_spy()
        self._counts: Counter[str] = Counter()
        self._ops: Counter[str] = Counter()
        self._idle: deque[bool] = deque(maxlen=IDLE_MEMORY)  # recent "other" samples: was the thread waiting?
        #: recent forward/backward samples: was the thread waiting? (DDP on CPU: on the all-reduce)
        self._compute_idle: deque[bool] = deque(maxlen=IDLE_MEMORY)
        self._n = 0
        self._wall = 0.0  # seconds the main thread's samples since the last drain stand for
        self._started = time.monotonic()
        self._tick = self.interval  # the seconds the tick being sampled stands for
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None
        self.samples_total = 0
        self._tree = ProcessTree(pid)
        self._dumps = 0
        self._wrappers: set[str] = set()  # data-parallel wrappers seen on any stack so far
        #: stack samples by (phase, role, the user's innermost frame): the code each stage runs
        self.tally = StackTally("py-spy", rate_hz)
        self.sample_workers = workers
        self.sample_main = main
        self._workers: list[int] = []
        self._next_worker = 0
        self._not_workers: set[int] = set()  # children whose stack showed they are not loader workers (ranks)
        self.rank_view = RankStacks(self.interval) if ranks else None
        self._main_seen: tuple[int, str] | None = None  # this tick's main-thread sample: (pid, rank phase)

    def dump(self, pid: int | None = None) -> list[dict] | None:
        assert self.exe is not None
        pid = self.target if pid is None else pid
        p = subprocess.run(
            [self.exe, "dump", "--pid", str(pid), "--nonblocking", "--json"], capture_output=True, text=True, timeout=10
        )
        if p.returncode != 0:
            err = (p.stderr or p.stdout).strip()
            if any(k in err for k in ("Permission", "ptrace", "Operation not permitted", "EPERM")):
                raise PermissionError(PERMISSION_HINT.format(pid=self.pid))
            raise RuntimeError(err.splitlines()[-1] if err else f"py-spy exited {p.returncode}")
        return json.loads(p.stdout)

    def check(self) -> str | None:
        """None if stacks can be read; else one line saying why not and what to grant."""
        if self.exe is None:
            return "py-spy is not installed (pip install py-spy); diagnosing without stacks"
        for attempt in range(CHECK_TRIES):
            try:
                d = self.dump(self.pid)
                t = main_thread(d or [], self.pid)
                self.target = training_process(self.pid, t.get("frames", []) if t else [])
                return None
            except PermissionError as e:
                return str(e)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                # py-spy's reads of a busy process sometimes fail once ("Failed to find python
                # version from target process", a truncated backtrace): try again before giving up
                if attempt + 1 == CHECK_TRIES or not psutil.pid_exists(self.pid):
                    return f"py-spy cannot sample process {self.pid} ({e}); diagnosing without stacks"
                self._stop.wait(0.5)
        return None

    def _retarget(self) -> None:
        """Follow the launcher to a rank once the process roles show it only waits (the roles need a
        few intervals of CPU figures: torch.multiprocessing.spawn's parent is told by its CPU)."""
        members = self._tree.members()
        if self._tree.role(self.target) != LAUNCHER:
            return
        ranks = [p for p in members if self._tree.role(p.pid) == RANK]
        if not ranks:
            return
        zero = [p for p in ranks if _environ(p).get("LOCAL_RANK", _environ(p).get("RANK")) == "0"]
        self.target = (zero or sorted(ranks, key=lambda p: p.pid))[0].pid

    def _wait(self) -> float:
        """Seconds to the next tick: the burst's interval during its first seconds, then the rate's."""
        b = self._burst
        if b is not None and time.monotonic() - self._started < b[1]:
            return 1.0 / b[0]
        return self.interval

    def _run(self) -> None:
        self._started = time.monotonic()
        while not self._stop.wait(wait := self._wait()):
            self._tick = wait
            self._dumps += 1
            self._main_seen = None
            if self.sample_main:
                self._sample_main()
            if self.rank_view is not None:
                self._sample_rank(self.rank_view)
            if self.sample_workers:
                self._sample_worker()

    def _sample_main(self) -> None:
        if self._dumps % 3 == 1:
            try:
                self._retarget()
            except Exception:  # noqa: BLE001 - a process gone between calls: keep the current target
                pass
        try:
            d = self.dump()
        except (RuntimeError, PermissionError, subprocess.TimeoutExpired, ValueError) as e:
            if self.target != self.pid and not psutil.pid_exists(self.target):
                self.target = self.pid  # the child followed has exited (torch.compile's short-lived helpers)
                return
            self.error = str(e)
            return
        t = main_thread(d or [], self.target)
        if t is None:
            return
        frames = t.get("frames", [])
        phase = self._phase(frames)
        waits = thread_idle(t)
        idle = phase == Phase.OTHER and waits
        if idle and self._dumps % 4 == 2:  # a launcher waiting on its ranks (found late, or a rank restarted)
            new = training_process(self.target, frames, idle=True)
            if new == self.target != self.pid and self._attached_trains():
                new = self.pid  # the child we followed waits while the process attached to trains
            if new != self.target:
                self.target = new  # follow it to one
                return
        if phase != STARTUP:
            self._main_seen = (self.target, classify_rank_sample(phase, waits))
            site = user_site(frames)
            self.tally.add(phase, MAIN, site, data_draws(frames, site) if phase == Phase.DATA_WAIT else (None, False))
        op = op_intensity(frames) if phase == Phase.FORWARD else None
        seen = wrappers(frames) if phase != STARTUP else set()
        with self._lock:
            if phase == Phase.OTHER:
                self._idle.append(idle)
            elif phase in (Phase.FORWARD, Phase.BACKWARD):
                self._compute_idle.append(waits)
            self._wrappers |= seen
            self._counts[phase] += 1
            if op:
                self._ops[op] += 1
            self._n += 1
            self._wall += self._tick
            self.samples_total += 1

    def _phase(self, frames: list[dict]) -> str:
        phase = classify_frames(frames)
        return Phase.OTHER if phase == Phase.TRANSFER and not self.copies else phase

    def _attached_trains(self) -> bool:
        """The process attached to, left for a child while it waited, runs a training phase now:
        a job attached while ``torch.compile`` waited on its Python helper processes (the full
        suite's compiled_mlp, attached 5 s in while it compiled, gave no stack sample of a step in
        25 s; a helper seen at 4 s: ``python -c "import sys ..."``, a child of the job)."""
        try:
            t = main_thread(self.dump(self.pid) or [], self.pid)
        except (RuntimeError, PermissionError, subprocess.TimeoutExpired, ValueError):
            return False
        return t is not None and classify_frames(t.get("frames", [])) not in (Phase.OTHER, STARTUP)

    def _sample_rank(self, view: RankStacks) -> None:
        """The ranks' main threads whose turn it is (the rank followed for the phases: this tick's sample of it)."""
        if self._dumps % RANK_LOOK_EVERY == 1:
            try:
                view.set_ranks([p for p in self._tree.members() if self._tree.role(p.pid) == RANK])
            except Exception:  # noqa: BLE001 - a process gone between calls: the next look finds the rest
                return
        for pid in view.turn():
            if self._main_seen is not None and self._main_seen[0] == pid:
                view.add(pid, self._main_seen[1])
                continue
            try:
                d = self.dump(pid)
            except (RuntimeError, PermissionError, subprocess.TimeoutExpired, ValueError):
                continue  # a rank gone (the job ending): not counted
            t = main_thread(d or [], pid)
            if t is None:
                continue
            phase = self._phase(t.get("frames", []))
            if phase != STARTUP:
                view.add(pid, classify_rank_sample(phase, thread_idle(t)))

    def drain_ranks(self) -> tuple[RankPhases, ...]:
        """Every rank's stack samples since the last drain (empty unless ``ranks`` and two or more CPU ranks)."""
        return self.rank_view.drain() if self.rank_view is not None else ()

    def _sample_worker(self) -> None:
        """One DataLoader worker's stack, in turn: counted under the data stage when it runs code
        (a worker waiting for its next index, with no frame of the user's, is not counted)."""
        if not self._workers or self._dumps % WORKER_LOOK_EVERY == 1:  # until found, at every dump
            self._workers = [p for p in loader_workers(self.target) if p not in self._not_workers]
        if not self._workers:
            return
        pid = self._workers[self._next_worker % len(self._workers)]
        self._next_worker += 1
        try:
            d = self.dump(pid)
        except (RuntimeError, PermissionError, subprocess.TimeoutExpired, ValueError):
            return  # a worker gone at the epoch's end: the next look finds the new ones
        t = main_thread(d or [], pid)
        if t is None:
            return
        frames = t.get("frames", [])
        inside, phase = worker_frames(frames), classify_frames(frames)
        if inside is None:  # not a DataLoader worker (a launcher's rank): not counted, not dumped again
            if phase != STARTUP:  # a spawned worker still importing has no loop frame yet
                self._not_workers.add(pid)
                self._workers = [p for p in self._workers if p != pid]
            return
        site = user_site(inside)
        if phase == STARTUP or (site is None and thread_idle(t)):
            return
        self.tally.add(phase, WORKER, site, data_draws(inside, site))

    def drain_code(self) -> StackCounts | None:
        """Stack samples by user code since the last drain."""
        return self.tally.drain()

    def start(self) -> StackSampler:
        self._thread = threading.Thread(target=self._run, name="bottleneckd-py-spy", daemon=True)
        self._thread.start()
        return self

    def drain(self) -> StepPhases | None:
        """Stack samples since the last drain, as phase shares (``steps`` counts stack samples)."""
        with self._lock:
            if not self._n:
                return None
            n, counts, ops = self._n, dict(self._counts), dict(self._ops)  # ops: cumulative, a property of the code
            idle = list(self._idle)  # the last IDLE_MEMORY "other" samples, across drains
            compute_idle = list(self._compute_idle)
            wrapped = set(self._wrappers)
            each = self._wall / self._n if self._wall > 0 else self.interval  # a burst's ticks are shorter
            self._n, self._counts, self._wall = 0, Counter(), 0.0
        n -= counts.pop(STARTUP, 0)
        if n <= 0:  # only start-up (imports) seen: no training step yet
            return None
        facts: dict = {"phase_source": "py-spy", "stack_samples": n}
        for fact in wrapped:  # seen on a stack: the model is wrapped (the hook's facts say so under run)
            facts[fact] = True
        if "fsdp" in wrapped:
            facts["sharded"] = True  # FSDP shards the parameters, as the hook's probe says under run
        if sum(ops.values()) >= 3:
            facts["low_intensity_op_share"] = ops.get("low", 0) / sum(ops.values())
        if len(idle) >= 3:
            facts["other_idle_share"] = sum(idle) / len(idle)
        if len(compute_idle) >= 3:
            facts["compute_idle_share"] = sum(compute_idle) / len(compute_idle)
        return StepPhases(n, n * each, {k: v * each for k, v in counts.items()}, facts)

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
