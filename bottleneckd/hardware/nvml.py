"""The one NVML boundary: the protocol the rest of bottleneckd reads, and the one opened backend.

Conventions (after nvitop and dcgm-exporter): NVML is initialised once per process (detection and
sampling share the backend ``open_backend()`` returns) and device handles are cached; a field the
GPU or driver does not support is ``None`` (never 0) and is logged once; a lost GPU raises
:class:`GpuLostError` so the caller can mark it down and drop its series.

Devices are *units*: a whole GPU, or one MIG slice of a GPU in MIG mode (the GPU itself is then
not a unit: NVML answers utilisation only per slice). ``label(i)`` names a unit by its NVML index
("gpu0", "gpu0.mig1"); ``uuid(i)`` is its stable identity (what CUDA reports too, whatever
``CUDA_VISIBLE_DEVICES`` and ``CUDA_DEVICE_ORDER`` do to indexes). GPUs counted but not usable
(no permission, already lost) are not units; ``inaccessible()`` says which and why.

The real backend is ``bottleneckd.hardware.pynvml_backend`` (``open_backend()``); tests use ``tests/fake_nvml.py``
(this protocol) and ``tests/fake_pynvml.py`` (pynvml's API and errors, under the real backend).
"""

from __future__ import annotations

import logging
from typing import Protocol

log = logging.getLogger(__name__)

# GPM metric ids (nvml.h, nvmlGpmMetricId_t); kept here so callers need no pynvml
GPM_SM_UTIL = 2
GPM_SM_OCCUPANCY = 3
GPM_INTEGER_UTIL = 4
GPM_ANY_TENSOR_UTIL = 5
GPM_DRAM_BW_UTIL = 10  # percent of the theoretical DRAM bandwidth (nvml.h)
GPM_FP64_UTIL = 11  # non-tensor pipes: percent of time the SMs do that math
GPM_FP32_UTIL = 12
GPM_FP16_UTIL = 13
GPM_PCIE_TX_PER_SEC = 20  # MiB/s
GPM_PCIE_RX_PER_SEC = 21  # MiB/s
GPM_NVLINK_TOTAL_RX_PER_SEC = 60  # MiB/s
GPM_NVLINK_TOTAL_TX_PER_SEC = 61  # MiB/s
GPM_METRICS = (
    GPM_SM_UTIL,
    GPM_SM_OCCUPANCY,
    GPM_INTEGER_UTIL,
    GPM_ANY_TENSOR_UTIL,
    GPM_DRAM_BW_UTIL,
    GPM_FP64_UTIL,
    GPM_FP32_UTIL,
    GPM_FP16_UTIL,
    GPM_PCIE_TX_PER_SEC,
    GPM_PCIE_RX_PER_SEC,
    GPM_NVLINK_TOTAL_RX_PER_SEC,
    GPM_NVLINK_TOTAL_TX_PER_SEC,
)

# clock-event (throttle) reasons, nvml.h
CLOCK_EVENT_REASONS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
}


class NvmlUnavailable(Exception):
    """NVML cannot be used on this machine (no library, no driver, no GPU). ``str()`` says why."""


class GpuLostError(Exception):
    """The GPU fell off the bus (NVML_ERROR_GPU_IS_LOST)."""


class NvmlBackend(Protocol):
    """The NVML surface bottleneckd uses. Every method returns None for 'not supported'."""

    def device_count(self) -> int: ...  # units: whole GPUs and MIG slices
    def label(self, i: int) -> str: ...  # "gpu0", "gpu0.mig1" (NVML indexes)
    def inaccessible(self) -> dict[str, str]: ...  # "gpuN" -> why it is counted but not usable
    def mig_fractions(
        self, i: int
    ) -> tuple[float, float] | None: ...  # (compute, memory) share of the GPU; None: whole GPU
    def mig_instance(self, i: int) -> tuple[str, int] | None: ...  # (physical GPU's UUID, GPU instance id) of a slice
    def name(self, i: int) -> str: ...
    def uuid(self, i: int) -> str | None: ...
    def memory(self, i: int) -> tuple[int, int] | None: ...  # (total, used) bytes
    def utilization(self, i: int) -> tuple[float, float] | None: ...  # (gpu %, memory-busy %)
    def pcie_max_link(self, i: int) -> tuple[int | None, int | None]: ...  # (generation, width)
    def pcie_current_link(self, i: int) -> tuple[int | None, int | None]: ...
    def pcie_throughput(self, i: int) -> tuple[float, float] | None: ...  # (tx, rx) B/s
    def nvlink_active_links(self, i: int) -> int | None: ...
    def nvlink_data_bytes(self, i: int) -> tuple[int, int] | None: ...  # cumulative (tx, rx) bytes
    def power_watts(self, i: int) -> float | None: ...
    def energy_joules(self, i: int) -> float | None: ...
    def clocks_mhz(self, i: int) -> tuple[int, int] | None: ...  # (sm, memory)
    def max_clocks_mhz(self, i: int) -> tuple[int, int] | None: ...
    def clock_event_reasons(self, i: int) -> int | None: ...
    def gpm_supported(self, i: int) -> bool: ...
    def gpm_metrics(self, i: int) -> dict[int, float | None] | None: ...
    def process_memory(self, i: int) -> dict[int, int | None] | None: ...  # pid -> bytes (None: not attributed)
