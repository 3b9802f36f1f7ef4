"""The real NVML, through nvidia-ml-py: the only module that imports pynvml.

Checked against nvidia-ml-py's ``pynvml.py`` and nvml.h:
- a GPU whose handle NVML refuses (``NO_PERMISSION`` for GPUs counted but not usable, a GPU lost
  before we started) is left out with the reason, never an exception out of detection;
- every call maps NVML errors: GPU-lost raises GpuLostError, not-supported/no-permission/missing
  symbol is cached as unsupported, and pynvml's ``NVMLLibraryMismatchError`` (raised, not as an
  NVMLError, by unversioned calls whose versioned symbol the driver lacks) too;
- the process list falls back from ``_v3`` to ``_v2`` (drivers before R510); the clock-event
  reasons symbol (R535) falls back to the throttle-reasons call;
- MIG: a GPU in MIG mode is enumerated as its MIG device handles; GPM reads each slice with
  ``nvmlGpmMigSampleGet(parent, gpuInstanceId, sample)``;
- GPM samples are taken strictly more than 100 ms apart (nvml.h: the interval "should be greater
  than 100 ms"); a read sooner (an out-of-schedule tick) returns the last complete interval;
- PCIe throughput: ``nvmlDeviceGetPcieThroughput`` counts bytes over a 20 ms window and blocks for
  it (nvml.h), per direction. Where the driver has the cumulative byte counters
  ``NVML_FI_DEV_PCIE_COUNT_TX_BYTES``/``RX_BYTES`` (field values, R535 and later) as 64-bit values,
  the rate is their difference over the interval since the last read (no 20 ms wait, and an
  average over the whole tick rather than a 20 ms glimpse); a 32-bit counter would wrap every 4 GiB
  (0.17 s at 25 GB/s) and is not used. The first read of a unit uses the 20 ms window.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from bottleneckd.hardware.mig import Unit, mig_units
from bottleneckd.hardware.nvml import GPM_METRICS, GpuLostError, NvmlBackend, NvmlUnavailable

log = logging.getLogger(__name__)
T = TypeVar("T")
GPM_MIN_INTERVAL = 0.1  # seconds; the interval must be strictly longer


class PynvmlBackend:
    def __init__(self, module: Any = None) -> None:
        if module is None:
            try:
                import pynvml  # noqa: PLC0415 - the one import of pynvml
            except ImportError as e:  # pragma: no cover - nvidia-ml-py is a dependency
                raise NvmlUnavailable(f"nvidia-ml-py is not installed ({e})") from e
            module = pynvml
        self._n = n = module
        try:
            n.nvmlInit()
            count = n.nvmlDeviceGetCount()
        except n.NVMLError as e:
            raise NvmlUnavailable(f"NVML could not start: {e}") from e
        self._unsupported: set[tuple[str, int]] = set()
        self._gpm_prev: dict[int, tuple[Any, float]] = {}
        self._gpm_spare: dict[int, Any] = {}
        self._gpm_last: dict[int, dict[int, float | None]] = {}
        self._nvlinks: dict[int, list[int]] = {}
        self._pcie_prev: dict[int, tuple[float, int, int]] = {}  # unit -> (monotonic time, tx, rx bytes)
        self._max_clocks: dict[int, tuple[int, int] | None] = {}
        self._why: dict[str, str] = {}
        self._procs_fn: Callable[[Any], Any] | None = None
        self._units: list[Unit] = []
        for i in range(count):
            try:
                h = n.nvmlDeviceGetHandleByIndex(i)
            except n.NVMLError as e:  # NO_PERMISSION (counted, not ours to use), GPU_IS_LOST, UNKNOWN
                self._why[f"gpu{i}"] = f"NVML refuses a handle to GPU {i}: {e}"
                continue
            self._units += mig_units(n, i, h, self._why) or [Unit(i, f"gpu{i}", h)]

    def device_count(self) -> int:
        return len(self._units)

    def label(self, i: int) -> str:
        return self._units[i].label

    def inaccessible(self) -> dict[str, str]:
        return dict(self._why)

    def mig_fractions(self, i: int) -> tuple[float, float] | None:
        return self._units[i].fractions

    def mig_instance(self, i: int) -> tuple[str, int] | None:
        u = self._units[i]
        if u.parent is None or u.parent_uuid is None or u.gpu_instance is None:
            return None
        return u.parent_uuid, u.gpu_instance

    # -- the error mapping ------------------------------------------------------------------
    def _call(self, what: str, i: int, fn: Callable[..., T], *args: Any) -> T | None:
        """``fn(*args)`` with NVML's errors mapped: lost raises, unsupported is None (cached)."""
        n = self._n
        if (what, i) in self._unsupported:
            return None
        try:
            return fn(*args)
        except n.NVMLLibraryMismatchError as e:  # unversioned call, versioned symbol missing: not an NVMLError
            self._unsupported.add((what, i))
            log.info("NVML %s not available on %s: %s", what, self.label(i), e)
            return None
        except n.NVMLError as e:
            code = getattr(e, "value", None)
            if code == n.NVML_ERROR_GPU_IS_LOST:
                raise GpuLostError(f"{self.label(i)} is lost") from e
            if code in (n.NVML_ERROR_NOT_SUPPORTED, n.NVML_ERROR_FUNCTION_NOT_FOUND, n.NVML_ERROR_NO_PERMISSION):
                self._unsupported.add((what, i))
                log.info("NVML %s not available on %s: %s", what, self.label(i), e)
                return None
            log.warning("NVML %s failed on %s: %s", what, self.label(i), e)
            return None

    def _q(self, what: str, i: int, fn: Callable[..., T], *args: Any) -> T | None:
        return self._call(what, i, fn, self._units[i].handle, *args)

    def _whole(self, what: str, i: int, fn: Callable[..., T], *args: Any) -> T | None:
        """A whole-GPU field (PCIe, NVLink, power, clocks): not per MIG slice."""
        if self._units[i].parent is not None:
            return None
        return self._q(what, i, fn, *args)

    def close(self) -> None:
        for s in [p for p, _ in self._gpm_prev.values()] + list(self._gpm_spare.values()):
            try:
                self._n.nvmlGpmSampleFree(s)
            except Exception:  # noqa: BLE001
                pass
        try:
            self._n.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass

    # -- fields -----------------------------------------------------------------------------
    def name(self, i: int) -> str:
        v = self._q("name", i, self._n.nvmlDeviceGetName)
        return v.decode() if isinstance(v, bytes) else (v or self.label(i))

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
        u = self._q("utilization", i, self._n.nvmlDeviceGetUtilizationRates)  # NOT_SUPPORTED on MIG
        return None if u is None else (float(u.gpu), float(u.memory))

    def pcie_max_link(self, i: int) -> tuple[int | None, int | None]:
        return (
            self._whole("pcie_max_gen", i, self._n.nvmlDeviceGetMaxPcieLinkGeneration),
            self._whole("pcie_max_width", i, self._n.nvmlDeviceGetMaxPcieLinkWidth),
        )

    def pcie_current_link(self, i: int) -> tuple[int | None, int | None]:
        return (
            self._whole("pcie_cur_gen", i, self._n.nvmlDeviceGetCurrPcieLinkGeneration),
            self._whole("pcie_cur_width", i, self._n.nvmlDeviceGetCurrPcieLinkWidth),
        )

    def pcie_throughput(self, i: int) -> tuple[float, float] | None:
        n = self._n
        counters = self._pcie_counters(i)
        if counters is not None:
            now, prev = time.monotonic(), self._pcie_prev.get(i)
            self._pcie_prev[i] = (now, *counters)
            if prev is not None and now > prev[0] and counters[0] >= prev[1] and counters[1] >= prev[2]:
                dt = now - prev[0]
                return (counters[0] - prev[1]) / dt, (counters[1] - prev[2]) / dt
        # KB/s over a 20 ms window; each call blocks for that window.
        tx = self._whole("pcie_tx", i, n.nvmlDeviceGetPcieThroughput, n.NVML_PCIE_UTIL_TX_BYTES)
        rx = self._whole("pcie_rx", i, n.nvmlDeviceGetPcieThroughput, n.NVML_PCIE_UTIL_RX_BYTES)
        if tx is None or rx is None:
            return None
        return float(tx) * 1000.0, float(rx) * 1000.0

    def _pcie_counters(self, i: int) -> tuple[int, int] | None:
        """The cumulative PCIe (tx, rx) byte counters, where the driver keeps them as 64-bit values."""
        n = self._n
        ids = [n.NVML_FI_DEV_PCIE_COUNT_TX_BYTES, n.NVML_FI_DEV_PCIE_COUNT_RX_BYTES]
        values = self._whole("pcie_counters", i, n.nvmlDeviceGetFieldValues, ids)
        if values is None:
            return None
        wide = (n.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, n.NVML_VALUE_TYPE_SIGNED_LONG_LONG)
        if any(v.nvmlReturn != n.NVML_SUCCESS or v.valueType not in wide for v in values):
            self._unsupported.add(("pcie_counters", i))  # not kept (or 32-bit): the 20 ms window from now on
            return None
        return int(values[0].value.ullVal), int(values[1].value.ullVal)

    def _links(self, i: int) -> list[int]:
        if i not in self._nvlinks:
            n, links = self._n, []
            if self._units[i].parent is None:
                for link in range(n.NVML_NVLINK_MAX_LINKS):
                    try:
                        if n.nvmlDeviceGetNvLinkState(self._units[i].handle, link) == n.NVML_FEATURE_ENABLED:
                            links.append(link)
                    except n.NVMLError as e:
                        if getattr(e, "value", None) == n.NVML_ERROR_GPU_IS_LOST:
                            raise GpuLostError(f"{self.label(i)} is lost") from e
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
        ids = [(n.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, k) for k in links] + [
            (n.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, k) for k in links
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
        v = self._whole("power", i, self._n.nvmlDeviceGetPowerUsage)
        return None if v is None else v / 1000.0

    def energy_joules(self, i: int) -> float | None:
        v = self._whole("energy", i, self._n.nvmlDeviceGetTotalEnergyConsumption)
        return None if v is None else v / 1000.0

    def clocks_mhz(self, i: int) -> tuple[int, int] | None:
        n = self._n
        sm = self._whole("clock_sm", i, n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_SM)
        mem = self._whole("clock_mem", i, n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_MEM)
        return None if sm is None or mem is None else (int(sm), int(mem))

    def max_clocks_mhz(self, i: int) -> tuple[int, int] | None:
        if i not in self._max_clocks:  # static: read once
            n = self._n
            sm = self._whole("max_clock_sm", i, n.nvmlDeviceGetMaxClockInfo, n.NVML_CLOCK_SM)
            mem = self._whole("max_clock_mem", i, n.nvmlDeviceGetMaxClockInfo, n.NVML_CLOCK_MEM)
            self._max_clocks[i] = None if sm is None or mem is None else (int(sm), int(mem))
        return self._max_clocks[i]

    def clock_event_reasons(self, i: int) -> int | None:
        n = self._n
        v = self._whole("clock_event_reasons", i, n.nvmlDeviceGetCurrentClocksEventReasons)  # R535 and later
        if v is None:  # the older symbol, same bits (deprecated, present before R535)
            v = self._whole("clock_throttle_reasons", i, n.nvmlDeviceGetCurrentClocksThrottleReasons)
        return None if v is None else int(v)

    def gpm_supported(self, i: int) -> bool:
        u = self._units[i]
        s = self._call(
            "gpm_support", i, self._n.nvmlGpmQueryDeviceSupport, u.parent if u.parent is not None else u.handle
        )
        return bool(s is not None and s.isSupportedDevice)

    def _gpm_sample(self, i: int, sample: Any) -> Any:
        u, n = self._units[i], self._n
        if u.parent is not None:
            return self._call("gpm_sample", i, n.nvmlGpmMigSampleGet, u.parent, u.gpu_instance, sample)
        return self._call("gpm_sample", i, n.nvmlGpmSampleGet, u.handle, sample)

    def gpm_metrics(self, i: int) -> dict[int, float | None] | None:
        """Metrics over the interval since the previous sample on this unit (None on the first)."""
        n, now = self._n, time.monotonic()
        prev = self._gpm_prev.get(i)
        if prev is not None and now - prev[1] <= GPM_MIN_INTERVAL:
            return self._gpm_last.get(i)  # too soon for a new interval: the last complete one
        sample = self._gpm_spare.pop(i, None) or self._call("gpm_alloc", i, n.nvmlGpmSampleAlloc)
        if sample is None:
            return None
        if self._gpm_sample(i, sample) is None:
            self._gpm_spare[i] = sample
            return None
        self._gpm_prev[i] = (sample, now)
        if prev is None:
            return None
        try:
            get = n.c_nvmlGpmMetricsGet_t()
            get.version = n.NVML_GPM_METRICS_GET_VERSION
            get.numMetrics = len(GPM_METRICS)
            get.sample1 = prev[0]
            get.sample2 = sample
            for k, metric in enumerate(GPM_METRICS):
                get.metrics[k].metricId = metric
            n.nvmlGpmMetricsGet(get)
            self._gpm_last[i] = {
                get.metrics[k].metricId: (
                    float(get.metrics[k].value) if get.metrics[k].nvmlReturn == n.NVML_SUCCESS else None
                )
                for k in range(len(GPM_METRICS))
            }
            return self._gpm_last[i]
        except n.NVMLError as e:
            log.warning("NVML GPM metrics failed on %s: %s", self.label(i), e)
            return None
        finally:
            self._gpm_spare[i] = prev[0]

    def process_memory(self, i: int) -> dict[int, int | None] | None:
        n = self._n
        if self._procs_fn is None:
            try:
                return self._procs(i, n.nvmlDeviceGetComputeRunningProcesses)
            except n.NVMLLibraryMismatchError:  # no _v3 symbol in this driver: the _v2 call, from now on
                self._procs_fn = n.nvmlDeviceGetComputeRunningProcesses_v2
            else:
                self._procs_fn = n.nvmlDeviceGetComputeRunningProcesses
        return self._procs(i, self._procs_fn)

    def _procs(self, i: int, fn: Callable[[Any], Any]) -> dict[int, int | None] | None:
        n = self._n
        try:
            procs = fn(self._units[i].handle)
        except n.NVMLError as e:
            if getattr(e, "value", None) == n.NVML_ERROR_GPU_IS_LOST:
                raise GpuLostError(f"{self.label(i)} is lost") from e
            return None
        # usedGpuMemory is None where the driver cannot attribute memory (e.g. in some containers): unknown, not 0
        return {int(p.pid): (int(p.usedGpuMemory) if p.usedGpuMemory is not None else None) for p in procs}


_shared: NvmlBackend | None = None
_failed: NvmlUnavailable | None = None  # why it could not open: not retried (no GPU stays no GPU)


def open_backend() -> NvmlBackend:
    """The real NVML, opened once per process and shared by detection and sampling; raises
    NvmlUnavailable with the reason when it cannot be used (tried once per process too)."""
    global _shared, _failed
    if _shared is None:
        if _failed is not None:
            raise _failed
        try:
            _shared = PynvmlBackend()
        except NvmlUnavailable as e:
            _failed = e
            raise
    return _shared
