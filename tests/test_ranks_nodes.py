"""The job across nodes: two sidecars standing for two nodes (each with its own node identity,
two ranks each), four real gloo ranks with the injected hook (rank 3 does 60% more forward
work). Neither sidecar sees the whole job: one real Prometheus scraping both finds the straggler
through deploy/prometheus/rules.yml; ``bottleneckd analyze`` given both nodes' traces finds it too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")

from bottleneckd.runtime.job_env import job_env  # noqa: E402
from tests.conftest import ROOT, run_cli  # noqa: E402
from tests.prometheus_server import Prometheus, free_port, wait_http  # noqa: E402

pytestmark = pytest.mark.integration
NODES = {"node-a": (0, 1), "node-b": (2, 3)}
# rank 3's extra forward work: 60%, about 45% more compute per step, clear of the +-20-30% a rank's
# compute drifts for seconds at a time when 4 ranks, 2 sidecars and other jobs share 2 cores (a
# 30% straggler on one sidecar is tests/test_ranks_job.py's case)
EXTRA = 0.6


def start_ranks(tmp_path, socks: dict[str, str], seconds: float) -> list[subprocess.Popen]:
    """The four ranks of one job, each reporting to its own node's sidecar, as torchrun would set
    them up on two hosts (RANK, LOCAL_RANK, GROUP_RANK, NODE_NAME from the downward API ...)."""
    master, procs = free_port(), []
    for node_rank, (n, ranks) in enumerate(NODES.items()):
        base = job_env(str(tmp_path / n), socks[n], True)
        for local, rank in enumerate(ranks):
            env = {
                **base,
                "PYTHONPATH": base["PYTHONPATH"] + os.pathsep + str(ROOT),
                "RANK": str(rank),
                "LOCAL_RANK": str(local),
                "WORLD_SIZE": "4",
                "LOCAL_WORLD_SIZE": "2",
                "GROUP_RANK": str(node_rank),
                "NODE_NAME": n,
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(master),
                "TORCHELASTIC_RUN_ID": "two-nodes",
                "OMP_NUM_THREADS": "1",
            }
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        str(ROOT / "tests" / "rank_job.py"),
                        "--seconds",
                        str(seconds),
                        "--slow-rank",
                        "3",
                        "--extra",
                        str(EXTRA),
                    ],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
    return procs


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()


@pytest.mark.slow
def test_recording_rules_and_the_alert_find_the_straggler_across_two_nodes(tmp_path, cli_env):
    import shutil

    if shutil.which("prometheus") is None:
        pytest.skip("prometheus not installed (.ci/run installs it)")
    nodes = NODES
    ports = {n: free_port() for n in nodes}
    socks = {n: str(tmp_path / n / "bottleneckd.sock") for n in nodes}
    procs: list[subprocess.Popen] = []
    prom = None
    try:
        for n in nodes:
            os.makedirs(tmp_path / n, mode=0o700)
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "bottleneckd.cli",
                        "serve",
                        "--bind",
                        f"127.0.0.1:{ports[n]}",
                        "--socket",
                        socks[n],
                        "--quiet",
                        "--duration",
                        "300",
                        "--disable",
                        "storage",
                        "--disable",
                        "storage_network",
                    ],
                    env=cli_env,
                    stderr=subprocess.DEVNULL,
                )
            )
        for n in nodes:
            wait_http(f"http://127.0.0.1:{ports[n]}/metrics")
        procs += start_ranks(tmp_path, socks, 110)
        prom = Prometheus(
            tmp_path, [f"127.0.0.1:{p}" for p in ports.values()], rule_files=[str(ROOT / "deploy/prometheus/rules.yml")]
        )
        # every rank's series, each from its own node's sidecar
        # margins for a busy machine: at load average 20 four ranks took over a minute to start
        deadline, got = time.monotonic() + 150, []
        while time.monotonic() < deadline and len(got) < 4:
            got = prom.query("bottleneckd_rank_compute_seconds")["data"]["result"]
            time.sleep(0.5)
        assert {(s["metric"]["rank"], s["metric"]["host"], s["metric"]["instance"]) for s in got} == {
            ("0", "node-a", f"127.0.0.1:{ports['node-a']}"),
            ("1", "node-a", f"127.0.0.1:{ports['node-a']}"),
            ("2", "node-b", f"127.0.0.1:{ports['node-b']}"),
            ("3", "node-b", f"127.0.0.1:{ports['node-b']}"),
        }
        assert {s["metric"]["train_job"] for s in got} == {"two-nodes"}

        # the straggler, joined across both nodes by the recording rules: rank 3 on node-b, held
        # (read until 3 readings in a row name it: in the first seconds, while ranks start, the rules
        # may name another rank - a CI run read rank 2 three times before rank 3, another rank 0 five
        # times, its start-up steps still in the 1-minute averages - which the alert's 'for: 5m'
        # outlasts; the ranks run long enough for those averages to hold only steady steps)
        def held(seen: list) -> bool:
            return len(seen) >= 5 and all(s == ("3", "node-b", 3.0) for s in seen[-3:])

        deadline, seen = time.monotonic() + 120, []
        while time.monotonic() < deadline and not held(seen):
            r = prom.query("train_job:bottleneckd_straggler_rank")["data"]["result"]
            if r:
                seen.append((r[0]["metric"]["rank"], r[0]["metric"]["host"], float(r[0]["value"][1])))
            time.sleep(1.0)
        assert held(seen), seen
        excess = prom.query('rank:bottleneckd_compute_excess:ratio{rank="3"}')["data"]["result"]
        assert float(excess[0]["value"][1]) > 0.1
        # the alert is pending (its 'for: 5m' has not elapsed) for rank 3 only. That one straggler
        # does not make its node slow is checked on fixed series (deploy/prometheus/rules_test.yml,
        # tests/test_deploy.py): here the four ranks share 2 cores, and a CI run read rank 2 (node-b's
        # fastest) above 1.1x node-a's slowest for a minute, StragglingNode's threshold
        alerts = prom.wait_for('ALERTS{alertname="StragglingRank"}', timeout=30)
        assert {(a["metric"]["rank"], a["metric"]["host"], a["metric"]["alertstate"]) for a in alerts} == {
            ("3", "node-b", "pending")
        }
        spread = prom.query("train_job:bottleneckd_rank_step_seconds:spread_ratio")["data"]["result"]
        exposed = prom.query("train_job:bottleneckd_exposed_communication:ratio")["data"]["result"]
        assert spread and exposed and 0 < float(exposed[0]["value"][1]) < 1
    finally:
        if prom:
            prom.stop()
        stop(procs)


@pytest.mark.slow
def test_analyze_given_both_nodes_traces_names_the_straggler_across_nodes(tmp_path, cli_env):
    socks = {n: str(tmp_path / n / "bottleneckd.sock") for n in NODES}
    traces = {n: str(tmp_path / f"{n}.jsonl") for n in NODES}
    procs: list[subprocess.Popen] = []
    try:
        for n in NODES:
            os.makedirs(tmp_path / n, mode=0o700)
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "bottleneckd.cli",
                        "record",
                        "-o",
                        traces[n],
                        "--socket",
                        socks[n],
                        "--quiet",
                        "--duration",
                        "400",
                        "--disable",
                        "storage",
                        "--disable",
                        "storage_network",
                    ],
                    env=cli_env,
                    stderr=subprocess.DEVNULL,
                )
            )
        # the ranks start once both recorders listen (their sockets exist), and run 45 s: the rule's
        # 10 intervals of history and its hold (5 of 7 windows) after the ranks' start-up, which took
        # 8 s on a quiet machine and far longer on a loaded one
        deadline = time.monotonic() + 60
        while not all(os.path.exists(s) for s in socks.values()):
            assert time.monotonic() < deadline, "the recorders never listened"
            time.sleep(0.2)
        ranks = start_ranks(tmp_path, socks, 45)
        procs += ranks
        for p in ranks:
            p.wait(timeout=300)  # 150 s ran out at load average 20
        time.sleep(2)
        for p in procs[:2]:  # SIGTERM: the recorders close their traces and exit
            p.terminate()
            p.wait(timeout=30)
    finally:
        stop(procs)
    r = run_cli(["analyze", traces["node-a"], traces["node-b"], "--format", "json"], cli_env)
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)["verdict"]
    assert v["straggler"] is None or (v["straggler"]["rank"], v["straggler"]["node"]) == (3, "node-b"), v
    if v["stage"] == "communication":  # the link evidence names both nodes and their ranks
        assert any("ranks on 2 nodes: node-a: 0, 1; node-b: 2, 3" in e for e in v["evidence"]), v
    # window by window, through the same merge and pipeline as analyze: rank 3 on node-b, and only it
    named = _named(traces["node-a"], traces["node-b"])
    assert named and set(named) == {(3, "node-b")}, named
    # one node's trace alone sees ranks 0 and 1 only: rank 3 is never named from it
    assert (3, "node-b") not in _named(traces["node-a"])


def _named(*paths: str) -> list[tuple[int, str]]:
    from bottleneckd.diagnosis.pipeline import Pipeline
    from bottleneckd.outputs.trace import read_trace
    from bottleneckd.outputs.trace_merge import merge_node_traces

    loaded = [read_trace(p) for p in paths]
    samples = merge_node_traces([(h.machine.hostname, list(it)) for h, it in loaded])
    p = Pipeline(loaded[0][0].peaks)  # the diagnosis alone: the straggler tick by tick
    out = []
    for s in samples:
        st = p(s).verdict.straggler
        if st:
            out.append((st["rank"], st["node"]))
    return out
