"""What the CLI commands share: the context object, options and the sidecar they build."""

from __future__ import annotations

import json
from typing import Any

import click

from bottleneckd.model.errors import InputError


class Context:
    def __init__(self, debug: bool, catalog: str | None, profile: str | None) -> None:
        self.debug = debug
        self.catalog_path = catalog
        self.profile_path = profile

    def catalog(self):  # noqa: ANN201
        from bottleneckd.peaks.catalog import load_catalog

        return load_catalog(self.catalog_path)

    def profile(self):  # noqa: ANN201
        from bottleneckd.peaks.profile import load_profile

        return load_profile(self.profile_path)

    def peak_table(self, machine=None):  # noqa: ANN001, ANN201
        from bottleneckd.hardware.detect import detect_machine
        from bottleneckd.peaks.resolve import resolve_peaks

        catalog, profile = self.catalog(), self.profile()
        machine = machine or detect_machine()
        return machine, resolve_peaks(machine, catalog, profile)


def emit_json(doc: Any) -> None:
    click.echo(json.dumps(doc, indent=1))


def sidecar_options(f):  # noqa: ANN001, ANN201
    from bottleneckd.runtime.sidecar import SAMPLER_NAMES

    f = click.option("--interval", type=click.FloatRange(0.1, 60), default=1.0, show_default=True, help="Seconds between samples (0.1 = 10 Hz).")(f)
    f = click.option("--pid", type=int, default=None, help="The training job's main process (its tree is sampled too).")(f)
    f = click.option("--disable", "disabled", multiple=True, type=click.Choice(SAMPLER_NAMES), help="Turn a sampler off (repeatable).")(f)
    f = click.option("--duration", type=click.FloatRange(0, None, min_open=True), default=None, help="Stop after this many seconds.")(f)
    f = click.option("--socket", "socket_path", default=None, help="Channel the torch hook sends step phases to.")(f)
    return f


def build(obj: Context, interval: float, pid: int | None, disabled: tuple[str, ...], socket_path: str | None):  # noqa: ANN202
    from bottleneckd.runtime.sidecar import build_sidecar, job_paths
    from bottleneckd.hardware.detect import detect_machine

    if pid is not None:
        import psutil

        if not psutil.pid_exists(pid):
            raise InputError(f"--pid {pid}: no such process; pass the PID of the running training job")
    catalog, profile = obj.catalog(), obj.profile()
    return build_sidecar(detect_machine(), catalog, profile, interval, pid, job_paths(), frozenset(disabled), socket_path=socket_path)


def event_copier(side, writer):  # noqa: ANN001, ANN202
    """A sink that copies the hook's events (mitigations applied) into the trace."""
    seen = [0]

    def copy(_sample):  # noqa: ANN001, ANN202
        if side.receiver is None:
            return
        events, seen[0] = side.receiver.events_since(seen[0])
        for e in events:
            writer.event(e)

    return copy


def retarget(side, pid: int) -> None:  # noqa: ANN001
    """Point the CPU samplers at the job's process tree."""
    from bottleneckd.samplers.cpu_compute import CpuComputeSampler
    from bottleneckd.samplers.cpu_memory import CpuMemorySampler
    from bottleneckd.samplers.process_tree import ProcessTree

    tree = ProcessTree(pid)
    side.loop.samplers = [CpuComputeSampler(side.peaks, tree) if s.name == "cpu_compute" else
                          CpuMemorySampler(side.peaks, tree) if s.name == "cpu_memory" else s for s in side.loop.samplers]
    for s in side.loop.samplers:  # the job's own I/O (storage)
        if hasattr(s, "follow"):
            s.follow(tree)


