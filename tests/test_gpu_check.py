"""scripts/gpu_check.py: its judgement and its inputs (the full --fake run is `python scripts/gpu_check.py --fake`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import gpu_check  # noqa: E402


def test_labels_are_judged_by_the_intervention_ratio_and_both_verdicts():
    ok = {"resource": "gpu_memory_bandwidth"}
    assert gpu_check._judge("elementwise_2gib", 1.9, ok, ok, fake=False)["pass"] is True
    assert (
        gpu_check._judge("elementwise_2gib", 1.1, ok, ok, fake=False)["label_proved"] is False
    )  # bytes halved, time not: not memory-bound
    assert gpu_check._judge("elementwise_2gib", 1.9, ok, {"resource": "gpu_compute"}, fake=False)["pass"] is False
    lb = {"resource": "cpu_compute"}
    assert gpu_check._judge("launch_bound", 1.1, lb, lb, fake=False)["pass"] is True
    assert gpu_check._judge("launch_bound", 3.0, lb, lb, fake=False)["label_proved"] is False
    assert gpu_check._judge("grad_accum", 1.02, {"data_wait_share": 0.03}, {}, fake=False)["pass"] is True
    assert gpu_check._judge("grad_accum", 1.02, {"data_wait_share": 0.42}, {}, fake=False)["pass"] is False
    # no label is proved without its intervention: no ratio, or a loader that was the limit
    assert gpu_check._judge("grad_accum", None, {"data_wait_share": 0.03}, {}, fake=False)["label_proved"] is False
    assert gpu_check._judge("grad_accum", 1.6, {"data_wait_share": 0.03}, {}, fake=False)["pass"] is False
    assert gpu_check._judge("grad_accum", 1.02, {"data_wait_share": 0.03}, {}, fake=True)["judged"] is False


def test_phase_shares_come_from_the_whole_trace(tmp_path):
    t = tmp_path / "t.jsonl"
    lines = [
        {"type": "header"},
        {"type": "sample", "phases": {"steps": 2, "wall_seconds": 1.0, "phases": {"data_wait": 0.1, "forward": 0.9}}},
        {"type": "sample", "phases": None},
        {"type": "sample", "phases": {"steps": 2, "wall_seconds": 3.0, "phases": {"forward": 3.0}}},
    ]
    t.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert gpu_check._trace_shares(t) == {"data_wait": 0.025, "forward": 0.975}


@pytest.mark.parametrize(
    "args,msg", [(["--fake", "--only", "nope"], "unknown workload 'nope'"), ([], "torch sees no CUDA device")]
)
def test_bad_input_is_one_line_and_exit_2(args, msg, tmp_path):
    import torch

    if not args and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts/gpu_check.py"), "--out", str(tmp_path)] + args,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1
