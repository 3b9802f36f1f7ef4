"""What detection finds: frozen data, every field either known or None with a reason.

Its own module so that the detectors (gpus, host) and the assembly (machine) import it without
importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuInfo:
    index: int  # position among NVML's units (whole GPUs and MIG slices)
    name: str
    uuid: str | None  # the identity to key by: CUDA and NVML indexes differ
    memory_total_bytes: int | None
    pcie_max_generation: int | None
    pcie_max_width: int | None
    nvlink_active_links: int | None
    gpm_supported: bool
    label: str = ""  # "gpu0" (NVML index) or "gpu0.mig1"; "" in old machine files: gpu<index>
    #: a MIG slice's share of its GPU: (compute, memory); None for a whole GPU
    mig_fractions: tuple[float, float] | None = None

    @property
    def device(self) -> str:
        """The device name readings and peaks carry."""
        return self.label or f"gpu{self.index}"


@dataclass(frozen=True)
class CpuInfo:
    model: str | None
    logical_cores: int | None
    physical_cores: int | None
    sockets: int | None
    max_mhz: float | None
    flags: tuple[str, ...]


@dataclass(frozen=True)
class BlockDevice:
    name: str
    size_bytes: int | None
    rotational: bool | None
    model: str | None
    transport: str | None  # "nvme", "scsi/sata", "virtio", ...
    pcie_generation: int | None  # for NVMe: the controller's link


@dataclass(frozen=True)
class Nic:
    name: str
    speed_mbps: int | None  # None: unknown (link down, virtual, or not reported)
    operstate: str | None
    #: no device behind it (veth, bridge, ifb, tunnel): /sys/class/net/NAME/device is absent
    virtual: bool = False


@dataclass(frozen=True)
class IbPort:
    device: str
    port: int
    rate_gbps: float | None
    state: str | None


@dataclass(frozen=True)
class Mount:
    mountpoint: str
    fstype: str
    source: str
    network: bool
