"""The docs' generated blocks (scripts/gen_docs.py) match what the code, the workloads and the
recorded results say today: a changed threshold, workload or rule constant with stale docs fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import gen_docs  # noqa: E402


@pytest.mark.slow
def test_every_generated_block_is_current() -> None:
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--check"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_block_is_refilled_between_its_markers_only() -> None:
    text = "before <!-- gen:a -->old<!-- /gen:a --> after\n<!-- gen:b -->\nold\nlines\n<!-- /gen:b -->\nend"
    out = gen_docs.fill(gen_docs.fill(text, "a", "new"), "b", "one\ntwo")
    assert out == "before <!-- gen:a -->new<!-- /gen:a --> after\n<!-- gen:b -->\none\ntwo\n<!-- /gen:b -->\nend"
    assert gen_docs.fill(text, "missing", "x") is None


def test_the_results_table_comes_from_a_record(tmp_path) -> None:
    run = {"throughput": 2.0, "exit_code": 0, "wall_seconds": 5, "failure": None}
    slow = {**run, "throughput": 1.0}
    doc = {
        "_path": "docs/eval-results/x.json",
        "meta": {
            "commit": "abcdef1234",
            "dirty": False,
            "date": "2025-01-01T00:00:00Z",
            "cores": 2,
            "cpu": "c",
            "load_start": [3.0, 2.0, 1.0],
            "load_end": [4.0, 2.0, 1.0],
            "threads": "default",
        },
        "args": {"seconds": 12.0, "threads": "default"},
        "summary": {"scored": 1, "run": {"right": 1, "undetermined": 0, "wrong": 0, "error": 0}, "failed_runs": {}},
        "workloads": [
            {
                "name": "compute_bound",
                "label": "cpu_compute/compute",
                "scored": True,
                "load_before": [3.5, 2, 1],
                "load_after": [3.9, 2, 1],
                "proof": {
                    "bare": [slow] * 3,
                    "intervention": [run] * 3,
                    "ratio": 2.0,
                    "ci": [1.8, 2.2],
                    "p_value": 0.001,
                    "status": "proven",
                },
                "run": {"resource": "cpu_compute", "stage": "compute", "outcome": "right"},
            }
        ],
    }
    text = gen_docs.results_of(doc)
    assert "commit `abcdef1234`" in text and "`--threads default`" in text and "load average 3 at the start" in text
    assert "| compute_bound | cpu_compute/compute | 1 -> 2 | x2.00 (x1.80-x2.20) | 0.001 | - | proven " in text
    assert "run: right 1/1" in text
