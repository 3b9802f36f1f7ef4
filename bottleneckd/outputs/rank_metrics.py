"""Per-rank metric families for the exporter's collector: the job across ranks.

Cardinality is bounded by the job's shape, never by time: every series is labelled by the rank's
identity only (``train_job``, ``run``, ``restart``, ``rank``, ``host``, ``gpu``) and, for phases,
the phase name from a fixed list. No step or sequence number is ever a label. ``train_job``, not
``job``: Prometheus's own ``job`` label names the scrape job, and a target's ``job`` would be
renamed ``exported_job``. Across nodes, Prometheus joins the sidecars' series by these labels
(recording rules in deploy/prometheus/rules.yml): one sidecar sees only its node's ranks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from bottleneckd.diagnosis.straggler import COMPUTE_PHASES, WAIT_PHASES
from bottleneckd.model.identity import RankIdentity

LABELS = ["train_job", "run", "restart", "rank", "host", "gpu"]


def rank_labels(i: RankIdentity) -> list[str]:
    return [i.job, i.run, str(i.restart), str(i.rank), i.node, i.gpu]


def rank_families(snap: Any) -> Iterator[Metric]:
    """From the latest snapshot: each rank's step time, phases, compute and collective wait in
    the last interval, and the straggler the diagnosis named (if any)."""
    ranks = [r for r in getattr(snap.sample, "ranks", ()) if r.phases.steps > 0]
    if ranks:
        step = GaugeMetricFamily(
            "bottleneckd_rank_step_seconds",
            "Mean wall-clock seconds per step of one rank in the last interval",
            labels=LABELS,
        )
        phase = GaugeMetricFamily(
            "bottleneckd_rank_phase_seconds",
            "Mean seconds per step of one rank in each phase",
            labels=LABELS + ["phase"],
        )
        comp = GaugeMetricFamily(
            "bottleneckd_rank_compute_seconds",
            "Mean forward+backward seconds per step of one rank (excludes the communication it waited for)",
            labels=LABELS,
        )
        wait = GaugeMetricFamily(
            "bottleneckd_rank_communication_wait_seconds",
            "Mean seconds per step one rank waited in collectives (exposed communication)",
            labels=LABELS,
        )
        index = GaugeMetricFamily(
            "bottleneckd_rank_index",
            "The rank's number as a value (to return a rank from a recording rule)",
            labels=LABELS,
        )
        for r in ranks:
            lv, p = rank_labels(r.identity), r.phases
            step.add_metric(lv, p.wall_seconds / p.steps)
            for name, secs in sorted(p.phases.items()):
                phase.add_metric(lv + [name], secs / p.steps)
            comp.add_metric(lv, sum(p.phases.get(k, 0.0) for k in COMPUTE_PHASES) / p.steps)
            wait.add_metric(lv, sum(p.phases.get(k, 0.0) for k in WAIT_PHASES) / p.steps)
            index.add_metric(lv, float(r.identity.rank))
        yield from (step, phase, comp, wait, index)
    s = getattr(snap.verdict, "straggler", None)
    if s:
        fam = GaugeMetricFamily(
            "bottleneckd_straggler_step_time_lost_seconds",
            "Seconds per step the job loses to the straggler this sidecar named (its compute minus the median rank's)",
            labels=["kind", "rank", "host", "gpu"],
        )
        fam.add_metric(
            [s["kind"], "" if s["rank"] is None else str(s["rank"]), s["node"], s["gpu"]], s["step_time_lost_seconds"]
        )
        yield fam
