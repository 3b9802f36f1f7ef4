"""A fake of nvidia-ml-py's ``pynvml`` module, for testing the real backend (PynvmlBackend) on CPU.

It has pynvml's API shape and raises pynvml's own exceptions (``NVMLError(code)`` resolves to the
same subclasses, ``NVMLLibraryMismatchError`` is the same class), with the behaviours that matter
taken from pynvml.py and nvml.h:
- a symbol the driver lacks raises ``NVMLError_FunctionNotFound`` (as ``_nvmlGetFunctionPointer``
  does), and through an unversioned wrapper (``@throwOnVersionMismatch``, e.g.
  ``nvmlDeviceGetComputeRunningProcesses`` -> ``_v3``) ``NVMLLibraryMismatchError``, which is
  not an NVMLError;
- handles are opaque; a MIG device handle answers utilisation with NOT_SUPPORTED;
- GPM: a sample holds the counters at the time of ``nvmlGpmSampleGet``/``nvmlGpmMigSampleGet``;
  ``nvmlGpmMetricsGet`` fills each metric's value and nvmlReturn;
- call latency: ``FakePynvml(..., latency={"nvmlDeviceGetPcieThroughput": 0.02})`` makes each call of
  that symbol block for that long (nvml.h documents the 20 ms window of the PCIe throughput call),
  outside the GIL as a ctypes call is;
- field values: NVLink throughput counters per link; the PCIe byte counters
  (NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES) only where ``Dev.pcie_counter_type`` says the driver keeps
  them (their valueType), else NOT_SUPPORTED in that field's nvmlReturn.

Constants (NVML_*) and structure types come from the real pynvml, so a renamed constant fails here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml as real

E = real.NVMLError


@dataclass
class Dev:
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-11111111-2222-3333-4444-555555555555"
    memory: tuple[int, int] = (80 * 2**30, 10 * 2**30)
    handle_error: int | None = None  # nvmlDeviceGetHandleByIndex fails with this code
    lost: bool = False  # every call answers GPU_IS_LOST
    util: tuple[int, int] | None = (97, 40)
    gpm: dict[int, float] | None = field(default_factory=lambda: {2: 85.0, 3: 50.0, 5: 70.0, 10: 30.0, 12: 10.0})
    nvlink_states: tuple[int, ...] = (1, 1)
    nvlink_lost: bool = False  # the NVLink state query answers GPU_IS_LOST
    mig: list[Dev] | None = None  # MIG devices (MIG mode on)
    slice_count: int = 0  # gpuInstanceSliceCount of a MIG device
    ci_slice_count: int | None = None  # computeInstanceSliceCount (None: the whole GPU instance)
    gi_id: int = 0
    procs: list[int] = field(default_factory=list)
    pcie_counter_type: int | None = None  # valueType of the PCIe byte counters; None: the driver lacks them
    pcie_bytes_per_read: tuple[int, int] = (10**9, 2 * 10**9)  # each read finds the counters grown by this
    _pcie: list[int] = field(default_factory=lambda: [0, 0])


@dataclass(frozen=True)
class Handle:
    dev: Dev
    parent: Dev | None = None


class FakePynvml:
    """``FakePynvml(devs, missing={"nvmlDeviceGetComputeRunningProcesses_v3"})``."""

    def __init__(
        self,
        devs: list[Dev],
        missing: frozenset[str] | set[str] = frozenset(),
        init_error: int | None = None,
        latency: dict[str, float] | None = None,
    ) -> None:
        self.devs, self.missing, self.init_error = devs, set(missing), init_error
        self.latency = dict(latency or {})
        self.calls: list[str] = []
        self.gpm_samples: list[tuple[str, int | None]] = []  # (device uuid, gpu instance) per sample taken

    def __getattr__(self, name: str) -> Any:  # constants, error classes, structures: pynvml's own
        return getattr(real, name)

    # -- helpers ----------------------------------------------------------------------------
    def _fn(self, symbol: str) -> None:
        self.calls.append(symbol)
        if self.latency.get(symbol):
            time.sleep(self.latency[symbol])
        if symbol in self.missing:
            raise E(real.NVML_ERROR_FUNCTION_NOT_FOUND)

    def _dev(self, h: Handle) -> Dev:
        if h.dev.lost or (h.parent is not None and h.parent.lost):
            raise E(real.NVML_ERROR_GPU_IS_LOST)
        return h.dev

    # -- init and handles -------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self._fn("nvmlInitWithFlags")
        if self.init_error is not None:
            raise E(self.init_error)

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        self._fn("nvmlDeviceGetCount_v2")
        return len(self.devs)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> Handle:
        self._fn("nvmlDeviceGetHandleByIndex_v2")
        d = self.devs[i]
        if d.handle_error is not None:
            raise E(d.handle_error)
        return Handle(d)

    def nvmlDeviceGetMigMode(self, h: Handle) -> list[int]:
        self._fn("nvmlDeviceGetMigMode")
        d = self._dev(h)
        if d.mig is None:
            raise E(real.NVML_ERROR_NOT_SUPPORTED)
        return [real.NVML_DEVICE_MIG_ENABLE, real.NVML_DEVICE_MIG_ENABLE]

    def nvmlDeviceGetMaxMigDeviceCount(self, h: Handle) -> int:
        self._fn("nvmlDeviceGetMaxMigDeviceCount")
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: Handle, k: int) -> Handle:
        self._fn("nvmlDeviceGetMigDeviceHandleByIndex")
        migs = self._dev(h).mig or []
        if k >= len(migs):
            raise E(real.NVML_ERROR_NOT_FOUND)
        return Handle(migs[k], h.dev)

    def nvmlDeviceGetAttributes(self, h: Handle) -> Any:
        self._fn("nvmlDeviceGetAttributes_v2")
        if h.parent is None:
            raise E(real.NVML_ERROR_NOT_SUPPORTED)  # nvml.h: MIG device handles only
        ci = h.dev.slice_count if h.dev.ci_slice_count is None else h.dev.ci_slice_count
        return SimpleNamespace(
            gpuInstanceSliceCount=h.dev.slice_count,
            computeInstanceSliceCount=ci,
            multiprocessorCount=ci * 16,
            memorySizeMB=h.dev.memory[0] // 1048576,
        )

    def nvmlDeviceGetGpuInstanceId(self, h: Handle) -> int:
        self._fn("nvmlDeviceGetGpuInstanceId")
        return h.dev.gi_id

    # -- fields -----------------------------------------------------------------------------
    def nvmlDeviceGetName(self, h: Handle) -> str:
        self._fn("nvmlDeviceGetName")
        return self._dev(h).name

    def nvmlDeviceGetUUID(self, h: Handle) -> str:
        self._fn("nvmlDeviceGetUUID")
        return self._dev(h).uuid

    def nvmlDeviceGetMemoryInfo(self, h: Handle, version: Any = None) -> Any:
        self._fn("nvmlDeviceGetMemoryInfo_v2" if version else "nvmlDeviceGetMemoryInfo")
        d = self._dev(h)
        return SimpleNamespace(total=d.memory[0], used=d.memory[1], free=d.memory[0] - d.memory[1])

    def nvmlDeviceGetUtilizationRates(self, h: Handle) -> Any:
        self._fn("nvmlDeviceGetUtilizationRates")
        d = self._dev(h)
        if h.parent is not None or d.util is None:
            raise E(real.NVML_ERROR_NOT_SUPPORTED)
        return SimpleNamespace(gpu=d.util[0], memory=d.util[1])

    def _unsupported(self, symbol: str, h: Handle) -> Any:
        self._fn(symbol)
        self._dev(h)
        raise E(real.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: Handle) -> int:
        self._fn("nvmlDeviceGetMaxPcieLinkGeneration")
        self._dev(h)
        return 5

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: Handle) -> int:
        self._fn("nvmlDeviceGetMaxPcieLinkWidth")
        self._dev(h)
        return 16

    nvmlDeviceGetCurrPcieLinkGeneration = nvmlDeviceGetMaxPcieLinkGeneration
    nvmlDeviceGetCurrPcieLinkWidth = nvmlDeviceGetMaxPcieLinkWidth

    def nvmlDeviceGetPcieThroughput(self, h: Handle, counter: int) -> int:
        self._fn("nvmlDeviceGetPcieThroughput")
        self._dev(h)
        return 1000

    def nvmlDeviceGetNvLinkState(self, h: Handle, link: int) -> int:
        self._fn("nvmlDeviceGetNvLinkState")
        d = self._dev(h)
        if d.nvlink_lost:
            raise E(real.NVML_ERROR_GPU_IS_LOST)
        if link >= len(d.nvlink_states):
            raise E(real.NVML_ERROR_INVALID_ARGUMENT)
        return d.nvlink_states[link]

    def nvmlDeviceGetFieldValues(self, h: Handle, ids: list[Any]) -> list[Any]:
        self._fn("nvmlDeviceGetFieldValues")
        d = self._dev(h)
        out = []
        for fid in ids:
            if isinstance(fid, tuple):  # (field, link): NVLink throughput
                out.append(
                    SimpleNamespace(
                        nvmlReturn=real.NVML_SUCCESS,
                        valueType=real.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG,
                        value=SimpleNamespace(ullVal=1000),
                    )
                )
                continue
            k = {real.NVML_FI_DEV_PCIE_COUNT_TX_BYTES: 0, real.NVML_FI_DEV_PCIE_COUNT_RX_BYTES: 1}.get(fid)
            if k is None or d.pcie_counter_type is None:
                out.append(SimpleNamespace(nvmlReturn=real.NVML_ERROR_NOT_SUPPORTED, valueType=0, value=None))
                continue
            d._pcie[k] += d.pcie_bytes_per_read[k]
            v = d._pcie[k] % 2**32 if d.pcie_counter_type == real.NVML_VALUE_TYPE_UNSIGNED_INT else d._pcie[k]
            out.append(
                SimpleNamespace(
                    nvmlReturn=real.NVML_SUCCESS,
                    valueType=d.pcie_counter_type,
                    value=SimpleNamespace(ullVal=v, uiVal=v % 2**32),
                )
            )
        return out

    def nvmlDeviceGetPowerUsage(self, h: Handle) -> int:
        self._fn("nvmlDeviceGetPowerUsage")
        self._dev(h)
        return 650_000

    def nvmlDeviceGetTotalEnergyConsumption(self, h: Handle) -> int:
        self._fn("nvmlDeviceGetTotalEnergyConsumption")
        self._dev(h)
        return 10**9

    def nvmlDeviceGetClockInfo(self, h: Handle, kind: int) -> int:
        self._fn("nvmlDeviceGetClockInfo")
        self._dev(h)
        return 1500

    def nvmlDeviceGetMaxClockInfo(self, h: Handle, kind: int) -> int:
        self._fn("nvmlDeviceGetMaxClockInfo")
        self._dev(h)
        return 1980

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: Handle) -> int:
        self._fn("nvmlDeviceGetCurrentClocksEventReasons")  # R535 and later
        self._dev(h)
        return 0x4

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: Handle) -> int:
        self._fn("nvmlDeviceGetCurrentClocksThrottleReasons")
        self._dev(h)
        return 0x4

    # -- processes (pynvml: the unversioned call is @throwOnVersionMismatch around _v3) -------
    def _procs(self, symbol: str, h: Handle) -> list[Any]:
        self._fn(symbol)
        d = self._dev(h)
        return [SimpleNamespace(pid=p, usedGpuMemory=2**30) for p in d.procs]

    def nvmlDeviceGetComputeRunningProcesses_v3(self, h: Handle) -> list[Any]:
        return self._procs("nvmlDeviceGetComputeRunningProcesses_v3", h)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, h: Handle) -> list[Any]:
        return self._procs("nvmlDeviceGetComputeRunningProcesses_v2", h)

    def nvmlDeviceGetComputeRunningProcesses(self, h: Handle) -> list[Any]:
        try:
            return self.nvmlDeviceGetComputeRunningProcesses_v3(h)
        except real.NVMLError_FunctionNotFound:
            raise real.NVMLLibraryMismatchError(
                "Unversioned function called and the pyNVML version does not match the NVML lib version."
            ) from None

    # -- GPM --------------------------------------------------------------------------------
    def nvmlGpmQueryDeviceSupport(self, h: Handle) -> Any:
        self._fn("nvmlGpmQueryDeviceSupport")
        d = self._dev(h)
        return SimpleNamespace(isSupportedDevice=int(d.gpm is not None or bool(d.mig)))

    def nvmlGpmSampleAlloc(self) -> Any:
        self._fn("nvmlGpmSampleAlloc")
        return SimpleNamespace(dev=None)

    def nvmlGpmSampleFree(self, s: Any) -> None:
        pass

    def nvmlGpmSampleGet(self, h: Handle, s: Any) -> Any:
        self._fn("nvmlGpmSampleGet")
        s.dev = self._dev(h)
        self.gpm_samples.append((s.dev.uuid, None))
        return s

    def nvmlGpmMigSampleGet(self, h: Handle, gi: int, s: Any) -> Any:
        self._fn("nvmlGpmMigSampleGet")
        parent = self._dev(h)
        s.dev = next(m for m in parent.mig or [] if m.gi_id == gi)
        self.gpm_samples.append((parent.uuid, gi))
        return s

    def c_nvmlGpmMetricsGet_t(self) -> Any:
        return SimpleNamespace(
            metrics=[SimpleNamespace(metricId=0, value=0.0, nvmlReturn=0) for _ in range(real.NVML_GPM_METRIC_MAX)]
        )

    def nvmlGpmMetricsGet(self, get: Any) -> Any:
        self._fn("nvmlGpmMetricsGet")
        values = get.sample2.dev.gpm or {}
        for k in range(get.numMetrics):
            m = get.metrics[k]
            if m.metricId in values:
                m.value, m.nvmlReturn = values[m.metricId], real.NVML_SUCCESS
            else:
                m.value, m.nvmlReturn = 0.0, real.NVML_ERROR_NOT_SUPPORTED
        return get
