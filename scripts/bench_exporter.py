"""The exporter's server under stalled and many clients: one scrape beside an idle and a
half-sent connection, and 50 scrapers at once, on plain HTTP and on TLS.

    PYTHONPATH=. python scripts/bench_exporter.py
"""

from __future__ import annotations

import concurrent.futures
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bottleneckd.diagnosis.pipeline import Pipeline  # noqa: E402
from bottleneckd.outputs.metrics_server import load_web_config, serve_metrics, stop_metrics  # noqa: E402
from bottleneckd.outputs.trace import read_trace  # noqa: E402

TRACE = Path(__file__).resolve().parents[1] / "tests/data/cpu_compute/trace.jsonl"


class Replayed:
    def __init__(self) -> None:
        header, samples = read_trace(str(TRACE))
        self.pipeline = Pipeline(header.peaks)
        for s in samples:
            self.pipeline(s)

    def latest(self):  # noqa: ANN201
        return self.pipeline.latest

    def steps(self) -> int:
        return 0

    def events(self) -> list:
        return []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    d = Path(tempfile.mkdtemp(prefix="bench-exporter-"))
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(d / "k.pem"),
            "-out",
            str(d / "c.pem"),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    (d / "web.yml").write_text(f"tls_server_config:\n  cert_file: {d}/c.pem\n  key_file: {d}/k.pem\n")
    for tls in (False, True):
        port = free_port()
        server = serve_metrics(Replayed(), f"127.0.0.1:{port}", load_web_config(str(d / "web.yml")) if tls else None)
        idle = socket.create_connection(("127.0.0.1", port))
        partial = socket.create_connection(("127.0.0.1", port))
        partial.sendall(b"GET /metrics HTTP/1.1\r\n")
        ctx = ssl.create_default_context(cafile=str(d / "c.pem")) if tls else None
        url = f"http{'s' if tls else ''}://127.0.0.1:{port}/metrics"
        t0 = time.monotonic()
        urllib.request.urlopen(url, context=ctx, timeout=5).read()
        one = time.monotonic() - t0
        t0 = time.monotonic()

        def scrape(_: int, url: str = url, ctx: ssl.SSLContext | None = ctx) -> bytes:
            return urllib.request.urlopen(url, context=ctx, timeout=20).read()

        with concurrent.futures.ThreadPoolExecutor(50) as pool:
            ok = sum(1 for body in pool.map(scrape, range(50)) if body)
        print(
            f"{'TLS  ' if tls else 'plain'}: one scrape beside an idle and a partial connection: {one * 1e3:.0f} ms; "
            f"50 concurrent scrapers: {ok}/50 answered in {time.monotonic() - t0:.2f} s"
        )
        idle.close()
        partial.close()
        stop_metrics(server)


if __name__ == "__main__":
    main()
