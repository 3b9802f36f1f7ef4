"""The one vocabulary of resources, step stages and step phases: closed sets, as ``StrEnum``s.

Resource ids are the names of section 6.1 of Bartoldson, Kailkhura and Blalock (JMLR 2023),
"Compute-Efficient Deep Learning". They are used unchanged in the CLI, JSON, metric labels
and docs.

A member *is* its string (``Resource.GPU_COMPUTE == "gpu_compute"``, same hash, ``str()``,
f-string and JSON), so the wire format, the traces, the report JSON and the Prometheus labels
carry the plain names; code compares and constructs with the members, so a misspelt name is an
``AttributeError`` at import, not a silently empty lookup. A new resource, stage or phase is
added here, and only here (tests/test_vocabulary.py checks the data files against these).
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Final

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover - Python 3.10: the same behaviour, spelt out

    class StrEnum(str, Enum):
        """A str whose members are their values (``str()`` and ``format()`` give the value)."""

        def __str__(self) -> str:
            return str.__str__(self)

        def __format__(self, spec: str) -> str:
            return str.__format__(str(self), spec)


class Resource(StrEnum):
    """The twelve resources of section 6.1 (in the paper's order), and ``undetermined``: the
    verdict when no resource can be named (never a resource a sampler measures)."""

    GPU_COMPUTE = "gpu_compute"
    GPU_MEMORY = "gpu_memory"
    GPU_MEMORY_BANDWIDTH = "gpu_memory_bandwidth"
    CPU_COMPUTE = "cpu_compute"
    CPU_MEMORY = "cpu_memory"
    CPU_MEMORY_BANDWIDTH = "cpu_memory_bandwidth"
    INTER_GPU_INTERCONNECT = "inter_gpu_interconnect"
    CPU_GPU_INTERCONNECT = "cpu_gpu_interconnect"
    INTER_NODE_INTERCONNECT = "inter_node_interconnect"
    STORAGE_CAPACITY = "storage_capacity"
    STORAGE_BANDWIDTH = "storage_bandwidth"
    STORAGE_NETWORK_BANDWIDTH = "storage_network_bandwidth"
    UNDETERMINED = "undetermined"


class Stage(StrEnum):
    """The stages of a training step (section 2.1), as the hook and the diagnosis name them."""

    DATA = "data"
    TRANSFER = "transfer"
    COMPUTE = "compute"
    OPTIMIZER = "optimizer"
    COMMUNICATION = "communication"
    OTHER = "other"


class Phase(StrEnum):
    """The step phases: those the torch hook times, and those py-spy stack samples add."""

    DATA_WAIT = "data_wait"
    TRANSFER = "transfer"
    FORWARD = "forward"
    BACKWARD = "backward"
    OPTIMIZER = "optimizer"
    COMMUNICATION = "communication"
    GPU_WAIT = "gpu_wait"
    FILE_IO = "file_io"
    OTHER = "other"


#: the twelve resource ids (``undetermined`` is a verdict, not a resource)
RESOURCES: Final[tuple[Resource, ...]] = tuple(r for r in Resource if r is not Resource.UNDETERMINED)

#: section of the paper that discusses each resource
PAPER_SECTION: Final[dict[Resource, str]] = {r: f"6.1.{i + 1}" for i, r in enumerate(RESOURCES)}

#: resources whose peak is a capacity (bytes held), not a rate
CAPACITY_RESOURCES: Final[frozenset[Resource]] = frozenset(
    {Resource.GPU_MEMORY, Resource.CPU_MEMORY, Resource.STORAGE_CAPACITY}
)

#: stages of a training step (section 2.1), as the hook and the diagnosis name them
STAGES: Final[tuple[Stage, ...]] = tuple(Stage)

#: every step phase (the hook's, and those py-spy stack samples add) and the stage each belongs to
PHASES: Final[dict[Phase, Stage]] = {
    Phase.DATA_WAIT: Stage.DATA,
    Phase.TRANSFER: Stage.TRANSFER,
    Phase.FORWARD: Stage.COMPUTE,
    Phase.BACKWARD: Stage.COMPUTE,
    Phase.OPTIMIZER: Stage.OPTIMIZER,
    Phase.COMMUNICATION: Stage.COMMUNICATION,
    Phase.GPU_WAIT: Stage.COMPUTE,
    Phase.FILE_IO: Stage.DATA,
    Phase.OTHER: Stage.OTHER,
}

#: the phases only stack samples add (the hook does not time them)
SAMPLED_PHASES: Final[tuple[Phase, ...]] = (Phase.GPU_WAIT, Phase.FILE_IO)

#: the phases the torch hook times itself, in step order (the others come from stack samples): the
#: hook's timing, the exporter, the live view and the report all use these
HOOK_PHASES: Final[tuple[Phase, ...]] = tuple(p for p in PHASES if p not in SAMPLED_PHASES)

#: the phases of the data stage (waiting for the next batch, reading files)
DATA_PHASES: Final[tuple[Phase, ...]] = tuple(p for p, s in PHASES.items() if s is Stage.DATA)

UNDETERMINED: Final = Resource.UNDETERMINED


def stage_of(phase: str) -> Stage:
    """The stage a phase name belongs to; ``Stage.OTHER`` for a name that is not a phase."""
    try:
        return PHASES[Phase(phase)]
    except ValueError:
        return Stage.OTHER


def check_resource(resource_id: str, where: str = "resource") -> Resource:
    """The resource of that id if it is one of the twelve; raise InputError otherwise."""
    from bottleneckd.model.errors import InputError

    if resource_id not in RESOURCES:
        raise InputError(f"{where}: unknown resource id {resource_id!r}; use one of: {', '.join(RESOURCES)}")
    return Resource(resource_id)
