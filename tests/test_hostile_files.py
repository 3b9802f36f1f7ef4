"""The standing table of bad paths and files (issue 16, items 14-16): every command that reads or
writes a file is handed garbage, kernel trees, FIFOs, devices, links, missing and existing paths.
Each case must end in one line on stderr naming the problem, exit code 2, no traceback, and
nothing created, overwritten or left behind."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

TRACE = ROOT / "tests/data/cpu_compute/trace.jsonl"
GARBAGE = bytes(range(255, -1, -1)) * 8
JOB_MARK = "job-started"


def _setup(tmp: Path) -> dict[str, str]:
    """Files the cases point at, created fresh for each case."""
    (tmp / "garbage").write_bytes(GARBAGE)
    lines = TRACE.read_text().splitlines()
    (tmp / "huge_number.jsonl").write_text(
        "\n".join(lines[:3] + [lines[3].replace('"t":', '"t":1e400,"x":', 1)] + lines[4:]) + "\n"
    )
    (tmp / "list_sample.jsonl").write_text("\n".join(lines[:3] + [json.dumps([1, 2, 3])] + lines[4:]) + "\n")
    head = json.loads(lines[0])
    head["machine"] = ["not", "an", "object"]
    (tmp / "list_header.jsonl").write_text("\n".join([json.dumps(head)] + lines[1:]) + "\n")
    os.mkfifo(tmp / "fifo")
    (tmp / "existing").write_text("keep me\n")
    (tmp / "a_file").write_text("x")
    (tmp / "catalog_list.json").write_text("[]")
    (tmp / "catalog_inf.json").write_text('{"schema": "bottleneckd.peaks/1", "x": 1e400}')
    (tmp / "profile_list.json").write_text("[1, 2]")
    (tmp / "profile_nan.json").write_text('{"schema": "bottleneckd.profile/1", "measurements": [{"value": NaN}]}')
    (tmp / "web_unknown.yml").write_text("http_server_config:\n  http2: false\n")
    (tmp / "web_request_cert.yml").write_text(
        f"tls_server_config:\n  cert_file: {tmp}/c.pem\n  key_file: {tmp}/k.pem\n"
        "  client_auth_type: RequestClientCert\n"
    )
    (tmp / "web_fifo_key.yml").write_text(f"tls_server_config:\n  cert_file: {tmp}/existing\n  key_file: {tmp}/fifo\n")
    os.symlink(tmp / "nowhere" / "target", tmp / "dangling")
    # compare's files (issue 25 item 2)
    (tmp / "log.csv").write_text("elapsed,acc\n10,0.5\n20,0.95\n")
    (tmp / "one_row.csv").write_text("elapsed,acc\n1700000000,0.95\n")
    (tmp / "negative.csv").write_text("elapsed,acc\n-10,0.5\n-5,0.95\n")
    (tmp / "digits.jsonl").write_text('{"time": 1, "acc": 1' + "0" * 5000 + "}\n")
    (tmp / "deep.jsonl").write_text('{"time": 1, "acc": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    (tmp / "nan_report.json").write_text(
        '{"schema": "bottleneckd.report/1", "throughput": {"steps": 10, "wall_seconds": NaN}}'
    )
    # tracebacks on bad input (issue 25 item 7): a header's interval of -1, a sample at t = 1e300
    neg = dict(head, interval=-1)
    (tmp / "negative_interval.jsonl").write_text("\n".join([json.dumps(neg)] + lines[1:]) + "\n")
    first = next(k for k, ln in enumerate(lines) if '"type":"sample"' in ln)
    far = json.loads(lines[first])
    far["t"] = 1e300
    (tmp / "t_1e300.jsonl").write_text("\n".join(lines[:first] + [json.dumps(far)] + lines[first + 1 :]) + "\n")
    with open(tmp / "sparse.jsonl", "w") as f:  # a trace's header, then a 2 GB hole (no disk used)
        f.write(lines[0] + "\n")
        f.truncate(2 * 1024**3)
    return {
        "t": str(tmp),
        "py": sys.executable,
        "long": str(tmp / ("s" * 120)),
        "job": f"open('{tmp}/{JOB_MARK}', 'w')",
        "trace": str(ROOT / "tests/data/cpu_compute_training/trace.jsonl"),
    }


QUALITY = ["--metric", "acc", "--target", "0.9"]
#: address space for each case: what failed by reading without bound (compare on /dev/zero grew to
#: 24 GB) ends in MemoryError here, not in the machine's OOM killer
CASE_MEMORY = 4 * 1024**3
#: (id, argv with {placeholders}, words the one line must hold)
CASES = [
    # files read
    ("analyze-binary", ["analyze", "{t}/garbage"], "not UTF-8"),
    ("analyze-1e400", ["analyze", "{t}/huge_number.jsonl"], "out of range"),
    ("analyze-list-for-object", ["analyze", "{t}/list_sample.jsonl"], "expected a JSON object"),
    ("analyze-list-in-header", ["analyze", "{t}/list_header.jsonl"], "malformed"),
    ("analyze-dev-zero", ["analyze", "/dev/zero"], "regular file"),
    ("analyze-fifo", ["analyze", "{t}/fifo"], "regular file"),
    ("analyze-proc", ["analyze", "/proc/self/status"], "is this a bottleneckd trace"),
    ("analyze-missing", ["analyze", "{t}/missing.jsonl"], "cannot read"),
    ("catalog-binary", ["--catalog", "{t}/garbage", "peaks", "--json"], "not UTF-8"),
    ("catalog-dev-zero", ["--catalog", "/dev/zero", "peaks", "--json"], "regular file"),
    ("catalog-fifo", ["--catalog", "{t}/fifo", "peaks", "--json"], "regular file"),
    ("catalog-1e400", ["--catalog", "{t}/catalog_inf.json", "peaks", "--json"], "out of range"),
    ("catalog-list", ["--catalog", "{t}/catalog_list.json", "peaks", "--json"], "catalog_list.json"),
    ("profile-binary", ["--profile", "{t}/garbage", "peaks", "--json"], "not UTF-8"),
    ("profile-list", ["--profile", "{t}/profile_list.json", "peaks", "--json"], "schema"),
    ("profile-nan", ["--profile", "{t}/profile_nan.json", "peaks", "--json"], "NaN"),
    ("profile-dev-zero", ["--profile", "/dev/zero", "peaks"], "regular file"),
    (
        "serve-trace-binary",
        ["serve", "--trace", "{t}/garbage", "--bind", "127.0.0.1:1", "--duration", "1"],
        "not UTF-8",
    ),
    ("serve-web-config-binary", ["serve", "--web-config", "{t}/garbage", "--duration", "1"], "not UTF-8"),
    ("serve-web-config-fifo", ["serve", "--web-config", "{t}/fifo", "--duration", "1"], "regular file"),
    (
        "serve-web-config-unknown-key",
        ["serve", "--web-config", "{t}/web_unknown.yml", "--duration", "1"],
        "http_server_config",
    ),
    (
        "serve-client-cert-unverified",
        ["serve", "--web-config", "{t}/web_request_cert.yml", "--duration", "1"],
        "RequestClientCert",
    ),
    ("serve-tls-key-fifo", ["serve", "--web-config", "{t}/web_fifo_key.yml", "--duration", "1"], "not a regular file"),
    ("serve-bind-nonsense", ["serve", "--bind", "nonsense", "--duration", "1"], "--bind"),
    ("serve-bind-port-range", ["serve", "--bind", "127.0.0.1:99999", "--duration", "1"], "65535"),
    # files written
    ("record-missing-dir", ["record", "-o", "{t}/no/such/dir/t.jsonl", "--duration", "1"], "does not exist"),
    ("record-proc", ["record", "-o", "/proc/t.jsonl", "--duration", "1"], "/proc"),
    ("record-sys", ["record", "-o", "/sys/t.jsonl", "--duration", "1"], "/sys"),
    ("record-existing", ["record", "-o", "{t}/existing", "--duration", "1"], "already exists"),
    ("record-under-a-file", ["record", "-o", "{t}/a_file/t.jsonl", "--duration", "1"], "not a directory"),
    ("record-fifo-forced", ["record", "-o", "{t}/fifo", "--force", "--duration", "1"], "FIFO"),
    ("record-dangling-link", ["record", "-o", "{t}/dangling", "--duration", "1"], "already exists"),
    ("record-socket-too-long", ["record", "-o", "{t}/t.jsonl", "--socket", "{long}", "--duration", "1"], "longer than"),
    (
        "record-socket-under-a-file",
        ["record", "-o", "{t}/t.jsonl", "--socket", "{t}/a_file/s.sock", "--duration", "1"],
        "is a file",
    ),
    (
        "record-socket-on-a-file",
        ["record", "-o", "{t}/t.jsonl", "--socket", "{t}/existing", "--duration", "1"],
        "not a socket",
    ),
    ("run-trace-missing-dir", ["run", "--trace", "{t}/no/t.jsonl", "--", "{py}", "-c", "{job}"], "does not exist"),
    ("run-trace-proc", ["run", "--trace", "/proc/t.jsonl", "--", "{py}", "-c", "{job}"], "/proc"),
    (
        "run-report-missing-dir",
        ["run", "--report-json", "{t}/no/r.json", "--", "{py}", "-c", "{job}"],
        "does not exist",
    ),
    ("run-report-existing", ["run", "--report-json", "{t}/existing", "--", "{py}", "-c", "{job}"], "already exists"),
    ("run-report-sys", ["run", "--report-json", "/sys/r.json", "--", "{py}", "-c", "{job}"], "/sys"),
    ("run-bind-nonsense", ["run", "--bind", "nonsense", "--", "{py}", "-c", "{job}"], "--bind"),
    ("run-bind-port-range", ["run", "--bind", "127.0.0.1:99999", "--", "{py}", "-c", "{job}"], "65535"),
    (
        "run-web-config-garbage",
        ["run", "--bind", "127.0.0.1:1", "--web-config", "{t}/garbage", "--", "{py}", "-c", "{job}"],
        "not UTF-8",
    ),
    (
        "attach-report-missing-dir",
        ["attach", "--pid", "1", "--report-json", "{t}/no/r.json", "--duration", "1"],
        "does not exist",
    ),
    ("demo-report-missing-dir", ["demo", "--report-json", "{t}/no/r.json"], "does not exist"),
    # issue 25 item 7
    ("attach-pid-past-int32", ["attach", "--pid", "2147483648", "--duration", "1"], "process ids are 1 to"),
    (
        "serve-trace-negative-interval",
        ["serve", "--trace", "{t}/negative_interval.jsonl", "--bind", "127.0.0.1:0", "--duration", "1"],
        "interval -1",
    ),
    ("analyze-t-1e300", ["analyze", "{t}/t_1e300.jsonl", "{trace}"], "not a Unix time"),
    ("report-t-1e300", ["report", "{t}/t_1e300.jsonl", "-o", "{t}/r.html"], "not a Unix time"),
    # compare reads through the bounded, regular-file readers (issue 25 item 2)
    ("compare-log-dev-zero", ["compare", "{trace},/dev/zero", "--vs", "{trace},{t}/log.csv", *QUALITY], "regular"),
    ("compare-log-fifo", ["compare", "{trace},{t}/fifo", "--vs", "{trace},{t}/log.csv", *QUALITY], "FIFO"),
    ("compare-run-fifo", ["compare", "{t}/fifo", "--vs", "{t}/log.csv", *QUALITY], "FIFO"),
    ("compare-sparse-2gb-trace", ["compare", "{t}/sparse.jsonl", "--vs", "{trace}"], "longer than 16 MiB"),
    ("compare-binary-log", ["compare", "{trace},{t}/garbage", "--vs", "{trace},{t}/log.csv", *QUALITY], "not UTF-8"),
    ("compare-5000-digits", ["compare", "{t}/digits.jsonl", "--vs", "{t}/log.csv", *QUALITY], "out of range"),
    ("compare-deep-nesting", ["compare", "{t}/deep.jsonl", "--vs", "{t}/log.csv", *QUALITY], "nested too deeply"),
    ("compare-one-row-log", ["compare", "{t}/one_row.csv", "--vs", "{t}/log.csv", *QUALITY], "nothing to time"),
    ("compare-negative-times", ["compare", "{t}/negative.csv", "--vs", "{t}/log.csv", *QUALITY], "negative"),
    ("compare-nan-wall-time", ["compare", "{t}/nan_report.json", "--vs", "{trace}"], "NaN"),
    (
        "calibrate-output-missing-dir",
        ["calibrate", "--output", "{t}/no/p.json", "--seconds", "0.1", "--no-gpu"],
        "does not exist",
    ),
    ("calibrate-output-proc", ["calibrate", "--output", "/proc/p.json", "--seconds", "0.1", "--no-gpu"], "/proc"),
]


@pytest.mark.slow
@pytest.mark.parametrize("argv,words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_path_or_file_is_one_line_and_exit_2(tmp_path, cli_env, argv, words):
    before_existing = "keep me\n"
    ph = _setup(tmp_path)
    env = {**cli_env, "TMPDIR": str(tmp_path / "tmp")}
    os.makedirs(env["TMPDIR"])

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CASE_MEMORY, CASE_MEMORY))

    r = run_cli([a.format(**ph) for a in argv], env, timeout=60, preexec_fn=bounded)
    assert r.returncode == 2, (r.returncode, r.stderr[-800:])
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr[-800:]
    assert words in r.stderr, r.stderr
    assert (tmp_path / "existing").read_text() == before_existing  # nothing overwritten
    assert not (tmp_path / JOB_MARK).exists()  # the job never started
    assert not (tmp_path / "nowhere").exists()  # a link is never followed to create its target
    assert os.listdir(env["TMPDIR"]) == []  # no run directory, no socket left behind
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]  # no half-written temporary file


def test_file_size_limit_while_recording_is_one_message(tmp_path, cli_env):
    out = tmp_path / "t.jsonl"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))

    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "bottleneckd.cli",
            "record",
            "-o",
            str(out),
            "--interval",
            "0.1",
            "--duration",
            "20",
            "--quiet",
            "--socket",
            str(tmp_path / "s/sock"),
        ],
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
    )
    assert r.returncode == 2, r.stderr[-800:]
    assert "file-size limit" in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr[-800:]
    lines = out.read_bytes().split(b"\n")
    assert all(json.loads(x) for x in lines[:-2])  # what was written is whole lines, readable
    assert not (tmp_path / "s/sock").exists()


def test_force_replaces_atomically_and_never_follows_a_link(tmp_path, cli_env):
    target = tmp_path / "target.json"
    target.write_text("the link's target\n")
    link = tmp_path / "r.json"
    os.symlink(target, link)
    r = run_cli(["run", "--quiet", "--force", "--report-json", str(link), "--", sys.executable, "-c", "pass"], cli_env)
    assert r.returncode == 0, r.stderr[-800:]
    assert target.read_text() == "the link's target\n"  # not written through the link
    assert not link.is_symlink() and json.loads(link.read_text())["exit_code"] == 0  # the link itself was replaced
    # no temporary left (home: cli_env's profile home, where run keeps the CPU peaks it measured)
    assert sorted(set(os.listdir(tmp_path)) - {"home"}) == ["r.json", "target.json"]


def test_trace_force_keeps_the_old_file_until_recording_ends(tmp_path, cli_env):
    out = tmp_path / "t.jsonl"
    out.write_text("old trace\n")
    r = run_cli(
        [
            "record",
            "-o",
            str(out),
            "--force",
            "--duration",
            "1",
            "--interval",
            "0.2",
            "--quiet",
            "--socket",
            str(tmp_path / "s/sock"),
        ],
        cli_env,
    )
    assert r.returncode == 0, r.stderr[-800:]
    assert json.loads(out.read_text().splitlines()[0])["format"] == "bottleneckd.trace"
    assert sorted(os.listdir(tmp_path)) == ["s", "t.jsonl"]


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGHUP", "SIGUSR1"])
def test_trace_force_is_put_in_place_when_a_signal_stops_recording(tmp_path, cli_env, sig):
    """SIGHUP (or SIGUSR1) killed ``record --force`` with the new recording in a hidden temporary
    file and the old trace in place (issue 25 item 5): now it stops cleanly and replaces it."""
    import signal
    import time

    out = tmp_path / "t.jsonl"
    out.write_text("old trace\n")
    p = subprocess.Popen(
        [sys.executable, "-m", "bottleneckd.cli", "record", "-o", str(out), "--force", "--interval", "0.2"]
        + ["--quiet", "--socket", str(tmp_path / "s/sock")],
        env=cli_env,
        stderr=subprocess.PIPE,
        text=True,
        # SIGHUP at its default, as in a terminal's session (under nohup the child would inherit it
        # ignored, and record keeps an ignored SIGHUP ignored by design)
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        while not [x for x in os.listdir(tmp_path) if x.endswith(".tmp") and os.path.getsize(tmp_path / x) > 0]:
            assert time.monotonic() < deadline and p.poll() is None, "recording did not start"
            time.sleep(0.1)
        time.sleep(1.0)
        p.send_signal(getattr(signal, sig))
        assert p.wait(timeout=30) == 0, p.stderr.read()[-800:]
    finally:
        if p.poll() is None:
            p.kill()  # never leave a recorder behind
            p.wait()
    lines = out.read_text().splitlines()
    assert json.loads(lines[0])["format"] == "bottleneckd.trace" and len(lines) >= 2
    assert sorted(os.listdir(tmp_path)) == ["s", "t.jsonl"]  # no hidden temporary file left
