import json

import pytest

from bottleneckd.model.errors import InputError
from bottleneckd.peaks import calibrate
from bottleneckd.peaks.profile import load_profile
from tests.conftest import run_cli


def test_cpu_benchmarks_measure_real_positive_rates():
    m = calibrate.cpu_matmul(0.2)
    assert m.resource == "cpu_compute" and m.unit == "FLOP/s" and 1e8 < m.value < 1e15
    b = calibrate.cpu_memory_bandwidth(0.2, mib_per_thread=32)
    assert b.resource == "cpu_memory_bandwidth" and 1e8 < b.value < 1e13


def test_storage_benchmark_below_the_page_cache(tmp_path):
    try:
        got = calibrate.storage(str(tmp_path), seconds=0.2, mib=16, queue_depth=2)
    except OSError as e:
        pytest.skip(f"O_DIRECT not supported under {tmp_path}: {e}")
    seq, rnd = got
    assert seq.metric == "sequential_read" and seq.value > 1e6
    assert rnd.metric == "random_read_4k_iops" and rnd.value > 10
    assert not list(tmp_path.iterdir())  # the temporary file is removed


@pytest.mark.slow
def test_calibrate_command_saves_a_profile_that_peaks_then_uses(tmp_path, cli_env):
    prof = tmp_path / "profile.json"
    r = run_cli(
        ["calibrate", "--seconds", "0.2", "--no-gpu", "--dir", str(tmp_path), "--output", str(prof), "--json"], cli_env
    )
    assert r.returncode == 0, r.stderr
    assert "[1/3] cpu fp32 matmul" in r.stderr  # progress is shown
    doc = json.loads(r.stdout)
    assert any(m["resource"] == "cpu_compute" for m in doc["measurements"])
    p = load_profile(prof)
    assert p.best("cpu_compute").value > 0
    r = run_cli(["--profile", str(prof), "peaks", "--json"], cli_env)
    peaks = json.loads(r.stdout)["peaks"]
    cpu = next(x for x in peaks if x["resource"] == "cpu_compute")
    assert cpu["origin"] == "calibrated" and cpu["value"] == pytest.approx(p.best("cpu_compute").value)


@pytest.mark.slow
def test_malformed_profile_is_a_clear_error_and_is_not_overwritten(tmp_path, cli_env):
    prof = tmp_path / "profile.json"
    prof.write_text(
        json.dumps(
            {
                "schema": "bottleneckd.profile/1",
                "measurements": [
                    {"resource": "cpu_compute", "device": "cpu", "metric": "fp32_matmul", "value": -1, "unit": "FLOP/s"}
                ],
            }
        )
    )
    before = prof.read_text()
    with pytest.raises(InputError, match=r"measurements\[0\]\.value: peak must be a positive"):
        load_profile(prof)
    r = run_cli(["calibrate", "--seconds", "0.1", "--no-gpu", "--output", str(prof)], cli_env)
    assert r.returncode == 2 and "measurements[0].value" in r.stderr and "Traceback" not in r.stderr
    assert prof.read_text() == before
    prof.write_text(
        json.dumps(
            {
                "schema": "bottleneckd.profile/1",
                "measurements": [
                    {"resource": "tpu_speed", "device": "cpu", "metric": "x", "value": 1, "unit": "FLOP/s"}
                ],
            }
        )
    )
    r = run_cli(["--profile", str(prof), "peaks"], cli_env)
    assert r.returncode == 2 and "unknown resource id 'tpu_speed'" in r.stderr
