"""The one NVML boundary. Every NVML call goes through here.

Conventions (after nvitop and dcgm-exporter): NVML is initialised once and device handles are
cached; a field the GPU or driver does not support is ``None`` (never 0) and is logged once;
a lost GPU raises :class:`GpuLostError` so the caller can mark it down and drop its series.

Tests replace this module's :class:`NvmlBackend` with a fake of the same shape
(``tests/fake_nvml.py``); nothing above this layer imports pynvml.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Protocol, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

# GPM metric ids (nvml.h, nvmlGpmMetricId_t); kept here so callers need no pynvml
GPM_SM_UTIL = 2
GPM_SM_OCCUPANCY = 3
GPM_ANY_TENSOR_UTIL = 5
GPM_DRAM_BW_UTIL = 10
GPM_PCIE_TX_PER_SEC = 20  # MiB/s
GPM_PCIE_RX_PER_SEC = 21  # MiB/s
GPM_NVLINK_TOTAL_RX_PER_SEC = 60  # MiB/s
GPM_NVLINK_TOTAL_TX_PER_SEC = 61  # MiB/s
GPM_METRICS = (
    GPM_SM_UTIL,
    GPM_SM_OCCUPANCY,
    GPM_ANY_TENSOR_UTIL,
    GPM_DRAM_BW_UTIL,
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

    def device_count(self) -> int: ...
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
    def process_memory(self, i: int) -> dict[int, int] | None: ...  # pid -> bytes


class PynvmlBackend:
    """The real NVML, through nvidia-ml-py."""

    def __init__(self) -> None:
        try:
            import pynvml  # noqa: PLC0415 - imported here only: the one NVML boundary
        except ImportError as e:  # pragma: no cover - nvidia-ml-py is a dependency
            raise NvmlUnavailable(f"nvidia-ml-py is not installed ({e})") from e
        self._n = pynvml
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as e:
            raise NvmlUnavailable(f"NVML could not start: {e}") from e
        self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        self._unsupported: set[tuple[str, int]] = set()
        self._gpm_prev: dict[int, Any] = {}
        self._gpm_spare: dict[int, Any] = {}
        self._nvlinks: dict[int, list[int]] = {}
        self._max_clocks: dict[int, tuple[int, int] | None] = {}

    def _q(self, what: str, i: int, fn: Callable[..., T], *args: Any) -> T | None:
        n = self._n
        if (what, i) in self._unsupported:
            return None
        try:
            return fn(self._handles[i], *args)
        except n.NVMLError as e:
            code = getattr(e, "value", None)
            if code == n.NVML_ERROR_GPU_IS_LOST:
                raise GpuLostError(f"GPU {i} is lost") from e
            if code in (n.NVML_ERROR_NOT_SUPPORTED, n.NVML_ERROR_FUNCTION_NOT_FOUND, n.NVML_ERROR_NO_PERMISSION):
                self._unsupported.add((what, i))
                log.info("NVML %s not available on GPU %d: %s", what, i, e)
                return None
            log.warning("NVML %s failed on GPU %d: %s", what, i, e)
            return None

    def close(self) -> None:
        for s in list(self._gpm_prev.values()) + list(self._gpm_spare.values()):
            try:
                self._n.nvmlGpmSampleFree(s)
            except Exception:  # noqa: BLE001
                pass
        try:
            self._n.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass

    def device_count(self) -> int:
        return len(self._handles)

    def name(self, i: int) -> str:
        v = self._q("name", i, self._n.nvmlDeviceGetName)
        return v.decode() if isinstance(v, bytes) else (v or f"GPU {i}")

    def uuid(self, i: int) -> str | None:
        v = self._q("uuid", i, self._n.nvmlDeviceGetUUID)
        return v.decode() if isinstance(v, bytes) else v

    def memory(self, i: int) -> tuple[int, int] | None:
        n = self._n
        m = self._q("memory_v2", i, lambda h: n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2))
        if m is None:
            m = self._q("memory", i, n.nvmlDeviceGetMemoryInfo)
        return None if m is None else (int(m.total), int(m.used))

    def utilization(self, i: int) -> tuple[float, float] | None:
        u = self._q("utilization", i, self._n.nvmlDeviceGetUtilizationRates)
        return None if u is None else (float(u.gpu), float(u.memory))

    def pcie_max_link(self, i: int) -> tuple[int | None, int | None]:
        return (
            self._q("pcie_max_gen", i, self._n.nvmlDeviceGetMaxPcieLinkGeneration),
            self._q("pcie_max_width", i, self._n.nvmlDeviceGetMaxPcieLinkWidth),
        )

    def pcie_current_link(self, i: int) -> tuple[int | None, int | None]:
        return (
            self._q("pcie_cur_gen", i, self._n.nvmlDeviceGetCurrPcieLinkGeneration),
            self._q("pcie_cur_width", i, self._n.nvmlDeviceGetCurrPcieLinkWidth),
        )

    def pcie_throughput(self, i: int) -> tuple[float, float] | None:
        # KB/s over a 20 ms window; each call blocks for that window.
        n = self._n
        tx = self._q("pcie_tx", i, n.nvmlDeviceGetPcieThroughput, n.NVML_PCIE_UTIL_TX_BYTES)
        rx = self._q("pcie_rx", i, n.nvmlDeviceGetPcieThroughput, n.NVML_PCIE_UTIL_RX_BYTES)
        if tx is None or rx is None:
            return None
        return float(tx) * 1000.0, float(rx) * 1000.0

    def _links(self, i: int) -> list[int]:
        if i not in self._nvlinks:
            n = self._n
            links = []
            for link in range(n.NVML_NVLINK_MAX_LINKS):
                try:
                    if n.nvmlDeviceGetNvLinkState(self._handles[i], link) == n.NVML_FEATURE_ENABLED:
                        links.append(link)
                except n.NVMLError:
                    break  # past the last link, or NVLink not supported at all
            self._nvlinks[i] = links
        return self._nvlinks[i]

    def nvlink_active_links(self, i: int) -> int | None:
        return len(self._links(i))

    def nvlink_data_bytes(self, i: int) -> tuple[int, int] | None:
        n = self._n
        links = self._links(i)
        if not links:
            return None
        ids = [(n.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, l) for l in links] + [
            (n.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, l) for l in links
        ]
        values = self._q("nvlink_throughput", i, n.nvmlDeviceGetFieldValues, ids)
        if values is None:
            return None
        kib = [int(v.value.ullVal) if v.nvmlReturn == n.NVML_SUCCESS else None for v in values]
        if any(k is None for k in kib):
            return None
        half = len(links)
        return sum(kib[:half]) * 1024, sum(kib[half:]) * 1024  # type: ignore[arg-type]

    def power_watts(self, i: int) -> float | None:
        v = self._q("power", i, self._n.nvmlDeviceGetPowerUsage)
        return None if v is None else v / 1000.0

    def energy_joules(self, i: int) -> float | None:
        v = self._q("energy", i, self._n.nvmlDeviceGetTotalEnergyConsumption)
        return None if v is None else v / 1000.0

    def clocks_mhz(self, i: int) -> tuple[int, int] | None:
        n = self._n
        sm = self._q("clock_sm", i, n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_SM)
        mem = self._q("clock_mem", i, n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_MEM)
        return None if sm is None or mem is None else (int(sm), int(mem))

    def max_clocks_mhz(self, i: int) -> tuple[int, int] | None:
        if i in self._max_clocks:  # static: read once
            return self._max_clocks[i]
        self._max_clocks[i] = self._read_max_clocks(i)
        return self._max_clocks[i]

    def _read_max_clocks(self, i: int) -> tuple[int, int] | None:
        n = self._n
        sm = self._q("max_clock_sm", i, n.nvmlDeviceGetMaxClockInfo, n.NVML_CLOCK_SM)
        mem = self._q("max_clock_mem", i, n.nvmlDeviceGetMaxClockInfo, n.NVML_CLOCK_MEM)
        return None if sm is None or mem is None else (int(sm), int(mem))

    def clock_event_reasons(self, i: int) -> int | None:
        n = self._n
        fn = getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) or n.nvmlDeviceGetCurrentClocksThrottleReasons
        v = self._q("clock_event_reasons", i, fn)
        return None if v is None else int(v)

    def gpm_supported(self, i: int) -> bool:
        s = self._q("gpm_support", i, self._n.nvmlGpmQueryDeviceSupport)
        return bool(s is not None and s.isSupportedDevice)

    def gpm_metrics(self, i: int) -> dict[int, float | None] | None:
        """Metrics over the interval since the previous call on this GPU (None on the first)."""
        n = self._n
        sample = self._gpm_spare.pop(i, None) or n.nvmlGpmSampleAlloc()  # two samples per GPU, reused in turn
        if self._q("gpm_sample", i, n.nvmlGpmSampleGet, sample) is None:
            self._gpm_spare[i] = sample
            return None
        prev, self._gpm_prev[i] = self._gpm_prev.get(i), sample
        if prev is None:
            return None
        try:
            get = n.c_nvmlGpmMetricsGet_t()
            get.version = n.NVML_GPM_METRICS_GET_VERSION
            get.numMetrics = len(GPM_METRICS)
            get.sample1 = prev
            get.sample2 = sample
            for k, metric in enumerate(GPM_METRICS):
                get.metrics[k].metricId = metric
            n.nvmlGpmMetricsGet(get)
            return {
                get.metrics[k].metricId: (float(get.metrics[k].value) if get.metrics[k].nvmlReturn == n.NVML_SUCCESS else None)
                for k in range(len(GPM_METRICS))
            }
        except n.NVMLError as e:
            log.warning("NVML GPM metrics failed on GPU %d: %s", i, e)
            return None
        finally:
            self._gpm_spare[i] = prev

    def process_memory(self, i: int) -> dict[int, int] | None:
        procs = self._q("processes", i, self._n.nvmlDeviceGetComputeRunningProcesses)
        if procs is None:
            return None
        # usedGpuMemory is None where the driver cannot attribute memory (e.g. in some containers): unknown, not 0
        return {int(p.pid): int(p.usedGpuMemory) for p in procs if p.usedGpuMemory is not None}


def open_backend() -> NvmlBackend:
    """The real NVML; raises NvmlUnavailable with the reason when it cannot be used."""
    return PynvmlBackend()
