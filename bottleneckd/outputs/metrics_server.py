"""The exporter's HTTP(S) server, wired once for every command that serves metrics.

Built on prometheus-client's ``ThreadingWSGIServer`` (a thread per connection, one request per
connection) and its WSGI app; we add only what the library lacks: the other endpoints (``/`` a
landing page, ``/-/healthy`` and ``/healthz`` liveness, ``/-/ready`` readiness, 404 elsewhere),
basic auth, the TLS handshake in the connection's own thread, and bounds that keep /metrics
answering under idle, slow and many clients (outputs/connections.py). The web config is the
Prometheus exporter-toolkit format (outputs/web_config.py).
"""

from __future__ import annotations

import base64
import hashlib
import io
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR, make_wsgi_app
from prometheus_client.core import CollectorRegistry
from prometheus_client.exposition import ThreadingWSGIServer

from bottleneckd.model.errors import InputError
from bottleneckd.model.protocol import Event
from bottleneckd.outputs.connections import REQUEST_TIMEOUT, RESPONSE_TIMEOUT, Connections
from bottleneckd.outputs.exporter import SnapshotCollector
from bottleneckd.outputs.port import DEFAULT_PORT
from bottleneckd.outputs.web_config import WebConfig, load_web_config

if TYPE_CHECKING:
    from bottleneckd.advice.stage import Snapshot

__all__ = ["WebConfig", "load_web_config", "serve_metrics", "stop_metrics", "parse_bind", "DEFAULT_PORT"]

log = logging.getLogger(__name__)

#: the listen backlog: 50 scrapers connecting at the same moment all get in
BACKLOG = 128
#: paths that answer without credentials: they say only whether the exporter is up (a kubelet
#: probe cannot send a password)
HEALTH_PATHS = ("/-/healthy", "/healthz", "/-/ready")
#: successful logins remembered (a bcrypt check takes 0.1 to 0.5 s here; exporter-toolkit caches too)
AUTH_CACHE = 64

LANDING = """<!doctype html>
<html><head><meta charset="utf-8"><title>bottleneckd exporter</title></head>
<body><h1>bottleneckd</h1>
<p>What limits a deep-learning training job, as Prometheus metrics.</p>
<ul><li><a href="metrics">/metrics</a>: the exposition</li>
<li><a href="-/healthy">/-/healthy</a> (also /healthz): liveness</li>
<li><a href="-/ready">/-/ready</a>: readiness (200 once a first sample is diagnosed)</li></ul>
<p>Version {version}.</p></body></html>
"""


class MetricsSource(Protocol):
    """What the exporter reads: a live sidecar, or a trace being replayed."""

    def latest(self) -> Snapshot | None: ...

    def steps(self) -> int: ...

    def events(self) -> list[Event]: ...


def _auth(app: Callable, users: dict[str, str]) -> Callable:
    import bcrypt  # noqa: PLC0415

    good: dict[str, None] = {}  # digests of credentials that passed, oldest first
    lock = threading.Lock()

    def wrapped(environ: dict, start_response: Callable) -> Any:
        header = environ.get("HTTP_AUTHORIZATION", "")
        if environ.get("PATH_INFO") in HEALTH_PATHS:
            return app(environ, start_response)
        if header.startswith("Basic "):
            try:
                user, _, pw = base64.b64decode(header[6:], validate=True).decode().partition(":")
                h = users.get(user)
                key = hashlib.sha256(f"{user}\0{pw}\0{h}".encode()).hexdigest()
                with lock:
                    ok = key in good
                if h and (ok or bcrypt.checkpw(pw.encode(), h.encode())):
                    with lock:
                        good[key] = None
                        while len(good) > AUTH_CACHE:
                            del good[next(iter(good))]
                    return app(environ, start_response)
            except (ValueError, UnicodeError):
                pass
        start_response(
            "401 Unauthorized", [("WWW-Authenticate", 'Basic realm="bottleneckd"'), ("Content-Type", "text/plain")]
        )
        return [b"unauthorized\n"]

    return wrapped


def _routes(metrics: Callable, source: MetricsSource) -> Callable:
    from bottleneckd import __version__

    landing = LANDING.format(version=__version__).encode()

    def app(environ: dict, start_response: Callable) -> Any:
        path = environ.get("PATH_INFO") or "/"
        if path == "/metrics":
            return metrics(environ, start_response)
        if path in ("/-/healthy", "/healthz"):
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"ok\n"]
        if path == "/-/ready":
            ready = source.latest() is not None
            start_response("200 OK" if ready else "503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b"ready\n" if ready else b"no sample diagnosed yet\n"]
        if path == "/":
            start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
            return [landing]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found: the metrics are at /metrics\n"]

    return app


class _DeadlineReader(io.RawIOBase):
    """Reads a connection against one deadline for the whole request: a client that sends one
    header line every few seconds runs out of time as surely as one that sends nothing."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("request not received in time")
        self._sock.settimeout(left)
        return self._sock.recv_into(b)


class _Handler(WSGIRequestHandler):
    timeout = REQUEST_TIMEOUT

    def setup(self) -> None:
        super().setup()
        deadline = self.server.connections.deadline(self.request)  # type: ignore[attr-defined]
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, deadline))

    def parse_request(self) -> bool:
        ok = super().parse_request()  # the request line and headers are in: the client is no longer idle
        self.server.connections.answered(self.request)  # type: ignore[attr-defined]
        self.connection.settimeout(RESPONSE_TIMEOUT)  # for the whole reply (sendall's timeout is total)
        return ok

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class MetricsServer(ThreadingWSGIServer):
    """A thread per connection within the bounds of ``Connections``; TLS handshakes in those
    threads, against the same deadline as the request."""

    request_queue_size = BACKLOG
    ssl_context: ssl.SSLContext | None = None
    connections: Connections

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.connections.admit(request, client_address):
            super().shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        if self.ssl_context is not None:
            try:
                request = self.ssl_context.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
                self.connections.replace(request)
                request.settimeout(max(0.01, self.connections.deadline(request) - time.monotonic()))
                request.do_handshake()  # one deadline for the whole handshake (CPython's ssl)
            except (OSError, ssl.SSLError, ValueError) as e:
                log.debug("TLS handshake with %s failed: %s", client_address, e)
                self.shutdown_request(request)
                return
        super().process_request_thread(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.connections.release(request)  # before the close: the descriptor may be reused at once
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("connection from %s ended with an error", client_address, exc_info=True)


def parse_bind(bind: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9612`` for IPv6), or one InputError."""
    host, _, port = bind.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise InputError(
            f"--bind {bind!r}: expected HOST:PORT with a port from 1 to 65535 (0: any free port), "
            f"e.g. 127.0.0.1:{DEFAULT_PORT}"
        )
    return host.strip("[]"), int(port)


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve beyond this machine


def registry_for(source: MetricsSource, host_detail: bool = False) -> CollectorRegistry:
    """bottleneckd's families, the energy meter's where the source has one, and the process's own
    (CPU, memory, file descriptors, Python's GC: prometheus-client's standard collectors)."""
    registry = CollectorRegistry(auto_describe=False)
    machine = getattr(source, "machine", None)
    channel = getattr(source, "channel", None)  # the hook channel's counters (a live run's; runtime/run.py)
    registry.register(
        SnapshotCollector(source.latest, source.steps, source.events, channel, machine=machine, host_detail=host_detail)
    )
    energy = getattr(source, "energy", None)
    if energy is not None:  # a run's energy meter (runtime/run.py); a bare snapshot source has none
        from bottleneckd.outputs.energy import EnergyCollector

        registry.register(EnergyCollector(energy))
    for c in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(c)
    return registry


def serve_metrics(
    source: MetricsSource, bind: str, web_config: WebConfig | None = None, *, host_detail: bool = False
) -> MetricsServer:
    """Listen on ``bind`` (raises InputError before anything else starts when it cannot) and serve
    ``source``'s metrics from a daemon thread. ``shutdown()`` then ``server_close()`` stop it.
    ``web_config``: as ``load_web_config`` returned it (read before anything starts)."""
    host, port = parse_bind(bind)
    cfg = web_config or WebConfig("")
    if cfg.tls is None and not cfg.users and not _loopback(host):
        log.warning(
            "serving %s without TLS or authentication: anyone who reaches it reads the job's metrics "
            "(--web-config, deploy/prometheus/web-config.example.yml)",
            bind,
        )
    app = _routes(make_wsgi_app(registry_for(source, host_detail)), source)
    if cfg.users:
        app = _auth(app, dict(cfg.users))
    ctx = cfg.tls

    class Server(MetricsServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        ssl_context = ctx
        connections = Connections()

    try:
        server = make_server(host, port, app, server_class=Server, handler_class=_Handler)
    except (OSError, OverflowError) as e:
        why = getattr(e, "strerror", None) or str(e)
        raise InputError(f"--bind {bind}: cannot listen ({why}); choose another address or port") from e
    threading.Thread(target=server.serve_forever, name="bottleneckd-exporter", daemon=True).start()
    return server


def url_of(server: MetricsServer, bind: str) -> str:
    """Where ``server`` answers, with the port it really got (``--bind HOST:0``)."""
    host = bind.rpartition(":")[0]
    return f"http{'s' if server.ssl_context else ''}://{host}:{server.server_address[1]}/metrics"


def stop_metrics(server: MetricsServer | None) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()
