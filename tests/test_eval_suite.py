"""The labelled suite's bookkeeping (scripts/eval.py): every workload declares a label in the
shared vocabulary and an intervention with a threshold, and verdicts are scored against it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bottleneckd.model.resources import RESOURCES, STAGES, UNDETERMINED

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("suite_eval", ROOT / "scripts" / "eval.py")
ev = importlib.util.module_from_spec(spec)
sys.modules["suite_eval"] = ev
spec.loader.exec_module(ev)

WORKLOADS = ev.discover()


def test_the_suite_has_24_cpu_workloads_or_more() -> None:
    assert len([w for w in WORKLOADS if w.needs == "cpu"]) >= 24


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.name)
def test_each_label_is_in_the_vocabulary_with_an_intervention(w) -> None:  # noqa: ANN001
    assert w.labels and all(r in RESOURCES or r == UNDETERMINED for r in w.labels)
    assert w.stage is None or w.stage in STAGES
    if w.needs == "cpu":
        assert w.intervention and w.min_speedup and w.min_speedup > 1.2
        src = (ev.W / f"{w.name}.py").read_text()
        assert "options(__doc__)" in src  # common.options: the --seconds and --intervene the proof passes


def _w(labels: tuple[str, ...], stage: str | None) -> ev.Workload:
    return ev.Workload("x", labels, stage, "i", 2.0, "cpu")


def _doc(resource: str, stage: str) -> dict:
    return {"verdict": {"resource": resource, "stage": stage, "evidence": ["e"]}}


def test_judge_right_wrong_undetermined_and_error() -> None:
    w = _w(("storage_bandwidth",), "data")
    assert ev.judge(w, _doc("storage_bandwidth", "data"))["outcome"] == "right"
    assert ev.judge(w, _doc("storage_bandwidth", "compute"))["outcome"] == "wrong"  # right resource, wrong stage
    assert ev.judge(w, _doc("cpu_compute", "data"))["outcome"] == "wrong"
    assert ev.judge(w, _doc("undetermined", "other"))["outcome"] == "undetermined"
    assert ev.judge(w, {"error": "boom"})["outcome"] == "error"
    idle = _w(("undetermined",), None)
    assert ev.judge(idle, _doc("undetermined", "other"))["outcome"] == "right"
    assert ev.judge(idle, _doc("cpu_compute", "compute"))["outcome"] == "wrong"
    either = _w(("cpu_compute", "storage_bandwidth"), "other")
    assert ev.judge(either, _doc("storage_bandwidth", "other"))["outcome"] == "right"
    assert ev.judge(either, _doc("cpu_compute", "data"))["outcome"] == "wrong"


def test_a_straggler_label_is_right_only_with_its_rank_named() -> None:
    from dataclasses import replace

    w = replace(_w(("cpu_compute",), "compute"), straggler=1)
    named = {"verdict": {"resource": "cpu_compute", "stage": "compute", "straggler": {"rank": 1}}}
    assert ev.judge(w, named)["outcome"] == "right"
    assert ev.judge(w, named)["straggler"] == 1
    other = {"verdict": {"resource": "cpu_compute", "stage": "compute", "straggler": {"rank": 0}}}
    assert ev.judge(w, other)["outcome"] == "wrong"
    assert ev.judge(w, _doc("cpu_compute", "compute"))["outcome"] == "wrong"  # no rank named
    assert ev.judge(w, _doc("undetermined", "communication"))["outcome"] == "undetermined"
    assert [x.straggler for x in WORKLOADS if x.name == "straggler_uneven"] == [1]


def test_throughput_reads_the_last_line() -> None:
    assert (
        ev.throughput("throughput: 1.5 steps/s (3 steps)\nnoise\nthroughput: 2.250 steps/s (9 steps in 4.0 s)\n")
        == 2.25
    )
    assert ev.throughput("Traceback ...") is None


def test_confusion_matrix_counts_scored_rows_only() -> None:
    rows = [
        {"label": "a/data", "scored": True, "run": {"resource": "a", "stage": "data"}},
        {"label": "a/data", "scored": True, "run": {"resource": "b", "stage": "data"}},
        {"label": "c/*", "scored": False, "run": {"resource": "b", "stage": "data"}},
    ]
    text = ev.confusion(rows, "run")
    assert "c/*" not in text
    line = next(ln for ln in text.splitlines() if ln.startswith("a/data"))
    assert line.split()[1:] == ["1", "1"]


# --- proofs with statistics (eval_suite/proof.py) ---------------------------------------------

from eval_suite import proof, record, workloads  # noqa: E402  (scripts/ is on the path once eval.py is loaded)


def _runs(*tps: float | None, failure: str | None = None) -> list[dict]:
    return [
        {"throughput": t, "exit_code": 0, "wall_seconds": 5.0, "failure": failure if t is None else None} for t in tps
    ]


def test_a_proof_needs_three_good_runs_a_side_and_reports_the_failed_one() -> None:
    w = ev.Workload("x", ("cpu_compute",), "compute", "i", 1.6, "cpu", sha256="h")
    ok = proof.judge_proof(w, {"bare": _runs(1.0, 1.1, 0.9), "intervention": _runs(2.0, 2.1, 1.9)})
    assert ok["status"] == "proven" and ok["p_value"] < proof.ALPHA and ok["failures"] == []
    # the same ratio resting on two good runs and one crash: reported, and it proves nothing
    one_failed = {
        "bare": _runs(1.0, 1.1, None, failure="exit code 1: Traceback"),
        "intervention": _runs(2.0, 2.1, 1.9),
    }
    bad = proof.judge_proof(w, one_failed)
    assert bad["status"] == "failed" and not bad["proven"]
    assert bad["failures"] == ["bare run 2: exit code 1: Traceback"]


def test_a_ratio_above_the_threshold_within_noise_is_not_a_proof() -> None:
    w = ev.Workload("x", ("cpu_compute",), "compute", "i", 1.6, "cpu")
    noisy = proof.judge_proof(w, {"bare": _runs(1.0, 0.3, 3.0), "intervention": _runs(1.7, 0.4, 4.0)})
    assert noisy["ratio"] >= 1.6 and noisy["p_value"] >= proof.ALPHA and noisy["status"] == "unproven"


def test_a_control_that_helps_disproves_the_label() -> None:
    w = ev.Workload("x", ("cpu_compute",), "compute", "i", 1.6, "cpu", control="fewer bytes", control_max=1.25)
    runs = {"bare": _runs(1.0, 1.1, 0.9), "intervention": _runs(2.0, 2.1, 1.9)}
    held = proof.judge_proof(w, {**runs, "control": _runs(1.0, 1.05, 0.95)})
    assert held["status"] == "proven" and held["control_ratio"] == pytest.approx(1.0)
    moved = proof.judge_proof(w, {**runs, "control": _runs(1.9, 2.0, 2.1)})
    assert moved["status"] == "disproved" and "another resource" in moved["why"]
    # a control whose median reaches the threshold only through noise disproves nothing (eval_phases
    # at load 13: bare 4.4, 4.2, 7.8 steps/s, control 9.0, 4.6, 7.6)
    noisy = proof.judge_proof(w, {**runs, "control": _runs(1.8, 0.5, 1.3)})
    assert noisy["control_ratio"] >= 1.25 and noisy["status"] == "inconclusive" and not noisy["proven"]


def test_one_run_reports_a_crash_a_timeout_and_a_zero(tmp_path) -> None:
    crash = proof.one_run([sys.executable, "-c", "raise SystemExit('boom')"], {}, 1, tmp_path / "a.log")
    assert crash["exit_code"] == 1 and "boom" in crash["failure"]
    zero = proof.one_run(
        [sys.executable, "-c", "print('throughput: 0.000 steps/s (0 steps in 1.0 s)')"], {}, 1, tmp_path / "b.log"
    )
    assert zero["failure"] == "zero throughput (no step completed)"
    fine = proof.one_run([sys.executable, "-c", "print('throughput: 2.500 steps/s')"], {}, 1, tmp_path / "c.log")
    assert fine["failure"] is None and fine["throughput"] == 2.5


def test_earlier_proofs_are_reused_only_for_the_same_source_and_threads() -> None:
    w = ev.Workload("x", ("cpu_compute",), "compute", "i", 1.6, "cpu", sha256="abc")
    earlier = proof.judge_proof(w, {"bare": _runs(1.0, 1.1, 0.9), "intervention": _runs(2.0, 2.1, 1.9)})
    p, _ = proof.reusable(w, earlier, "1")
    assert p["proven"] and p["reused"]
    changed = ev.Workload("x", ("cpu_compute",), "compute", "i", 1.6, "cpu", sha256="def")
    assert proof.reusable(changed, earlier, "1") == (
        None,
        "the workload's source changed since (or the proof carries no hash)",
    )
    assert proof.reusable(w, earlier, "default")[0] is None
    old_format = {"bare": [1.0, 1.1], "intervention": [2.0, 2.1], "ratio": 2.0}  # no hash: never reused
    assert proof.reusable(w, old_format, "1")[0] is None
    stricter = ev.Workload("x", ("cpu_compute",), "compute", "i", 2.5, "cpu", sha256="abc")
    assert proof.reusable(stricter, earlier, "1")[0]["status"] == "unproven"  # judged on today's threshold


def test_the_source_hash_follows_the_workload_modules_it_imports(tmp_path) -> None:
    (tmp_path / "common.py").write_text("X = 1\n")
    (tmp_path / "job.py").write_text("LABEL = 'cpu_compute'\nfrom common import X\nimport torch\n")
    before = workloads.source_hash(tmp_path / "job.py")
    (tmp_path / "common.py").write_text("X = 2\n")
    assert workloads.source_hash(tmp_path / "job.py") != before
    assert workloads.discover(tmp_path)[0].sha256 == workloads.source_hash(tmp_path / "job.py")


def test_merge_never_replaces_a_row_in_silence(tmp_path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"workloads": [{"name": "x", "v": 1}, {"name": "y", "v": 1}]}))
    b.write_text(json.dumps({"workloads": [{"name": "x", "v": 2}]}))
    with pytest.raises(record.DuplicateRows, match="x is in both"):
        record.merge_rows([str(a), str(b)])
    rows, said = record.merge_rows([str(a), str(b)], later_wins=True)
    assert rows["x"]["v"] == 2 and said == [f"x: the row of {b} replaces the row of {a}"]


def test_a_record_is_named_by_date_and_commit(tmp_path) -> None:
    m = {"date": "2025-01-02T03:04:05Z", "commit": "0123456789abcdef", "dirty": True}
    path = record.write_record({"meta": m, "workloads": []}, tmp_path)
    assert path.name == "20250102T0304-0123456789-dirty.json" and json.loads(path.read_text())["meta"] == m


def test_fewer_than_three_proof_runs_is_refused() -> None:
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "eval.py"), "--only", "tiny_ops", "--proof-runs", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "3 runs a side" in r.stderr


@pytest.mark.parametrize("w", [w for w in WORKLOADS if w.control], ids=lambda w: w.name)
def test_a_control_is_implemented_with_its_threshold(w) -> None:  # noqa: ANN001
    assert w.control_max and 1.0 < w.control_max < w.min_speedup
    assert "args.control" in (ev.W / f"{w.name}.py").read_text()


def test_second_proofs_from_earlier_outputs_a_later_file_wins(tmp_path):
    """--no-proof --also-from: the advice score counts a second recommendation proved in an
    earlier --also-proofs output, the latest file's proof of each workload."""
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"also": {"x": {"proves": "mixed_precision", "proven": False}, "y": {"proven": True}}}))
    second.write_text(json.dumps({"also": {"x": {"proves": "mixed_precision", "proven": True}}}))
    got = ev.earlier_also([str(first), str(second)])
    assert got["x"]["proven"] is True and got["y"]["proven"] is True


def test_an_earlier_second_proof_stands_only_for_the_same_label_source_and_threads():
    w = next(w for w in workloads.discover() if w.also_proves)
    good = {"proves": w.also_proves, "workload_sha256": w.sha256, "threads": "1", "proven": True}
    assert ev.also_unusable(w, good, "1") is None
    assert "source changed" in ev.also_unusable(w, {**good, "workload_sha256": "x"}, "1")
    assert "--threads 1, not default" in ev.also_unusable(w, good, "default")
    assert "it proves" in ev.also_unusable(w, {**good, "proves": "nothing"}, "1")


def test_also_from_a_file_without_second_proofs_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "full.json"
    bad.write_text(json.dumps({"workloads": []}))
    with pytest.raises(SystemExit) as e:
        ev.earlier_also([str(bad)])
    assert e.value.code == 2 and "no 'also' section" in capsys.readouterr().err
