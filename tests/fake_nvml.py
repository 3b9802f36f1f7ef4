"""The one fake of the NVML boundary (bottleneckd.nvml.NvmlBackend), for machines without a GPU.

Each FakeGpu holds what the hardware would report; ``None`` in a field means NVML answers
NotSupported for it. ``lost_after`` makes the GPU fall off the bus after that many samples.
``mig`` makes the unit a MIG slice ((compute, memory) fractions of its GPU, labelled
``gpuN.migK``); ``inaccessible`` lists GPUs NVML counts but refuses (label -> reason).

The real backend under pynvml's own API and errors is tested with ``tests/fake_pynvml.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bottleneckd.hardware import nvml as nv


@dataclass
class FakeGpu:
    name: str = "NVIDIA H100 80GB HBM3"
    memory_total: int = 80 * 10**9
    memory_used: int = 10 * 10**9
    util: tuple[float, float] | None = (97.0, 40.0)
    pcie_max: tuple[int | None, int | None] = (5, 16)
    pcie_current: tuple[int | None, int | None] = (5, 16)
    pcie_bytes: tuple[float, float] | None = (1e9, 2e9)
    nvlink_links: int = 18
    nvlink_kib_per_call: tuple[int, int] = (10**6, 2 * 10**6)  # cumulative counters grow by this much per call
    gpm: dict[int, float] | None = field(
        default_factory=lambda: {
            nv.GPM_SM_UTIL: 85.0,
            nv.GPM_SM_OCCUPANCY: 50.0,
            nv.GPM_ANY_TENSOR_UTIL: 70.0,
            nv.GPM_DRAM_BW_UTIL: 30.0,
            nv.GPM_PCIE_TX_PER_SEC: 100.0,
            nv.GPM_PCIE_RX_PER_SEC: 200.0,
            nv.GPM_NVLINK_TOTAL_RX_PER_SEC: 0.0,
            nv.GPM_NVLINK_TOTAL_TX_PER_SEC: 0.0,
        }
    )
    power: float | None = 650.0
    energy: float | None = 1.0e6
    clocks: tuple[int, int] | None = (1500, 2619)
    max_clocks: tuple[int, int] | None = (1980, 2619)
    reasons: int | None = 0x4
    processes: dict[int, int] | None = field(default_factory=lambda: {4242: 9 * 10**9})
    lost_after: int | None = None
    uuid: str | None = None  # default GPU-fake-<index>
    label: str | None = None  # default gpu<index>
    mig: tuple[float, float] | None = None
    mig_instance: tuple[str, int] | None = None  # (physical GPU's UUID, GPU instance id) of a MIG slice
    _calls: int = 0
    _nvl: tuple[int, int] = (0, 0)


class FakeNvml:
    def __init__(self, gpus: list[FakeGpu], inaccessible: dict[str, str] | None = None) -> None:
        self.gpus = gpus
        self._gpm_first: set[int] = set()
        self._inaccessible = dict(inaccessible or {})

    def label(self, i: int) -> str:
        return self.gpus[i].label or f"gpu{i}"

    def inaccessible(self) -> dict[str, str]:
        return dict(self._inaccessible)

    def mig_fractions(self, i: int):
        return self.gpus[i].mig

    def mig_instance(self, i: int):
        return self.gpus[i].mig_instance

    def _g(self, i: int) -> FakeGpu:
        g = self.gpus[i]
        if g.lost_after is not None and g._calls > g.lost_after:  # lost during sample lost_after + 1
            raise nv.GpuLostError(f"GPU {i} is lost")
        return g

    def device_count(self) -> int:
        return len(self.gpus)

    def name(self, i: int) -> str:
        return self.gpus[i].name

    def uuid(self, i: int) -> str | None:
        return self.gpus[i].uuid or f"GPU-fake-{i}"

    def memory(self, i: int):
        g = self._g(i)
        return (g.memory_total, g.memory_used)

    def utilization(self, i: int):
        self.gpus[i]._calls += 1  # one utilization read per sample: counts the samples
        return self._g(i).util

    def pcie_max_link(self, i: int):
        return self.gpus[i].pcie_max

    def pcie_current_link(self, i: int):
        return self._g(i).pcie_current

    def pcie_throughput(self, i: int):
        return self._g(i).pcie_bytes

    def nvlink_active_links(self, i: int):
        return self.gpus[i].nvlink_links

    def nvlink_data_bytes(self, i: int):
        g = self._g(i)
        if not g.nvlink_links:
            return None
        g._nvl = (g._nvl[0] + g.nvlink_kib_per_call[0], g._nvl[1] + g.nvlink_kib_per_call[1])
        return (g._nvl[0] * 1024, g._nvl[1] * 1024)

    def power_watts(self, i: int):
        return self._g(i).power

    def energy_joules(self, i: int):
        return self._g(i).energy

    def clocks_mhz(self, i: int):
        return self._g(i).clocks

    def max_clocks_mhz(self, i: int):
        return self._g(i).max_clocks

    def clock_event_reasons(self, i: int):
        return self._g(i).reasons

    def gpm_supported(self, i: int) -> bool:
        return self._g(i).gpm is not None

    def gpm_metrics(self, i: int):
        g = self._g(i)
        if g.gpm is None:
            return None
        if i not in self._gpm_first:  # like NVML: the first sample only opens the interval
            self._gpm_first.add(i)
            return None
        return dict(g.gpm)

    def process_memory(self, i: int):
        return self._g(i).processes
