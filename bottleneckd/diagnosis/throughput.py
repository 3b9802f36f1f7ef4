"""The window's throughput (samples/s, tokens/s, MFU: ``model/throughput.py``) for the snapshot:
the step phases of the last samples, summed over the ranks this sidecar sees, against one device's
peak on the job's path (its first GPU, or the CPU). Before any step phase the peak is still given
(from the job's facts): a framework callback asks for it at its first log."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bottleneckd.diagnosis.job_gpus import runs_on_gpu, window_job_gpus
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.throughput import Peak, Throughput, measure
from bottleneckd.peaks.mfu import mfu_peak
from bottleneckd.peaks.resolve import PeakTable

if TYPE_CHECKING:
    from bottleneckd.diagnosis.pipeline import Diagnosis


def window_throughput(w: WindowStats, peaks: PeakTable, facts: Mapping[str, Any]) -> Throughput:
    """``facts``: the job's (the pipeline's: the latest report's over the machine's)."""
    ph = w.phases
    facts = {**facts, **(ph.facts if ph is not None else {})}
    gpus = window_job_gpus(w, peaks).devices if runs_on_gpu(w, peaks) else ()
    ranks = sum(len(rs) for _, rs in w.topology) or 1
    return measure(
        steps=ph.steps if ph is not None else 0,
        wall_seconds=ph.wall_seconds if ph is not None else 0.0,
        examples=ph.examples if ph is not None else None,
        facts=facts,
        peak=mfu_peak(peaks, facts, gpus[0] if gpus else None),
        ranks=ranks,
    )


def run_throughput_json(
    steps: int, examples: int | None, wall_seconds: float | None, start: float | None, snap: Diagnosis | None
) -> dict[str, Any]:
    """The end report's ``throughput``: what ``bottleneckd compare`` reads of the run (steps,
    examples and their wall time summed over ranks, the first sample's start) with the run's
    samples/s, tokens/s and MFU, against the peak of the last window's (the job's facts at the end)."""
    w = snap.throughput if snap is not None else None
    rate = measure(
        steps=steps,
        wall_seconds=wall_seconds or 0.0,
        examples=examples,
        facts=snap.facts if snap is not None else {},
        peak=Peak(value=w.peak_flops, path=w.peak_path, why=w.peak_why) if w is not None else None,
        ranks=(sum(len(rs) for _, rs in snap.stats.topology) or 1) if snap is not None else 1,
    )
    return {**rate.to_json(), "steps": steps, "examples": examples, "wall_seconds": wall_seconds, "start": start}
