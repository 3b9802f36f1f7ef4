#!/usr/bin/env python3
"""Generates dashboards/bottleneckd.json (Grafana dashboard, schema 39). Edit here, then run
    python scripts/make_dashboard.py
The test suite checks the result's structure and evaluates every expression in a real Prometheus."""

from __future__ import annotations

import json
from pathlib import Path

DS = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'instance=~"$host", job=~"$job"'
GPU = f'{SEL}, device=~"$gpu"'
_ids = iter(range(1, 1000))


def target(expr: str, legend: str = "", ref: str = "A") -> dict:
    return {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref, "range": True}


def panel(kind: str, title: str, x: int, y: int, w: int, h: int, targets: list[dict], unit: str = "", desc: str = "", **extra) -> dict:
    p = {"id": next(_ids), "type": kind, "title": title, "description": desc, "datasource": DS,
         "gridPos": {"x": x, "y": y, "w": w, "h": h}, "targets": targets,
         "fieldConfig": {"defaults": {"unit": unit}, "overrides": []}, "options": {}}
    p.update(extra)
    return p


def row(title: str, y: int) -> dict:
    return {"id": next(_ids), "type": "row", "title": title, "collapsed": False, "gridPos": {"x": 0, "y": y, "w": 24, "h": 1}, "panels": []}


def build() -> dict:
    panels = [
        row("Verdict", 0),
        panel("stat", "Active bottleneck", 0, 1, 8, 4,
              [target(f"max by (resource) (bottleneckd_bottleneck_active{{{SEL}}}) == 1", "{{resource}}")],
              desc="The resource (section 6.1 of Bartoldson et al., 2023) that limits the step now.",
              options={"textMode": "name", "colorMode": "background", "reduceOptions": {"calcs": ["lastNotNull"]}}),
        panel("stat", "Held for", 8, 1, 4, 4, [target(f"time() - max(bottleneckd_bottleneck_since_seconds{{{SEL}}})", "held")], unit="s"),
        panel("gauge", "Confidence", 12, 1, 4, 4, [target(f"max(bottleneckd_bottleneck_confidence_ratio{{{SEL}}})", "confidence")], unit="percentunit"),
        panel("stat", "Headroom", 16, 1, 4, 4, [target(f"max(bottleneckd_bottleneck_headroom_ratio{{{SEL}}})", "x faster")], unit="x",
              desc="How many times faster a step could be if the bottleneck stopped limiting it (Figure 15's vertical line)."),
        panel("stat", "Stage", 20, 1, 4, 4, [target(f"max by (stage) (bottleneckd_bottleneck_stage{{{SEL}}}) == 1", "{{stage}}")],
              options={"textMode": "name", "reduceOptions": {"calcs": ["lastNotNull"]}}),
        panel("bargauge", "Live Table 4: utilization against peak", 0, 5, 12, 10,
              [target(f"max by (resource) (bottleneckd_utilization_ratio{{{SEL}}})", "{{resource}}")], unit="percentunit",
              desc="Every resource against its peak (catalog, detected or calibrated). Missing bars are unknown, never zero.",
              options={"orientation": "horizontal", "displayMode": "gradient", "reduceOptions": {"calcs": ["lastNotNull"]}},
              fieldConfig={"defaults": {"unit": "percentunit", "min": 0, "max": 1}, "overrides": []}),
        panel("timeseries", "Utilization over time", 12, 5, 12, 10,
              [target(f"max by (resource) (bottleneckd_utilization_ratio{{{SEL}}})", "{{resource}}")], unit="percentunit"),
        row("Training step", 15),
        panel("timeseries", "Step phases (seconds per step)", 0, 16, 16, 9,
              [target(f"sum by (phase) (bottleneckd_step_phase_seconds{{{SEL}}})", "{{phase}}")], unit="s",
              fieldConfig={"defaults": {"unit": "s", "custom": {"stacking": {"mode": "normal"}, "fillOpacity": 60}}, "overrides": []}),
        panel("timeseries", "Step time and rate", 16, 16, 8, 9,
              [target(f"max(bottleneckd_step_seconds{{{SEL}}})", "seconds per step"),
               target(f"sum(rate(bottleneckd_steps_total{{{SEL}}}[$__rate_interval]))", "steps per second", "B")], unit="s"),
        row("GPU", 25),
        panel("timeseries", "SM, tensor and DRAM activity", 0, 26, 12, 9,
              [target(f"bottleneckd_gpu_compute_sm_activity_ratio{{{GPU}}}", "SM {{device}}"),
               target(f"bottleneckd_gpu_compute_tensor_activity_ratio{{{GPU}}}", "tensor {{device}}", "B"),
               target(f'bottleneckd_utilization_ratio{{{GPU}, resource="gpu_memory_bandwidth"}}', "DRAM {{device}}", "C"),
               target(f"bottleneckd_gpu_compute_busy_fraction_ratio{{{GPU}}}", "NVML busy {{device}}", "D")], unit="percentunit",
              desc="NVML 'GPU utilization' (busy) is a time fraction; SM activity is how much of the GPU works (GPM)."),
        panel("timeseries", "GPU memory", 12, 26, 6, 9, [target(f"bottleneckd_gpu_memory_used_bytes{{{GPU}}}", "{{device}}")], unit="bytes"),
        panel("timeseries", "Power and clocks", 18, 26, 6, 9,
              [target(f"bottleneckd_gpu_compute_power_watts{{{GPU}}}", "power {{device}}"),
               target(f"bottleneckd_gpu_compute_sm_clock_hertz{{{GPU}}} / 1e6", "SM MHz {{device}}", "B")], unit="watt"),
        panel("timeseries", "PCIe and NVLink", 0, 35, 12, 8,
              [target(f"bottleneckd_cpu_gpu_interconnect_throughput_bytes_per_second{{{GPU}}}", "PCIe {{device}}"),
               target(f"bottleneckd_inter_gpu_interconnect_throughput_bytes_per_second{{{GPU}}}", "NVLink {{device}}", "B")], unit="Bps"),
        panel("state-timeline", "GPUs up", 12, 35, 12, 8, [target(f"bottleneckd_gpu_up{{{GPU}}}", "{{device}}")]),
        row("Host", 43),
        panel("timeseries", "CPU", 0, 44, 8, 9,
              [target(f'bottleneckd_cpu_compute_busy_cores{{{SEL}, device="job"}}', "job cores"),
               target(f'bottleneckd_cpu_compute_worker_busy_cores{{{SEL}, device="job"}}', "loader worker cores", "B"),
               target(f'bottleneckd_cpu_compute_busy_cores{{{SEL}, device="host"}}', "host cores", "C")]),
        panel("timeseries", "CPU memory", 8, 44, 8, 9,
              [target(f'bottleneckd_cpu_memory_used_bytes{{{SEL}, device="host"}}', "used"),
               target(f'bottleneckd_cpu_memory_resident_bytes{{{SEL}, device="job"}}', "job resident", "B")], unit="bytes"),
        panel("timeseries", "I/O wait and pressure", 16, 44, 8, 9,
              [target(f'bottleneckd_cpu_compute_iowait_ratio{{{SEL}}}', "iowait"),
               target(f'bottleneckd_cpu_compute_pressure_some_ratio{{{SEL}}}', "CPU pressure", "B")], unit="percentunit"),
        panel("timeseries", "Storage", 0, 53, 12, 9,
              [target(f"bottleneckd_storage_bandwidth_throughput_bytes_per_second{{{SEL}}}", "bytes {{device}}"),
               target(f"bottleneckd_storage_bandwidth_operations_per_second{{{SEL}}}", "ops {{device}}", "B")], unit="Bps"),
        panel("timeseries", "Network", 12, 53, 12, 9,
              [target(f"bottleneckd_inter_node_interconnect_throughput_bytes_per_second{{{SEL}}}", "{{device}}"),
               target(f'bottleneckd_utilization_ratio{{{SEL}, resource="storage_network_bandwidth"}}', "network FS {{device}}", "B")], unit="Bps"),
        row("bottleneckd itself", 62),
        panel("timeseries", "Samplers", 0, 63, 24, 7,
              [target(f"bottleneckd_sampler_duration_seconds{{{SEL}}}", "{{sampler}}"),
               target(f"bottleneckd_sampler_up{{{SEL}}} == 0", "down: {{sampler}}", "B")], unit="s"),
    ]

    def var(name: str, query: str, label: str) -> dict:
        return {"name": name, "label": label, "type": "query", "datasource": DS, "query": {"query": query, "refId": name},
                "definition": query, "refresh": 2, "includeAll": True, "multi": True, "allValue": ".*",
                "current": {"selected": True, "text": ["All"], "value": ["$__all"]}, "sort": 1}

    return {
        "uid": "bottleneckd", "title": "bottleneckd: what limits training", "tags": ["bottleneckd", "training"],
        "schemaVersion": 39, "version": 1, "editable": True, "graphTooltip": 1, "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"}, "timezone": "",
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus", "current": {}, "hide": 0},
            var("job", "label_values(bottleneckd_sampler_up, job)", "job"),
            var("host", 'label_values(bottleneckd_sampler_up{job=~"$job"}, instance)', "host"),
            var("gpu", 'label_values(bottleneckd_gpu_up{instance=~"$host"}, device)', "GPU"),
        ]},
        "annotations": {"list": [
            {"name": "Mitigations applied", "datasource": DS, "enable": True, "iconColor": "orange",
             "expr": f"changes(bottleneckd_mitigation_applied_timestamp_seconds{{{SEL}}}[2m]) > 0",
             "titleFormat": "{{mitigation}} applied", "textFormat": "changes training semantics: {{changes_semantics}}", "step": "30s"},
        ]},
        "panels": panels,
    }


if __name__ == "__main__":
    out = Path(__file__).resolve().parents[1] / "dashboards" / "bottleneckd.json"
    out.write_text(json.dumps(build(), indent=1) + "\n")
    print(f"wrote {out}")
