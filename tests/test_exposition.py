"""The exposition as Prometheus's own tools see it (issue 22 items 2, 3, 4, 6, 12): a real scrape
of `serve` passes `promtool check metrics` with nothing to say; units on every family; counters
for host traffic; info metrics for joins; the other endpoints; options from the environment;
JSON logs; `run --bind` says where it serves and keeps the final state up for a last scrape."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.prometheus_server import free_port, wait_http

needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool not installed (.ci/run installs it)"
)
GPU_TRACE = ROOT / "tests/data/gpu_compute/trace.jsonl"
RANKS_TRACE = ROOT / "tests/ranks_data/straggler_4ranks.jsonl"


def _serve(cli_env, tmp_path, *args: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    p = subprocess.Popen(
        [sys.executable, "-m", "bottleneckd.cli", "serve", "--bind", f"127.0.0.1:{port}", "--quiet", *args],
        env={**cli_env, "BOTTLENECKD_SOCKET": str(tmp_path / f"s{port}" / "sock")},
        stderr=subprocess.PIPE,
        text=True,
    )
    return p, port


def _scrape_when(port: int, needle: str, accept: str | None = None, timeout: float = 40) -> str:
    wait_http(f"http://127.0.0.1:{port}/-/healthy")
    deadline = time.monotonic() + timeout
    while True:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Accept": accept} if accept else {})
        body = urllib.request.urlopen(req, timeout=10).read().decode()
        if needle in body or time.monotonic() > deadline:
            assert needle in body, body[-2000:]
            return body
        time.sleep(0.3)


def _stop(p: subprocess.Popen) -> None:
    p.terminate()
    p.wait(timeout=20)


def promtool_says(text: str) -> str:
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    return (r.stdout + r.stderr).strip() + ("" if r.returncode == 0 else f" (exit {r.returncode})")


def names(text: str) -> set[str]:
    return {x.split("{")[0].split(" ")[0] for x in text.splitlines() if x and not x.startswith("#")}


@pytest.mark.slow
@needs_promtool
def test_a_real_scrape_of_serve_passes_promtool_with_nothing_to_say(tmp_path, cli_env):
    serve, port = _serve(cli_env, tmp_path, "--interval", "0.5")
    try:
        text = _scrape_when(port, "bottleneckd_storage_bandwidth_read_bytes_total")
        text = _scrape_when(port, "bottleneckd_bottleneck_active")  # a diagnosed sample too
    finally:
        _stop(serve)
    assert promtool_says(text) == ""
    got = names(text)
    # the process's own figures and the build, as every exporter has them
    assert {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"} <= got
    assert "bottleneckd_build_info" in got and "python_info" in got
    # host traffic as the kernel's counters (rate() works), not per-second gauges
    assert {
        "bottleneckd_storage_bandwidth_read_bytes_total",
        "bottleneckd_storage_bandwidth_written_bytes_total",
    } <= got
    assert "bottleneckd_cpu_memory_swap_in_bytes_total" in got
    assert "bottleneckd_storage_bandwidth_throughput_bytes_per_second" not in got
    assert not [n for n in got if "_per_second_" in n or n.count("bytes") > 1], got
    assert "bottleneckd_bottleneck_since_timestamp_seconds" in got and "bottleneckd_bottleneck_since_seconds" not in got
    # node_exporter's families are opt-in: no per-core series, no virtual NIC
    assert 'device="cpu0"' not in text
    net = Path("/sys/class/net")
    virtual = [n for n in net.iterdir() if not (n / "device").exists()] if net.is_dir() else []
    for nic in virtual:
        if nic.name != "lo":
            assert f'device="{nic.name}"' not in text, nic.name


@pytest.mark.slow
def test_every_family_carries_its_unit_in_the_openmetrics_exposition(tmp_path, cli_env):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    serve, port = _serve(cli_env, tmp_path, "--trace", str(GPU_TRACE), "--duration", "60")
    try:
        text = _scrape_when(
            port, "bottleneckd_gpu_compute_sm_clock_hertz", accept="application/openmetrics-text; version=1.0.0"
        )
    finally:
        _stop(serve)
    assert "# UNIT bottleneckd_utilization_ratio ratio" in text
    assert "# UNIT bottleneckd_gpu_compute_sm_clock_hertz hertz" in text
    assert "# UNIT bottleneckd_energy_joules joules" in text
    units = ("_ratio", "_bytes", "_seconds", "_hertz", "_watts", "_joules", "_bytes_per_second", "_cores")
    for fam in text_string_to_metric_families(text):  # the parser checks each name ends in its unit
        if fam.name.startswith("bottleneckd_") and fam.name.endswith(units):
            assert fam.unit, fam.name


@pytest.mark.slow
@needs_promtool
def test_replayed_gpu_and_rank_traces_pass_promtool_and_carry_the_join_labels(tmp_path, cli_env):
    gpu, gport = _serve(cli_env, tmp_path, "--trace", str(GPU_TRACE), "--duration", "60")
    ranks, rport = _serve(cli_env, tmp_path, "--trace", str(RANKS_TRACE), "--duration", "60")
    try:
        gtext = _scrape_when(gport, "bottleneckd_recommendation_info{")
        rtext = _scrape_when(rport, "bottleneckd_job_info{")
    finally:
        _stop(gpu)
        _stop(ranks)
    assert promtool_says(gtext) == "" and promtool_says(rtext) == ""
    info = [x for x in gtext.splitlines() if x.startswith("bottleneckd_gpu_info{")]
    assert info and all('UUID="GPU-' in x and 'gpu="0"' in x and 'device="gpu0"' in x for x in info), info
    assert all("Hostname=" in x and "model_name=" in x for x in info)
    recs = [x for x in gtext.splitlines() if x.startswith("bottleneckd_recommendation_info{")]
    assert 1 <= len(recs) <= 3 and 'position="1"' in recs[0], recs
    rank_lines = [x for x in rtext.splitlines() if x.startswith("bottleneckd_rank_step_seconds{")]
    assert len(rank_lines) == 4 and all('UUID="' in x and "gpu=" not in x for x in rank_lines), rank_lines
    jobs = [x for x in rtext.splitlines() if x.startswith("bottleneckd_job_info{")]
    assert len(jobs) == 4 and all('pod="' in x and 'world_size="4"' in x for x in jobs)


@pytest.mark.slow
def test_per_core_and_virtual_nic_series_are_opt_in(tmp_path, cli_env):
    serve, port = _serve(cli_env, tmp_path, "--interval", "0.5", "--host-detail")
    try:
        text = _scrape_when(port, 'bottleneckd_cpu_compute_busy_ratio{device="cpu0"}')
    finally:
        _stop(serve)
    assert 'bottleneckd_cpu_compute_busy_ratio{device="cpu0"}' in text


def test_the_job_step_time_and_the_ranks_are_one_definition():
    """bottleneckd_step_seconds is the ranks' bottleneckd_rank_step_seconds, weighted by their steps,
    over the same interval (before: 0.0446 against 0.0514, a window of two samples against one
    interval). Ranks report through the real receiver, which merges them as a live sidecar does."""
    from prometheus_client import CollectorRegistry, generate_latest

    from bottleneckd.channel.link import PhaseReceiver
    from bottleneckd.diagnosis.pipeline import Pipeline
    from bottleneckd.model.protocol import StepReport
    from bottleneckd.model.sample import Sample
    from bottleneckd.outputs.exporter import SnapshotCollector
    from bottleneckd.peaks.resolve import PeakTable
    from tests.test_straggler import ident

    p = Pipeline(PeakTable(()))
    rx = PhaseReceiver(None, listen=False)
    for k in range(6):  # the step time changes from interval to interval, and ranks differ in steps
        for rank, (steps, secs) in enumerate([(5, 0.04 + 0.01 * k), (4, 0.05), (5, 0.045), (3, 0.07)]):
            rx.accept(StepReport(ident(rank), steps, steps * secs, {"forward": steps * secs * 0.6}))
        job, ranks = rx.drain_ranks()
        snap = p(Sample(float(k), 1.0, (), job, (), ranks))
        reg = CollectorRegistry(auto_describe=False)
        reg.register(SnapshotCollector(lambda snap=snap: snap))
        text = generate_latest(reg).decode()
        job_s = float(next(x for x in text.splitlines() if x.startswith("bottleneckd_step_seconds ")).split()[-1])
        rank_s = {
            x.split('rank="')[1].split('"')[0]: float(x.split()[-1])
            for x in text.splitlines()
            if x.startswith("bottleneckd_rank_step_seconds{")
        }
        steps = {str(r.identity.rank): r.phases.steps for r in ranks}
        weighted = sum(rank_s[r] * steps[r] for r in rank_s) / sum(steps.values())
        assert job_s == pytest.approx(weighted, rel=1e-9), (k, job_s, rank_s)


def _get(url: str, auth: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()} if auth else {}
    try:
        r = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10)
        return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_endpoints_landing_health_ready_and_404_with_basic_auth(tmp_path):
    """Every path used to answer the whole metrics page. Health answers without credentials (a
    kubelet probe has none); the rest asks for them."""
    bcrypt = pytest.importorskip("bcrypt")
    from bottleneckd.outputs.metrics_server import serve_metrics, stop_metrics
    from bottleneckd.outputs.web_config import load_web_config
    from tests.test_exporter_server import Source

    cfg = tmp_path / "web.yml"
    cfg.write_text(f"basic_auth_users:\n  prom: '{bcrypt.hashpw(b'pw', bcrypt.gensalt(4)).decode()}'\n")

    class Empty(Source):
        def latest(self):  # noqa: ANN201
            return None

    port = free_port()
    server = serve_metrics(Empty(), f"127.0.0.1:{port}", load_web_config(str(cfg)))
    base = f"http://127.0.0.1:{port}"
    try:
        assert _get(base + "/-/healthy")[0] == 200 and _get(base + "/healthz")[0] == 200
        assert _get(base + "/-/ready")[0] == 503  # nothing diagnosed yet
        assert _get(base + "/metrics")[0] == 401 and _get(base + "/")[0] == 401
        status, page = _get(base + "/", "prom:pw")
        assert status == 200 and 'href="metrics"' in page and "bottleneckd_" not in page
        assert _get(base + "/favicon.ico", "prom:pw")[0] == 404
        assert _get(base + "/metrics", "prom:pw")[0] == 200
        assert _get(base + "/metrics", "prom:wrong")[0] == 401
    finally:
        stop_metrics(server)
    port = free_port()
    server = serve_metrics(Source(), f"127.0.0.1:{port}")
    try:
        assert _get(f"http://127.0.0.1:{port}/-/ready")[0] == 200
    finally:
        stop_metrics(server)


def test_every_option_from_the_environment_and_json_logs(tmp_path, cli_env):
    port = free_port()
    env = {
        **cli_env,
        "BOTTLENECKD_SERVE_BIND": f"127.0.0.1:{port}",
        "BOTTLENECKD_SERVE_TRACE": str(GPU_TRACE),
        "BOTTLENECKD_SERVE_DURATION": "30",
        "BOTTLENECKD_LOG_FORMAT": "json",
    }
    p = subprocess.Popen([sys.executable, "-m", "bottleneckd.cli", "serve"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        _scrape_when(port, "bottleneckd_bottleneck_active")
    finally:
        _stop(p)
        err = p.stderr.read() if p.stderr else ""
    lines = [json.loads(x) for x in err.splitlines() if x.strip()]
    assert lines and all({"time", "level", "logger", "message"} <= set(x) for x in lines), err
    assert any(f"127.0.0.1:{port}/metrics" in x["message"] for x in lines)
    from tests.conftest import run_cli

    r = run_cli(["serve", "--duration", "1"], {**cli_env, "BOTTLENECKD_SERVE_BIND": "nonsense"}, timeout=60)
    assert r.returncode == 2 and "--bind 'nonsense'" in r.stderr  # a bad value from the environment: one line
    r = run_cli(["serve", "--help"], cli_env, timeout=60)
    assert "BOTTLENECKD_SERVE_BIND" in r.stdout and "BOTTLENECKD_SERVE_WEB_CONFIG" in r.stdout


@pytest.mark.slow
def test_run_bind_says_where_and_keeps_the_final_state_for_a_last_scrape(tmp_path, cli_env):
    port = free_port()
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bottleneckd.cli",
            "run",
            "--quiet",
            "--interval",
            "0.5",
            "--bind",
            f"127.0.0.1:{port}",
            "--linger",
            "20",
            "--",
            sys.executable,
            "-c",
            "import time; time.sleep(2)",
        ],
        env=cli_env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        err = ""
        assert p.stderr is not None
        while "stays up" not in err:  # the job has ended
            line = p.stderr.readline()
            assert line, err
            err += line
        assert f"serving metrics on http://127.0.0.1:{port}/metrics" in err
        assert _get(f"http://127.0.0.1:{port}/metrics")[0] == 200  # after the job: still there
    finally:
        p.terminate()
        p.wait(timeout=30)


def test_serving_beyond_loopback_without_tls_or_auth_is_warned(caplog):
    from bottleneckd.outputs.metrics_server import serve_metrics, stop_metrics
    from tests.test_exporter_server import Source

    for bind, warned in ((f"127.0.0.1:{free_port()}", False), (f"0.0.0.0:{free_port()}", True)):
        caplog.clear()
        with caplog.at_level("WARNING", logger="bottleneckd.outputs.metrics_server"):
            server = serve_metrics(Source(), bind)
            stop_metrics(server)
        assert any("without TLS or authentication" in r.getMessage() for r in caplog.records) == warned, bind


def test_gpu_info_gives_a_mig_slice_its_gpus_index_as_dcgm_does():
    from types import SimpleNamespace

    from prometheus_client import CollectorRegistry, generate_latest

    from bottleneckd.hardware.detect.types import GpuInfo
    from bottleneckd.outputs.exporter import SnapshotCollector

    def gpu(index: int, label: str, uuid: str) -> GpuInfo:
        return GpuInfo(index, "NVIDIA A100-SXM4-80GB", uuid, None, None, None, None, False, label)

    machine = SimpleNamespace(
        hostname="n1", nics=(), gpus=(gpu(0, "gpu0", "GPU-a"), gpu(3, "gpu1.mig2", "MIG-b"))
    )  # unit 3 of NVML's list is a slice of GPU 1
    reg = CollectorRegistry(auto_describe=False)
    reg.register(SnapshotCollector(lambda: None, machine=machine))
    text = generate_latest(reg).decode()
    assert 'UUID="MIG-b",device="gpu1.mig2",gpu="1"' in text and 'UUID="GPU-a",device="gpu0",gpu="0"' in text
