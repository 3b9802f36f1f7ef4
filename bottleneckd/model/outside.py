"""How a sample names a process outside the job that takes the host's CPU (samplers/
outside_processes.py writes it, rules/cpu_state.py reads it): a reading of the cpu_compute
resource whose device is ``name[pid]`` and whose metric is OUTSIDE_METRIC, in cores."""

from __future__ import annotations

__all__ = ["OUTSIDE_METRIC", "OUTSIDE_TOP", "outside_device", "outside_cores"]

OUTSIDE_METRIC = "outside_process_cores"
#: the most processes named, per sample and in the evidence (the busiest few are what a user stops
#: or moves first)
OUTSIDE_TOP = 3


def outside_device(name: str, pid: int) -> str:
    """The reading's device for a process outside the job: ``name[pid]``."""
    return f"{name}[{pid}]"


def outside_cores(host_busy: float, job_busy: float, launcher: float | None, sidecar: float | None) -> float:
    """Cores busy on the host outside the job: the host's busy cores less the job's ranks and loader
    workers, its launcher, and the sidecar's own (itself and its py-spy), never below 0. The CPU
    sampler gates its scan on it and rules/cpu_state.py says it in the evidence."""
    return max(0.0, host_busy - job_busy - (launcher or 0.0) - (sidecar or 0.0))
