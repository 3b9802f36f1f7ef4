"""CPU compute: per core; the job's processes by role (ranks, loader workers, launcher), their
hottest threads, the cores they may use (affinity, cgroup quota), threads in disk wait, iowait,
and CPU pressure stalls (host and the job's cgroup). None of it needs a peak."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import psutil

from bottleneckd.model.outside import OUTSIDE_METRIC, outside_cores, outside_device
from bottleneckd.model.resources import Resource
from bottleneckd.model.sample import Reading
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.samplers.outside_processes import OutsideProcesses
from bottleneckd.samplers.pressure import Pressure, cgroup_dir, usable_cores
from bottleneckd.samplers.process_tree import LAUNCHER, RANK, WORKER, ProcessTree
from bottleneckd.samplers.threads import AUTOGRAD_THREAD, ThreadRates, threads

__all__ = ["CpuComputeSampler"]

#: threads a collective backend runs in, by name: gloo's work loop and TCP event loop
#: ("pt_gloo_runloop", "gloo_tcp_loop", torch 2.x), NCCL's proxy and torch's NCCL watchdog
COMM_THREAD = re.compile(r"gloo|nccl|NCCL")


class CpuComputeSampler:
    name = "cpu_compute"

    def __init__(
        self,
        peaks: PeakTable,
        tree: ProcessTree | None = None,
        proc_root: str = "/proc",
        cgroup_root: str = "/sys/fs/cgroup",
        outside: tuple[float, float] | None = None,
    ) -> None:
        """``outside``: (busy cores outside the job from which the host's processes are scanned, the
        least cores a process outside the job is named at): the diagnosis's OUTSIDE_BUSY and
        OUTSIDE_PROCESS_SHOWN, given by the runtime; None: never scanned."""
        self._tree = tree
        self._proc = proc_root
        self._cgroot = cgroup_root
        self._host_psi = Pressure(Path(proc_root) / "pressure" / "cpu")
        self._job_psi: Pressure | None = None
        self._threads = ThreadRates()
        self._outside_from = outside[0] if outside is not None else None
        self._outside = OutsideProcesses(proc_root, outside[1] if outside is not None else 0.0)
        #: the sidecar's CPU seconds (its own and its reaped children's: py-spy) at a monotonic time
        self._own_cpu: tuple[float, float] | None = None
        self._cores = psutil.cpu_count() or 1
        psutil.cpu_times_percent(percpu=True)  # the first call is a meaningless baseline

    def available(self) -> tuple[bool, str]:
        return True, ""

    def sample(self) -> list[Reading]:
        per = psutil.cpu_times_percent(percpu=True)
        out: list[Reading] = []
        busy_total = 0.0
        iowait = 0.0
        for k, t in enumerate(per):
            busy = max(0.0, 100.0 - t.idle - getattr(t, "iowait", 0.0) - getattr(t, "steal", 0.0)) / 100.0
            busy_total += busy
            iowait += getattr(t, "iowait", 0.0) / 100.0
            out.append(Reading(Resource.CPU_COMPUTE, f"cpu{k}", "busy", busy, "ratio"))
        n = max(1, len(per))
        out.append(Reading(Resource.CPU_COMPUTE, "host", "utilization", busy_total / n, "ratio"))
        out.append(Reading(Resource.CPU_COMPUTE, "host", "busy_cores", busy_total, "cores"))
        out.append(Reading(Resource.CPU_COMPUTE, "host", "cores", float(n), "cores"))
        out.append(Reading(Resource.CPU_COMPUTE, "host", "iowait", iowait / n, "ratio"))
        some, full, why = self._host_psi.read()
        out.append(Reading(Resource.CPU_COMPUTE, "host", "pressure_some", some, "ratio", why))
        if self._tree is not None:
            members = {p.pid for p in self._tree.members()} | {self._tree.pid}
            job = self._job()
            own = self._sidecar(members)
            out += job + own + self._outside_processes(busy_total, job, own, members)
        return out

    def _sidecar(self, members: set[int]) -> list[Reading]:
        """The CPU of this process and of the children it has reaped (py-spy's dumps, each run to its
        end between two samples), from its own /proc/self/stat: the tool's own cost, not other
        processes' (rules/cpu_state.py leaves it out of the cores busy outside the job). Under run the
        job's root is a child too, reaped with its whole CPU time when it ends: nothing is read once
        it is gone. None where the sidecar runs in the job (``members``: the job's pids)."""
        assert self._tree is not None
        if os.getpid() in members:
            return [Reading(Resource.CPU_COMPUTE, "sidecar", "busy_cores", None, "cores", "the sidecar is in the job")]
        try:
            t = psutil.Process().cpu_times()
        except psutil.Error:
            return []
        cpu, now, last = t.user + t.system + t.children_user + t.children_system, time.monotonic(), self._own_cpu
        self._own_cpu = (cpu, now)
        if last is None or now <= last[1]:
            return [Reading(Resource.CPU_COMPUTE, "sidecar", "busy_cores", None, "cores", "first interval")]
        if not self._tree.alive():
            return [Reading(Resource.CPU_COMPUTE, "sidecar", "busy_cores", None, "cores", "the job has ended")]
        rate = min(float(self._cores), max(0.0, cpu - last[0]) / (now - last[1]))
        return [Reading(Resource.CPU_COMPUTE, "sidecar", "busy_cores", rate, "cores")]

    def _outside_processes(
        self, host_busy: float, job: list[Reading], own: list[Reading], members: set[int]
    ) -> list[Reading]:
        """The busiest processes outside the job (``members``), by name and pid, while the cores busy
        outside it (``outside_cores``, as rules/cpu_state.py reckons them) reach ``outside``'s."""
        got = {r.metric: r.value for r in job if r.device == "job"}
        sidecar = next((r.value for r in own if r.device == "sidecar"), None)
        outside = outside_cores(host_busy, got.get("busy_cores") or 0.0, got.get("launcher_busy_cores"), sidecar)
        if self._outside_from is None or outside < self._outside_from:
            return []
        return [
            Reading(Resource.CPU_COMPUTE, outside_device(p.name, p.pid), OUTSIDE_METRIC, p.cores, "cores")
            for p in self._outside.scan(members)
        ]

    def _job(self) -> list[Reading]:
        tree = self._tree
        assert tree is not None
        members = tree.members()
        now = time.monotonic()
        by_role = {RANK: 0.0, WORKER: 0.0, LAUNCHER: 0.0}
        count = {RANK: 0, WORKER: 0, LAUNCHER: 0}
        main_threads: list[float] = []
        main_demand: list[float] = []
        launching: dict[int, float] = {}  # rank pid -> its main thread + autograd device threads, cores
        hottest = {RANK: 0.0, WORKER: 0.0}
        demand = {RANK: 0.0, WORKER: 0.0}
        worker_demand: dict[int, float] = {}
        waiting = 0.0
        comm = 0.0  # the ranks' collective-backend threads (gloo's reduction and sends), cores
        busiest_worker = 0.0
        d_procs = d_threads = 0
        stats = []
        for p in members:
            try:
                c = p.cpu_percent(None) / 100.0
                st = p.status()
            except Exception:  # noqa: BLE001 - the process went away between calls
                continue
            role = tree.role(p.pid)
            by_role[role] += c
            count[role] += 1
            d_procs += st == "disk-sleep"
            if role == WORKER:
                busiest_worker = max(busiest_worker, c)
            stats += threads(p.pid, self._proc)
        rates = self._threads.update(stats, now)
        for s in stats:
            role = tree.role(s.pid)
            d_threads += s.state == "D" and role != LAUNCHER
            r = rates.get(s.tid)
            if r is None or role == LAUNCHER:
                continue
            hottest[role] = max(hottest[role], r.cpu)
            demand[role] = max(demand[role], r.demand)
            waiting += r.wait or 0.0
            if role == WORKER:
                worker_demand[s.pid] = worker_demand.get(s.pid, 0.0) + r.demand
            if role == RANK and s.tid == s.pid:
                main_threads.append(r.cpu)
                main_demand.append(r.demand)
            if role == RANK and (s.tid == s.pid or s.name.startswith(AUTOGRAD_THREAD)):
                launching[s.pid] = launching.get(s.pid, 0.0) + r.cpu
            if role == RANK and s.tid != s.pid and COMM_THREAD.search(s.name):
                comm += r.cpu
        has_wait = any(r.wait is not None for r in rates.values())
        ranks = [p.pid for p in members if tree.role(p.pid) == RANK]
        usable = usable_cores(ranks or [tree.pid], self._proc, self._cgroot)
        cg = cgroup_dir(ranks[0] if ranks else tree.pid, self._proc, self._cgroot)
        if self._job_psi is None or self._job_psi.path != (cg / "cpu.pressure" if cg else None):
            self._job_psi = Pressure(cg / "cpu.pressure" if cg else None)
        jsome, _, jwhy = self._job_psi.read(now)
        first = "first interval" if not rates else ""
        out = [
            Reading(Resource.CPU_COMPUTE, "job", "busy_cores", by_role[RANK] + by_role[WORKER], "cores"),
            Reading(Resource.CPU_COMPUTE, "job", "rank_busy_cores", by_role[RANK], "cores"),
            Reading(Resource.CPU_COMPUTE, "job", "worker_busy_cores", by_role[WORKER], "cores"),
            Reading(Resource.CPU_COMPUTE, "job", "launcher_busy_cores", by_role[LAUNCHER], "cores"),
            Reading(
                Resource.CPU_COMPUTE,
                "job",
                "worker_max_busy_cores",
                busiest_worker if count[WORKER] else None,
                "cores",
                "" if count[WORKER] else "no loader workers",
            ),
            # the main thread's own CPU (the busiest rank's), not its process's: intra-op threads excluded
            Reading(
                Resource.CPU_COMPUTE,
                "job",
                "main_busy_cores",
                max(main_threads) if main_threads else None,
                "cores",
                first,
            ),
            # the threads that launch a rank's kernels: its main thread (forward, optimizer) and its
            # autograd engine's device threads (backward on CUDA), the busiest rank's together
            Reading(
                Resource.CPU_COMPUTE,
                "job",
                "launch_thread_cores",
                max(launching.values()) if launching else None,
                "cores",
                first,
            ),
            # the ranks' CPU outside their main threads: DDP's gloo reduction, intra-op threads
            Reading(
                Resource.CPU_COMPUTE,
                "job",
                "rank_side_thread_cores",
                max(0.0, by_role[RANK] - sum(main_threads)) if main_threads else None,
                "cores",
                first,
            ),
            # gloo / NCCL threads of the ranks: where a CPU all-reduce reduces and sends
            Reading(Resource.CPU_COMPUTE, "job", "comm_thread_cores", comm if main_threads else None, "cores", first),
            Reading(
                Resource.CPU_COMPUTE, "job", "hottest_thread_busy", hottest[RANK] if rates else None, "cores", first
            ),
            Reading(
                Resource.CPU_COMPUTE,
                "job",
                "worker_hottest_thread_busy",
                hottest[WORKER] if rates and count[WORKER] else None,
                "cores",
                first or ("" if count[WORKER] else "no loader workers"),
            ),
            # running + waiting on a run queue: what the thread asks of the CPU on a shared machine
            Reading(
                Resource.CPU_COMPUTE,
                "job",
                "main_thread_demand",
                max(main_demand) if main_demand and has_wait else None,
                "cores",
                first or ("" if has_wait else "schedstat not available"),
            ),
            Reading(
                Resource.CPU_COMPUTE,
                "job",
                "hottest_thread_demand",
                demand[RANK] if has_wait else None,
                "cores",
                first or ("" if has_wait else "schedstat not available"),
            ),
            Reading(
                Resource.CPU_COMPUTE,
                "job",
                "worker_max_demand",
                min(1.0, max(worker_demand.values())) if worker_demand and has_wait else None,
                "cores",
                first
                or ("" if has_wait else "schedstat not available")
                or ("" if count[WORKER] else "no loader workers"),
            ),
            Reading(
                Resource.CPU_COMPUTE,
                "job",
                "runqueue_wait_cores",
                waiting if has_wait else None,
                "cores",
                first or ("" if has_wait else "schedstat not available"),
            ),
            Reading(
                Resource.CPU_COMPUTE,
                "job",
                "usable_cores",
                usable,
                "cores",
                "" if usable is not None else "affinity not readable",
            ),
            Reading(Resource.CPU_COMPUTE, "job", "processes", float(len(members)), "count"),
            Reading(Resource.CPU_COMPUTE, "job", "ranks", float(count[RANK]), "count"),
            Reading(Resource.CPU_COMPUTE, "job", "workers", float(count[WORKER]), "count"),
            Reading(Resource.CPU_COMPUTE, "job", "processes_in_disk_wait", float(d_procs), "count"),
            Reading(Resource.CPU_COMPUTE, "job", "threads_in_disk_wait", float(d_threads), "count"),
            Reading(Resource.CPU_COMPUTE, "job", "pressure_some", jsome, "ratio", jwhy),
        ]
        return out
