"""The Prometheus exporter: a custom collector that only reads the latest snapshot (a scrape
never touches hardware). Base units, low cardinality; unknown figures are absent, never 0.

Every family carries its unit (``unit=``: the OpenMetrics ``# UNIT`` line), names follow
outputs/metric_names.py, and a real scrape passes ``promtool check metrics`` with nothing to say
(tests/test_exposition.py). Joins: device series are labelled ``device="gpu0"``; the
``bottleneckd_gpu_info`` series maps a device to DCGM's labels (``gpu``, ``UUID``, ``Hostname``),
and per-rank series carry the rank's GPU as ``UUID`` (outputs/rank_metrics.py), so a join with
either is one ``* on (...) group_left (...)``.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from bottleneckd.advice.stage import Snapshot
from bottleneckd.model.protocol import Event
from bottleneckd.model.resources import RESOURCES, STAGES, UNDETERMINED, Resource, stage_of
from bottleneckd.outputs.metric_names import (
    DETAIL_LABELS,
    PROMETHEUS_UNITS,
    family_name,
    host_detail,
    is_counter,
    superseded,
)
from bottleneckd.outputs.rank_metrics import rank_families
from bottleneckd.outputs.throughput_metrics import throughput_families

log = logging.getLogger(__name__)

#: recommendations exported in ``bottleneckd_recommendation_info`` (the report has them all)
TOP_RECOMMENDATIONS = 3
#: resource an energy reading is booked to -> its energy domain (as outputs/energy.py names them)
ENERGY_DOMAINS = {Resource.GPU_COMPUTE: "gpu", Resource.CPU_COMPUTE: "cpu_package", Resource.CPU_MEMORY: "dram"}


def exportable(value: float) -> bool:
    """True when ``value`` can be a sample: a finite number, not negative."""
    return isinstance(value, (int, float)) and math.isfinite(value) and value >= 0


def build_info() -> Metric:
    """``bottleneckd_build_info``: this package's version and Python's."""
    import platform

    from bottleneckd import __version__

    fam = InfoMetricFamily("bottleneckd_build", "The bottleneckd version serving these metrics")
    fam.add_metric([], {"version": __version__, "python_version": platform.python_version()})
    return fam


class SnapshotCollector(Collector):
    def __init__(
        self,
        latest: Callable[[], Snapshot | None],
        steps_total: Callable[[], int] = lambda: 0,
        events: Callable[[], list[Event]] = lambda: [],
        channel: Callable[[], dict[str, int]] | None = None,
        *,
        machine: Any = None,
        host_detail: bool = False,
    ) -> None:
        """``machine``: the detected machine (GPU identities for bottleneckd_gpu_info, which NICs
        are virtual); ``host_detail``: also export the families node_exporter already has."""
        self._latest = latest
        self._steps_total = steps_total
        self._events = events
        self._channel = channel  # the receiver's counters (channel/link.py), when there is a receiver
        self._machine = machine
        self._host_detail = host_detail
        nics = getattr(machine, "nics", ())
        self._virtual_nics = frozenset(n.name for n in nics if getattr(n, "virtual", False))

    def collect(self) -> Iterator[Metric]:
        """Every family, without the values no series may hold: NaN, infinities and negatives
        (nothing exported here can be below zero; such a value came from a bad sender)."""
        yield build_info()
        for fam in self._families():
            fam.samples = [x for x in fam.samples if exportable(x.value)]
            yield fam

    def _families(self) -> Iterator[Metric]:
        yield from self._gpu_info()
        snap = self._latest()
        if snap is None:
            return
        yield from self._readings(snap)
        yield from verdict_families(snap)
        yield from step_families(snap)
        yield from rank_families(snap)
        yield from throughput_families(snap)
        yield CounterMetricFamily(
            "bottleneckd_steps",
            "Training steps reported by the hook: steps of the job, not of each rank (a step on 8 ranks is one step)",
            value=self._steps_total(),
        )
        yield applied_family(self._events())
        yield from recommendation_family(snap)
        up = GaugeMetricFamily("bottleneckd_sampler_up", "1 if the sampler's last run succeeded", labels=["sampler"])
        dur = GaugeMetricFamily(
            "bottleneckd_sampler_duration_seconds",
            "Duration of the sampler's last run",
            labels=["sampler"],
            unit="seconds",
        )
        for st in snap.sample.samplers:
            up.add_metric([st.name], 1.0 if st.up else 0.0)
            dur.add_metric([st.name], st.seconds)
        yield up
        yield dur
        if self._channel is not None:
            yield from channel_families(self._channel())

    def _gpu_info(self) -> Iterator[Metric]:
        gpus = getattr(self._machine, "gpus", ())
        if not gpus:
            return
        fam = InfoMetricFamily(
            "bottleneckd_gpu",
            "Each GPU (or MIG slice) by its device label here and DCGM's labels (gpu index, UUID, Hostname), for joins",
            labels=["device", "gpu", "UUID", "model_name", "Hostname"],
        )
        # DCGM's Hostname: the node
        host = os.environ.get("NODE_NAME") or getattr(self._machine, "hostname", None) or ""
        for g in gpus:
            m = re.match(r"gpu(\d+)", g.device)  # a MIG slice "gpu0.mig1" is on GPU 0 (DCGM's gpu label)
            fam.add_metric([g.device, m.group(1) if m else str(g.index), g.uuid or "", g.name, host], {})
        yield fam

    def _readings(self, snap: Snapshot) -> Iterator[Metric]:
        readings = [
            r
            for r in snap.sample.readings
            if r.value is not None
            and r.unit in PROMETHEUS_UNITS
            and (self._host_detail or not host_detail(r, self._virtual_nics))
        ]
        counters = {(r.resource, r.device, r.metric) for r in readings if is_counter(r)}
        util = GaugeMetricFamily(
            "bottleneckd_utilization_ratio",
            "Utilization of a resource as a fraction of its peak",
            labels=["resource", "device"],
            unit="ratio",
        )
        gpu_up = GaugeMetricFamily(
            "bottleneckd_gpu_up", "1 while the GPU answers NVML, 0 once it is lost", labels=["device"]
        )
        energy = CounterMetricFamily(
            "bottleneckd_energy",
            "Energy counter of a domain and device (NVML: since the driver loaded; RAPL: since the sidecar started)",
            labels=["domain", "device"],
            unit="joules",
        )
        fams: dict[tuple[str, str, int], GaugeMetricFamily | CounterMetricFamily] = {}
        for r in readings:
            assert r.value is not None
            base, _, detail = r.metric.partition(":")
            unit, mul = PROMETHEUS_UNITS[r.unit]
            if r.metric == "utilization":
                util.add_metric([r.resource, r.device], r.value)
            elif r.metric == "up" and r.resource == Resource.GPU_COMPUTE:
                gpu_up.add_metric([r.device], r.value)
            elif r.metric == "energy" and r.unit == "J" and r.resource in ENERGY_DOMAINS:
                energy.add_metric([ENERGY_DOMAINS[r.resource], r.device], r.value)
            elif r.metric == "peak":
                fam = fams.get(("bottleneckd_peak", unit, 2))
                if fam is None:
                    fam = fams["bottleneckd_peak", unit, 2] = GaugeMetricFamily(
                        "bottleneckd_peak", f"Peak of a resource ({r.unit})", labels=["resource", "device"], unit=unit
                    )
                fam.add_metric([r.resource, r.device], r.value * mul)
            elif not superseded(r, counters):
                name, unit = family_name(r)
                labels = ["device", DETAIL_LABELS.get(base, "detail")] if detail else ["device"]
                fam = fams.get((name, unit, len(labels)))
                if fam is None:
                    kind = CounterMetricFamily if is_counter(r) else GaugeMetricFamily
                    fam = fams[name, unit, len(labels)] = kind(
                        name, f"{r.resource} {base} ({r.unit})", labels=labels, unit=unit
                    )
                fam.add_metric([r.device, detail] if detail else [r.device], r.value * mul)
        yield util
        yield from fams.values()
        yield gpu_up
        yield energy


def verdict_families(snap: Snapshot) -> Iterator[Metric]:
    """The verdict of ``snap``: 1 for its resource and stage (0 for the others), its confidence,
    since when it holds, and its headroom when known."""
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
        "bottleneckd_bottleneck_confidence_ratio",
        "Confidence in the active bottleneck",
        value=v.confidence,
        unit="ratio",
    )
    yield GaugeMetricFamily(
        "bottleneckd_bottleneck_since_timestamp_seconds",
        "Unix time since which the active bottleneck holds (time() minus it: how long)",
        value=v.since,
        unit="seconds",
    )
    if v.headroom is not None:
        yield GaugeMetricFamily(
            "bottleneckd_bottleneck_headroom_ratio",
            "Possible step speed-up if the bottleneck stopped limiting",
            value=v.headroom,
            unit="ratio",
        )


def step_families(snap: Snapshot) -> Iterator[Metric]:
    """The job's step in the last sampling interval: the same definition as each rank's
    ``bottleneckd_rank_step_seconds`` (the job's is their mean, weighted by steps), so the two
    agree; absent in an interval in which no step ended."""
    ph = snap.sample.phases
    if ph is None or not ph.steps:
        return
    fam = GaugeMetricFamily(
        "bottleneckd_step_phase_seconds",
        "Mean seconds per step in each phase, over the last sampling interval (mean over ranks)",
        labels=["phase", "stage"],
        unit="seconds",
    )
    for phase, secs in ph.phases.items():
        fam.add_metric([phase, stage_of(phase)], secs / ph.steps)
    yield fam
    yield GaugeMetricFamily(
        "bottleneckd_step_seconds",
        "Mean wall-clock seconds per step over the last sampling interval (mean over ranks)",
        value=ph.wall_seconds / ph.steps,
        unit="seconds",
    )


def applied_family(events: list[Event]) -> Metric:
    """``bottleneckd_mitigation_applied_timestamp_seconds``: for each mitigation in ``events``,
    the time it was last applied."""
    applied = GaugeMetricFamily(
        "bottleneckd_mitigation_applied_timestamp_seconds",
        "Unix time a mitigation was last applied through the torch hook (for dashboard annotations)",
        labels=["mitigation", "changes_semantics"],
        unit="seconds",
    )
    last: dict[str, Any] = {}
    for e in events:  # protocol.Event objects
        if e.kind == "mitigation_applied":
            last[e.name] = e
    for name, e in last.items():
        applied.add_metric([name, "true" if e.changes_semantics else "false"], e.t)
    return applied


def recommendation_family(snap: Snapshot) -> Iterator[Metric]:
    """The first few ranked recommendations, as labels (position 1 is the best)."""
    recs = tuple(getattr(snap, "recommendations", ()) or ())[:TOP_RECOMMENDATIONS]
    fam = InfoMetricFamily(
        "bottleneckd_recommendation",
        f"The {TOP_RECOMMENDATIONS} best-ranked mitigations for the verdict (`bottleneckd mitigations` for each)",
        labels=["position", "mitigation", "addresses", "section", "changes_semantics"],
    )
    for k, r in enumerate(recs, 1):
        m = r.mitigation
        fam.add_metric([str(k), m.id, r.resource, m.section, "true" if m.changes_semantics else "false"], {})
    yield fam


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
