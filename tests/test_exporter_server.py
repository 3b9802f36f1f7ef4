"""The exporter's server under slow, many and unauthorised clients (issue 16, items 4, 7, 8): one
idle connection or a partial request never blocks /metrics (plain and TLS); 50 scrapers at once
all get an answer; client certificates are verified when the web config says so; values no series
may hold are never exported."""

from __future__ import annotations

import concurrent.futures
import math
import socket
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from bottleneckd.diagnosis.pipeline import Pipeline
from bottleneckd.model.errors import InputError
from bottleneckd.model.protocol import Event
from bottleneckd.model.sample import Reading, Sample, SamplerStatus, StepPhases
from bottleneckd.outputs.exporter import SnapshotCollector
from bottleneckd.outputs.metrics_server import load_web_config, serve_metrics, stop_metrics
from bottleneckd.outputs.trace import read_trace
from tests.conftest import ROOT
from tests.prometheus_server import free_port

TRACE = ROOT / "tests/data/cpu_compute/trace.jsonl"


class Source:
    def __init__(self) -> None:
        header, samples = read_trace(str(TRACE))
        self.pipeline = Pipeline(header.peaks)
        for s in samples:
            self.pipeline(s)

    def latest(self):  # noqa: ANN201
        return self.pipeline.latest

    def steps(self) -> int:
        return 7

    def events(self) -> list:
        return [Event("mitigation_applied", "channels_last", 1.0e9)]


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, both signed by the CA."""
    d = tmp_path_factory.mktemp("pki")
    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        f"{d}/ca.key",
        "-out",
        f"{d}/ca.pem",
        "-days",
        "1",
        "-subj",
        "/CN=test-ca",
    )
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")):
        openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{d}/{name}.key",
            "-out",
            f"{d}/{name}.csr",
            "-subj",
            f"/CN={name}",
        )
        (d / f"{name}.ext").write_text(ext + "\n")
        openssl(
            "x509",
            "-req",
            "-in",
            f"{d}/{name}.csr",
            "-CA",
            f"{d}/ca.pem",
            "-CAkey",
            f"{d}/ca.key",
            "-CAcreateserial",
            "-out",
            f"{d}/{name}.pem",
            "-days",
            "1",
            "-extfile",
            f"{d}/{name}.ext",
        )
    return d


def scrape(url: str, ctx: ssl.SSLContext | None = None, timeout: float = 5) -> str:
    return urllib.request.urlopen(url, context=ctx, timeout=timeout).read().decode()


def _stalled_clients(port: int) -> list[socket.socket]:
    idle = socket.create_connection(("127.0.0.1", port))
    partial = socket.create_connection(("127.0.0.1", port))
    partial.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the end of the header
    return [idle, partial]


def test_an_idle_connection_or_a_partial_header_does_not_block_metrics():
    port = free_port()
    server = serve_metrics(Source(), f"127.0.0.1:{port}")
    stalled = _stalled_clients(port)
    try:
        t0 = time.monotonic()
        body = scrape(f"http://127.0.0.1:{port}/metrics", timeout=3)
        assert time.monotonic() - t0 < 2 and "bottleneckd_utilization_ratio" in body
        assert (
            'bottleneckd_mitigation_applied_timestamp_seconds{changes_semantics="false",mitigation="channels_last"}'
            in body
        )
    finally:
        for s in stalled:
            s.close()
        stop_metrics(server)


def test_the_same_on_the_tls_port(tmp_path, pki):
    cfg = tmp_path / "web.yml"
    cfg.write_text(f"tls_server_config:\n  cert_file: {pki}/server.pem\n  key_file: {pki}/server.key\n")
    port = free_port()
    server = serve_metrics(Source(), f"127.0.0.1:{port}", load_web_config(str(cfg)))
    stalled = _stalled_clients(port)  # plain bytes and silence where a TLS handshake belongs
    try:
        t0 = time.monotonic()
        body = scrape(
            f"https://127.0.0.1:{port}/metrics", ssl.create_default_context(cafile=str(pki / "ca.pem")), timeout=3
        )
        assert time.monotonic() - t0 < 2 and "bottleneckd_utilization_ratio" in body
    finally:
        for s in stalled:
            s.close()
        stop_metrics(server)


def test_fifty_concurrent_scrapers_all_get_an_answer():
    port = free_port()
    server = serve_metrics(Source(), f"127.0.0.1:{port}")
    try:
        with concurrent.futures.ThreadPoolExecutor(50) as pool:
            bodies = list(pool.map(lambda _: scrape(f"http://127.0.0.1:{port}/metrics", timeout=20), range(50)))
        assert len(bodies) == 50 and all("bottleneckd_sampler_up" in b for b in bodies)
    finally:
        stop_metrics(server)


def test_require_and_verify_client_cert(tmp_path, pki):
    cfg = tmp_path / "web.yml"
    cfg.write_text(
        f"tls_server_config:\n  cert_file: {pki}/server.pem\n  key_file: {pki}/server.key\n"
        f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {pki}/ca.pem\n"
    )
    port = free_port()
    server = serve_metrics(Source(), f"127.0.0.1:{port}", load_web_config(str(cfg)))
    url = f"https://127.0.0.1:{port}/metrics"
    try:
        anonymous = ssl.create_default_context(cafile=str(pki / "ca.pem"))
        with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
            scrape(url, anonymous, timeout=3)
        with_cert = ssl.create_default_context(cafile=str(pki / "ca.pem"))
        with_cert.load_cert_chain(str(pki / "client.pem"), str(pki / "client.key"))
        assert "bottleneckd_sampler_up" in scrape(url, with_cert)
        self_signed = tmp_path / "self"
        openssl(
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{self_signed}.key",
            "-out",
            f"{self_signed}.pem",
            "-days",
            "1",
            "-subj",
            "/CN=intruder",
        )
        intruder = ssl.create_default_context(cafile=str(pki / "ca.pem"))
        intruder.load_cert_chain(f"{self_signed}.pem", f"{self_signed}.key")
        with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
            scrape(url, intruder, timeout=3)
    finally:
        stop_metrics(server)


@pytest.mark.parametrize(
    "body,words",
    [
        (
            "tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: RequireAnyClientCert\n",
            "RequireAnyClientCert",
        ),
        (
            "tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: RequireAndVerifyClientCert\n",
            "client_ca_file",
        ),
        (
            "tls_server_config:\n  cert_file: c\n  key_file: k\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
            "cipher_suites",
        ),
        ("tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS9\n", "min_version"),
        ("http_server_config:\n  http2: true\n", "http_server_config"),
    ],
)
def test_what_is_not_implemented_is_refused(tmp_path, body, words):
    cfg = tmp_path / "web.yml"
    cfg.write_text(body)
    with pytest.raises(InputError) as e:
        load_web_config(str(cfg))
    assert words in str(e.value) and "\n" not in str(e.value)


def test_non_finite_and_negative_values_are_never_exported():
    src = Source()
    peaks = src.pipeline.peaks if hasattr(src.pipeline, "peaks") else read_trace(str(TRACE))[0].peaks
    p = Pipeline(peaks)
    bad = (
        Reading("cpu_compute", "host", "utilization", math.nan, "ratio"),
        Reading("cpu_memory", "host", "used", math.inf, "B"),
        Reading("storage_bandwidth", "vda", "read", -5.0, "B/s"),
        Reading("cpu_compute", "cpu0", "busy", 0.5, "ratio"),
    )
    p(
        Sample(
            time.time(),
            1.0,
            bad,
            StepPhases(3, -1.0, {"forward": math.nan}),
            (SamplerStatus("cpu_compute", True, math.inf),),
        )
    )
    reg = CollectorRegistry(auto_describe=False)
    reg.register(
        SnapshotCollector(lambda: p.latest, lambda: -972, lambda: [Event("mitigation_applied", "x", math.nan)])
    )
    text = generate_latest(reg).decode()
    values = [line.rsplit(" ", 1)[1] for line in text.splitlines() if line and not line.startswith("#")]
    assert values and not [v for v in values if v in ("NaN", "+Inf", "-Inf") or v.startswith("-")], text
    assert 'bottleneckd_cpu_compute_busy_ratio{device="cpu0"} 0.5' in text  # the good value is still there


def test_the_daemonset_never_serves_every_interface_without_auth():
    import yaml

    ds = next(yaml.safe_load_all((ROOT / "deploy/kubernetes/daemonset.yaml").read_text()))
    c = ds["spec"]["template"]["spec"]["containers"][0]
    args = c["args"]
    bind = args[args.index("--bind") + 1]
    assert not bind.startswith("0.0.0.0") and "--web-config" in args
    mounted = {m["mountPath"] for m in c["volumeMounts"]}
    assert str(Path(args[args.index("--web-config") + 1]).parent) in mounted
