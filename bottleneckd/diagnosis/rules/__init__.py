"""The rules: pure functions of one window's statistics, one module per family. Each returns
findings with evidence; ``classify`` runs them all (``RULES``) and keeps the strongest per resource."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.capacity import capacity
from bottleneckd.diagnosis.rules.communication import communication
from bottleneckd.diagnosis.rules.cpu_compute import cpu_compute
from bottleneckd.diagnosis.rules.gpu_compute import gpu_compute
from bottleneckd.diagnosis.rules.input import data_wait
from bottleneckd.diagnosis.rules.machine_only import machine_only
from bottleneckd.diagnosis.rules.offload import offloaded_optimizer
from bottleneckd.diagnosis.rules.other import other
from bottleneckd.diagnosis.rules.transfer import transfer

RULES = (
    data_wait,
    transfer,
    communication,
    gpu_compute,
    offloaded_optimizer,
    cpu_compute,
    other,
    capacity,
    machine_only,
)

__all__ = [
    "RULES",
    "capacity",
    "communication",
    "cpu_compute",
    "data_wait",
    "gpu_compute",
    "machine_only",
    "offloaded_optimizer",
    "other",
    "transfer",
]
