"""The window's throughput (samples/s, tokens/s, MFU: ``model/throughput.py``) for the snapshot:
the step phases of the last samples, summed over the ranks this sidecar sees, against one device's
peak on the job's path (its first GPU, or the CPU)."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import runs_on_gpu
from bottleneckd.diagnosis.rules.gpu_compute import job_gpus
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.throughput import Throughput, measure
from bottleneckd.peaks.mfu import mfu_peak
from bottleneckd.peaks.resolve import PeakTable


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
