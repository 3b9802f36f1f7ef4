"""The CPU peaks ``bottleneckd run`` measures before the job starts where no profile gives them
(bottleneckd/peaks/auto_profile.py): measured for real (numpy, a short time), kept for this machine
only, never over a busy machine, never over the user's own profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bottleneckd.model.resources import Resource
from bottleneckd.outputs.trace import read_trace
from bottleneckd.peaks import auto_profile
from bottleneckd.peaks.profile import Measurement, Profile, load_profile, save_profile
from tests.conftest import run_cli

QUIET = 0.0  # the machine's busy share the tests pass for "quiet": what host_busy measures is the machine's


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    monkeypatch.setenv("BOTTLENECKD_HOME", str(h))
    return h


def _keys(p: Profile | None) -> set[tuple[str, str]]:
    return {(m.resource, m.device) for m in p.measurements} if p else set()


def test_measures_both_peaks_once_and_keeps_them_for_this_machine(home: Path) -> None:
    got = auto_profile.measure_missing(None, seconds=0.05, busy=lambda: QUIET)
    assert _keys(got.profile) == {(Resource.CPU_COMPUTE, "cpu"), (Resource.CPU_MEMORY_BANDWIDTH, "host")}
    assert all(m.value > 0 and "measured by bottleneckd run" in m.method for m in got.profile.measurements)
    assert "measured this machine's CPU peaks" in got.line and str(home / "auto-profile.json") in got.line
    doc = json.loads((home / "auto-profile.json").read_text())
    assert doc["fingerprint"] == auto_profile.fingerprint()
    kept = auto_profile.load_auto()
    assert _keys(kept) == _keys(got.profile)
    again = auto_profile.measure_missing(auto_profile.merged(None, kept), busy=lambda: pytest.fail("measured again"))
    assert again == auto_profile.AutoOutcome(None, "")


def test_a_busy_machine_is_not_measured(home: Path) -> None:
    got = auto_profile.measure_missing(None, seconds=0.05, busy=lambda: 0.5)
    assert got.profile is None
    assert "not measured: other work takes 50%" in got.line and "bottleneckd calibrate" in got.line
    assert not (home / "auto-profile.json").exists()


def test_peaks_measured_on_another_machine_are_not_used(home: Path) -> None:
    auto_profile.measure_missing(None, seconds=0.05, busy=lambda: QUIET)
    path = home / "auto-profile.json"
    doc = json.loads(path.read_text())
    doc["fingerprint"]["cpus"] += 1  # this machine resized, or the home shared with another
    path.write_text(json.dumps(doc))
    assert auto_profile.load_auto() is None
    assert auto_profile.missing(auto_profile.merged(None, auto_profile.load_auto())) == list(auto_profile.NEEDED)


def test_an_unreadable_cache_is_measured_again(home: Path) -> None:
    home.mkdir()
    (home / "auto-profile.json").write_text("{not json")
    assert auto_profile.load_auto() is None
    got = auto_profile.measure_missing(None, seconds=0.05, busy=lambda: QUIET)
    assert got.profile is not None and auto_profile.load_auto() is not None


def test_the_users_profile_wins_and_only_what_it_lacks_is_measured(home: Path) -> None:
    mine = Measurement(Resource.CPU_COMPUTE, "cpu", "fp32_matmul", 1e12, "FLOP/s", "bottleneckd calibrate", 2.0)
    save_profile([mine], home / "profile.json")
    user = load_profile()
    got = auto_profile.measure_missing(user, seconds=0.05, busy=lambda: QUIET)
    assert _keys(got.profile) == {(Resource.CPU_MEMORY_BANDWIDTH, "host")}
    both = auto_profile.merged(user, got.profile)
    assert both is not None and both.best(Resource.CPU_COMPUTE).value == 1e12
    assert both.best(Resource.CPU_MEMORY_BANDWIDTH, "host") is not None
    # an automatic compute peak kept from before never replaces the user's
    stale = Measurement(Resource.CPU_COMPUTE, "cpu", "fp32_matmul", 5e9, "FLOP/s", "auto", 0.5)
    merged = auto_profile.merged(user, Profile("h", 0.0, (stale,)))
    assert merged == user


def test_run_uses_the_kept_peaks_and_no_calibrate_measures_nothing(cli_env: dict[str, str], tmp_path: Path) -> None:
    home = Path(cli_env["BOTTLENECKD_HOME"])
    job = ["--", "python", "-c", "pass"]
    r = run_cli(
        ["run", "--quiet", "--no-inject", "--no-calibrate", "--report-json", str(tmp_path / "a.json"), *job], cli_env
    )
    assert r.returncode == 0, r.stderr
    assert not (home / "auto-profile.json").exists() and "CPU peaks" not in r.stderr

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BOTTLENECKD_HOME", str(home))
        kept = auto_profile.measure_missing(None, seconds=0.05, busy=lambda: QUIET).profile
    assert kept is not None
    trace = tmp_path / "b.trace.jsonl"
    r = run_cli(["run", "--quiet", "--no-inject", "--trace", str(trace), *job], cli_env)
    assert r.returncode == 0, r.stderr
    assert "CPU peaks" not in r.stderr  # kept: not measured again
    header, _ = read_trace(str(trace))  # the peaks the run diagnosed against
    bw = header.peaks.get(Resource.CPU_MEMORY_BANDWIDTH, "host")
    assert bw is not None and bw.origin == "calibrated" and "measured by bottleneckd run" in bw.source
    assert bw.value == kept.best(Resource.CPU_MEMORY_BANDWIDTH).value
