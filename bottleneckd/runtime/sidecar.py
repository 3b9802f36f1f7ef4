"""The one assembly of a sidecar: detection, peaks, samplers, the pipeline, the channel receiver
and the sampling loop. Every entry point (the CLI commands, the watcher's in-process sidecar)
calls ``build_sidecar``."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bottleneckd.channel.link import PhaseReceiver
from bottleneckd.diagnosis.pipeline import Pipeline, Snapshot
from bottleneckd.hardware.detect.machine import Machine, detect_machine
from bottleneckd.hardware.nvml import NvmlBackend
from bottleneckd.model.code import StackCounts, merge_counts
from bottleneckd.model.protocol import Event
from bottleneckd.model.sample import RankPhases, StepPhases
from bottleneckd.outputs.energy import EnergyMeter, job_steps_of
from bottleneckd.peaks.catalog import Catalog, load_catalog
from bottleneckd.peaks.profile import Profile, load_profile
from bottleneckd.peaks.resolve import PeakTable, resolve_peaks
from bottleneckd.runtime.loop import SamplingLoop
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

SAMPLER_NAMES = (
    "gpu",
    "cpu_compute",
    "cpu_memory",
    "cpu_memory_bandwidth",
    "storage",
    "storage_network",
    "inter_node",
    "energy",
)


@dataclass
class Sidecar:
    machine: Machine
    peaks: PeakTable
    samplers: list[Sampler]
    unavailable: dict[str, str]
    pipeline: Pipeline
    receiver: PhaseReceiver  # listening on a socket, or (in-process) fed through ingest()
    loop: SamplingLoop = field(init=False)
    steps_total: int = 0
    #: step phases summed over the whole run (the window holds only the last few samples)
    run_totals: StepPhases = field(default_factory=lambda: StepPhases(0, 0.0, {}, examples=0))
    #: more sources of step phases (py-spy stacks in attach mode), used when the hook sends none
    phase_sources: list[Callable[[], StepPhases | None]] = field(default_factory=list)
    #: stack samples by the user's code (py-spy under run and attach, the process's own frames under watch())
    code_sources: list[Callable[[], StackCounts | None]] = field(default_factory=list)
    #: joules per step and per example (the exporter's energy counters)
    energy: EnergyMeter = field(default_factory=EnergyMeter)

    # what the exporter and the report read (outputs.metrics_server.MetricsSource)
    def latest(self) -> Snapshot | None:
        return self.pipeline.latest

    def steps(self) -> int:
        return self.steps_total

    def events(self) -> list[Event]:
        return self.receiver.events_since(0)[0]  # under the receiver's lock: the channel thread appends

    def close(self) -> None:
        self.receiver.close()


def build_samplers(
    machine: Machine,
    peaks: PeakTable,
    pid: int | None = None,
    paths: tuple[str, ...] = (".",),
    disabled: frozenset[str] = frozenset(),
    nvml: NvmlBackend | None | str = "auto",
    sys_root: str = "/sys",
    proc_root: str = "/proc",
) -> tuple[list[Sampler], dict[str, str]]:
    tree = ProcessTree(pid) if pid else None
    makers = {
        "gpu": lambda: GpuSampler(peaks, nvml, tree=tree, proc_root=proc_root),
        "cpu_compute": lambda: CpuComputeSampler(peaks, tree, proc_root),
        "cpu_memory": lambda: CpuMemorySampler(peaks, tree, proc_root),
        "cpu_memory_bandwidth": lambda: CpuMemoryBandwidthSampler(peaks, sys_root),
        "storage": lambda: StorageSampler(peaks, machine, paths, proc_root, tree),
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
        if ok or name in (
            "cpu_memory_bandwidth",
            "energy",
        ):  # unknown bandwidth or energy is still reported, with its reason
            out.append(s)
        if not ok:
            why[name] = reason
    return out, why


#: ``profile=DEFAULT_PROFILE``: the user's saved calibration profile, if there is one
DEFAULT_PROFILE: Any = object()


def build_sidecar(
    machine: Machine | None = None,
    catalog: Catalog | None = None,
    profile: Profile | None | Any = DEFAULT_PROFILE,
    interval: float = 1.0,
    pid: int | None = None,
    paths: tuple[str, ...] = (".",),
    disabled: frozenset[str] = frozenset(),
    listen: bool = True,
    socket_path: str | None = None,
    nvml: NvmlBackend | None | str = "auto",
    window: int = 5,
) -> Sidecar:
    """Detect (unless ``machine`` is given), resolve peaks, build the samplers, the pipeline, the
    receiver (bound to ``socket_path`` when ``listen``) and the loop that ties them together."""
    if machine is None:
        machine = detect_machine()
    if catalog is None:
        catalog = load_catalog()
    if profile is DEFAULT_PROFILE:
        profile = load_profile()
    peaks = resolve_peaks(machine, catalog, profile)
    samplers, why = build_samplers(machine, peaks, pid, paths, disabled, nvml)
    pipeline = Pipeline(peaks, window=window, machine=machine)
    receiver = PhaseReceiver(socket_path, listen=listen).start()
    side = Sidecar(machine, peaks, samplers, why, pipeline, receiver, energy=EnergyMeter(gpu_uuids=peaks.gpu_uuids()))

    def phases() -> tuple[StepPhases | None, tuple[RankPhases, ...]]:
        p, ranks = receiver.drain_ranks()
        if p is not None:
            side.steps_total += job_steps_of(p, ranks)  # the job's steps: one step on 8 ranks is one
        if p is None:  # hook phases win; stack samples stand in when there are none
            for src in side.phase_sources:
                p = p or src()
        if p is not None:
            t = side.run_totals
            side.run_totals = StepPhases(
                t.steps + p.steps,
                t.wall_seconds + p.wall_seconds,
                {k: t.phases.get(k, 0.0) + p.phases.get(k, 0.0) for k in {**t.phases, **p.phases}},
                # what the totals count (timed steps, or stack samples under attach)
                {"phase_source": p.facts["phase_source"]} if "phase_source" in p.facts else t.facts,
                examples=None if t.examples is None or p.examples is None else t.examples + p.examples,
            )
        return p, ranks

    def code() -> StackCounts | None:
        return merge_counts([src() for src in side.code_sources])

    side.loop = SamplingLoop(samplers, interval, {"pipeline": pipeline, "energy": side.energy}, phases, code)
    return side


def job_paths() -> tuple[str, ...]:
    return (os.getcwd(),)
