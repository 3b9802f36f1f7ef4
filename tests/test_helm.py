"""The Helm chart (deploy/helm/bottleneckd, issue 22 item 5), rendered by Helm's own engine
(helm-python-sdk binds Helm's Go SDK: the same templates, functions and value merging as `helm
template`) and linted by it; every Kubernetes object validated against the API's schema
(kubernetes-validate, strict: unknown fields are errors); the PrometheusRule's groups checked by
promtool; what the issue asks of it checked on the rendered objects."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

helm = pytest.importorskip("helm_python", reason="helm-python-sdk (Helm's engine) not installed")
kv = pytest.importorskip("kubernetes_validate")

CHART = ROOT / "deploy" / "helm" / "bottleneckd"
K8S = "1.31.0"  # the chart needs 1.29+ (native sidecars); validated against a current API
CRDS = {"PodMonitor", "ServiceMonitor", "PrometheusRule"}  # Prometheus operator kinds: checked by hand

VARIANTS = {
    "defaults": {},
    "sidecar-and-servicemonitor": {"sidecar": {"enabled": True}, "serviceMonitor": {"enabled": True}},
    "sidecar-only-mtls": {
        "daemonset": {"enabled": False},
        "sidecar": {"enabled": True},
        "webConfig": {"clientCertRequired": True},
    },
    "created-secret": {
        "webConfig": {"create": True, "files": {"web-config.yml": "tls_server_config: {}\n", "tls.crt": "x"}},
        "scrape": {"basicAuth": {"username": {"name": "s", "key": "u"}, "password": {"name": "s", "key": "p"}}},
    },
    "plain-http": {"webConfig": {"enabled": False}, "daemonset": {"hostDetail": True}},
}


def render(values: dict[str, Any]) -> list[dict[str, Any]]:
    with helm.Chart.load(str(CHART)) as chart:
        manifests = chart.render(values, name="bottleneckd", namespace="monitoring")
    docs = []
    for name, text in sorted(manifests.items()):
        if name.endswith(".txt"):
            continue
        docs += [d for d in yaml.safe_load_all(text) if d]
    return docs


def pod_specs(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d["spec"]["template"]["spec"] for d in docs if d["kind"] in ("DaemonSet", "Job")]


def test_helm_lints_the_chart_without_errors():
    report = helm.lint(str(CHART))
    assert report["errors"] == [] and not [m for m in report["messages"] if m["severity"] >= 3], report


@pytest.mark.parametrize("variant", VARIANTS, ids=list(VARIANTS))
def test_every_rendered_object_is_valid_for_the_kubernetes_api(variant):
    docs = render(VARIANTS[variant])
    kinds = {d["kind"] for d in docs}
    assert kinds, variant
    for d in docs:
        if d["kind"] in CRDS:
            assert d["apiVersion"] == "monitoring.coreos.com/v1" and d["spec"], d["kind"]
            continue
        kv.validate(d, K8S, strict=True)  # raises ValidationError naming the field


def test_the_daemonset_runs_non_root_with_probes_and_the_web_config_from_a_secret():
    docs = render({})
    ds = next(d for d in docs if d["kind"] == "DaemonSet")
    spec = ds["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] != 0
    c = next(x for x in spec["containers"] if x["name"] == "bottleneckd")
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert c["securityContext"]["allowPrivilegeEscalation"] is False and c["securityContext"]["readOnlyRootFilesystem"]
    assert (
        c["livenessProbe"]["httpGet"]["path"] == "/-/healthy" and c["readinessProbe"]["httpGet"]["path"] == "/-/ready"
    )
    assert c["livenessProbe"]["httpGet"]["scheme"] == "HTTPS"
    assert c["ports"] == [{"name": "metrics", "containerPort": 9612, "protocol": "TCP"}]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["BOTTLENECKD_SERVE_BIND"] == "$(POD_IP):9612"  # the pod IP, never 0.0.0.0
    assert env["BOTTLENECKD_SERVE_WEB_CONFIG"] == "/etc/bottleneckd/web-config.yml"
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert mounts["web-config"] == "/etc/bottleneckd" and volumes["web-config"]["secret"]["secretName"]
    init = spec["initContainers"][0]  # the only root step: chown of the socket directory
    assert init["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN", "FOWNER"]}


def test_every_environment_variable_the_chart_sets_is_an_option_of_serve():
    """The chart configures the exporter through BOTTLENECKD_* variables only: each must be one
    that the command line reads (a misspelt one would be silently ignored)."""
    from bottleneckd.cli.main import cli

    known = {p.envvar for cmd in (cli, cli.commands["serve"]) for p in cmd.params if getattr(p, "envvar", None)}
    known |= {"BOTTLENECKD_SOCKET"}  # the channel's own (channel/socket_path.py)
    for variant in VARIANTS.values():
        for spec in pod_specs(render(variant)):
            for c in spec.get("initContainers", []) + spec["containers"]:
                for e in c.get("env", []):
                    if e["name"].startswith("BOTTLENECKD_"):
                        assert e["name"] in known, e["name"]


def test_mtls_probes_check_the_port_and_the_sidecar_is_a_native_sidecar():
    docs = render(VARIANTS["sidecar-only-mtls"])
    assert "DaemonSet" not in {d["kind"] for d in docs}
    job = next(d for d in docs if d["kind"] == "Job")
    spec = job["spec"]["template"]["spec"]
    side = next(c for c in spec["initContainers"] if c["name"] == "bottleneckd")
    assert side["restartPolicy"] == "Always" and "tcpSocket" in side["livenessProbe"]  # no client cert for kubelet
    assert spec["shareProcessNamespace"] is True and spec["securityContext"]["runAsNonRoot"] is True
    trainer = next(c for c in spec["containers"] if c["name"] == "trainer")
    env = {e["name"] for e in trainer["env"]}
    assert {"BOTTLENECKD_SOCKET", "POD_NAME", "POD_NAMESPACE", "NODE_NAME"} <= env


def test_the_pod_monitor_scrapes_the_exporter_pods_as_job_bottleneckd_over_tls():
    docs = render({"sidecar": {"enabled": True}})
    pm = next(d for d in docs if d["kind"] == "PodMonitor")
    ep = pm["spec"]["podMetricsEndpoints"][0]
    assert ep["port"] == "metrics" and ep["scheme"] == "https" and ep["honorLabels"] is True
    assert pm["spec"]["jobLabel"] == "app.kubernetes.io/name"  # job="bottleneckd", as the rules expect
    sel = pm["spec"]["selector"]["matchLabels"]
    for spec_owner in (d for d in docs if d["kind"] in ("DaemonSet", "Job")):
        labels = spec_owner["spec"]["template"]["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in sel.items()) and labels["app.kubernetes.io/name"] == "bottleneckd"
    assert not [d for d in docs if d["kind"] == "ServiceMonitor"]
    plain = next(d for d in render(VARIANTS["plain-http"]) if d["kind"] == "PodMonitor")
    assert plain["spec"]["podMetricsEndpoints"][0]["scheme"] == "http"


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (.ci/run installs it)")
def test_the_prometheus_rule_is_the_tested_rules_file_with_runbooks_absent_and_throttling(tmp_path):
    copy = CHART / "rules" / "bottleneckd.rules.yml"
    assert copy.read_text() == (ROOT / "deploy/prometheus/rules.yml").read_text(), "copy rules.yml into the chart"
    rule = next(d for d in render({}) if d["kind"] == "PrometheusRule")
    f = tmp_path / "rules.yml"
    f.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    r = subprocess.run(["promtool", "check", "rules", str(f)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    alerts = [x for g in rule["spec"]["groups"] for x in g["rules"] if "alert" in x]
    runbooks = (ROOT / "docs" / "runbooks.md").read_text().lower()
    for a in alerts:
        url = a["annotations"].get("runbook_url", "")
        assert url.endswith("#" + a["alert"].lower()), a["alert"]
        assert f"## {a['alert'].lower()}\n" in runbooks, f"docs/runbooks.md has no section {a['alert']}"
    exprs = " ".join(a["expr"] for a in alerts)
    assert "absent(" in exprs and "bottleneckd_gpu_compute_throttle" in exprs


def test_the_dashboard_config_map_is_for_grafanas_sidecar_and_is_the_generated_dashboard():
    cm = next(d for d in render({}) if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard"))
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(cm["data"]["bottleneckd.json"]) == json.loads((ROOT / "dashboards/bottleneckd.json").read_text())


def test_a_created_secret_needs_the_web_config():
    with pytest.raises(helm.HelmError) as e:
        render({"webConfig": {"create": True, "files": {"tls.crt": "x"}}})
    assert "web-config.yml" in str(e.value)
    secret = next(d for d in render(VARIANTS["created-secret"]) if d["kind"] == "Secret")
    assert set(secret["stringData"]) == {"web-config.yml", "tls.crt"}
