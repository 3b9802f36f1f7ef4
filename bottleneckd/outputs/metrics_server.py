"""The exporter's HTTP(S) server, wired once for every command that serves metrics.

Built on prometheus-client's ``ThreadingWSGIServer`` (a thread per connection) and its WSGI app;
we add only what the library lacks: basic auth, timeouts and a bound on connections. The TLS
handshake runs in the connection's own thread with a timeout (prometheus-client's
``start_wsgi_server`` wraps the listening socket, so the handshake runs in the accepting thread
and one idle TLS client holds up every scrape). The web config is the Prometheus exporter-toolkit
format; a key we do not implement is refused with one line, never silently ignored.
"""

from __future__ import annotations

import base64
import logging
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.core import CollectorRegistry
from prometheus_client.exposition import ThreadingWSGIServer

from bottleneckd.diagnosis.pipeline import Snapshot
from bottleneckd.model.errors import InputError
from bottleneckd.model.protocol import Event
from bottleneckd.outputs.exporter import SnapshotCollector

log = logging.getLogger(__name__)

#: seconds a client may take to send its request (or finish the TLS handshake, or read the reply)
REQUEST_TIMEOUT = 10.0
#: connections served at once; more are closed at once (each idle one holds a thread until its timeout)
MAX_CONNECTIONS = 64
#: the listen backlog: 50 scrapers connecting at the same moment all get in
BACKLOG = 128

CLIENT_AUTH = {  # exporter-toolkit client_auth_type -> what Python's ssl can do
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
TLS_KEYS = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version"}


class MetricsSource(Protocol):
    """What the exporter reads: a live sidecar, or a trace being replayed."""

    def latest(self) -> Snapshot | None: ...

    def steps(self) -> int: ...

    def events(self) -> list[Event]: ...


@dataclass(frozen=True)
class WebConfig:
    """A web config read and checked once, before anything starts: the TLS context (its files
    loaded) and the basic-auth users, ready for ``serve_metrics``."""

    path: str
    tls: ssl.SSLContext | None = None
    users: Mapping[str, str] | None = None


def load_web_config(path: str) -> WebConfig:
    """tls_server_config (cert_file, key_file, client_auth_type, client_ca_file, min_version,
    max_version) and basic_auth_users (bcrypt hashes); anything else is refused."""
    import yaml  # noqa: PLC0415

    from bottleneckd.model.files import read_text

    try:
        doc = yaml.safe_load(read_text(path, "web config")) or {}
    except yaml.YAMLError as e:
        raise InputError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from e
    if not isinstance(doc, dict):
        raise InputError(f"{path}: expected a mapping with tls_server_config and/or basic_auth_users")
    extra = set(doc) - {"tls_server_config", "basic_auth_users"}
    if extra:
        raise InputError(
            f"{path}: {sorted(extra)[0]}: not supported by bottleneckd (only tls_server_config and basic_auth_users); remove it"
        )
    tls = doc.get("tls_server_config")
    if tls is not None:
        if not (isinstance(tls, dict) and tls.get("cert_file") and tls.get("key_file")):
            raise InputError(f"{path}: tls_server_config: needs cert_file and key_file")
        extra = set(tls) - TLS_KEYS
        if extra:
            raise InputError(f"{path}: tls_server_config.{sorted(extra)[0]}: not supported by bottleneckd; remove it")
        auth = tls.get("client_auth_type", "NoClientCert")
        if auth not in CLIENT_AUTH:
            raise InputError(
                f"{path}: tls_server_config.client_auth_type {auth!r}: not supported (a certificate is either verified "
                f"against client_ca_file or not asked for); use one of {', '.join(CLIENT_AUTH)}"
            )
        if auth != "NoClientCert" and not tls.get("client_ca_file"):
            raise InputError(
                f"{path}: tls_server_config.client_auth_type {auth}: needs client_ca_file to verify client certificates against"
            )
        for key in ("min_version", "max_version"):
            if key in tls and tls[key] not in TLS_VERSIONS:
                raise InputError(f"{path}: tls_server_config.{key} {tls[key]!r}: use one of {', '.join(TLS_VERSIONS)}")
    users = doc.get("basic_auth_users")
    if users is not None:
        if not isinstance(users, dict) or not all(isinstance(v, str) and v.startswith("$2") for v in users.values()):
            raise InputError(f"{path}: basic_auth_users: expected user: bcrypt-hash pairs (htpasswd -nBC 10 USER)")
        try:
            import bcrypt  # noqa: F401, PLC0415
        except ImportError as e:
            raise InputError(f"{path}: basic_auth_users needs the bcrypt package: pip install bcrypt") from e
    return WebConfig(path, tls_context(tls, path) if tls is not None else None, dict(users) if users else None)


def tls_context(tls: dict[str, Any], where: str) -> ssl.SSLContext:
    import os
    import stat

    for key in ("cert_file", "key_file", "client_ca_file"):
        if tls.get(key):
            try:
                regular = stat.S_ISREG(os.stat(tls[key]).st_mode)
            except OSError as e:
                raise InputError(f"{where}: tls_server_config.{key} {tls[key]}: cannot read ({e.strerror})") from e
            if not regular:  # a FIFO would hang the start
                raise InputError(f"{where}: tls_server_config.{key} {tls[key]}: not a regular file")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(tls["cert_file"], tls["key_file"])
        mode = CLIENT_AUTH[tls.get("client_auth_type", "NoClientCert")]
        if mode != ssl.CERT_NONE:
            ctx.load_verify_locations(cafile=tls["client_ca_file"])
            ctx.verify_mode = mode
    except (OSError, ssl.SSLError) as e:
        raise InputError(f"{where}: tls_server_config: cannot load a certificate, key or CA file ({e})") from e
    if "min_version" in tls:
        ctx.minimum_version = TLS_VERSIONS[tls["min_version"]]
    if "max_version" in tls:
        ctx.maximum_version = TLS_VERSIONS[tls["max_version"]]
    return ctx


def _auth_app(app: Callable, users: dict[str, str]) -> Callable:
    import bcrypt  # noqa: PLC0415

    def wrapped(environ: dict, start_response: Callable) -> Any:
        header = environ.get("HTTP_AUTHORIZATION", "")
        if header.startswith("Basic "):
            try:
                user, _, pw = base64.b64decode(header[6:]).decode().partition(":")
                h = users.get(user)
                if h and bcrypt.checkpw(pw.encode(), h.encode()):
                    return app(environ, start_response)
            except (ValueError, UnicodeDecodeError):
                pass
        start_response(
            "401 Unauthorized", [("WWW-Authenticate", 'Basic realm="bottleneckd"'), ("Content-Type", "text/plain")]
        )
        return [b"unauthorized\n"]

    return wrapped


class _Handler(WSGIRequestHandler):
    timeout = REQUEST_TIMEOUT  # StreamRequestHandler puts it on the connection: a partial request times out

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class MetricsServer(ThreadingWSGIServer):
    """A thread per connection, at most MAX_CONNECTIONS at once, TLS handshakes in those threads."""

    request_queue_size = BACKLOG
    ssl_context: ssl.SSLContext | None = None
    _slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)  # full: refuse rather than queue behind idle clients
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            if self.ssl_context is not None:
                request.settimeout(REQUEST_TIMEOUT)
                try:
                    request = self.ssl_context.wrap_socket(request, server_side=True)
                except (OSError, ssl.SSLError) as e:
                    log.debug("TLS handshake with %s failed: %s", client_address, e)
                    self.shutdown_request(request)
                    return
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("connection from %s ended with an error", client_address, exc_info=True)


def parse_bind(bind: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9400`` for IPv6), or one InputError."""
    host, _, port = bind.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise InputError(
            f"--bind {bind!r}: expected HOST:PORT with a port from 1 to 65535 (0: any free port), e.g. 127.0.0.1:9400"
        )
    return host.strip("[]"), int(port)


def serve_metrics(source: MetricsSource, bind: str, web_config: WebConfig | str | None = None) -> MetricsServer:
    """Listen on ``bind`` (raises InputError before anything else starts when it cannot) and serve
    ``source``'s metrics from a daemon thread. ``shutdown()`` then ``server_close()`` stop it.
    ``web_config``: as ``load_web_config`` returned it, or its path."""
    host, port = parse_bind(bind)
    cfg = load_web_config(web_config) if isinstance(web_config, str) else web_config or WebConfig("")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(
        SnapshotCollector(
            source.latest, source.steps, source.events, getattr(getattr(source, "receiver", None), "counters", None)
        )
    )
    if getattr(source, "energy", None) is not None:  # a live sidecar's energy meter (a replayed trace has none)
        from bottleneckd.outputs.energy import EnergyCollector

        registry.register(EnergyCollector(source.energy))
    app = make_wsgi_app(registry)
    if cfg.users:
        app = _auth_app(app, dict(cfg.users))
    ctx = cfg.tls

    class Server(MetricsServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        ssl_context = ctx
        _slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    try:
        server = make_server(host, port, app, server_class=Server, handler_class=_Handler)
    except (OSError, OverflowError) as e:
        why = getattr(e, "strerror", None) or str(e)
        raise InputError(f"--bind {bind}: cannot listen ({why}); choose another address or port") from e
    threading.Thread(target=server.serve_forever, name="bottleneckd-exporter", daemon=True).start()
    return server


def stop_metrics(server: MetricsServer | None) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()
