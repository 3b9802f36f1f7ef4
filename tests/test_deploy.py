"""Dashboards, alerting rules and deployment files: promtool, structure, and every PromQL
expression evaluated by a real Prometheus scraping an exporter fed by a recorded trace."""

import json
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT
from tests.prometheus_server import Prometheus, free_port, wait_http

DASH = ROOT / "dashboards" / "bottleneckd.json"
PROM = ROOT / "deploy" / "prometheus"
TRACE = ROOT / "tests" / "data" / "gpu_compute" / "trace.jsonl"
RANKS_TRACE = (
    ROOT / "tests" / "ranks_data" / "straggler_4ranks.jsonl"
)  # torchrun, 4 gloo ranks, rank 2 with 30% more forward work

needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool not installed (.ci/run installs it)"
)


@needs_promtool
def test_promtool_checks_config_rules_and_rule_unit_tests():
    for args in (
        ["check", "config", "prometheus.yml"],
        ["check", "rules", "rules.yml"],
        ["test", "rules", "rules_test.yml"],
    ):
        r = subprocess.run(["promtool", *args], cwd=PROM, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr


def dashboard_exprs(d: dict) -> list[str]:
    out = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
    out += [a["expr"] for a in d["annotations"]["list"]]
    return out


def test_dashboard_structure():
    d = json.loads(DASH.read_text())
    assert d["schemaVersion"] >= 36 and d["uid"]
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    names = {v["name"] for v in d["templating"]["list"]}
    assert {"datasource", "host", "gpu", "job"} <= names
    for p in d["panels"]:
        if p["type"] == "row":
            continue
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"] and all(t["datasource"]["uid"] == "${datasource}" and t["expr"] for t in p["targets"])
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24
    text = json.dumps(d["panels"]) + json.dumps(d["annotations"]) + json.dumps(d["templating"])
    for v in names - {"datasource"}:
        assert f"${v}" in text, f"variable {v} is never used"
    titles = {p["title"] for p in d["panels"]}
    for want in (
        "Active bottleneck",
        "Held for",
        "Live Table 4: utilization against peak",
        "Step phases (seconds per step)",
        "SM, tensor and DRAM activity",
        "PCIe and NVLink",
        "CPU",
        "CPU memory",
        "Storage",
        "Network",
    ):
        assert want in titles
    assert d["annotations"]["list"][0]["name"] == "Mitigations applied"


def test_dashboard_is_generated_from_its_source():
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json,sys; sys.path.insert(0,'scripts'); import make_dashboard as m;"
            " print(json.dumps(m.build(), indent=1))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and json.loads(r.stdout) == json.loads(DASH.read_text())


def test_deployment_files_parse_and_grant_only_what_is_needed():
    side = yaml.safe_load((ROOT / "deploy/kubernetes/training-pod-sidecar.yaml").read_text())
    c = {x["name"]: x for x in side["spec"]["containers"]}
    assert side["spec"]["shareProcessNamespace"] is True
    # no capability and not root: it runs as the trainer's UID (issue 22 item 5)
    assert c["bottleneckd"]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert side["spec"]["securityContext"]["runAsNonRoot"] is True and side["spec"]["securityContext"]["runAsUser"]
    assert "SYS_PTRACE" not in json.dumps(side)
    assert c["bottleneckd"]["livenessProbe"]["httpGet"]["path"] == "/-/healthy"
    docs = list(yaml.safe_load_all((ROOT / "deploy/kubernetes/daemonset.yaml").read_text()))
    ds = docs[0]["spec"]["template"]["spec"]["containers"][0]
    assert ds["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    pod = docs[0]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert ds["readinessProbe"]["httpGet"]["path"] == "/-/ready" and ds["ports"][0]["containerPort"] == 9612
    assert {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"} in ds["env"]
    compose = yaml.safe_load((ROOT / "deploy/compose/docker-compose.yml").read_text())
    assert {"prometheus", "grafana", "exporter"} <= set(compose["services"])
    unit = (ROOT / "deploy/systemd/bottleneckd.service").read_text()
    assert "ExecStart=/usr/local/bin/bottleneckd serve" in unit and "CapabilityBoundingSet=\n" in unit
    assert "Environment=BOTTLENECKD_SERVE_BIND=127.0.0.1:9612" in unit
    assert "DynamicUser=yes" in unit and "User=root" not in unit  # never root (issue 22 item 5)
    docker = (ROOT / "deploy/compose/Dockerfile").read_text()
    assert "USER 65534" in docker and "0.0.0.0:" not in docker.split("ENTRYPOINT")[1]
    assert "BOTTLENECKD_SERVE_BIND=127.0.0.1:9612" in docker
    for rel in ("deploy/compose/docker-compose.yml",):
        for m in re.finditer(r"\.\./[\w./-]+", (ROOT / rel).read_text()):
            assert (ROOT / "deploy/compose" / m.group(0)).resolve().exists(), m.group(0)


def substitute(expr: str) -> str:
    return (
        expr.replace("$host", ".*")
        .replace("$job", ".*")
        .replace("$gpu", ".*")
        .replace("$train_job", ".*")
        .replace("$__rate_interval", "1m")
    )


def base_of(expr: str) -> str:
    """An alert's expression without its final threshold: the series it compares must exist."""
    return re.sub(r"\s*(==|!=|>=|<=|>|<)\s*[\d.e+-]+\s*$", "", expr)


@pytest.mark.slow
@pytest.mark.integration
def test_every_expression_evaluates_and_returns_data(tmp_path, cli_env):
    """Three exporters replay traces: one recorded on an H200 (GPU, CPU, storage and network series)
    with a mitigation event added, the constructed input-bound job on a node with an NFS mount
    (job process tree, step headroom, network file system), a 4-rank job; a fourth serves this
    machine live (the disk, NIC and swap counters). Prometheus scrapes them all; every dashboard and
    rule expression is queried and must return data, and the joins of FLEET.md too."""
    trace = tmp_path / "trace.jsonl"
    lines = TRACE.read_text().splitlines()
    t_mid = json.loads(lines[18])["t"]
    event = {
        "type": "event",
        "t": t_mid,
        "kind": "mitigation_applied",
        "name": "mixed_precision",
        "changes_semantics": True,
    }
    trace.write_text("\n".join(lines[:19] + [json.dumps(event)] + lines[19:]) + "\n")
    ports = [free_port(), free_port(), free_port()]
    serves = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bottleneckd.cli",
                "serve",
                "--bind",
                f"127.0.0.1:{port}",
                "--trace",
                str(t),
                "--duration",
                "300",  # the replays outlive the queries on a loaded machine
            ],
            env=cli_env,
            stderr=subprocess.DEVNULL,
        )
        for port, t in zip(
            ports, [trace, ROOT / "tests/data/storage_network_bandwidth/trace.jsonl", RANKS_TRACE], strict=True
        )
    ]
    live_port = free_port()  # a live exporter: this machine's disk, NIC and swap counters (rate() panels)
    serves.append(
        subprocess.Popen(
            [sys.executable, "-m", "bottleneckd.cli", "serve", "--bind", f"127.0.0.1:{live_port}", "--quiet"],
            env=cli_env,
            stderr=subprocess.DEVNULL,
        )
    )
    ports.append(live_port)
    prom = None
    try:
        for port in ports:
            wait_http(f"http://127.0.0.1:{port}/metrics")
        prom = Prometheus(tmp_path, [f"127.0.0.1:{p}" for p in ports], rule_files=[str(PROM / "rules.yml")])
        prom.wait_for('bottleneckd_bottleneck_active{resource="gpu_compute"} == 1', timeout=60)
        prom.wait_for("changes(bottleneckd_mitigation_applied_timestamp_seconds[2m]) >= 0", timeout=30)
        prom.wait_for(
            "train_job:bottleneckd_straggler_rank", timeout=60
        )  # the 4-rank trace's straggler, via the recording rules
        # the NFS trace's own series (a CI run under load found none when it queried)
        prom.wait_for('bottleneckd_utilization_ratio{resource="storage_network_bandwidth"}', timeout=60)
        import time

        time.sleep(3)  # a few scrapes, so rate() and changes() have two points
        failures = []
        for expr in dashboard_exprs(json.loads(DASH.read_text())):
            q = substitute(expr)
            if "changes(bottleneckd_mitigation" in q:
                q = base_of(q).replace("changes(", "count_over_time(")  # the event happened once; its series must exist
            if q.endswith("== 0"):
                q = base_of(q)  # 'down' series: the series exists, and is up here
            d = prom.query(q)
            if d["status"] != "success" or not d["data"]["result"]:
                failures.append((expr, d.get("error", "no data")))
        rules = yaml.safe_load((PROM / "rules.yml").read_text())
        for rule in [r for g in rules["groups"] for r in g["rules"]]:
            name = rule.get("alert") or rule["record"]
            d = prom.query(rule["expr"])
            if d["status"] != "success":
                failures.append((name, d.get("error")))
            base = base_of(rule["expr"].strip())
            if base.startswith("absent(") and base.endswith(")"):
                base = base[len("absent(") : -1]  # fires when the series is missing: here it must exist
            b = prom.query(base)
            if b["status"] != "success" or not b["data"]["result"]:
                failures.append((name + " (its series)", b.get("error", "no data")))
        for join in (  # deploy/prometheus/FLEET.md: one `* on (...) group_left` each
            'bottleneckd_utilization_ratio{resource="gpu_compute"} * on (instance, device) group_left (UUID, gpu)'
            " bottleneckd_gpu_info",
            "bottleneckd_rank_step_seconds * on (instance, train_job, run, restart, rank) group_left (pod, namespace)"
            " bottleneckd_job_info",
        ):
            d = prom.query(join)
            if d["status"] != "success" or not d["data"]["result"]:
                failures.append((join, d.get("error", "no data")))
        assert not failures, failures
    finally:
        if prom:
            prom.stop()
        for serve in serves:
            serve.terminate()
            serve.wait(timeout=10)
