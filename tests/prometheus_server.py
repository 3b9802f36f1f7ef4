"""A real Prometheus server (Debian's package) started on loopback for the integration tests."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(url)


class Prometheus:
    def __init__(self, workdir: Path, targets: list[str], rule_files: list[str] | None = None) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            raise FileNotFoundError("prometheus not installed (apt-get install prometheus; .ci/run does this)")
        self.port = free_port()
        cfg = workdir / "prometheus.yml"
        cfg.write_text(
            json.dumps(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": rule_files or [],
                    "scrape_configs": [{"job_name": "bottleneckd", "static_configs": [{"targets": targets}]}],
                }
            )
        )
        self.proc = subprocess.Popen(
            [
                binary,
                f"--config.file={cfg}",
                f"--storage.tsdb.path={workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_http(f"http://127.0.0.1:{self.port}/-/ready")

    def query(self, expr: str) -> dict:
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)

    def wait_for(self, expr: str, timeout: float = 30.0) -> list:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            d = self.query(expr)
            if d["status"] == "success" and d["data"]["result"]:
                return d["data"]["result"]
            time.sleep(0.5)
        raise AssertionError(f"no data for {expr!r} after {timeout} s")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
