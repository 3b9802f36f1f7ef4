"""How a sample names a process outside the job that takes the host's CPU (samplers/
outside_processes.py writes it, rules/cpu_state.py reads it): a reading of the cpu_compute
resource whose device is ``name[pid]`` and whose metric is OUTSIDE_METRIC, in cores."""

from __future__ import annotations

__all__ = ["OUTSIDE_METRIC", "OUTSIDE_TOP", "outside_device"]

OUTSIDE_METRIC = "outside_process_cores"
#: the most processes named, per sample and in the evidence (the busiest few are what a user stops
#: or moves first)
OUTSIDE_TOP = 3


def outside_device(name: str, pid: int) -> str:
    """The reading's device for a process outside the job: ``name[pid]``."""
    return f"{name}[{pid}]"
