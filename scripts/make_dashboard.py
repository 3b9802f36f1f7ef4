#!/usr/bin/env python3
"""Generates dashboards/bottleneckd.json with Grafana's own dashboards-as-code library
(grafana-foundation-sdk): every panel, query, variable and annotation is built through its typed
builders, so the dashboard follows Grafana's schema by construction, with no Grafana server to
check against. Edit here, then run
    python scripts/make_dashboard.py
The test suite checks the result's structure and evaluates every expression in a real Prometheus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import (
    bargauge,
    gauge,
    heatmap,
    prometheus,
    stat,
    statetimeline,
    timeseries,
)
from grafana_foundation_sdk.builders import (
    common as cb,
)
from grafana_foundation_sdk.builders import (
    dashboard as db,
)
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models.dashboard import DashboardCursorSync, DataSourceRef, VariableRefresh, VariableSort

DS = DataSourceRef(type_val="prometheus", uid="${datasource}")
SEL = 'instance=~"$host", job=~"$job"'
GPU = f'{SEL}, device=~"$gpu"'
RANK = 'train_job=~"$train_job"'
_ids = iter(range(1, 1000))


def q(expr: str, legend: str = "", ref: str = "A") -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref).range().datasource(DS)


def _common(
    p: Any, title: str, w: int, h: int, targets: list[prometheus.Dataquery], unit: str = "", desc: str = ""
) -> Any:
    p = p.id(next(_ids)).title(title).description(desc).datasource(DS).span(w).height(h).targets(targets)
    return p.unit(unit) if unit else p


def series(
    title: str, w: int, h: int, targets: list, unit: str = "", desc: str = "", stacked: bool = False
) -> timeseries.Panel:
    p = _common(timeseries.Panel(), title, w, h, targets, unit, desc)
    if stacked:
        p = p.stacking(cb.StackingConfig().mode(common.StackingMode.NORMAL)).fill_opacity(60)
    return p


def big(title: str, w: int, h: int, targets: list, unit: str = "", desc: str = "", name: bool = False) -> stat.Panel:
    p = _common(stat.Panel(), title, w, h, targets, unit, desc).reduce_options(
        cb.ReduceDataOptions().calcs(["lastNotNull"])
    )
    if name:
        p = p.text_mode(common.BigValueTextMode.NAME)
    return p


def row(title: str) -> db.Row:
    return db.Row(title).id(next(_ids))


def var(name: str, query: str, label: str) -> db.QueryVariable:
    return (
        db.QueryVariable(name)
        .label(label)
        .datasource(DS)
        .query(query)
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .include_all(True)
        .multi(True)
        .all_value(".*")
        .sort(VariableSort.ALPHABETICAL_ASC)
    )


def build() -> dict:
    global _ids
    _ids = iter(range(1, 1000))
    d = (
        db.Dashboard("bottleneckd: what limits training")
        .uid("bottleneckd")
        .tags(["bottleneckd", "training"])
        .editable()
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .refresh("10s")
        .time("now-1h", "now")
        .timezone("")
        .version(1)
        .with_variable(db.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
        .with_variable(var("job", "label_values(bottleneckd_sampler_up, job)", "job"))
        .with_variable(var("host", 'label_values(bottleneckd_sampler_up{job=~"$job"}, instance)', "host"))
        .with_variable(var("gpu", 'label_values(bottleneckd_gpu_up{instance=~"$host"}, device)', "GPU"))
        .with_variable(var("train_job", "label_values(bottleneckd_rank_step_seconds, train_job)", "training job"))
        .annotation(
            db.AnnotationQuery()
            .name("Mitigations applied")
            .datasource(DS)
            .enable(True)
            .icon_color("orange")
            .expr(f"changes(bottleneckd_mitigation_applied_timestamp_seconds{{{SEL}}}[2m]) > 0")
        )
    )

    d = d.with_row(row("Verdict"))
    d = d.with_panel(
        big(
            "Active bottleneck",
            8,
            4,
            [q(f"max by (resource) (bottleneckd_bottleneck_active{{{SEL}}}) == 1", "{{resource}}")],
            desc="The resource (section 6.1 of Bartoldson et al., 2023) that limits the step now.",
            name=True,
        ).color_mode(common.BigValueColorMode.BACKGROUND)
    )
    d = d.with_panel(
        big(
            "Held for",
            4,
            4,
            [q(f"time() - max(bottleneckd_bottleneck_since_timestamp_seconds{{{SEL}}})", "held")],
            unit="s",
        )
    )
    d = d.with_panel(
        _common(
            gauge.Panel(),
            "Confidence",
            4,
            4,
            [q(f"max(bottleneckd_bottleneck_confidence_ratio{{{SEL}}})", "confidence")],
            unit="percentunit",
        )
    )
    d = d.with_panel(
        big(
            "Headroom",
            4,
            4,
            [q(f"max(bottleneckd_bottleneck_headroom_ratio{{{SEL}}})", "x faster")],
            unit="x",
            desc="How many times faster a step could be if the bottleneck stopped limiting it "
            "(Figure 15's vertical line).",
        )
    )
    d = d.with_panel(
        big("Stage", 4, 4, [q(f"max by (stage) (bottleneckd_bottleneck_stage{{{SEL}}}) == 1", "{{stage}}")], name=True)
    )
    d = d.with_panel(
        _common(
            bargauge.Panel(),
            "Live Table 4: utilization against peak",
            12,
            10,
            [q(f"max by (resource) (bottleneckd_utilization_ratio{{{SEL}}})", "{{resource}}")],
            "percentunit",
            "Every resource against its peak (catalog, detected or calibrated). Missing bars are unknown, never zero.",
        )
        .orientation(common.VizOrientation.HORIZONTAL)
        .display_mode(common.BarGaugeDisplayMode.GRADIENT)
        .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]))
        .min(0)
        .max(1)
    )
    d = d.with_panel(
        series(
            "Utilization over time",
            12,
            10,
            [q(f"max by (resource) (bottleneckd_utilization_ratio{{{SEL}}})", "{{resource}}")],
            "percentunit",
        )
    )

    d = d.with_panel(
        big(
            "Recommended mitigations",
            24,
            4,
            [
                q(
                    f"max by (position, mitigation) (bottleneckd_recommendation_info{{{SEL}}})",
                    "{{position}}. {{mitigation}}",
                )
            ],
            desc="The best-ranked mitigations for the verdict; `bottleneckd mitigations` explains each, "
            "`w.apply(name, ...)` applies it (README, mitigations table).",
            name=True,
        )
    )

    d = d.with_row(row("Training step"))
    d = d.with_panel(
        series(
            "Step phases (seconds per step)",
            16,
            9,
            [q(f"sum by (phase) (bottleneckd_step_phase_seconds{{{SEL}}})", "{{phase}}")],
            "s",
            stacked=True,
        )
    )
    d = d.with_panel(
        series(
            "Step time and rate",
            8,
            9,
            [
                q(f"max(bottleneckd_step_seconds{{{SEL}}})", "seconds per step"),
                q(f"sum(rate(bottleneckd_steps_total{{{SEL}}}[$__rate_interval]))", "steps per second", "B"),
            ],
            "s",
        )
    )

    d = d.with_row(row("The job across ranks"))
    d = d.with_panel(
        _common(
            heatmap.Panel(),
            "Step time by rank",
            12,
            9,
            [q(f"avg by (rank) (bottleneckd_rank_step_seconds{{{RANK}}})", "{{rank}}")],
            "s",
            "One row per rank, one column per scrape: under a synchronous all-reduce every rank's step takes as "
            "long as the slowest one's, so look at compute by rank for the cause.",
        )
        .calculate(False)
        .y_axis(heatmap.YAxisConfig().unit("none"))
        .color(heatmap.HeatmapColorOptions().scheme("Oranges"))
    )
    d = d.with_panel(
        _common(
            heatmap.Panel(),
            "Compute (forward + backward) by rank",
            12,
            9,
            [q(f"avg by (rank) (bottleneckd_rank_compute_seconds{{{RANK}}})", "{{rank}}")],
            "s",
            "The straggler computes longest; the others wait for it in the all-reduce.",
        )
        .calculate(False)
        .y_axis(heatmap.YAxisConfig().unit("none"))
        .color(heatmap.HeatmapColorOptions().scheme("Reds"))
    )
    d = d.with_panel(
        _common(
            statetimeline.Panel(),
            "The straggler's history",
            12,
            6,
            [q(f"train_job:bottleneckd_straggler_rank{{{RANK}}}", "{{train_job}}")],
            "none",
            "The rank that computes more than 10% longer than the job's median rank, and longest of all "
            "(recording rule over every node's sidecar); empty while the ranks are even.",
        )
        .show_value(common.VisibilityMode.ALWAYS)
        .merge_values(True)
    )
    d = d.with_panel(
        series(
            "Spread and exposed communication",
            12,
            6,
            [
                q(f"train_job:bottleneckd_rank_step_seconds:spread_ratio{{{RANK}}}", "step-time spread across ranks"),
                q(f"train_job:bottleneckd_exposed_communication:ratio{{{RANK}}}", "exposed communication share", "B"),
                q(f"rank:bottleneckd_compute_excess:ratio{{{RANK}}}", "compute excess rank {{rank}}", "C"),
            ],
            "percentunit",
        )
    )

    d = d.with_row(row("GPU"))
    d = d.with_panel(
        series(
            "SM, tensor and DRAM activity",
            12,
            9,
            [
                q(f"bottleneckd_gpu_compute_sm_activity_ratio{{{GPU}}}", "SM {{device}}"),
                q(f"bottleneckd_gpu_compute_tensor_activity_ratio{{{GPU}}}", "tensor {{device}}", "B"),
                q(f'bottleneckd_utilization_ratio{{{GPU}, resource="gpu_memory_bandwidth"}}', "DRAM {{device}}", "C"),
                q(f"bottleneckd_gpu_compute_busy_fraction_ratio{{{GPU}}}", "NVML busy {{device}}", "D"),
            ],
            "percentunit",
            "NVML 'GPU utilization' (busy) is a time fraction; SM activity is how much of the GPU works (GPM).",
        )
    )
    d = d.with_panel(
        series("GPU memory", 6, 9, [q(f"bottleneckd_gpu_memory_used_bytes{{{GPU}}}", "{{device}}")], "bytes")
    )
    d = d.with_panel(
        series(
            "Power and clocks",
            6,
            9,
            [
                q(f"bottleneckd_gpu_compute_power_watts{{{GPU}}}", "power {{device}}"),
                q(f"bottleneckd_gpu_compute_sm_clock_hertz{{{GPU}}} / 1e6", "SM MHz {{device}}", "B"),
            ],
            "watt",
        )
    )
    d = d.with_panel(
        series(
            "PCIe and NVLink",
            12,
            8,
            [
                q(f"bottleneckd_cpu_gpu_interconnect_throughput_bytes_per_second{{{GPU}}}", "PCIe {{device}}"),
                q(f"bottleneckd_inter_gpu_interconnect_throughput_bytes_per_second{{{GPU}}}", "NVLink {{device}}", "B"),
            ],
            "Bps",
        )
    )
    d = d.with_panel(_common(statetimeline.Panel(), "GPUs up", 6, 8, [q(f"bottleneckd_gpu_up{{{GPU}}}", "{{device}}")]))
    d = d.with_panel(
        _common(
            statetimeline.Panel(),
            "Clock-event reasons (throttling)",
            6,
            8,
            [q(f"max by (device, reason) (bottleneckd_gpu_compute_throttle{{{GPU}}})", "{{device}} {{reason}}")],
            "none",
            "NVML's reasons the clocks are held down; sw_power_cap is normal at full load, the others alert.",
        )
    )

    d = d.with_row(row("Host"))
    d = d.with_panel(
        series(
            "CPU",
            8,
            9,
            [
                q(f'bottleneckd_cpu_compute_busy_cores{{{SEL}, device="job"}}', "job cores"),
                q(f'bottleneckd_cpu_compute_worker_busy_cores{{{SEL}, device="job"}}', "loader worker cores", "B"),
                q(f'bottleneckd_cpu_compute_busy_cores{{{SEL}, device="host"}}', "host cores", "C"),
            ],
        )
    )
    d = d.with_panel(
        series(
            "CPU memory",
            8,
            9,
            [
                q(f'bottleneckd_cpu_memory_used_bytes{{{SEL}, device="host"}}', "used"),
                q(f'bottleneckd_cpu_memory_resident_bytes{{{SEL}, device="job"}}', "job resident", "B"),
            ],
            "bytes",
        )
    )
    d = d.with_panel(
        series(
            "I/O wait and pressure",
            8,
            9,
            [
                q(f"bottleneckd_cpu_compute_iowait_ratio{{{SEL}}}", "iowait"),
                q(f"bottleneckd_cpu_compute_pressure_some_ratio{{{SEL}}}", "CPU pressure", "B"),
            ],
            "percentunit",
        )
    )
    d = d.with_panel(
        series(
            "Storage",
            12,
            9,
            [
                q(
                    f"sum by (device) (rate(bottleneckd_storage_bandwidth_read_bytes_total{{{SEL}}}[$__rate_interval])"
                    f" + rate(bottleneckd_storage_bandwidth_written_bytes_total{{{SEL}}}[$__rate_interval]))",
                    "bytes {{device}}",
                ),
                q(
                    f"sum by (device) (rate(bottleneckd_storage_bandwidth_reads_completed_total{{{SEL}}}"
                    f"[$__rate_interval]) + rate(bottleneckd_storage_bandwidth_writes_completed_total{{{SEL}}}"
                    "[$__rate_interval]))",
                    "ops {{device}}",
                    "B",
                ),
            ],
            "Bps",
        )
    )
    d = d.with_panel(
        series(
            "Network",
            12,
            9,
            [
                q(
                    f"sum by (device) (rate(bottleneckd_inter_node_interconnect_transmit_bytes_total{{{SEL}}}"
                    "[$__rate_interval]))",
                    "sent {{device}}",
                ),
                q(
                    f"sum by (device) (rate(bottleneckd_inter_node_interconnect_receive_bytes_total{{{SEL}}}"
                    "[$__rate_interval]))",
                    "received {{device}}",
                    "C",
                ),
                q(
                    f'bottleneckd_utilization_ratio{{{SEL}, resource="storage_network_bandwidth"}}',
                    "network FS {{device}}",
                    "B",
                ),
            ],
            "Bps",
        )
    )

    d = d.with_row(row("bottleneckd itself"))
    d = d.with_panel(
        series(
            "Samplers",
            24,
            7,
            [
                q(f"bottleneckd_sampler_duration_seconds{{{SEL}}}", "{{sampler}}"),
                q(f"bottleneckd_sampler_up{{{SEL}}} == 0", "down: {{sampler}}", "B"),
            ],
            "s",
        )
    )
    d = d.with_panel(
        series(
            "The exporter's own CPU and memory",
            24,
            6,
            [
                q(f"rate(process_cpu_seconds_total{{{SEL}}}[$__rate_interval])", "CPU cores {{instance}}"),
                q(f"process_resident_memory_bytes{{{SEL}}} / 1e6", "resident MB {{instance}}", "B"),
            ],
        )
    )
    return json.loads(json.dumps(d.build(), cls=JSONEncoder))


if __name__ == "__main__":
    root = Path(__file__).resolve().parents[1]
    text = json.dumps(build(), indent=1) + "\n"
    for out in (root / "dashboards" / "bottleneckd.json", root / "deploy/helm/bottleneckd/dashboards/bottleneckd.json"):
        out.write_text(text)  # the second: the Helm chart's ConfigMap for Grafana's sidecar
        print(f"wrote {out}")
