"""The one assembly of a live sidecar: detection, peaks, samplers (with the job's process tree
when it is known), the channel receiver, the run (runtime/run.py) and the sampling loop that
feeds it. Every live entry point (the CLI commands, the watcher's in-process sidecar) calls
``build_sidecar``; a job started later is followed through ``Sidecar.follow``, which builds the
samplers again through the same ``build_samplers``."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from bottleneckd.channel.link import PhaseReceiver
from bottleneckd.diagnosis.thresholds import OUTSIDE_BUSY, OUTSIDE_PROCESS_SHOWN, WINDOW_SAMPLES
from bottleneckd.hardware.detect.machine import Machine, detect_machine
from bottleneckd.hardware.nvml import NvmlBackend
from bottleneckd.model.code import StackCounts, merge_counts
from bottleneckd.model.sample import RankPhases, StepPhases
from bottleneckd.peaks.auto_profile import load_auto, merged
from bottleneckd.peaks.catalog import Catalog, load_catalog
from bottleneckd.peaks.profile import Profile, load_profile
from bottleneckd.peaks.resolve import PeakTable, resolve_peaks
from bottleneckd.runtime.loop import SamplingLoop
from bottleneckd.runtime.run import Run
from bottleneckd.runtime.sinks import Outputs, Wired
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
    """The samplers to run (``pid``'s process tree followed when given), and why each left out or
    unavailable one is (sampler name -> reason). An unavailable memory-bandwidth or energy sampler
    is kept: it reports its figures as unknown, with the reason."""
    tree = ProcessTree(pid) if pid else None
    makers: dict[str, Callable[[], Sampler]] = {
        "gpu": lambda: GpuSampler(peaks, nvml, tree=tree, proc_root=proc_root),
        "cpu_compute": lambda: CpuComputeSampler(peaks, tree, proc_root, outside=(OUTSIDE_BUSY, OUTSIDE_PROCESS_SHOWN)),
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


@dataclass(frozen=True)
class SamplerSpec:
    """What the samplers are built from (kept, so that following a job builds them the same way)."""

    machine: Machine
    peaks: PeakTable
    paths: tuple[str, ...] = (".",)
    disabled: frozenset[str] = frozenset()
    nvml: NvmlBackend | None | str = "auto"
    sys_root: str = "/sys"
    proc_root: str = "/proc"

    def build(self, pid: int | None) -> tuple[list[Sampler], dict[str, str]]:
        """The samplers and the reasons for those left out, as ``build_samplers`` makes them."""
        return build_samplers(
            self.machine, self.peaks, pid, self.paths, self.disabled, self.nvml, self.sys_root, self.proc_root
        )


@dataclass
class Sidecar:
    spec: SamplerSpec
    unavailable: dict[str, str]
    run: Run
    receiver: PhaseReceiver  # listening on a socket, or (in-process) fed through ingest()
    loop: SamplingLoop
    listening: bool
    #: more sources of step phases (py-spy stacks in attach mode), used when the hook sends none
    phase_sources: list[Callable[[], StepPhases | None]] = field(default_factory=list)
    #: stack samples by the user's code (py-spy under run and attach, the process's own frames under watch())
    code_sources: list[Callable[[], StackCounts | None]] = field(default_factory=list)
    #: every rank's step phases from stack samples (attach), used with ``phase_sources``' phases
    rank_sources: list[Callable[[], tuple[RankPhases, ...]]] = field(default_factory=list)
    wired: list[Wired] = field(default_factory=list)

    @property
    def machine(self) -> Machine:
        return self.spec.machine

    @property
    def peaks(self) -> PeakTable:
        return self.spec.peaks

    def follow(self, pid: int) -> None:
        """Sample the job's process tree (``run`` learns its pid once the job has started): the
        samplers are built again, through the one factory, before the loop's next tick."""
        self.loop.samplers, self.unavailable = self.spec.build(pid)

    def wire(self, outputs: Outputs) -> Wired:
        """The sinks ``outputs`` asks for; a listening sidecar keeps the report file the hook reads."""
        if self.listening and not any(w.report_file for w in self.wired):
            outputs = replace(outputs, report_file=True)
        wired = self.run.wire(outputs, self.receiver, self.loop.stop)
        self.wired.append(wired)
        return wired

    def close(self) -> None:
        """The outputs closed (trace, report file) and the receiver with its socket."""
        for w in self.wired:
            w.close()
        self.receiver.close()


#: ``profile=DEFAULT_PROFILE``: the user's saved calibration profile, if there is one, with the CPU
#: peaks ``run`` measured on this machine where it lacks them (peaks/auto_profile.py)
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
    window: int = WINDOW_SAMPLES,
) -> Sidecar:
    """Detect (unless ``machine`` is given), resolve peaks, build the samplers, the run, the
    receiver (bound to ``socket_path`` when ``listen``) and the loop that ties them together."""
    if machine is None:
        machine = detect_machine()
    if catalog is None:
        catalog = load_catalog()
    if profile is DEFAULT_PROFILE:
        profile = merged(load_profile(), load_auto())  # with the CPU peaks run measured here, if any
    spec = SamplerSpec(machine, resolve_peaks(machine, catalog, profile), paths, disabled, nvml)
    samplers, why = spec.build(pid)
    receiver = PhaseReceiver(socket_path, listen=listen).start()
    run = Run(
        spec.peaks,
        machine,
        window=window,
        interval=interval,
        events=lambda: receiver.events_since(0)[0],
        channel=receiver.counters,
    )
    sources: list[Callable[[], StepPhases | None]] = []
    rank_sources: list[Callable[[], tuple[RankPhases, ...]]] = []

    def phases() -> tuple[StepPhases | None, tuple[RankPhases, ...]]:
        """The hook's step phases since the last tick (stack samples stand in when there are none,
        every rank's with them)."""
        p, ranks = receiver.drain_ranks()
        stacked = [src() for src in rank_sources]  # drained every tick: a rank's samples belong to it
        for src in sources if p is None else ():
            p = p or src()
        if p is not None and p.sampled and not ranks:
            ranks = next((r for r in stacked if r), ())
        return p, ranks

    codes: list[Callable[[], StackCounts | None]] = []

    def code() -> StackCounts | None:
        return merge_counts([src() for src in codes])

    loop = SamplingLoop(samplers, interval, run, phases, code)
    return Sidecar(spec, why, run, receiver, loop, listen, sources, code_sources=codes, rank_sources=rank_sources)


def job_paths() -> tuple[str, ...]:
    """The paths whose storage the job reads: its working directory (the sidecar's own)."""
    return (os.getcwd(),)
