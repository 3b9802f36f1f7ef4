"""GPU detection through the NVML boundary."""

from __future__ import annotations

from bottleneckd.hardware.detect.types import GpuInfo
from bottleneckd.hardware.nvml import GpuLostError, NvmlBackend, NvmlUnavailable
from bottleneckd.hardware.pynvml_backend import open_backend


def resolve_backend(nvml: NvmlBackend | None | str, unknown: dict[str, str]) -> NvmlBackend | None:
    """``"auto"``: the process's one real NVML (shared with every other caller); a backend: that one."""
    if nvml == "auto":
        try:
            return open_backend()
        except NvmlUnavailable as e:
            unknown["gpus"] = f"NVML unavailable: {e}"
            return None
    if nvml is None:
        unknown["gpus"] = "NVML disabled"
    return nvml  # type: ignore[return-value]


def detect_gpus(nvml: NvmlBackend | None | str, unknown: dict[str, str]) -> tuple[GpuInfo, ...]:
    backend = resolve_backend(nvml, unknown)
    if backend is None:
        return ()
    unknown.update(backend.inaccessible())  # counted by NVML but not usable here, with the reason
    out = []
    for i in range(backend.device_count()):
        label = backend.label(i)
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
                    label=label,
                    mig_fractions=backend.mig_fractions(i),
                )
            )
        except GpuLostError as e:
            unknown[label] = str(e)
    if not out and "gpus" not in unknown:
        unknown["gpus"] = "NVML reports no GPU"
    return tuple(out)
