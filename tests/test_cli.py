import json

import pytest
from click.testing import CliRunner

from bottleneckd.cli.main import cli
from bottleneckd.model.resources import RESOURCES
from tests.conftest import run_cli


def test_peaks_json_lists_all_twelve_resources(cli_env):
    r = run_cli(["peaks", "--json"], cli_env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {p["resource"] for p in doc["peaks"]} == set(RESOURCES)
    for p in doc["peaks"]:
        assert p["origin"] in ("catalog", "detected", "calibrated", "unknown")
        assert (p["value"] is None) == (p["origin"] == "unknown")
        assert p["source"]


def test_peaks_text_has_a_table4_column(cli_env):
    r = CliRunner().invoke(cli, ["peaks"], env={"BOTTLENECKD_HOME": cli_env["BOTTLENECKD_HOME"]})
    assert r.exit_code == 0
    assert "vs fastest compute" in r.output and "storage_network_bandwidth" in r.output


def test_table4_reproduces_the_worked_example():
    r = CliRunner().invoke(cli, ["peaks", "--table4"])
    assert r.exit_code == 0
    assert "249,600 multiply-adds per 16-bit value" in r.output
    assert "Sabrent Rocket 4 Plus SSD read bandwidth" in r.output
    r = CliRunner().invoke(cli, ["peaks", "--table4", "--json"])
    doc = json.loads(r.output)
    assert doc["worked_example"]["madd_per_16bit_value"] == 249600
    assert len(doc["rows"]) == 10


def test_mitigations_listing_and_filter():
    r = CliRunner().invoke(cli, ["mitigations", "--resource", "storage_bandwidth", "--json"])
    doc = json.loads(r.output)
    assert doc and all("storage_bandwidth" in m["resources"] for m in doc)
    assert any(m["id"] == "data_echoing" and m["cites"] == ["Choi et al., 2019"] for m in doc)


def test_unknown_resource_is_exit_2_with_one_line(cli_env):
    r = run_cli(["mitigations", "--resource", "gpu_speed"], cli_env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown resource id 'gpu_speed'" in r.stderr


@pytest.mark.slow
def test_usage_errors_exit_2(cli_env):
    r = run_cli(["calibrate", "--seconds", "-1"], cli_env)
    assert r.returncode == 2
    r = run_cli(["analyze", "/nonexistent/trace.jsonl"], cli_env)
    assert r.returncode == 2 and "cannot read the trace" in r.stderr
    r = run_cli(["record", "-o", "/tmp/x.jsonl", "--pid", "999999999"], cli_env)
    assert r.returncode == 2 and "no such process" in r.stderr
