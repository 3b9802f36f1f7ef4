"""The sampler in a background thread of the training process, used when no sidecar listens.
Only daemon-side modules run here; they do not touch torch."""

from __future__ import annotations

from typing import Any

from bottleneckd.peaks.catalog import load_catalog
from bottleneckd.outputs.channel import PhaseReceiver
from bottleneckd.runtime.sidecar import build_samplers
from bottleneckd.hardware.detect import detect_machine
from bottleneckd.runtime.loop import SamplingLoop
from bottleneckd.peaks.resolve import resolve_peaks
from bottleneckd.diagnosis.pipeline import Pipeline
from bottleneckd.peaks.profile import load_profile
from bottleneckd.outputs.report import build_report


class LocalSidecar:
    def __init__(self, pid: int, interval: float = 1.0) -> None:
        machine = detect_machine()
        peaks = resolve_peaks(machine, load_catalog(), load_profile())
        samplers, _ = build_samplers(machine, peaks, pid=pid)
        self.pipeline = Pipeline(peaks, machine=machine)
        self.receiver = PhaseReceiver(listen=False)
        self.loop = SamplingLoop(samplers, interval, [self.pipeline], self.receiver.drain)
        self.loop.start()

    def report(self) -> dict[str, Any] | None:
        self.loop.tick()  # include the phases just flushed
        return build_report(self.pipeline, self.pipeline.latest.verdict if self.pipeline.latest else None)

    def stop(self) -> None:
        self.loop.stop()
