"""The Kubernetes manifests never expose /metrics unauthenticated beyond the pod."""

import yaml

from tests.conftest import ROOT


def _sidecar_args(rel: str) -> list[str]:
    docs = [d for d in yaml.safe_load_all((ROOT / rel).read_text()) if d]
    for d in docs:
        spec = d["spec"].get("template", {}).get("spec", d["spec"])
        for c in spec.get("containers", []):
            if c["name"] == "bottleneckd":
                return c["args"]
    raise AssertionError(f"{rel}: no bottleneckd container")


def test_manifests_bind_loopback_or_the_pod_ip_with_a_web_config():
    for rel in ("deploy/kubernetes/training-pod-sidecar.yaml", "deploy/kubernetes/daemonset.yaml"):
        args = _sidecar_args(rel)
        bind = args[args.index("--bind") + 1]
        host = bind.rsplit(":", 1)[0]
        assert host not in ("0.0.0.0", "::", "[::]", ""), f"{rel}: wildcard bind {bind}"
        if host not in ("127.0.0.1", "localhost", "[::1]"):
            assert host == "$(POD_IP)", f"{rel}: {bind}"
            assert "--web-config" in args, f"{rel}: {bind} reachable from the cluster without TLS/auth"
