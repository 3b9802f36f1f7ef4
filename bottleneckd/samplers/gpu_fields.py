"""The readings of one GPU unit from what NVML (and a dcgm-exporter) answered: its activity, DRAM
bandwidth and links. Pure functions of their inputs; the GPU sampler does the reading.

Activity comes from GPM where the GPU has it (Hopper and later), else from a dcgm-exporter's
profiling fields where one runs on the node (samplers/dcgm.py), else it is unknown with the
reason; NVML's busy-time fraction (``busy_fraction``) and memory-busy fraction
(``memory_busy_fraction``, the share of time device memory was read or written) are reported
under their own names: both are time fractions, not how much of the SMs or of the bandwidth work.
GPM's DRAM figure, and DCGM's DRAM_ACTIVE, are fractions of the *theoretical* peak (nvml.h), so
bytes/s are that times the catalog figure, not a calibrated one.
"""

from __future__ import annotations

from collections.abc import Callable

from bottleneckd.hardware import nvml as nv
from bottleneckd.model.resources import Resource
from bottleneckd.model.sample import Reading, utilization
from bottleneckd.peaks.resolve import PeakTable

#: GPM metric -> the reported metric (a fraction of time the SMs or pipes work)
GPM_ACTIVITY = (
    ("sm_activity", nv.GPM_SM_UTIL),
    ("sm_occupancy", nv.GPM_SM_OCCUPANCY),
    ("tensor_activity", nv.GPM_ANY_TENSOR_UTIL),
    ("fp32_activity", nv.GPM_FP32_UTIL),
    ("fp16_activity", nv.GPM_FP16_UTIL),
    ("fp64_activity", nv.GPM_FP64_UTIL),
    ("integer_activity", nv.GPM_INTEGER_UTIL),
)


def gpm_reader(gpm: dict[int, float | None] | None) -> Callable[[int], float | None]:
    """A GPM metric by id from this tick's sample: None when there is no sample or no such metric."""
    return lambda metric: None if gpm is None else gpm.get(metric)


def activity(
    gpm: dict[int, float | None] | None, dcgm: dict[str, float] | None, no_gpm: str, no_dcgm: str
) -> tuple[dict[str, float | None], str, str]:
    """(metric -> fraction, incl. ``dram_activity``; where it came from; why unknown)."""
    if gpm is not None:
        g = gpm_reader(gpm)
        out = {m: (None if (v := g(gid)) is None else v / 100) for m, gid in GPM_ACTIVITY}
        dram = g(nv.GPM_DRAM_BW_UTIL)
        out["dram_activity"] = None if dram is None else dram / 100
        return out, "GPM", "not reported by GPM on this GPU"
    if dcgm:
        out = {m: dcgm.get(m) for m, _ in GPM_ACTIVITY}
        out["dram_activity"] = dcgm.get("dram_activity")
        return out, "dcgm-exporter", "not in the dcgm-exporter's page (its counters file leaves it out)"
    return {}, "", f"{no_gpm}; {no_dcgm}"


def compute_readings(
    dev: str, util: tuple[float, float] | None, act: dict[str, float | None], source: str, why: str
) -> list[Reading]:
    out = [
        Reading(
            Resource.GPU_COMPUTE,
            dev,
            "busy_fraction",
            None if util is None else util[0] / 100,
            "ratio",
            "" if util else "NVML utilization not supported",
        ),
        Reading(
            Resource.GPU_MEMORY_BANDWIDTH,
            dev,
            "memory_busy_fraction",
            None if util is None else util[1] / 100,
            "ratio",
            "" if util else "NVML utilization not supported",
        ),
    ]
    for metric, _ in GPM_ACTIVITY:
        v = act.get(metric)
        out.append(Reading(Resource.GPU_COMPUTE, dev, metric, v, "ratio", "" if v is not None else why))
    sm = act.get("sm_activity")
    out.append(
        Reading(
            Resource.GPU_COMPUTE,
            dev,
            "utilization",
            sm,
            "ratio",
            "" if sm is not None else f"SM activity unknown ({why}); busy_fraction is a time fraction, not load",
        )
    )
    if source:
        out.append(Reading(Resource.GPU_COMPUTE, dev, f"activity_source:{source}", 1.0, "bool"))
    return out


def dram_readings(dev: str, dram: float | None, peaks: PeakTable, why: str) -> list[Reading]:
    """DRAM bandwidth from a fraction of the theoretical peak (GPM, DCGM), else unknown with the reason."""
    bw = peaks.get(Resource.GPU_MEMORY_BANDWIDTH, dev)
    theoretical = None if bw is None else (bw.catalog_value if bw.origin == "calibrated" else bw.value)
    if dram is None:
        return utilization(
            Resource.GPU_MEMORY_BANDWIDTH, dev, None, bw.value if bw else None, "B/s", f"DRAM bandwidth unknown ({why})"
        )
    return [
        Reading(Resource.GPU_MEMORY_BANDWIDTH, dev, "utilization", dram, "ratio"),
        Reading(
            Resource.GPU_MEMORY_BANDWIDTH,
            dev,
            "throughput",
            None if theoretical is None else dram * theoretical,
            "B/s",
            "" if theoretical is not None else "no theoretical DRAM bandwidth for this GPU in the catalog",
        ),
        Reading(Resource.GPU_MEMORY_BANDWIDTH, dev, "peak", theoretical, "B/s", "" if theoretical else "unknown"),
    ]


def pcie_readings(dev: str, pcie: tuple[float, float] | None, peak: float | None) -> list[Reading]:
    out = utilization(
        Resource.CPU_GPU_INTERCONNECT,
        dev,
        None if pcie is None else max(pcie),
        peak,
        "B/s",
        "PCIe throughput not supported",
    )
    if pcie is not None:
        out += [
            Reading(Resource.CPU_GPU_INTERCONNECT, dev, "tx_bytes_per_second", pcie[0], "B/s"),
            Reading(Resource.CPU_GPU_INTERCONNECT, dev, "rx_bytes_per_second", pcie[1], "B/s"),
        ]
    return out


def link_readings(dev: str, gen: int | None, width: int | None) -> list[Reading]:
    no_link = "not reported for this device (a MIG slice, or not supported)"
    return [
        Reading(
            Resource.CPU_GPU_INTERCONNECT,
            dev,
            "link_generation",
            None if gen is None else float(gen),
            "gen",
            "" if gen is not None else no_link,
        ),
        Reading(
            Resource.CPU_GPU_INTERCONNECT,
            dev,
            "link_width",
            None if width is None else float(width),
            "lanes",
            "" if width is not None else no_link,
        ),
    ]


def nvlink_readings(
    dev: str, tx: float | None, rx: float | None, peaks: PeakTable, why: str = "first interval"
) -> list[Reading]:
    """NVLink bytes/s against the peak in the peak's own terms: the catalog's figure counts both
    directions together (transmit + receive over it), a calibrated peer copy or a PCIe peer path
    one direction (the busier direction over it)."""
    p = peaks.get(Resource.INTER_GPU_INTERCONNECT, dev)
    peak = None if p is None else p.value
    if tx is None or rx is None:
        return utilization(Resource.INTER_GPU_INTERCONNECT, dev, None, peak, "B/s", why)
    both = p is not None and p.direction == "both"
    out = utilization(Resource.INTER_GPU_INTERCONNECT, dev, tx + rx if both else max(tx, rx), peak, "B/s")
    out += [
        Reading(Resource.INTER_GPU_INTERCONNECT, dev, "tx_bytes_per_second", tx, "B/s"),
        Reading(Resource.INTER_GPU_INTERCONNECT, dev, "rx_bytes_per_second", rx, "B/s"),
    ]
    return out


def power_readings(
    dev: str,
    power: float | None,
    energy: float | None,
    clocks: tuple[int, int] | None,
    maxc: tuple[int, int] | None,
    reasons: int | None,
) -> list[Reading]:
    out = [Reading(Resource.GPU_COMPUTE, dev, "power", power, "W", "" if power is not None else "not supported")]
    if energy is not None:
        out.append(Reading(Resource.GPU_COMPUTE, dev, "energy", energy, "J"))
    if clocks is not None:
        out.append(Reading(Resource.GPU_COMPUTE, dev, "sm_clock", float(clocks[0]), "MHz"))
        if maxc:
            out.append(Reading(Resource.GPU_COMPUTE, dev, "sm_clock_ratio", clocks[0] / maxc[0], "ratio"))
    if reasons is not None:
        for bit, label in nv.CLOCK_EVENT_REASONS.items():
            out.append(Reading(Resource.GPU_COMPUTE, dev, f"throttle:{label}", 1.0 if reasons & bit else 0.0, "bool"))
    return out
