import json
import signal
import subprocess
import sys
import time

import pytest

from bottleneckd.model.errors import TraceError
from bottleneckd.outputs.trace import read_trace
from tests.conftest import ROOT, run_cli

GPU_TRACE = ROOT / "tests/data/gpu_compute/trace.jsonl"


@pytest.mark.slow
def test_record_then_analyze_round_trip(tmp_path, cli_env):
    out = tmp_path / "t.jsonl"
    r = run_cli(
        [
            "record",
            "-o",
            str(out),
            "--duration",
            "3",
            "--interval",
            "0.25",
            "--quiet",
            "--socket",
            str(tmp_path / "s/sock"),
        ],
        cli_env,
    )
    assert r.returncode == 0, r.stderr
    header, samples = read_trace(str(out))
    items = list(samples)
    # 12 samples at most in 3 s; fewer where ticks overrun (a loaded machine)
    assert header.version == 1 and header.interval == 0.25 and 4 <= len(items) <= 13
    assert {p.resource for p in header.peaks.peaks} >= {"cpu_compute", "storage_bandwidth"}
    r = run_cli(["analyze", str(out), "--format", "json"], cli_env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "bottleneckd.report/1" and doc["samples"] == len(items)
    # an existing trace is not overwritten without --force
    before = out.read_bytes()
    r = run_cli(["record", "-o", str(out), "--duration", "0.5", "--quiet"], cli_env)
    assert r.returncode == 2 and "already exists" in r.stderr and out.read_bytes() == before


def test_sigterm_loses_at_most_one_interval(tmp_path, cli_env):
    out = tmp_path / "t.jsonl"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bottleneckd.cli",
            "record",
            "-o",
            str(out),
            "--interval",
            "0.2",
            "--quiet",
            "--socket",
            str(tmp_path / "s/sock"),
        ],
        env=cli_env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # recording has started once the header and a few samples are written (start-up takes
        # seconds on a busy machine: a fixed sleep sent SIGTERM before the handlers were installed)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not out.exists() or len(out.read_text().splitlines()) < 6):
            time.sleep(0.2)
        lines_before = len(out.read_text().splitlines())
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 0
    finally:
        if p.poll() is None:  # never leave the recorder running when an assertion fails
            p.kill()
            p.wait()
    lines = out.read_text().splitlines()
    assert len(lines) >= lines_before and all(json.loads(line) for line in lines)
    assert len(list(read_trace(str(out))[1])) >= 5


def test_truncated_last_line_is_skipped(tmp_path):
    text = GPU_TRACE.read_text()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[: len(text) - 200])  # a crash in the middle of the last line
    header, samples = read_trace(str(cut))
    assert len(list(samples)) == len(text.splitlines()) - 2


@pytest.mark.slow
def test_corrupt_line_is_named_and_the_good_part_is_analysed(tmp_path, cli_env):
    lines = GPU_TRACE.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines[:21] + ["{not json"] + lines[21:]) + "\n")
    with pytest.raises(TraceError) as e:
        list(read_trace(str(bad))[1])
    assert e.value.line == 22
    r = run_cli(["analyze", str(bad), "--format", "json"], cli_env)
    assert r.returncode == 2
    assert f"{bad}:22:" in r.stderr and "Traceback" not in r.stderr
    doc = json.loads(r.stdout)
    assert doc["samples"] == 20 and doc["verdict"]["resource"] == "gpu_compute"


@pytest.mark.parametrize(
    "content,problem",
    [
        ("", "empty file"),
        ('{"type": "header", "format": "other"}\n', "not a bottleneckd trace"),
        ('{"type":"header","format":"bottleneckd.trace","version":99}\n', "version 99"),
    ],
)
def test_not_a_trace(tmp_path, content, problem, cli_env):
    p = tmp_path / "x.jsonl"
    p.write_text(content)
    r = run_cli(["analyze", str(p)], cli_env)
    assert r.returncode == 2 and problem in r.stderr and r.stderr.count("\n") == 1


def test_a_mitigation_applied_by_the_hook_is_recorded_as_an_event(tmp_path, cli_env):
    torch = pytest.importorskip("torch")
    from bottleneckd.torch import watch

    sock = tmp_path / "s" / "bottleneckd.sock"
    out = tmp_path / "t.jsonl"
    model = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(
        model.parameters(), lr=0.1
    )  # torch's lazy imports (seconds on a busy machine) before the 4 s recording
    # no --duration: the recording is stopped (SIGTERM keeps every line) once the job is done,
    # however long torch's lazy imports take on a busy machine
    rec = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bottleneckd.cli",
            "record",
            "-o",
            str(out),
            "--interval",
            "0.25",
            "--quiet",
            "--socket",
            str(sock),
        ],
        env=cli_env,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not sock.exists():
            assert time.monotonic() < deadline
            time.sleep(0.1)
        w = watch(model, opt, [torch.randn(4, 8)] * 10, socket_path=str(sock), print_epoch=False, roofline_step=None)
        w.apply("channels_last")
        for x in w.dataloader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        w.close()
        time.sleep(1.0)  # four sampling intervals: the event is copied into the trace at the next tick
    finally:
        rec.send_signal(signal.SIGTERM)
        assert rec.wait(timeout=60) == 0
    events = [json.loads(line) for line in out.read_text().splitlines() if '"type":"event"' in line]
    assert [(e["kind"], e["name"], e["changes_semantics"]) for e in events] == [
        ("mitigation_applied", "channels_last", False)
    ]


def test_a_reader_ignores_header_fields_it_does_not_know(tmp_path):
    """The format's contract ("a reader must ignore fields it does not know"), in every object of
    the header's machine and peaks (a blind trace writer's `firmware` on a block device rejected
    the whole trace); a missing field that may be unknown reads as unknown."""
    lines = GPU_TRACE.read_text().splitlines()
    head = json.loads(lines[0])
    m = head["machine"]
    m["cpu"]["microcode"] = "0x2b000571"
    m["cpu"].pop("sockets")
    for obj in (*m["gpus"], *m["block_devices"], *m["nics"], *m["mounts"], *head["peaks"]):
        obj["firmware"] = "x"
    assert m["block_devices"] and m["gpus"] and head["peaks"]
    m["block_devices"][0].pop("model")
    out = tmp_path / "extra.jsonl"
    out.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    header, samples = read_trace(str(out))
    assert header.machine is not None
    assert header.machine.cpu.sockets is None and header.machine.block_devices[0].model is None
    assert len(list(samples)) == len(lines) - 1
