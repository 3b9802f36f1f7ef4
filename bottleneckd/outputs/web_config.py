"""The exporter's web config (Prometheus exporter-toolkit format: tls_server_config,
basic_auth_users), read and checked once before anything starts. Every mistake is one line naming
the key: a key we do not implement, a value of the wrong type (``cert_file: [a]``, ``cert_file:
5``, which Python's ssl would take as file descriptor 5), a bcrypt hash that can never match (that
user would get 401 forever), a TLS version range no handshake can satisfy."""

from __future__ import annotations

import os
import re
import ssl
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bottleneckd.model.errors import InputError

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
TLS_FILES = ("cert_file", "key_file", "client_ca_file")
TLS_KEYS = {*TLS_FILES, "client_auth_type", "min_version", "max_version"}
#: a bcrypt hash as htpasswd -B and Python's bcrypt write it: $2a$/$2b$/$2y$, a two-digit cost,
#: 22 characters of salt and 31 of hash in bcrypt's base-64 alphabet
BCRYPT_HASH = re.compile(r"\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}")
#: bcrypt accepts 4 to 31, but each step doubles the time of a check (measured on this project's
#: shared 2-core VM: cost 10 0.48 s, cost 12 2.0 s), and a cost of 16 or more would hold a scrape
#: (and the start) for tens of seconds: refused
BCRYPT_COSTS = range(4, 16)


@dataclass(frozen=True)
class WebConfig:
    """A web config read and checked once, before anything starts: the TLS context (its files
    loaded) and the basic-auth users, ready for ``serve_metrics``."""

    path: str
    tls: ssl.SSLContext | None = None
    users: Mapping[str, str] | None = None
    #: client certificates are required: a probe without one cannot complete a handshake
    client_cert_required: bool = False


def _choice(tls: dict[str, Any], key: str, choices: Mapping[str, Any], where: str, default: str | None = None) -> Any:
    value = tls.get(key, default)
    if value is None:
        return None
    if not isinstance(value, str) or value not in choices:
        raise InputError(f"{where}: tls_server_config.{key} {value!r}: use one of {', '.join(choices)}")
    return value


def check_tls(tls: Any, where: str) -> dict[str, Any]:
    """``tls`` (a web config's ``tls_server_config``), checked: raises InputError naming the key when
    it is not a mapping, has a key bottleneckd does not support, or a file that is not a path."""
    if not isinstance(tls, dict):
        raise InputError(f"{where}: tls_server_config: expected a mapping with cert_file and key_file")
    extra = sorted(str(k) for k in set(tls) - TLS_KEYS)
    if extra:
        raise InputError(f"{where}: tls_server_config.{extra[0]}: not supported by bottleneckd; remove it")
    for key in TLS_FILES:
        if key in tls and not (isinstance(tls[key], str) and tls[key]):
            raise InputError(f"{where}: tls_server_config.{key} {tls[key]!r}: expected the path of a file")
    if not (tls.get("cert_file") and tls.get("key_file")):
        raise InputError(f"{where}: tls_server_config: needs cert_file and key_file")
    auth = tls.get("client_auth_type", "NoClientCert")
    if not isinstance(auth, str) or auth not in CLIENT_AUTH:
        raise InputError(
            f"{where}: tls_server_config.client_auth_type {auth!r}: not supported (a certificate is either verified "
            f"against client_ca_file or not asked for); use one of {', '.join(CLIENT_AUTH)}"
        )
    if auth != "NoClientCert" and not tls.get("client_ca_file"):
        raise InputError(
            f"{where}: tls_server_config.client_auth_type {auth}: needs client_ca_file "
            "to verify client certificates against"
        )
    low = _choice(tls, "min_version", TLS_VERSIONS, where)
    high = _choice(tls, "max_version", TLS_VERSIONS, where)
    if low and high and TLS_VERSIONS[low] > TLS_VERSIONS[high]:
        raise InputError(
            f"{where}: tls_server_config: min_version {low} is above max_version {high}: no handshake could succeed"
        )
    return tls


def check_users(users: Any, where: str) -> dict[str, str]:
    """``users`` (``basic_auth_users``: user -> bcrypt hash), checked: raises InputError naming the
    user when a name or hash is not usable, or when bcrypt is not installed."""
    if not isinstance(users, dict) or not users:
        raise InputError(f"{where}: basic_auth_users: expected user: bcrypt-hash pairs (htpasswd -nBC 10 USER)")
    for user, h in users.items():
        if not isinstance(user, str) or not user or ":" in user:
            raise InputError(f"{where}: basic_auth_users: {user!r}: a user name is a string without ':'")
        m = BCRYPT_HASH.fullmatch(h) if isinstance(h, str) else None
        if m is None or int(m.group(1)) not in BCRYPT_COSTS:
            raise InputError(
                f"{where}: basic_auth_users.{user}: not a bcrypt hash of cost 4 to 15 ($2b$10$ and 53 characters), "
                f"so no password could ever match; make one with htpasswd -nBC 10 {user}"
            )
    try:
        import bcrypt  # noqa: PLC0415
    except ImportError as e:
        raise InputError(f"{where}: basic_auth_users needs the bcrypt package: pip install bcrypt") from e
    for user, h in users.items():
        try:
            bcrypt.checkpw(b"", h.encode())  # a malformed salt raises here, not at the first login
        except ValueError as e:
            raise InputError(f"{where}: basic_auth_users.{user}: bcrypt refuses the hash ({e})") from e
    return dict(users)


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
    extra = sorted(str(k) for k in set(doc) - {"tls_server_config", "basic_auth_users"})
    if extra:
        raise InputError(
            f"{path}: {extra[0]}: not supported by bottleneckd (only tls_server_config and basic_auth_users); remove it"
        )
    tls = check_tls(doc["tls_server_config"], path) if doc.get("tls_server_config") is not None else None
    users = check_users(doc["basic_auth_users"], path) if doc.get("basic_auth_users") is not None else None
    required = tls is not None and tls.get("client_auth_type") == "RequireAndVerifyClientCert"
    return WebConfig(path, tls_context(tls, path) if tls is not None else None, users, required)


def tls_context(tls: dict[str, Any], where: str) -> ssl.SSLContext:
    """The server's TLS context from a checked ``tls_server_config``. Raises InputError when a file
    cannot be read or is not a regular file, a certificate or key does not load, or this OpenSSL
    does not offer a TLS version asked for."""
    for key in TLS_FILES:
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
    try:
        if "min_version" in tls:
            ctx.minimum_version = TLS_VERSIONS[tls["min_version"]]
        if "max_version" in tls:
            ctx.maximum_version = TLS_VERSIONS[tls["max_version"]]
    except ValueError as e:  # a version this OpenSSL does not offer
        raise InputError(f"{where}: tls_server_config: {e}") from e
    return ctx
