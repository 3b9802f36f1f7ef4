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
from bottleneckd.outputs.metrics_server import REQUEST_TIMEOUT, load_web_config, serve_metrics, stop_metrics
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


#: a server blocked by a stalled client answers only once that client's request times out: a
#: scrape faster than half of it was not blocked (a margin that holds on a busy 2-core machine,
#: where 2 s did not always)
BLOCKED = REQUEST_TIMEOUT


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
        body = scrape(f"http://127.0.0.1:{port}/metrics", timeout=BLOCKED * 0.8)
        assert time.monotonic() - t0 < BLOCKED / 2 and "bottleneckd_utilization_ratio" in body
        assert (
            'bottleneckd_mitigation_applied_timestamp_seconds{changes_semantics="false",mitigation="channels_last"}'
            in body
        )
    finally:
        for s in stalled:
            s.close()
        stop_metrics(server)


@pytest.mark.slow
def test_the_same_on_the_tls_port(tmp_path, pki):
    cfg = tmp_path / "web.yml"
    cfg.write_text(f"tls_server_config:\n  cert_file: {pki}/server.pem\n  key_file: {pki}/server.key\n")
    port = free_port()
    server = serve_metrics(Source(), f"127.0.0.1:{port}", load_web_config(str(cfg)))
    stalled = _stalled_clients(port)  # plain bytes and silence where a TLS handshake belongs
    try:
        t0 = time.monotonic()
        body = scrape(
            f"https://127.0.0.1:{port}/metrics",
            ssl.create_default_context(cafile=str(pki / "ca.pem")),
            timeout=BLOCKED * 0.8,
        )
        assert time.monotonic() - t0 < BLOCKED / 2 and "bottleneckd_utilization_ratio" in body
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
        SnapshotCollector(
            lambda: p.latest, lambda: -972, lambda: [Event("mitigation_applied", "x", math.nan)], host_detail=True
        )
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


# --- issue 25 item 3: idle, slow and certificate-less clients never keep a scrape out ----------


def _scrapes(url: str, n: int, ctx: ssl.SSLContext | None = None, timeout: float = 5) -> int:
    ok = 0
    for _ in range(n):
        try:
            ok += "bottleneckd_sampler_up" in scrape(url, ctx, timeout=timeout)
        except (OSError, ssl.SSLError):
            pass
    return ok


@pytest.mark.slow
def test_sixty_four_idle_connections_do_not_deny_metrics():
    """The 64 connection slots held by idle sockets from the scraper's own address: once they are
    stale (STALE_AFTER), each scrape takes the slot of the oldest (before: 0 of 20,759 scrapes)."""
    from bottleneckd.outputs.connections import MAX_CONNECTIONS, STALE_AFTER

    port = free_port()
    server = serve_metrics(Source(), f"127.0.0.1:{port}")
    idle = []
    try:
        for _ in range(MAX_CONNECTIONS):
            idle.append(socket.create_connection(("127.0.0.1", port)))
        time.sleep(STALE_AFTER + 0.5)
        assert _scrapes(f"http://127.0.0.1:{port}/metrics", 20) == 20
    finally:
        for s in idle:
            s.close()
        stop_metrics(server)


@pytest.mark.slow
def test_one_address_keeps_at_most_a_few_idle_connections():
    from bottleneckd.outputs.connections import MAX_STALE_PER_CLIENT, STALE_AFTER

    port = free_port()
    server = serve_metrics(Source(), f"127.0.0.1:{port}")
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
    try:
        # stale counts from the server's accept, not the client's connect: wait for all 20 accepted
        deadline = time.monotonic() + 10
        while server.connections.count() < 20:
            assert time.monotonic() < deadline, server.connections.count()
            time.sleep(0.05)
        time.sleep(STALE_AFTER + 0.5)
        idle.append(socket.create_connection(("127.0.0.1", port)))  # one more: the oldest stale ones go
        deadline = time.monotonic() + 10  # ... once the server accepts it (0.5 s on a quiet machine)
        while server.connections.evicted < 20 - (MAX_STALE_PER_CLIENT - 1) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # the evicted sockets' shutdowns reach the clients
        open_ = 0
        for s in idle[:20]:
            s.settimeout(0.2)
            try:
                open_ += s.recv(1) != b""  # an evicted socket reads end-of-file at once
            except TimeoutError:
                open_ += 1  # still open: nothing to read
            except OSError:
                pass
        assert open_ == MAX_STALE_PER_CLIENT - 1  # with the 21st, the address holds MAX_STALE_PER_CLIENT
    finally:
        for s in idle:
            s.close()
        stop_metrics(server)


@pytest.mark.slow
def test_a_client_sending_a_header_line_every_few_seconds_is_cut_at_the_request_deadline(monkeypatch):
    """The deadline covers the whole request: each header line used to reset the timeout, so a
    line every 5 s held the connection forever (0 scrapes in 40 s)."""
    import bottleneckd.outputs.connections as conns

    monkeypatch.setattr(conns, "REQUEST_TIMEOUT", 1.0)
    port = free_port()
    server = serve_metrics(Source(), f"127.0.0.1:{port}")
    slow = socket.create_connection(("127.0.0.1", port))
    try:
        slow.sendall(b"GET /metrics HTTP/1.1\r\n")
        t0 = time.monotonic()
        closed_after = None
        for k in range(12):  # a header line every 0.5 s, 6 s in all: six times the deadline
            time.sleep(0.5)
            try:
                slow.sendall(f"X-Slow-{k}: {k}\r\n".encode())
                slow.settimeout(0.01)
                if slow.recv(1) == b"":
                    closed_after = time.monotonic() - t0
                    break
            except TimeoutError:
                continue
            except OSError:
                closed_after = time.monotonic() - t0
                break
        # cut near the 1 s deadline (2.5 s of slack for a loaded machine), not after the client's 6 s
        assert closed_after is not None and closed_after < 3.5, closed_after
        assert _scrapes(f"http://127.0.0.1:{port}/metrics", 3) == 3
    finally:
        slow.close()
        stop_metrics(server)


@pytest.mark.slow
def test_mtls_scrapes_get_through_certificate_less_clients_reopening_idle_sockets(tmp_path, pki):
    """Clients without a certificate open idle TLS connections in a loop, as many as the server has
    slots; a scraper with a certificate still gets nearly every scrape (before: 27 of ~16,600)."""
    import threading

    from bottleneckd.outputs.connections import MAX_CONNECTIONS

    cfg = tmp_path / "web.yml"
    cfg.write_text(
        f"tls_server_config:\n  cert_file: {pki}/server.pem\n  key_file: {pki}/server.key\n"
        f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {pki}/ca.pem\n"
    )
    port = free_port()
    server = serve_metrics(Source(), f"127.0.0.1:{port}", load_web_config(str(cfg)))
    stop = threading.Event()

    def flood() -> None:
        held: list[socket.socket] = []
        while not stop.is_set():
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=2))
            except OSError:
                time.sleep(0.05)
            while len(held) > MAX_CONNECTIONS:
                held.pop(0).close()  # reopen: the oldest goes, a new idle one comes
        for s in held:
            s.close()

    attacker = threading.Thread(target=flood, daemon=True)
    attacker.start()
    try:
        time.sleep(2.0)
        ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
        ctx.load_cert_chain(str(pki / "client.pem"), str(pki / "client.key"))
        got = _scrapes(f"https://127.0.0.1:{port}/metrics", 20, ctx, timeout=8)
        assert got >= 18, f"{got} of 20 scrapes"
    finally:
        stop.set()
        attacker.join(timeout=10)
        stop_metrics(server)


# --- issue 25 items 7 and 9: a web config of the wrong shape is one line at start, exit 2 -------

BAD_WEB_CONFIGS = [
    ("cert-file-list", "tls_server_config:\n  cert_file: [a]\n  key_file: k\n", "cert_file"),
    ("cert-file-int", "tls_server_config:\n  cert_file: 5\n  key_file: k\n", "cert_file"),  # not file descriptor 5
    ("key-file-map", "tls_server_config:\n  cert_file: c\n  key_file: {a: 1}\n", "key_file"),
    ("ca-file-bool", "tls_server_config:\n  cert_file: c\n  key_file: k\n  client_ca_file: true\n", "client_ca_file"),
    ("auth-type-list", "tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: [x]\n", "client_auth"),
    ("min-version-list", "tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: [TLS12]\n", "min_version"),
    ("max-version-int", "tls_server_config:\n  cert_file: c\n  key_file: k\n  max_version: 12\n", "max_version"),
    (
        "versions-crossed",
        "tls_server_config:\n  cert_file: {c}\n  key_file: {k}\n  min_version: TLS13\n  max_version: TLS12\n",
        "min_version TLS13 is above max_version TLS12",
    ),
    ("bcrypt-malformed", "basic_auth_users:\n  prom: '$2b$10$tooshort'\n", "basic_auth_users.prom"),
    ("bcrypt-plain-password", "basic_auth_users:\n  prom: secret\n", "not a bcrypt hash"),
    ("bcrypt-cost-too-high", "basic_auth_users:\n  prom: '$2b$31$" + "a" * 53 + "'\n", "cost 4 to 15"),
    ("user-with-colon", "basic_auth_users:\n  'a:b': '$2b$10$" + "a" * 53 + "'\n", "without ':'"),
    ("non-string-top-key", "1: x\ntls_server_config: null\n", "not supported"),
    ("tls-list", "tls_server_config: [a, b]\n", "tls_server_config"),
]


@pytest.mark.parametrize("name,body,words", BAD_WEB_CONFIGS, ids=[c[0] for c in BAD_WEB_CONFIGS])
def test_a_bad_web_config_value_is_one_line(tmp_path, pki, name, body, words):
    cfg = tmp_path / "web.yml"
    cfg.write_text(body.replace("{c}", str(pki / "server.pem")).replace("{k}", str(pki / "server.key")))
    with pytest.raises(InputError) as e:
        load_web_config(str(cfg))
    assert words in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.slow
def test_serve_refuses_a_bad_web_config_with_one_line_and_exit_2(tmp_path, cli_env):
    """Through the command line: no traceback, exit 2, nothing started (the TypeError of
    ``min_version: [TLS12]`` and the hash no password matches included)."""
    from tests.conftest import run_cli

    for name, body in (
        ("types", "tls_server_config:\n  cert_file: [a]\n  key_file: k\n"),
        ("hash", "basic_auth_users:\n  prom: '$2y$10$notahash'\n"),
        ("versions", "tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: [TLS12]\n"),
    ):
        cfg = tmp_path / f"{name}.yml"
        cfg.write_text(body)
        r = run_cli(["serve", "--web-config", str(cfg), "--duration", "1"], cli_env, timeout=60)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and str(cfg) in r.stderr, r.stderr


def test_a_good_bcrypt_hash_is_accepted_and_checked_once_per_credentials(tmp_path):
    bcrypt = pytest.importorskip("bcrypt")
    h = bcrypt.hashpw(b"pw", bcrypt.gensalt(4)).decode()
    cfg = tmp_path / "web.yml"
    cfg.write_text(f"basic_auth_users:\n  prom: '{h}'\n")
    assert load_web_config(str(cfg)).users == {"prom": h}
