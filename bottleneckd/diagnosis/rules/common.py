"""Shared by the rule families: thresholds (sourced in FINDINGS.md) and formatting helpers.

Thresholds: input-bound at >=5% (moderate) and >=20% (high) of step time waiting for data
(TensorFlow's input-pipeline analyzer); SM activity >=0.8 for an efficient GPU job (DCGM); DRAM
activity ~0.8 is the practical maximum; communication >10% of step time (PyTorch profiler);
memory over 90% of capacity.
"""

from __future__ import annotations

from bottleneckd.model.units import fmt_seconds, fmt_value
from bottleneckd.diagnosis.window import WindowStats

INPUT_MODERATE = 0.05
INPUT_HIGH = 0.20
COMM_HIGH = 0.10
SM_EFFICIENT = 0.80
DRAM_PRACTICAL_MAX = 0.80
CAPACITY_HIGH = 0.90
BUSY = 0.60
NEAR_PEAK_FLOOR = 0.04  # achieved rate below 4% of both peaks: overhead-bound, not roofline-bound


def pct(x: float | None) -> str:
    return "unknown" if x is None else f"{x * 100:.0f}%"


def headroom(share: float | None) -> float | None:
    if share is None or share >= 0.99:
        return None
    return 1.0 / (1.0 - share)


def storage_evidence(w: WindowStats) -> tuple[float, list[str], str | None]:
    """How busy the busiest local disk is, and whether by operations or bytes."""
    best = w.busiest("storage_bandwidth")
    if best is None:
        busy = w.get("storage_bandwidth", None, "busy")
        return (busy or 0.0) * 0.8, ([f"disk busy {pct(busy)} of the time (no peak known)"] if busy else []), None
    dev, util = best
    ops = w.get("storage_bandwidth", dev, "operation_utilization")
    byts = w.get("storage_bandwidth", dev, "byte_utilization")
    ev = [f"{dev}: {fmt_value(w.get('storage_bandwidth', dev, 'operations_per_second'), 'IO/s')} = {pct(ops)} of its 4 KiB-read IOPS peak, "
          f"{fmt_value(w.get('storage_bandwidth', dev, 'throughput'), 'B/s')} = {pct(byts)} of its byte bandwidth"]
    kind = "operations" if (ops or 0) > (byts or 0) else "bytes"
    return util, ev, kind


def fmt_s(x: float | None) -> str:
    return fmt_seconds(x)


def compute_share(w: WindowStats) -> float | None:
    """forward+backward+optimizer+gpu_wait as a share of step time; None without phases."""
    p = w.phases
    if p is None:
        return None
    return sum(p.share(k) or 0.0 for k in ("forward", "backward", "optimizer", "gpu_wait"))


def runs_on_gpu(w: WindowStats) -> bool:
    """The job trains on a GPU this host samples (the device fact, else any GPU reading)."""
    facts = w.phases.facts if w.phases else {}
    return facts.get("device", "cuda" if w.devices("gpu_compute") else "cpu").startswith("cuda") and bool(w.devices("gpu_compute"))
