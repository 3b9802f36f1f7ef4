"""Per-rank metric families for the exporter's collector: the job across ranks.

Cardinality is bounded by the job's shape, never by time: every series is labelled by the rank's
identity only (``train_job``, ``run``, ``restart``, ``rank``, ``host``, ``UUID``) and, for phases,
the phase name from a fixed list. No step or sequence number is ever a label. ``train_job``, not
``job``: Prometheus's own ``job`` label names the scrape job, and a target's ``job`` would be
renamed ``exported_job``. The rank's GPU is ``UUID``, DCGM's label for the same thing (DCGM's
``gpu`` is the GPU's index), so a rank's series join DCGM's and ``bottleneckd_gpu_info`` with
``on (UUID)``. ``bottleneckd_job_info`` adds what a join with kube-state-metrics needs (``pod``,
``namespace``). Across nodes, Prometheus joins the sidecars' series by these labels (recording
rules in deploy/prometheus/rules.yml): one sidecar sees only its node's ranks.

Every rank figure is over the last sampling interval, as ``bottleneckd_step_seconds`` is (the
job's figure is the ranks' mean, weighted by their steps).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric

from bottleneckd.diagnosis.straggler import COMPUTE_PHASES, WAIT_PHASES
from bottleneckd.model.identity import RankIdentity

LABELS = ["train_job", "run", "restart", "rank", "host", "UUID"]


def rank_labels(i: RankIdentity) -> list[str]:
    """The values of ``LABELS`` for one rank, in that order."""
    return [i.job, i.run, str(i.restart), str(i.rank), i.node, i.gpu]


def rank_families(snap: Any) -> Iterator[Metric]:
    """From the latest snapshot: each rank's step time, phases, compute and collective wait in
    the last interval, its identity, and the straggler the diagnosis named (if any). Ranks seen by
    stack samples (attach) have no seconds per step to export: only their straggler's name."""
    ranks = [r for r in getattr(snap.sample, "ranks", ()) if r.phases.steps > 0 and not r.phases.sampled]
    if ranks:
        step = GaugeMetricFamily(
            "bottleneckd_rank_step_seconds",
            "Mean wall-clock seconds per step of one rank over the last sampling interval",
            labels=LABELS,
            unit="seconds",
        )
        phase = GaugeMetricFamily(
            "bottleneckd_rank_phase_seconds",
            "Mean seconds per step of one rank in each phase",
            labels=LABELS + ["phase"],
            unit="seconds",
        )
        comp = GaugeMetricFamily(
            "bottleneckd_rank_compute_seconds",
            "Mean forward+backward seconds per step of one rank (excludes the communication it waited for)",
            labels=LABELS,
            unit="seconds",
        )
        wait = GaugeMetricFamily(
            "bottleneckd_rank_communication_wait_seconds",
            "Mean seconds per step one rank waited in collectives (exposed communication)",
            labels=LABELS,
            unit="seconds",
        )
        index = GaugeMetricFamily(
            "bottleneckd_rank_index",
            "The rank's number as a value (to return a rank from a recording rule)",
            labels=LABELS,
        )
        info = InfoMetricFamily(
            "bottleneckd_job",
            "Each reporting rank's identity, with its Kubernetes pod where it has one (joins with kube-state-metrics)",
            labels=LABELS + ["world_size", "pod", "namespace"],
        )
        for r in ranks:
            lv, p = rank_labels(r.identity), r.phases
            step.add_metric(lv, p.wall_seconds / p.steps)
            for name, secs in sorted(p.phases.items()):
                phase.add_metric(lv + [name], secs / p.steps)
            comp.add_metric(lv, sum(p.phases.get(k, 0.0) for k in COMPUTE_PHASES) / p.steps)
            wait.add_metric(lv, sum(p.phases.get(k, 0.0) for k in WAIT_PHASES) / p.steps)
            index.add_metric(lv, float(r.identity.rank))
            i = r.identity
            info.add_metric(lv + [str(i.world_size), i.pod, i.namespace], {})
        yield from (step, phase, comp, wait, index, info)
    s = getattr(snap.verdict, "straggler", None)
    if s and not s.get("sampled"):  # stack samples give its lag as a share of the step, not seconds
        fam = GaugeMetricFamily(
            "bottleneckd_straggler_step_time_lost_seconds",
            "Seconds per step the job loses to the straggler this sidecar named (its compute minus the median rank's)",
            labels=["kind", "rank", "host", "UUID"],
            unit="seconds",
        )
        fam.add_metric(
            [s["kind"], "" if s["rank"] is None else str(s["rank"]), s["node"], s["gpu"]], s["step_time_lost_seconds"]
        )
        yield fam
