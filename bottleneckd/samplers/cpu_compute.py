"""CPU compute: per core, the training process tree (DataLoader workers included), iowait, PSI."""

from __future__ import annotations

from pathlib import Path

import psutil

from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.model.sample import Reading
from bottleneckd.samplers.process_tree import ProcessTree


def read_psi(path: Path) -> dict[str, float]:
    """/proc/pressure/* -> {'some_avg10': ..., 'full_avg10': ...} as fractions."""
    out: dict[str, float] = {}
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        kind, *fields = line.split()
        for f in fields:
            k, _, v = f.partition("=")
            if k == "avg10":
                out[f"{kind}_avg10"] = float(v) / 100.0
    return out


class CpuComputeSampler:
    name = "cpu_compute"

    def __init__(self, peaks: PeakTable, tree: ProcessTree | None = None, proc_root: str = "/proc") -> None:
        self._tree = tree
        self._psi = Path(proc_root) / "pressure" / "cpu"
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
            out.append(Reading("cpu_compute", f"cpu{k}", "busy", busy, "ratio"))
        n = max(1, len(per))
        out.append(Reading("cpu_compute", "host", "utilization", busy_total / n, "ratio"))
        out.append(Reading("cpu_compute", "host", "busy_cores", busy_total, "cores"))
        out.append(Reading("cpu_compute", "host", "cores", float(n), "cores"))
        out.append(Reading("cpu_compute", "host", "iowait", iowait / n, "ratio"))
        psi = read_psi(self._psi)
        out.append(Reading("cpu_compute", "host", "pressure_some", psi.get("some_avg10"), "ratio",
                           "" if psi else "pressure stall information not available"))
        if self._tree is not None:
            members = self._tree.members()
            total = 0.0
            workers = 0.0
            states: dict[str, int] = {}
            for p in members:
                try:
                    c = p.cpu_percent(None) / 100.0
                    st = p.status()
                except Exception:  # noqa: BLE001 - the process went away between calls
                    continue
                total += c
                if p.pid != self._tree.pid:
                    workers += c
                states[st] = states.get(st, 0) + 1
            out.append(Reading("cpu_compute", "job", "busy_cores", total, "cores"))
            out.append(Reading("cpu_compute", "job", "main_busy_cores", total - workers, "cores"))
            out.append(Reading("cpu_compute", "job", "worker_busy_cores", workers, "cores"))
            out.append(Reading("cpu_compute", "job", "processes", float(len(members)), "count"))
            out.append(Reading("cpu_compute", "job", "processes_in_disk_wait", float(states.get("disk-sleep", 0)), "count"))
        return out
