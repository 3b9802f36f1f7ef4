"""The job across nodes in a real Prometheus: two sidecars standing for two nodes (each with its
own node identity, two ranks each), four real gloo ranks with the injected hook (rank 3 does 30%
more forward work), and one Prometheus scraping both sidecars with deploy/prometheus/rules.yml.
Neither sidecar sees the whole job; the recording rules and the alert find the straggler across
the nodes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")

from bottleneckd.runtime.job import job_env  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tests.prometheus_server import Prometheus, free_port, wait_http  # noqa: E402

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not os.path.exists("/usr/bin/prometheus") and not os.environ.get("PATH"), reason="no prometheus")]


def test_recording_rules_and_the_alert_find_the_straggler_across_two_nodes(tmp_path, cli_env):
    import shutil

    if shutil.which("prometheus") is None:
        pytest.skip("prometheus not installed (.ci/run installs it)")
    nodes = {"node-a": (0, 1), "node-b": (2, 3)}
    ports = {n: free_port() for n in nodes}
    socks = {n: str(tmp_path / n / "bottleneckd.sock") for n in nodes}
    procs: list[subprocess.Popen] = []
    prom = None
    try:
        for n in nodes:
            os.makedirs(tmp_path / n, mode=0o700)
            procs.append(subprocess.Popen([sys.executable, "-m", "bottleneckd.cli", "serve", "--bind", f"127.0.0.1:{ports[n]}",
                                           "--socket", socks[n], "--quiet", "--duration", "150", "--disable", "storage",
                                           "--disable", "storage_network"], env=cli_env, stderr=subprocess.DEVNULL))
        for n in nodes:
            wait_http(f"http://127.0.0.1:{ports[n]}/metrics")
        master = free_port()
        for node_rank, (n, ranks) in enumerate(nodes.items()):
            for local, rank in enumerate(ranks):
                env = {**job_env(socks[n], True), "PYTHONPATH": job_env(socks[n], True)["PYTHONPATH"] + os.pathsep + str(ROOT),
                       "RANK": str(rank), "LOCAL_RANK": str(local), "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
                       "GROUP_RANK": str(node_rank), "NODE_NAME": n, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(master),
                       "TORCHELASTIC_RUN_ID": "two-nodes", "OMP_NUM_THREADS": "1"}
                procs.append(subprocess.Popen([sys.executable, str(ROOT / "tests" / "rank_job.py"), "--seconds", "75",
                                               "--slow-rank", "3", "--extra", "0.3"], env=env,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        prom = Prometheus(tmp_path, [f"127.0.0.1:{p}" for p in ports.values()], rule_files=[str(ROOT / "deploy/prometheus/rules.yml")])
        # every rank's series, each from its own node's sidecar
        deadline, got = time.monotonic() + 60, []
        while time.monotonic() < deadline and len(got) < 4:
            got = prom.query("bottleneckd_rank_compute_seconds")["data"]["result"]
            time.sleep(0.5)
        assert {(s["metric"]["rank"], s["metric"]["host"], s["metric"]["instance"]) for s in got} == {
            ("0", "node-a", f"127.0.0.1:{ports['node-a']}"), ("1", "node-a", f"127.0.0.1:{ports['node-a']}"),
            ("2", "node-b", f"127.0.0.1:{ports['node-b']}"), ("3", "node-b", f"127.0.0.1:{ports['node-b']}")}
        assert {s["metric"]["train_job"] for s in got} == {"two-nodes"}
        # the straggler, joined across both nodes by the recording rules: rank 3 on node-b, held
        deadline, seen = time.monotonic() + 60, []
        while time.monotonic() < deadline and len(seen) < 5:
            r = prom.query("train_job:bottleneckd_straggler_rank")["data"]["result"]
            if r:
                seen.append((r[0]["metric"]["rank"], r[0]["metric"]["host"], float(r[0]["value"][1])))
            time.sleep(1.0)
        assert len(seen) >= 5 and all(s == ("3", "node-b", 3.0) for s in seen[-3:]), seen
        excess = prom.query('rank:bottleneckd_compute_excess:ratio{rank="3"}')["data"]["result"]
        assert float(excess[0]["value"][1]) > 0.1
        # the alert is pending (its 'for: 5m' has not elapsed) for rank 3 only, and no node is called slow
        alerts = prom.wait_for('ALERTS{alertname="StragglingRank"}', timeout=30)
        assert {(a["metric"]["rank"], a["metric"]["host"], a["metric"]["alertstate"]) for a in alerts} == {("3", "node-b", "pending")}
        assert prom.query('ALERTS{alertname="StragglingNode"}')["data"]["result"] == []
        spread = prom.query("train_job:bottleneckd_rank_step_seconds:spread_ratio")["data"]["result"]
        exposed = prom.query("train_job:bottleneckd_exposed_communication:ratio")["data"]["result"]
        assert spread and exposed and 0 < float(exposed[0]["value"][1]) < 1
    finally:
        if prom:
            prom.stop()
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
