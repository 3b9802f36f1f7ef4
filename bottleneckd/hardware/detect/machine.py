"""The machine description: frozen data, every field either known or None with a reason."""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass, field
from typing import Any

from bottleneckd.hardware.detect import gpus as gpu_detect
from bottleneckd.hardware.detect import host as host_detect
from bottleneckd.hardware.detect.types import BlockDevice, CpuInfo, GpuInfo, IbPort, Mount, Nic
from bottleneckd.hardware.nvml import NvmlBackend
from bottleneckd.model.from_json import from_json

__all__ = ["Machine", "detect_machine"]


@dataclass(frozen=True)
class Machine:
    hostname: str
    cpu: CpuInfo
    memory_total_bytes: int | None
    gpus: tuple[GpuInfo, ...]
    block_devices: tuple[BlockDevice, ...]
    nics: tuple[Nic, ...]
    ib_ports: tuple[IbPort, ...]
    mounts: tuple[Mount, ...]
    #: what could not be detected, and why (key -> reason)
    unknown: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> Machine:
        return Machine(
            hostname=d["hostname"],
            cpu=from_json(CpuInfo, d["cpu"], flags=tuple(d["cpu"].get("flags") or ())),
            memory_total_bytes=d.get("memory_total_bytes"),
            gpus=tuple(
                from_json(
                    GpuInfo,
                    g,
                    gpm_supported=bool(g.get("gpm_supported", False)),
                    mig_fractions=tuple(g["mig_fractions"]) if g.get("mig_fractions") else None,
                )
                for g in d.get("gpus", ())
            ),
            block_devices=tuple(from_json(BlockDevice, b) for b in d.get("block_devices", ())),
            nics=tuple(from_json(Nic, n) for n in d.get("nics", ())),
            ib_ports=tuple(from_json(IbPort, p) for p in d.get("ib_ports", ())),
            mounts=tuple(from_json(Mount, m) for m in d.get("mounts", ())),
            unknown=dict(d.get("unknown", {})),
        )


def detect_machine(
    sys_root: str = "/sys",
    proc_root: str = "/proc",
    nvml: NvmlBackend | None | str = "auto",
) -> Machine:
    """Detect this machine. ``nvml="auto"`` opens the real NVML; pass a backend (or None) to
    choose. Roots are parameters so tests can hand fake /sys and /proc trees."""
    unknown: dict[str, str] = {}
    gpus = gpu_detect.detect_gpus(nvml, unknown)
    return Machine(
        hostname=platform.node(),
        cpu=host_detect.detect_cpu(sys_root, proc_root, unknown),
        memory_total_bytes=host_detect.detect_memory_total(proc_root, unknown),
        gpus=gpus,
        block_devices=host_detect.detect_block_devices(sys_root, unknown),
        nics=host_detect.detect_nics(sys_root, unknown),
        ib_ports=host_detect.detect_ib_ports(sys_root, unknown),
        mounts=host_detect.detect_mounts(proc_root, unknown),
        unknown=unknown,
    )
