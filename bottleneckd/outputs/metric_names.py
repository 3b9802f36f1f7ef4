"""How a sampler's reading becomes a Prometheus series: its name, its unit (the metric family's
``unit=``, which gives the ``# UNIT`` line of the OpenMetrics exposition and the name's suffix),
and whether it is exported at all.

Names follow Prometheus's conventions (https://prometheus.io/docs/practices/naming/): base units,
a unit suffix said once (``read_chars_per_second`` in B/s is ``read_chars_bytes_per_second``, not
``read_chars_per_second_bytes_per_second``), counters end in ``_total``. Host traffic (disks,
NICs, InfiniBand ports, swap) is exported as the kernel's cumulative counters, as node_exporter
does, so that ``rate()`` works over any range; the per-second gauges the diagnosis computes from
the same counters are then left out. Families node_exporter already exports (the busy share of
every core, every virtual NIC) are exported only when asked (``serve --host-detail``).
"""

from __future__ import annotations

import re
from collections.abc import Collection

from bottleneckd.model.outside import OUTSIDE_METRIC
from bottleneckd.model.resources import Resource
from bottleneckd.model.sample import Reading

#: a reading's unit -> (the Prometheus unit its family carries, the factor to that base unit);
#: "" for a plain number. FLOP/s is spelled out: "flops" reads as a count as well as a rate.
PROMETHEUS_UNITS: dict[str, tuple[str, float]] = {
    "ratio": ("ratio", 1.0),
    "B/s": ("bytes_per_second", 1.0),
    "B": ("bytes", 1.0),
    "s": ("seconds", 1.0),
    "W": ("watts", 1.0),
    "J": ("joules", 1.0),
    "MHz": ("hertz", 1e6),
    "IO/s": ("operations_per_second", 1.0),
    "1/s": ("per_second", 1.0),
    "FLOP/s": ("floating_point_operations_per_second", 1.0),
    "cores": ("cores", 1.0),
    "requests": ("requests", 1.0),
    "count": ("", 1.0),
    "bool": ("", 1.0),
    "gen": ("", 1.0),
    "lanes": ("", 1.0),
}

#: per-second gauges left out of the exposition where the sampler gives the counter they come
#: from, (resource, rate metric) -> that counter (on the same device)
RATE_OF_COUNTER: dict[tuple[str, str], str] = {
    (Resource.STORAGE_BANDWIDTH, "throughput"): "read_bytes_total",
    (Resource.STORAGE_BANDWIDTH, "read_bytes_per_second"): "read_bytes_total",
    (Resource.STORAGE_BANDWIDTH, "operations_per_second"): "reads_completed_total",
    (Resource.STORAGE_BANDWIDTH, "read_operations_per_second"): "reads_completed_total",
    (Resource.STORAGE_BANDWIDTH, "busy"): "io_time_seconds_total",
    (Resource.INTER_NODE_INTERCONNECT, "tx_bytes_per_second"): "transmit_bytes_total",
    (Resource.INTER_NODE_INTERCONNECT, "rx_bytes_per_second"): "receive_bytes_total",
    (Resource.INTER_NODE_INTERCONNECT, "throughput"): "transmit_bytes_total",
    (Resource.CPU_MEMORY, "swap_in_bytes_per_second"): "swap_in_bytes_total",
    (Resource.CPU_MEMORY, "swap_out_bytes_per_second"): "swap_out_bytes_total",
}

#: the label of the part after ":" in a reading's metric (``throttle:hw_slowdown``), by the part before
DETAIL_LABELS = {"throttle": "reason", "process_bytes": "pid"}
_CORE = re.compile(r"cpu\d+")


def is_counter(r: Reading) -> bool:
    """True when the reading is a running total (its metric, before any ``:detail``, ends in ``_total``)."""
    return r.metric.partition(":")[0].endswith("_total")


def family_name(r: Reading) -> tuple[str, str]:
    """(name without the unit suffix, Prometheus unit) of a raw reading's family. The unit and
    ``_total`` are left for prometheus_client to append (it adds ``_<unit>`` when the name does
    not already end with it), so a metric named after its unit does not say it twice."""
    unit = PROMETHEUS_UNITS[r.unit][0]
    stem = "".join(c if c.isalnum() else "_" for c in r.metric.partition(":")[0]).removesuffix("_total")
    for suffix in (unit, "bytes_per_second", "per_second"):
        if suffix and (stem == suffix or stem.endswith("_" + suffix)):
            stem = stem[: -len(suffix)].rstrip("_")
            break
    if r.unit == "B/s" and stem.endswith("_bytes"):  # tx_bytes in B/s: tx_bytes_per_second, not tx_bytes_bytes_...
        stem = stem.removesuffix("_bytes")
    return "_".join(x for x in ("bottleneckd", r.resource, stem) if x), unit


def host_detail(r: Reading, virtual_nics: Collection[str]) -> bool:
    """A reading of a family node_exporter already exports: one core's busy share, a virtual NIC;
    or a process outside the job, by name and pid (a series per process, and other users' process
    names: the evidence says them; /metrics only with host detail on)."""
    if r.resource == Resource.CPU_COMPUTE and (_CORE.fullmatch(r.device) or r.metric == OUTSIDE_METRIC):
        return True
    return r.resource == Resource.INTER_NODE_INTERCONNECT and r.device in virtual_nics


def superseded(r: Reading, counters: Collection[tuple[str, str, str]]) -> bool:
    """A per-second gauge whose counter (resource, device, metric) is exported instead."""
    counter = RATE_OF_COUNTER.get((r.resource, r.metric))
    return counter is not None and (r.resource, r.device, counter) in counters
