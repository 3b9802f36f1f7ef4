"""The one vocabulary of resources and step stages.

Resource ids are the names of section 6.1 of Bartoldson, Kailkhura and Blalock (JMLR 2023),
"Compute-Efficient Deep Learning". They are used unchanged in the CLI, JSON, metric labels
and docs.
"""

from __future__ import annotations

from typing import Final

RESOURCES: Final[tuple[str, ...]] = (
    "gpu_compute",
    "gpu_memory",
    "gpu_memory_bandwidth",
    "cpu_compute",
    "cpu_memory",
    "cpu_memory_bandwidth",
    "inter_gpu_interconnect",
    "cpu_gpu_interconnect",
    "inter_node_interconnect",
    "storage_capacity",
    "storage_bandwidth",
    "storage_network_bandwidth",
)

#: section of the paper that discusses each resource
PAPER_SECTION: Final[dict[str, str]] = {r: f"6.1.{i + 1}" for i, r in enumerate(RESOURCES)}

#: resources whose peak is a capacity (bytes held), not a rate
CAPACITY_RESOURCES: Final[frozenset[str]] = frozenset({"gpu_memory", "cpu_memory", "storage_capacity"})

#: stages of a training step (section 2.1), as the hook and the diagnosis name them
STAGES: Final[tuple[str, ...]] = ("data", "transfer", "compute", "optimizer", "communication", "other")

#: every step phase (the hook's, and those py-spy stack samples add) and the stage each belongs to
PHASES: Final[dict[str, str]] = {
    "data_wait": "data",
    "transfer": "transfer",
    "forward": "compute",
    "backward": "compute",
    "optimizer": "optimizer",
    "communication": "communication",
    "gpu_wait": "compute",
    "file_io": "data",
    "other": "other",
}

#: the phases the torch hook times itself, in step order (the others come from stack samples): the
#: hook's timing, the exporter, the live view and the report all use these
HOOK_PHASES: Final[tuple[str, ...]] = tuple(p for p in PHASES if p not in ("gpu_wait", "file_io"))

UNDETERMINED: Final[str] = "undetermined"


def check_resource(resource_id: str, where: str = "resource") -> str:
    """Return ``resource_id`` if it is one of the twelve; raise InputError otherwise."""
    from bottleneckd.model.errors import InputError

    if resource_id not in RESOURCES:
        raise InputError(f"{where}: unknown resource id {resource_id!r}; use one of: {', '.join(RESOURCES)}")
    return resource_id
