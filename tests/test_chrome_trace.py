"""``bottleneckd report --format chrome-trace``: a recorded run as a Chrome/Perfetto trace, loaded
back by a real trace reader (HolisticTraceAnalysis, Meta's reader of PyTorch profiler traces): one
track per rank whose phase slices are the ranks' recorded phases, and the verdict, regime changes
and mitigations as instant events."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

STRAGGLER = ROOT / "tests" / "ranks_data" / "straggler_4ranks.jsonl"  # 4 DDP ranks recorded on this VM
REGIME = ROOT / "tests" / "data" / "regime_change" / "trace.jsonl"


def _samples(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if '"type":"sample"' in x.replace(" ", "")]


def _with_mitigation(tmp_path: Path) -> tuple[Path, float]:
    """The 4-rank trace with a hook event appended, as the sidecar writes the hook's messages."""
    trace = tmp_path / "straggler.jsonl"
    shutil.copy(STRAGGLER, trace)
    samples = _samples(trace)
    t = samples[len(samples) // 2]["t"]
    event = {
        "type": "event",
        "version": 2,
        "kind": "mitigation_applied",
        "name": "ddp_comm_hook",
        "t": t,
        "changes_semantics": False,
        "note": "bf16 compression",
    }
    with trace.open("a") as f:
        f.write(json.dumps(event) + "\n")
    return trace, t


@pytest.mark.slow
def test_chrome_trace_loads_in_holistic_trace_analysis(tmp_path, cli_env):
    hta = pytest.importorskip("hta.trace_analysis")
    trace, t_event = _with_mitigation(tmp_path)
    out = tmp_path / "chrome" / "run.json"
    out.parent.mkdir()
    r = run_cli(["report", str(trace), "--format", "chrome-trace", "-o", str(out)], cli_env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout + r.stderr

    ta = hta.TraceAnalysis(trace_dir=str(out.parent))  # the reader: parses every slice into a frame
    df = ta.t.get_trace(0)
    names = ta.t.symbol_table.get_sym_table()
    df = df.assign(name_s=[names[i] for i in df["name"]])
    assert set(df["pid"]) == {10, 11, 12, 13}  # one track per rank
    phases = {"forward", "backward", "optimizer", "communication", "other"}
    assert phases <= set(df["name_s"])

    doc = json.loads(out.read_text())
    procs = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert [procs[p] for p in (10, 11, 12, 13)] == [f"rank {k} @ vm" for k in range(4)]
    # what the reader got is what was recorded: per rank and interval, each phase's slice is its
    # share of the interval's span (rank 2's communication, in the fifth sample)
    s = _samples(STRAGGLER)[4]
    t0 = _samples(STRAGGLER)[0]["t"] - _samples(STRAGGLER)[0]["interval"]
    r2 = next(x for x in s["ranks"] if x["identity"]["rank"] == 2)["phases"]
    share = r2["phases"]["communication"] / sum(v for v in r2["phases"].values() if v > 0)
    start_us = (s["t"] - s["interval"] - t0) * 1e6
    end_us = (s["t"] - t0) * 1e6
    comm = df[(df["pid"] == 12) & (df["name_s"] == "communication") & (df["ts"] >= start_us - 1) & (df["ts"] < end_us)]
    assert len(comm) == 1
    assert float(comm["dur"].iloc[0]) == pytest.approx(share * s["interval"] * 1e6, abs=2.0)  # HTA rounds to us
    # each rank's slices of an interval tile it: no overlap on a track
    by_track = defaultdict(list)
    for _, row in df.iterrows():
        by_track[row["pid"]].append((row["ts"], row["ts"] + row["dur"]))
    for spans in by_track.values():
        spans.sort()
        assert all(b0 >= a1 - 1 for (_, a1), (b0, _) in zip(spans, spans[1:], strict=False))

    instants = [e for e in doc["traceEvents"] if e["ph"] == "i"]
    mit = [e for e in instants if e["cat"] == "mitigation"]
    assert [e["name"] for e in mit] == ["mitigation applied: ddp_comm_hook"]
    assert mit[0]["ts"] == pytest.approx((t_event - t0) * 1e6, abs=1)
    (verdict,) = [e for e in instants if e["cat"] == "verdict"]
    assert verdict["name"] == "verdict: inter_gpu_interconnect (communication)"  # as analyze says of this trace
    assert any("straggler: rank 2" in x for x in verdict["args"]["evidence"])


def test_chrome_trace_marks_every_regime_change(tmp_path, cli_env):
    out, js = tmp_path / "run.json", tmp_path / "report.json"
    r = run_cli(["report", str(REGIME), "--format", "chrome-trace", "-o", str(out), "--json", str(js)], cli_env)
    assert r.returncode == 0, r.stderr
    doc, rep = json.loads(out.read_text()), json.loads(js.read_text())
    t0 = doc["otherData"]["start_unix"]
    changes = [e for e in doc["traceEvents"] if e["ph"] == "i" and e["cat"] == "regime"]
    assert len(changes) == len(rep["regime_changes"]) >= 2
    for e, c in zip(changes, rep["regime_changes"], strict=True):
        assert e["name"] == f"regime change: {c['before']} -> {c['after']}"
        assert e["ts"] == pytest.approx((c["t"] - t0) * 1e6, abs=1)
    assert any(
        c["before"] == "cpu_memory_bandwidth" or c["after"] == "cpu_memory_bandwidth" for c in rep["regime_changes"]
    )  # the recorded change of regime (tests/data/regime_change/expected.json)
    # a job with no per-rank reports still gets its step phases, on one track
    tracks = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert tracks == {"bottleneckd", "job"}
    assert any(e["ph"] == "X" and e["pid"] == 10 for e in doc["traceEvents"])


def test_chrome_trace_output_is_checked_before_any_work(tmp_path, cli_env):
    out = tmp_path / "run.json"
    out.write_text("keep")
    r = run_cli(["report", str(REGIME), "--format", "chrome-trace", "-o", str(out)], cli_env)
    assert r.returncode == 2 and out.read_text() == "keep"
    assert "--force" in r.stderr and len(r.stderr.strip().splitlines()) == 1
