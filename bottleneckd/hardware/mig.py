"""MIG (Multi-Instance GPU): a GPU in MIG mode is enumerated as its MIG device handles.

nvml.h: utilisation is not reported per MIG device; ``nvmlDeviceGetAttributes`` answers for MIG
device handles only (slices, SMs, memory); GPM reads a slice with ``nvmlGpmMigSampleGet(parent,
gpuInstanceId, sample)``. A slice's compute share is its GPU-instance slices over the GPU's
maximum MIG device count (7 on A100/H100/H200/B200: a 1g slice has 1/7 of the compute slices);
its memory share (and so its share of DRAM bandwidth) is its memory over the GPU's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Unit:
    """A whole GPU, or one MIG slice of a GPU in MIG mode."""

    index: int  # NVML index of the physical GPU
    label: str
    handle: Any
    parent: Any = None  # the physical GPU's handle, for a MIG slice
    gpu_instance: int | None = None
    fractions: tuple[float, float] | None = None  # (compute, memory) share of the GPU, for a MIG slice
    parent_uuid: str | None = None  # the physical GPU's UUID, for a MIG slice (how DCGM labels its rows)


def mig_units(n: Any, i: int, h: Any, why: dict[str, str]) -> list[Unit]:
    """The MIG slices of GPU ``i`` when it is in MIG mode (else [])."""
    try:
        if n.nvmlDeviceGetMigMode(h)[0] != n.NVML_DEVICE_MIG_ENABLE:
            return []
        slots = n.nvmlDeviceGetMaxMigDeviceCount(h)
        total = n.nvmlDeviceGetMemoryInfo(h).total
    except (n.NVMLError, n.NVMLLibraryMismatchError):
        return []  # not MIG-capable (or a driver without MIG): the whole GPU
    try:
        parent_uuid = n.nvmlDeviceGetUUID(h)
        parent_uuid = parent_uuid.decode() if isinstance(parent_uuid, bytes) else parent_uuid
    except n.NVMLError:
        parent_uuid = None
    out = []
    for k in range(slots):
        try:
            m = n.nvmlDeviceGetMigDeviceHandleByIndex(h, k)
            attrs = n.nvmlDeviceGetAttributes(m)  # MIG device handles only (nvml.h)
            gi = n.nvmlDeviceGetGpuInstanceId(m)
        except n.NVMLError:  # NOT_FOUND: no MIG device in that slot
            continue
        # the compute instance's slices (a CI smaller than its GI gets its own share); a driver that
        # leaves the field 0 gets the GPU instance's
        ci_slices = getattr(attrs, "computeInstanceSliceCount", 0) or attrs.gpuInstanceSliceCount
        compute = ci_slices / slots if slots else None
        memory = attrs.memorySizeMB * 1048576 / total if total else None
        fr = (min(1.0, compute), min(1.0, memory)) if compute and memory else None
        out.append(Unit(i, f"gpu{i}.mig{k}", m, h, gi, fr, parent_uuid))
    if not out:
        why[f"gpu{i}"] = "MIG mode is on but no MIG device is configured"
    return out
