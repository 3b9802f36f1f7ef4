"""The window's throughput (samples/s, tokens/s, MFU: ``model/throughput.py``) for the snapshot:
the step phases of the last samples, summed over the ranks this sidecar sees, against one device's
peak on the job's path (its first GPU, or the CPU)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bottleneckd.diagnosis.rules.common import runs_on_gpu
from bottleneckd.diagnosis.rules.gpu_compute import job_gpus
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.throughput import Peak, Throughput, measure
from bottleneckd.peaks.mfu import mfu_peak
from bottleneckd.peaks.resolve import PeakTable

if TYPE_CHECKING:
    from bottleneckd.diagnosis.pipeline import Snapshot


def window_throughput(w: WindowStats, peaks: PeakTable) -> Throughput | None:
    """None without step phases (no hook: nothing to count)."""
    ph = w.phases
    if ph is None or not ph.steps:
        return None
    gpus = job_gpus(w, peaks)[0] if runs_on_gpu(w) else []
    ranks = sum(len(rs) for _, rs in w.topology) or 1
    return measure(
        steps=ph.steps,
        wall_seconds=ph.wall_seconds,
        examples=ph.examples,
        facts=ph.facts,
        peak=mfu_peak(peaks, ph.facts, gpus[0] if gpus else None),
        ranks=ranks,
    )


def run_throughput_json(
    steps: int, examples: int | None, wall_seconds: float, start: float | None, snap: Snapshot | None
) -> dict[str, Any]:
    """The end report's ``throughput``: what ``bottleneckd compare`` reads of the run (steps,
    examples and their wall time summed over ranks, the first sample's start) with the run's
    samples/s, tokens/s and MFU, against the peak of the last window's (the job's facts at the end)."""
    w = snap.throughput if snap is not None else None
    rate = measure(
        steps=steps,
        wall_seconds=wall_seconds,
        examples=examples,
        facts=snap.facts if snap is not None else {},
        peak=Peak(value=w.peak_flops, path=w.peak_path, why=w.peak_why) if w is not None else None,
        ranks=(sum(len(rs) for _, rs in snap.stats.topology) or 1) if snap is not None else 1,
    )
    return {**rate.to_json(), "steps": steps, "examples": examples, "wall_seconds": wall_seconds, "start": start}
