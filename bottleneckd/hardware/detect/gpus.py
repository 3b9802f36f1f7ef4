"""GPU detection through the NVML boundary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bottleneckd.hardware.nvml import GpuLostError, NvmlBackend, NvmlUnavailable, open_backend

if TYPE_CHECKING:
    from bottleneckd.hardware.detect.machine import GpuInfo


def resolve_backend(nvml: NvmlBackend | None | str, unknown: dict[str, str]) -> NvmlBackend | None:
    if nvml == "auto":
        try:
            return open_backend()
        except NvmlUnavailable as e:
            unknown["gpus"] = f"NVML unavailable: {e}"
            return None
    if nvml is None:
        unknown["gpus"] = "NVML disabled"
    return nvml  # type: ignore[return-value]


def detect_gpus(nvml: NvmlBackend | None | str, unknown: dict[str, str]) -> tuple["GpuInfo", ...]:
    from bottleneckd.hardware.detect.machine import GpuInfo

    backend = resolve_backend(nvml, unknown)
    if backend is None:
        return ()
    out = []
    for i in range(backend.device_count()):
        try:
            mem = backend.memory(i)
            gen, width = backend.pcie_max_link(i)
            out.append(
                GpuInfo(
                    index=i,
                    name=backend.name(i),
                    uuid=backend.uuid(i),
                    memory_total_bytes=mem[0] if mem else None,
                    pcie_max_generation=gen,
                    pcie_max_width=width,
                    nvlink_active_links=backend.nvlink_active_links(i),
                    gpm_supported=backend.gpm_supported(i),
                )
            )
        except GpuLostError as e:
            unknown[f"gpu{i}"] = str(e)
    if not out and "gpus" not in unknown:
        unknown["gpus"] = "NVML reports no GPU"
    return tuple(out)
