"""Every rank under ``bottleneckd run -- torchrun``: real gloo ranks (one CPU thread each), the
injected hook in every rank, one sidecar receiving them all, the straggler named from per-rank
phases, communication attributed intra-node. Each test runs a ~20 s job."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from bottleneckd.diagnosis.pipeline import Pipeline  # noqa: E402
from bottleneckd.outputs.trace import read_trace  # noqa: E402
from tests.conftest import ROOT, run_cli  # noqa: E402

JOB = str(ROOT / "tests" / "rank_job.py")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(tmp_path: Path, env: dict, *args: str, nproc: int = 4) -> tuple[dict, list]:
    trace, rep = tmp_path / "t.jsonl", tmp_path / "r.json"
    r = run_cli(
        [
            "run",
            "--quiet",
            "--trace",
            str(trace),
            "--report-json",
            str(rep),
            "--",
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            str(nproc),
            "--master-port",
            str(_port()),
            JOB,
            *args,
        ],
        env,
        timeout=240,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    header, samples = read_trace(str(trace))
    p = Pipeline(header.peaks)  # the diagnosis alone: the verdict tick by tick
    timeline = []
    for s in samples:
        snap = p(s)
        timeline.append((s, snap.verdict))
    return json.loads(rep.read_text()), timeline


def _first_rank_report(timeline: list) -> float:
    return next(s.t for s, _ in timeline if s.ranks)


@pytest.mark.integration
def test_a_rank_with_30_percent_more_forward_work_is_named_within_30_s(tmp_path, cli_env):
    rep, timeline = run_job(tmp_path, cli_env, "--seconds", "35", "--slow-rank", "2", "--extra", "0.3")
    t0 = _first_rank_report(timeline)
    assert {r.identity.rank for s, _ in timeline for r in s.ranks} == {0, 1, 2, 3}  # every rank reported
    named = [(s.t - t0, v.straggler) for s, v in timeline if v.straggler]
    assert named, "no straggler named"
    assert named[0][0] <= 30.0
    assert {st["rank"] for _, st in named} == {2}  # only ever rank 2
    st = rep["verdict"]["straggler"]
    assert st["rank"] == 2 and st["kind"] == "rank" and st["excess_ratio"] > 0.1 and st["step_time_lost_seconds"] > 0
    assert any("straggler" in e and "rank 2" in e for e in rep["verdict"]["evidence"])


@pytest.mark.integration
def test_no_rank_is_named_when_the_work_is_even(tmp_path, cli_env):
    rep, timeline = run_job(tmp_path, cli_env, "--seconds", "22")
    assert {r.identity.rank for s, _ in timeline for r in s.ranks} == {0, 1, 2, 3}
    assert [v.straggler for _, v in timeline if v.straggler] == []
    assert rep["verdict"]["straggler"] is None


@pytest.mark.integration
def test_a_ddp_job_whose_all_reduce_dominates_is_named_communication_intra_node(tmp_path, cli_env):
    # no backbone, a 1024-wide head: 8 MB of gradients per step for a batch of 8
    rep, _ = run_job(tmp_path, cli_env, "--seconds", "15", "--backbone", "0", "--head", "1024", "--batch", "8", nproc=2)
    v = rep["verdict"]
    assert v["resource"] == "inter_gpu_interconnect" and v["stage"] == "communication", v
    assert any("ranks on one node" in e for e in v["evidence"]), v["evidence"]
    assert rep["facts"]["ddp"] is True and rep["facts"]["world_size"] == 2


@pytest.mark.integration
def test_run_joins_the_sidecar_already_serving_on_the_node(tmp_path, cli_env):
    import subprocess

    from tests.prometheus_server import free_port, wait_http

    port = free_port()
    serve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bottleneckd.cli",
            "serve",
            "--bind",
            f"127.0.0.1:{port}",
            "--quiet",
            "--duration",
            "150",
        ],
        env=cli_env,
        stderr=subprocess.DEVNULL,
    )  # on the node's socket (cli_env's)
    try:
        wait_http(f"http://127.0.0.1:{port}/metrics")
        rep = tmp_path / "r.json"
        r = run_cli(
            [
                "run",
                "--quiet",
                "--report-json",
                str(rep),
                "--",
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nproc-per-node",
                "2",
                "--master-port",
                str(_port()),
                JOB,
                "--seconds",
                "12",
            ],
            cli_env,
            timeout=200,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        assert "joined the sidecar serving this node" in r.stderr
        doc = json.loads(rep.read_text())
        assert doc["node_sidecar"] == cli_env["BOTTLENECKD_SOCKET"]
        assert doc["instrumentation"]["phase_messages"] == 0  # nothing came to a second sidecar
        text = (
            __import__("urllib.request").request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        )
        assert "bottleneckd_steps_total" in text and doc["facts"].get("world_size") == 2  # the node sidecar saw the job
    finally:
        serve.terminate()
        serve.wait(timeout=10)
