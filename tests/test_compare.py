"""Run comparison: olympic means, the one-sided t-test, the interval on the speed-up, (epsilon, delta)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from bottleneckd.compare.groups import compare_groups
from bottleneckd.compare.runs import load_run, read_quality
from bottleneckd.compare.stats import compare_durations, olympic
from bottleneckd.model.errors import InputError
from tests.conftest import ROOT, run_cli

DATA = ROOT / "tests" / "data"


def test_olympic_drops_the_fastest_and_the_slowest() -> None:
    s = olympic([4.0, 1.0, 100.0, 2.0, 3.0])
    assert (s.mean, s.n, s.dropped) == (3.0, 3, 2)
    assert s.std == pytest.approx(np.std([4.0, 1.0, 100.0, 2.0, 3.0], ddof=1))  # the spread of every run
    assert olympic([5.0, 7.0, 6.0, 8.0]).dropped == 0 and olympic([5.0]).std is None  # under 5 runs: all kept


def test_a_clear_speed_up_is_significant_and_its_interval_holds_it() -> None:
    a = [10.0, 10.2, 9.9, 10.1, 10.3]
    b = [8.0, 8.1, 7.9, 8.2, 8.0]
    c = compare_durations(a, b, alpha=0.05)
    assert c.verdict == "faster"
    assert c.speedup == pytest.approx(10.1 / (8.1 + 8.0 + 8.0) * 3)
    # the p-value is scipy's Welch test on the olympic samples
    ma, mb = np.mean(sorted(a)[1:-1]), np.mean(sorted(b)[1:-1])
    want = sps.ttest_ind_from_stats(
        mb, np.std(b, ddof=1), 3, ma, np.std(a, ddof=1), 3, equal_var=False, alternative="less"
    ).pvalue
    assert c.p_value == pytest.approx(want)
    assert c.ci[0] < c.speedup < c.ci[1] and c.ci[0] > 1.0
    assert 1.0 < c.at_least < c.speedup and c.at_least > c.ci[0]  # one-sided bound is tighter than the two-sided one


def test_noise_is_called_noise_and_a_slowdown_a_slowdown() -> None:
    a = [10.0, 10.5, 9.5, 10.2, 9.8]
    b = [10.1, 9.6, 10.4, 9.9, 10.0]
    c = compare_durations(a, b)
    assert c.verdict == "within noise" and c.ci[0] < 1.0 < c.ci[1]
    assert compare_durations(b=[12.0, 12.2, 11.9, 12.1], a=[10.0, 10.1, 9.9, 10.0]).verdict == "slower"
    one = compare_durations([10.0], [8.0])
    assert one.verdict == "untested" and one.p_value is None and "one run" in one.why


def test_the_interval_covers_the_true_speed_up_at_its_stated_rate() -> None:
    """Simulated runs with 3% log-normal noise and a true speed-up of 1.10: the 90% interval
    (alpha 0.10) covers 1.10 in at least 90% of 400 comparisons (less the Monte Carlo error), the
    test finds the speed-up when there is one, and says 'faster' of no speed-up at most at alpha."""
    rng = np.random.default_rng(7)
    covered, found, false = 0, 0, 0
    for _ in range(400):
        a = 100.0 * np.exp(rng.normal(0, 0.03, 7))
        b = 100.0 / 1.10 * np.exp(rng.normal(0, 0.03, 7))
        c = compare_durations(list(a), list(b), alpha=0.10)
        covered += c.ci[0] <= 1.10 <= c.ci[1]
        found += c.verdict == "faster"
        false += (
            compare_durations(list(a), list(100.0 * np.exp(rng.normal(0, 0.03, 7))), alpha=0.10).verdict == "faster"
        )
    assert covered / 400 >= 0.88
    assert found / 400 > 0.95
    assert false / 400 <= 0.10 + 0.03


def write_log(path, rows, fmt="csv"):
    if fmt == "csv":
        path.write_text("elapsed,accuracy,loss\n" + "".join(f"{t},{a},{1 - a}\n" for t, a in rows))
    else:
        path.write_text(
            "".join(
                json.dumps({"time": t, "accuracy": a}) + "\n" + json.dumps({"time": t, "train_loss": 0.1}) + "\n"
                for t, a in rows
            )
        )
    return str(path)


def curve(speed: float, top: float) -> list[tuple[float, float]]:
    return [(k * 10.0 / speed, min(top, 0.1 * k)) for k in range(1, 15)]


def test_time_to_target_with_quality_kept(tmp_path) -> None:
    a = [load_run(write_log(tmp_path / f"a{k}.csv", curve(1.0 + 0.01 * k, 0.95)), "accuracy") for k in range(5)]
    b = [
        load_run(write_log(tmp_path / f"b{k}.jsonl", curve(1.25 + 0.01 * k, 0.94), "jsonl"), "accuracy")
        for k in range(5)
    ]
    assert a[0].time_to_target(0.9, False) == 90.0
    doc = compare_groups(a, b, "accuracy", 0.9, alpha=0.05)
    assert doc["verdict"] == "faster"
    assert doc["comparison"]["speedup"] == pytest.approx(
        (90 / 1.01 + 90 / 1.02 + 90 / 1.03) / (90 / 1.26 + 90 / 1.27 + 90 / 1.28), rel=1e-6
    )
    assert 1.0 < doc["delta"] < doc["comparison"]["speedup"]
    assert doc["epsilon"] == pytest.approx(0.01)  # B tops out at 0.94, A at 0.95
    never = compare_groups(
        a, [load_run(write_log(tmp_path / "slow.csv", curve(1.0, 0.85)), "accuracy")], "accuracy", 0.9
    )
    assert never["comparison"] is None and "no run of B reached" in never["verdict"]
    low = [load_run(write_log(tmp_path / f"l{k}.csv", curve(1.0, 0.95)), "loss") for k in range(2)]
    assert low[0].time_to_target(0.2, True) == 80.0


def test_unix_times_are_made_relative_to_the_run_start(tmp_path) -> None:
    trace = DATA / "cpu_compute_training" / "trace.jsonl"
    run0 = load_run(str(trace), None)
    assert run0.steps > 0 and run0.seconds_per_step > 0 and run0.start is not None
    log = write_log(tmp_path / "q.csv", [(run0.start + 30.0, 0.5), (run0.start + 60.0, 0.9)])
    run = load_run(f"{trace},{log}", "accuracy")
    assert run.time_to_target(0.9, False) == pytest.approx(60.0)


def test_bad_input_names_what_to_fix(tmp_path) -> None:
    p = tmp_path / "q.csv"
    p.write_text("step,accuracy\n1,0.5\n")
    with pytest.raises(InputError, match="no time column"):
        read_quality(str(p), "accuracy")
    p.write_text("elapsed,acc\n1,0.5\n")
    with pytest.raises(InputError, match="no column 'accuracy'.*acc"):
        read_quality(str(p), "accuracy")
    with pytest.raises(InputError, match="go together"):
        compare_groups([], [], "accuracy", None)
    with pytest.raises(InputError, match="neither a bottleneckd trace"):
        load_run(str(p), None)


@pytest.mark.slow
def test_cli(tmp_path, cli_env) -> None:
    a = [write_log(tmp_path / f"a{k}.csv", curve(1.0 + 0.02 * k, 0.95)) for k in range(3)]
    b = [write_log(tmp_path / f"b{k}.csv", curve(1.0 + 0.02 * k + 0.005, 0.95)) for k in range(3)]
    r = run_cli(["compare", *a, "--vs", *b, "--metric", "accuracy", "--target", "0.9", "--json"], cli_env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "within noise" and doc["epsilon"] == 0.0
    r = run_cli(["compare", *a, "--vs", *b, "--metric", "accuracy", "--target", "0.9"], cli_env)
    assert "within noise" in r.stdout and "(epsilon, delta)" in r.stdout
    r = run_cli(["compare", *a, *b, "--metric", "accuracy", "--target", "0.9"], cli_env)
    assert r.returncode == 2 and "--vs" in r.stderr
    r = run_cli(["compare", a[0], "--vs", b[0], "--metric", "accuracy"], cli_env)
    assert r.returncode == 2 and "go together" in r.stderr
    r = run_cli(
        [
            "compare",
            str(DATA / "cpu_compute" / "trace.jsonl"),
            "--vs",
            str(DATA / "cpu_compute_training" / "trace.jsonl"),
        ],
        cli_env,
    )
    assert r.returncode == 0 and "untested" in r.stdout and "seconds per training step" in r.stdout


def test_blocks_keep_a_mitigation_only_when_it_is_significantly_faster() -> None:
    from bottleneckd.compare.blocks import decide, seconds_per_item

    assert seconds_per_item([(0.5, 32), (0.5, 32)]) == pytest.approx(1 / 64)
    assert seconds_per_item([(0.5, 0), (0.7, 0)]) == pytest.approx(0.6)  # per step without batch sizes
    rng = np.random.default_rng(3)

    def blocks(step: float, n: int = 4) -> list[list[tuple[float, int]]]:
        return [[(float(step * np.exp(rng.normal(0, 0.02))), 32) for _ in range(10)] for _ in range(n)]

    faster = decide(blocks(0.10), blocks(0.08), alpha=0.05, min_gain=0.02)
    assert faster.keep and faster.ratio == pytest.approx(1.25, rel=0.03) and "kept" in faster.message
    assert faster.comparison.ci[0] < 1.25 < faster.comparison.ci[1]
    same = decide(blocks(0.10), blocks(0.10))
    assert not same.keep and "reverted" in same.message
    small = decide(blocks(0.10, 6), blocks(0.099, 6), alpha=0.25, min_gain=0.05)
    assert not small.keep
    few = decide(blocks(0.10, 1), blocks(0.05, 1))
    assert not few.keep and few.comparison is None and "too few" in few.message
