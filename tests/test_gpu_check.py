"""scripts/gpu_check.py: its judgement and its inputs (the full --fake run is `python scripts/gpu_check.py --fake`)."""

from __future__ import annotations

import json
import os
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
    assert gpu_check._judge("launch_bound", 1.1, lb, None, fake=False)["pass"] is True  # attach not judged
    # "not faster": the ratio is intervention / base (one rank alone must not be much faster)
    w = gpu_check.WORKLOADS["fsdp_2rank"]
    assert gpu_check._ratio(w, {"base": 10.0, "intervention": 11.0}) == pytest.approx(1.1)
    assert gpu_check._ratio(gpu_check.WORKLOADS["launch_bound"], {"base": 10.0, "intervention": 9.0}) == pytest.approx(
        10 / 9
    )
    assert gpu_check._judge("launch_bound", 3.0, lb, lb, fake=False)["label_proved"] is False
    # grad_accum has no resource label: its intervention (no DataLoader) must show the data path
    # costs nothing, and the hook's data wait must then read under 5%
    assert gpu_check._judge("grad_accum", 1.01, {"data_wait_share": 0.03}, None, fake=False)["pass"] is True
    assert gpu_check._judge("grad_accum", 1.01, {"data_wait_share": 0.42}, None, fake=False)["pass"] is False
    assert gpu_check._judge("grad_accum", 1.01, {"data_wait_share": 0.03}, None, fake=True)["judged"] is False


def test_no_label_is_proved_without_its_intervention_measured():
    """grad_accum was marked proved with no intervention at all; now every workload has one, and a
    label whose intervention was not measured in the run is not proved (and does not pass)."""
    for name, w in gpu_check.WORKLOADS.items():
        assert w.intervention and w.rule[0] in ("faster", "slower", "not faster", "not slower") and w.rule[1] > 0, name
        j = gpu_check._judge(name, None, {"resource": w.label, "data_wait_share": 0.0}, None, fake=False)
        assert j["label_proved"] is False and j["pass"] is False and "not measured" in j["why"], name


def test_what_users_run_is_covered():
    ws = gpu_check.WORKLOADS
    assert {"amp_autocast", "compiled", "cuda_graph_step", "allocator_full", "launch_bound", "pageable_h2d"} <= set(ws)
    assert ws["ddp_2rank"].ranks == 2 and ws["fsdp_2rank"].ranks == 2
    assert ws["fsdp_2rank"].label == "gpu_compute"  # overlapped communication: not inter_gpu_interconnect
    assert dict(ws["amp_autocast"].facts)["autocast_dtype"] == "bfloat16"
    assert dict(ws["cuda_graph_step"].facts)["cuda_graphs"] == "whole step"


def test_the_facts_a_workload_must_show_are_checked():
    ok = {"resource": "gpu_compute", "facts": {"autocast_dtype": "bfloat16", "compute_dtype": "bfloat16"}}
    assert gpu_check._judge("amp_autocast", 6.0, ok, None, fake=False)["pass"] is True
    bad = {"resource": "gpu_compute", "facts": {"autocast_dtype": None, "compute_dtype": "float32"}}
    j = gpu_check._judge("amp_autocast", 6.0, bad, None, fake=False)
    assert j["pass"] is False and j["run_ok"] is False and len(j["facts_missing"]) == 2


def test_two_rank_workloads_need_two_gpus_and_the_budget_is_kept():
    import argparse

    a = argparse.Namespace(fake=False, seconds=6.0, timing=2.0, budget=gpu_check.BUDGET_S)
    assert "needs 2 GPUs, this machine has 1" in gpu_check.skip_reason("fsdp_2rank", a, 1, 0.0)
    assert gpu_check.skip_reason("fsdp_2rank", a, 2, 0.0) == ""
    assert gpu_check.skip_reason("bf16_matmul", a, 1, gpu_check.BUDGET_S - 10).startswith("time budget")
    cmd = gpu_check._workload("fsdp_2rank", a, 4.0, "base", 2)
    assert cmd[1:4] == ["-m", "torch.distributed.run", "--standalone"] and "--nproc_per_node=2" in cmd
    # every workload in one go on one GPU fits the budget (the 2-rank ones are not run there)
    total = sum(gpu_check.estimate_s(n, a) for n, w in gpu_check.WORKLOADS.items() if w.ranks == 1)
    assert total + 60 < 600, total


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


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fake_dry_run_end_to_end(tmp_path):
    """The --fake dry run on one workload (the full one, every workload: `python scripts/gpu_check.py
    --fake`, 30 min on the loaded 2-core VM): the intervention measured, the verdict and the hook's
    facts reported, nothing judged, JSON and Markdown written."""
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts/gpu_check.py"), "--fake", "--out", str(tmp_path)]
        + ["--only", "amp_autocast", "--seconds", "3", "--timing", "0.5"],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "BOTTLENECKD_HOME": str(tmp_path / "home")},  # run keeps the CPU peaks it measures there
    )
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads((tmp_path / "gpu_check.json").read_text())
    assert [w["workload"] for w in doc["workloads"]] == ["amp_autocast"] and doc["pass"] is None
    for w in doc["workloads"]:
        assert w["timing"]["ratio"] is not None, w["timing"]  # the intervention was measured
        assert w["judgement"]["judged"] is False and w["run"]["rc"] == 0
    amp = doc["workloads"][0]
    assert amp["run"]["facts"]["autocast_dtype"] == "bfloat16"  # the hook saw autocast (CPU, injected)
    md = (tmp_path / "gpu_check.md").read_text()
    assert "amp_autocast" in md and "set_sync_debug_mode" in md
