"""Assembles the sidecar: detection, peaks, samplers, the loop and the pipeline."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from bottleneckd.peaks.catalog import Catalog
from bottleneckd.outputs.channel import PhaseReceiver
from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.runtime.loop import SamplingLoop
from bottleneckd.hardware.nvml import NvmlBackend
from bottleneckd.peaks.resolve import PeakTable, resolve_peaks
from bottleneckd.diagnosis.pipeline import Pipeline
from bottleneckd.peaks.profile import Profile
from bottleneckd.model.sample import StepPhases
from bottleneckd.outputs.energy import EnergyMeter
from bottleneckd.samplers.base import Sampler
from bottleneckd.samplers.cpu_compute import CpuComputeSampler
from bottleneckd.samplers.cpu_memory import CpuMemorySampler
from bottleneckd.samplers.cpu_memory_bandwidth import CpuMemoryBandwidthSampler
from bottleneckd.samplers.energy import RaplSampler
from bottleneckd.samplers.gpu import GpuSampler
from bottleneckd.samplers.inter_node import InterNodeSampler
from bottleneckd.samplers.process_tree import ProcessTree
from bottleneckd.samplers.storage import StorageSampler
from bottleneckd.samplers.storage_network import StorageNetworkSampler

SAMPLER_NAMES = ("gpu", "cpu_compute", "cpu_memory", "cpu_memory_bandwidth", "storage", "storage_network", "inter_node", "energy")


@dataclass
class Sidecar:
    machine: Machine
    peaks: PeakTable
    samplers: list[Sampler]
    unavailable: dict[str, str]
    pipeline: Pipeline
    receiver: PhaseReceiver | None
    loop: SamplingLoop | None = None
    steps_total: int = 0
    #: more sources of step phases (py-spy stacks in attach mode), used when the hook sends none
    phase_sources: list[Callable[[], StepPhases | None]] = field(default_factory=list)
    #: joules per step and per example (the exporter's energy counters)
    energy: EnergyMeter = field(default_factory=EnergyMeter)


def build_samplers(machine: Machine, peaks: PeakTable, pid: int | None = None, paths: tuple[str, ...] = (".",),
                   disabled: frozenset[str] = frozenset(), nvml: NvmlBackend | None | str = "auto",
                   sys_root: str = "/sys", proc_root: str = "/proc") -> tuple[list[Sampler], dict[str, str]]:
    tree = ProcessTree(pid) if pid else None
    makers = {
        "gpu": lambda: GpuSampler(peaks, nvml),
        "cpu_compute": lambda: CpuComputeSampler(peaks, tree, proc_root),
        "cpu_memory": lambda: CpuMemorySampler(peaks, tree, proc_root),
        "cpu_memory_bandwidth": lambda: CpuMemoryBandwidthSampler(peaks, sys_root),
        "storage": lambda: StorageSampler(peaks, machine, paths, proc_root),
        "storage_network": lambda: StorageNetworkSampler(peaks, machine, proc_root),
        "inter_node": lambda: InterNodeSampler(peaks, machine, sys_root),
        "energy": lambda: RaplSampler(sys_root),
    }
    out: list[Sampler] = []
    why: dict[str, str] = {}
    for name, make in makers.items():
        if name in disabled:
            why[name] = "disabled by flag"
            continue
        s = make()
        ok, reason = s.available()
        if ok or name in ("cpu_memory_bandwidth", "energy"):  # unknown bandwidth or energy is still reported, with its reason
            out.append(s)
        if not ok:
            why[name] = reason
    return out, why


def build_sidecar(machine: Machine, catalog: Catalog, profile: Profile | None, interval: float = 1.0, pid: int | None = None,
                  paths: tuple[str, ...] = (".",), disabled: frozenset[str] = frozenset(), listen: bool = True,
                  socket_path: str | None = None, nvml: NvmlBackend | None | str = "auto", window: int = 5) -> Sidecar:
    peaks = resolve_peaks(machine, catalog, profile)
    samplers, why = build_samplers(machine, peaks, pid, paths, disabled, nvml)
    pipeline = Pipeline(peaks, window=window)
    receiver = PhaseReceiver(socket_path).start() if listen else None
    side = Sidecar(machine, peaks, samplers, why, pipeline, receiver)

    def phases() -> StepPhases | None:
        p = receiver.drain() if receiver is not None else None
        if p is not None:
            side.steps_total += p.steps
        if p is None:  # hook phases win; stack samples stand in when there are none
            for src in side.phase_sources:
                p = p or src()
        return p

    side.loop = SamplingLoop(samplers, interval, [pipeline, side.energy], phases)
    return side


def job_paths() -> tuple[str, ...]:
    return (os.getcwd(),)
