import subprocess
import sys
import time
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from bottleneckd.diagnosis.pipeline import Pipeline
from bottleneckd.hardware.detect import detect_machine
from bottleneckd.model.sample import Reading, Sample, SamplerStatus
from bottleneckd.outputs.exporter import SnapshotCollector
from bottleneckd.outputs.trace import read_trace
from bottleneckd.peaks.catalog import load_catalog
from bottleneckd.peaks.resolve import resolve_peaks
from tests.conftest import ROOT
from tests.prometheus_server import Prometheus, free_port, wait_http

GPU_TRACE = ROOT / "tests/data/gpu_compute/trace.jsonl"


def exposition_of(samples, peaks) -> str:
    p = Pipeline(peaks)
    for s in samples:
        p(s)
    reg = CollectorRegistry(auto_describe=False)
    reg.register(SnapshotCollector(lambda: p.latest, lambda: 42))
    return generate_latest(reg).decode()


def test_exposition_from_a_recorded_gpu_trace():
    header, samples = read_trace(str(GPU_TRACE))
    text = exposition_of(list(samples), header.peaks)
    assert 'bottleneckd_bottleneck_active{resource="gpu_compute"} 1.0' in text
    assert 'bottleneckd_bottleneck_active{resource="cpu_compute"} 0.0' in text
    assert 'bottleneckd_utilization_ratio{device="gpu0",resource="gpu_compute"}' in text
    assert "bottleneckd_gpu_compute_sm_activity_ratio" in text and "bottleneckd_gpu_compute_sm_clock_hertz" in text
    assert 'bottleneckd_step_phase_seconds{phase="forward",stage="compute"}' in text
    assert "bottleneckd_steps_total 42.0" in text
    assert 'bottleneckd_sampler_up{sampler="gpu"} 1.0' in text
    assert 'bottleneckd_gpu_up{device="gpu0"} 1.0' in text
    assert 'bottleneckd_energy_joules_total{device="gpu0",domain="gpu"}' in text  # one energy counter


def test_unknown_figures_are_absent_not_zero():
    m = detect_machine(nvml=None)
    peaks = resolve_peaks(m, load_catalog())
    s = Sample(
        time.time(),
        1.0,
        (
            Reading("cpu_memory_bandwidth", "host", "utilization", None, "ratio", "no counters"),
            Reading("cpu_compute", "host", "utilization", 0.5, "ratio"),
        ),
        None,
        (SamplerStatus("cpu_memory_bandwidth", True, 0.001),),
    )
    text = exposition_of([s], peaks)
    assert 'resource="cpu_memory_bandwidth"' not in text.replace(
        'bottleneckd_bottleneck_active{resource="cpu_memory_bandwidth"} 0.0', ""
    )
    assert 'bottleneckd_utilization_ratio{device="host",resource="cpu_compute"} 0.5' in text


def test_a_scrape_never_touches_hardware():
    calls = []

    class Counting(Pipeline):
        pass

    header, samples = read_trace(str(GPU_TRACE))
    p = Pipeline(header.peaks)
    for s in samples:
        p(s)
    n = p.samples
    reg = CollectorRegistry(auto_describe=False)
    reg.register(SnapshotCollector(lambda: (calls.append(1), p.latest)[1]))
    for _ in range(3):
        generate_latest(reg)
    assert p.samples == n and len(calls) == 3  # reads the snapshot only


@pytest.mark.slow
@pytest.mark.integration
def test_real_prometheus_scrapes_serve(tmp_path, cli_env):
    port = free_port()
    serve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bottleneckd.cli",
            "serve",
            "--bind",
            f"127.0.0.1:{port}",
            "--interval",
            "0.5",
            "--quiet",
            "--socket",
            str(tmp_path / "s/sock"),
        ],
        env=cli_env,
        stderr=subprocess.PIPE,
        text=True,
    )
    prom = None
    try:
        wait_http(f"http://127.0.0.1:{port}/metrics")
        prom = Prometheus(tmp_path, [f"127.0.0.1:{port}"])
        res = prom.wait_for('bottleneckd_utilization_ratio{resource="cpu_compute",device="host"}')
        assert 0.0 <= float(res[0]["value"][1]) <= 1.0
        res = prom.wait_for("sum(bottleneckd_bottleneck_active)")
        assert float(res[0]["value"][1]) == 1.0  # exactly one active (or undetermined)
        res = prom.wait_for('bottleneckd_sampler_up{sampler="cpu_compute"}')
        assert res[0]["value"][1] == "1"
        res = prom.wait_for("bottleneckd_cpu_memory_used_bytes")
        assert float(res[0]["value"][1]) > 1e6
    finally:
        if prom:
            prom.stop()
        serve.terminate()
        serve.wait(timeout=10)


@pytest.mark.slow
def test_serve_rejects_a_bad_bind(cli_env):
    r = subprocess.run(
        [sys.executable, "-m", "bottleneckd.cli", "serve", "--bind", "nonsense", "--duration", "1"],
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "--bind 'nonsense'" in r.stderr


@pytest.mark.slow
def test_tls_and_basic_auth_from_web_config(tmp_path, cli_env):
    bcrypt = pytest.importorskip("bcrypt")
    key, crt = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(crt),
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
    h = bcrypt.hashpw(b"secret", bcrypt.gensalt(4)).decode()
    cfg = tmp_path / "web.yml"
    cfg.write_text(f"tls_server_config:\n  cert_file: {crt}\n  key_file: {key}\nbasic_auth_users:\n  prom: '{h}'\n")
    port = free_port()
    serve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bottleneckd.cli",
            "serve",
            "--bind",
            f"127.0.0.1:{port}",
            "--web-config",
            str(cfg),
            "--quiet",
            "--socket",
            str(tmp_path / "s/sock"),
        ],
        env=cli_env,
    )
    import base64
    import ssl

    ctx = ssl.create_default_context(cafile=str(crt))
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=ctx, timeout=2)
                raise AssertionError("served without credentials")
            except urllib.error.HTTPError as e:
                assert e.code == 401
                break
            except (urllib.error.URLError, TimeoutError, ConnectionError):
                assert time.monotonic() < deadline
                time.sleep(0.3)
        req = urllib.request.Request(
            f"https://127.0.0.1:{port}/metrics",
            headers={"Authorization": "Basic " + base64.b64encode(b"prom:secret").decode()},
        )
        # the samplers' figures come with the first tick (1 s after start, then the samplers' own
        # time): scraped until they are there, not after a fixed wait
        deadline = time.monotonic() + 30
        while True:
            body = urllib.request.urlopen(req, context=ctx, timeout=10).read().decode()
            if "bottleneckd_sampler_up" in body or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert "bottleneckd_sampler_up" in body
    finally:
        serve.terminate()
        serve.wait(timeout=10)
