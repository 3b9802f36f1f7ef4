"""The Prometheus exporter: a custom collector that only reads the latest snapshot (a scrape
never touches hardware). Base units, low cardinality; unknown figures are absent, never 0."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from bottleneckd.diagnosis.pipeline import Snapshot
from bottleneckd.model.protocol import Event
from bottleneckd.model.resources import PHASES, RESOURCES, STAGES, UNDETERMINED
from bottleneckd.outputs.rank_metrics import rank_families
from bottleneckd.outputs.throughput_metrics import throughput_families

log = logging.getLogger(__name__)

#: unit -> (metric-name suffix, multiplier to base unit)
SUFFIX = {
    "ratio": ("_ratio", 1.0),
    "B/s": ("_bytes_per_second", 1.0),
    "B": ("_bytes", 1.0),
    "W": ("_watts", 1.0),
    "J": ("_joules", 1.0),
    "MHz": ("_hertz", 1e6),
    "IO/s": ("_operations_per_second", 1.0),
    "1/s": ("_per_second", 1.0),
    "cores": ("_cores", 1.0),
    "count": ("", 1.0),
    "bool": ("", 1.0),
    "requests": ("_requests", 1.0),
    "FLOP/s": ("_flops", 1.0),
    "gen": ("", 1.0),
    "lanes": ("", 1.0),
}


def _name(metric: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in metric)


def exportable(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value >= 0


class SnapshotCollector(Collector):
    def __init__(
        self,
        latest: Callable[[], Snapshot | None],
        steps_total: Callable[[], int] = lambda: 0,
        events: Callable[[], list[Event]] = lambda: [],
        channel: Callable[[], dict[str, int]] | None = None,
    ) -> None:
        self._latest = latest
        self._steps_total = steps_total
        self._events = events
        self._channel = channel  # the receiver's counters (channel/link.py), when there is a receiver

    def collect(self) -> Iterator[Metric]:
        """Every family, without the values no series may hold: NaN, infinities and negatives
        (nothing exported here can be below zero; such a value came from a bad sender)."""
        for fam in self._families():
            fam.samples = [x for x in fam.samples if exportable(x.value)]
            yield fam

    def _families(self) -> Iterator[Metric]:
        snap = self._latest()
        if snap is None:
            return
        s = snap.sample
        util = GaugeMetricFamily(
            "bottleneckd_utilization_ratio",
            "Utilization of a resource as a fraction of its peak",
            labels=["resource", "device"],
        )
        peak_fams: dict[str, GaugeMetricFamily] = {}
        raw: dict[str, GaugeMetricFamily] = {}
        gpu_up = GaugeMetricFamily(
            "bottleneckd_gpu_up", "1 while the GPU answers NVML, 0 once it is lost", labels=["device"]
        )
        energy = CounterMetricFamily("bottleneckd_gpu_energy_joules", "GPU energy since driver load", labels=["device"])
        for r in s.readings:
            if r.value is None:
                continue
            if r.metric == "utilization":
                util.add_metric([r.resource, r.device], r.value)
            elif r.metric == "peak":
                suffix, mul = SUFFIX.get(r.unit, ("", 1.0))
                fam = peak_fams.setdefault(
                    suffix,
                    GaugeMetricFamily(
                        f"bottleneckd_peak{suffix}", f"Peak of a resource ({r.unit})", labels=["resource", "device"]
                    ),
                )
                fam.add_metric([r.resource, r.device], r.value * mul)
            elif r.metric == "up" and r.resource == "gpu_compute":
                gpu_up.add_metric([r.device], r.value)
            elif r.metric == "energy":
                energy.add_metric([r.device], r.value)  # a counter, not a gauge
            elif r.unit in SUFFIX:
                base, _, detail = r.metric.partition(":")
                suffix, mul = SUFFIX[r.unit]
                base_name = _name(base)
                name = f"bottleneckd_{r.resource}_{base_name}" + (
                    "" if base_name.endswith(suffix.lstrip("_")) else suffix
                )
                labels = ["device", "detail"] if detail else ["device"]
                fam = raw.get(name + str(len(labels)))
                if fam is None:
                    fam = raw[name + str(len(labels))] = GaugeMetricFamily(
                        name, f"{r.resource} {base} ({r.unit})", labels=labels
                    )
                fam.add_metric([r.device, detail] if detail else [r.device], r.value * mul)
        yield util
        yield from peak_fams.values()
        yield from raw.values()
        yield gpu_up
        yield energy
        v = snap.verdict
        active = GaugeMetricFamily(
            "bottleneckd_bottleneck_active", "1 for the active bottleneck, 0 for the others", labels=["resource"]
        )
        for res in RESOURCES + (UNDETERMINED,):
            active.add_metric([res], 1.0 if v.resource == res else 0.0)
        yield active
        stage = GaugeMetricFamily(
            "bottleneckd_bottleneck_stage",
            "1 for the stage of the step where the active bottleneck shows",
            labels=["stage"],
        )
        for st in STAGES:
            stage.add_metric([st], 1.0 if v.stage == st else 0.0)
        yield stage
        yield GaugeMetricFamily(
            "bottleneckd_bottleneck_confidence_ratio", "Confidence in the active bottleneck", value=v.confidence
        )
        yield GaugeMetricFamily(
            "bottleneckd_bottleneck_since_seconds", "Unix time since which the active bottleneck holds", value=v.since
        )
        if v.headroom is not None:
            yield GaugeMetricFamily(
                "bottleneckd_bottleneck_headroom_ratio",
                "Possible step speed-up if the bottleneck stopped limiting",
                value=v.headroom,
            )
        ph = snap.stats.phases
        if ph is not None and ph.steps:
            fam = GaugeMetricFamily(
                "bottleneckd_step_phase_seconds",
                "Mean seconds per step in each phase over the window",
                labels=["phase", "stage"],
            )
            for phase, secs in ph.phases.items():
                fam.add_metric([phase, PHASES.get(phase, "other")], secs / ph.steps)
            yield fam
            yield GaugeMetricFamily(
                "bottleneckd_step_seconds",
                "Mean wall-clock seconds per step over the window",
                value=ph.wall_seconds / ph.steps,
            )
        yield from rank_families(snap)
        yield from throughput_families(snap)
        yield CounterMetricFamily("bottleneckd_steps", "Training steps reported by the hook", value=self._steps_total())
        applied = GaugeMetricFamily(
            "bottleneckd_mitigation_applied_timestamp_seconds",
            "Unix time a mitigation was last applied through the torch hook (for dashboard annotations)",
            labels=["mitigation", "changes_semantics"],
        )
        last: dict[str, Any] = {}
        for e in self._events():  # protocol.Event objects
            if e.kind == "mitigation_applied":
                last[e.name] = e
        for name, e in last.items():
            applied.add_metric([name, "true" if e.changes_semantics else "false"], e.t)
        yield applied
        up = GaugeMetricFamily("bottleneckd_sampler_up", "1 if the sampler's last run succeeded", labels=["sampler"])
        dur = GaugeMetricFamily(
            "bottleneckd_sampler_duration_seconds", "Duration of the sampler's last run", labels=["sampler"]
        )
        for st in s.samplers:
            up.add_metric([st.name], 1.0 if st.up else 0.0)
            dur.add_metric([st.name], st.seconds)
        yield up
        yield dur
        if self._channel is not None:
            yield from channel_families(self._channel())


def channel_families(c: dict[str, int]) -> Iterator[Metric]:
    """The hook -> sidecar channel's counters: messages by outcome, and ranks dropped because the
    sidecar already kept as many as it will between two ticks (channel/ranks.py)."""
    msgs = CounterMetricFamily(
        "bottleneckd_channel_messages",
        "Messages from the torch hook by outcome (rejected: malformed or hostile; unknown_version: another protocol)",
        labels=["outcome"],
    )
    for outcome, key in (("accepted", "received"), ("rejected", "rejected"), ("unknown_version", "unknown_version")):
        msgs.add_metric([outcome], c.get(key, 0))
    yield msgs
    yield CounterMetricFamily(
        "bottleneckd_channel_ranks_dropped",
        "Ranks dropped with their pending steps because the sidecar already kept its maximum of ranks",
        value=c.get("ranks_dropped", 0),
    )
