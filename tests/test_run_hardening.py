"""`bottleneckd run` with careless jobs and users (issue 16, items 9-13), and the one assembly
and wiring behind every command (issue 10, items 2 and 6)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from bottleneckd.model.sample import Sample
from tests.conftest import ROOT, run_cli


@pytest.fixture
def short_tmp():
    """A TMPDIR of the test's own, to see what run leaves there (short, as /tmp is)."""
    d = tempfile.mkdtemp(prefix="bnt", dir="/tmp")
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


def _env(cli_env: dict[str, str], tmp: Path) -> dict[str, str]:
    return {**cli_env, "TMPDIR": str(tmp)}


def test_a_long_tmpdir_still_gives_a_socket_that_binds(tmp_path, cli_env):
    long_tmp = tmp_path / ("x" * 60)
    long_tmp.mkdir()
    r = run_cli(
        ["run", "--quiet", "--", sys.executable, "-c", "import sys; sys.exit(4)"], {**cli_env, "TMPDIR": str(long_tmp)}
    )
    assert r.returncode == 4, r.stderr[-800:]
    assert os.listdir(long_tmp) == []


def test_exit_code_passes_through_when_the_report_cannot_be_written(tmp_path, cli_env, short_tmp):
    env = _env(cli_env, short_tmp)
    out = tmp_path / "gone"
    out.mkdir()
    job = f"import shutil, sys; shutil.rmtree({str(out)!r}); sys.exit(3)"  # the job removes the report's directory
    r = run_cli(["run", "--quiet", "--report-json", str(out / "r.json"), "--", sys.executable, "-c", job], env)
    assert r.returncode == 3, r.stderr[-800:]
    assert "Traceback" not in r.stderr and "--report-json" in r.stderr and "does not exist" in r.stderr, r.stderr
    assert os.listdir(env["TMPDIR"]) == []


def test_no_run_directory_or_socket_is_left_after_any_exit(tmp_path, cli_env, short_tmp):
    env = _env(cli_env, short_tmp)
    for job in (
        "import time; time.sleep(2.5)",
        "import sys; sys.exit(5)",
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    ):
        run_cli(["run", "--quiet", "--interval", "0.5", "--", sys.executable, "-c", job], env)
    run_cli(["run", "--quiet", "--", "/nonexistent/program"], env)
    assert os.listdir(env["TMPDIR"]) == []


def test_the_jobs_own_sitecustomize_and_tests_package_win(tmp_path, cli_env, short_tmp):
    user = tmp_path / "user"
    (user / "tests").mkdir(parents=True)
    (user / "tests" / "__init__.py").write_text("WHOSE = 'the job'\n")
    (user / "sitecustomize.py").write_text(
        "import os\nMARK = 'user sitecustomize ran'\nos.environ['USER_SITE_RAN'] = '1'\n"
    )
    job = (
        "import os, sitecustomize, tests; print(getattr(sitecustomize, 'MARK', 'ours')); print(tests.WHOSE); "
        "print(os.environ.get('USER_SITE_RAN')); import bottleneckd; print('bottleneckd importable')"
    )
    env = {
        **_env(cli_env, short_tmp),
        "PYTHONPATH": f"{user}{os.pathsep}{ROOT}",
    }  # the job's own path first; run must not put the project before it
    r = run_cli(["run", "--quiet", "--", sys.executable, "-c", job], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-800:]
    assert r.stdout.splitlines() == ["user sitecustomize ran", "the job", "1", "bottleneckd importable"]


#: a monitoring agent's bootstrap (New Relic's and ddtrace's do this): run the next sitecustomize on
#: sys.path after its own directory, which under ``run`` is ours
CHAINING_SITECUSTOMIZE = textwrap.dedent("""
    import importlib.util, os, sys
    from importlib.machinery import PathFinder
    with open(os.environ["AGENT_LOG"], "a") as f:
        f.write(f"{os.getpid()}\\n")
    here = os.path.dirname(os.path.abspath(__file__))
    spec = PathFinder.find_spec("sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != here])
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
""")


def test_a_chaining_sitecustomize_and_ours_load_once_each(tmp_path, cli_env, short_tmp):
    """Ours and a chaining one loaded each other 110 times and ended in RecursionError (issue 25
    item 8): each runs once, and the instrumentation is installed once."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "sitecustomize.py").write_text(CHAINING_SITECUSTOMIZE)
    log = tmp_path / "agent.log"
    job = "import os, sys; print(os.getpid(), sum(type(f).__name__ == '_Finder' for f in sys.meta_path))"
    env = {**_env(cli_env, short_tmp), "PYTHONPATH": f"{agent}{os.pathsep}{ROOT}", "AGENT_LOG": str(log)}
    r = run_cli(["run", "--quiet", "--", sys.executable, "-c", job], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-800:]
    assert "Error in sitecustomize" not in r.stderr and "RecursionError" not in r.stderr, r.stderr[-800:]
    pid, finders = r.stdout.split()
    assert log.read_text().split().count(pid) == 1  # the agent ran once in the job (and once in run itself)
    assert finders == "1"  # our instrumentation, waiting for torch, installed once


def test_uninstrumented_python_is_said_in_the_report(tmp_path, cli_env, short_tmp):
    rep = tmp_path / "r.json"
    r = run_cli(
        ["run", "--quiet", "--report-json", str(rep), "--", sys.executable, "-S", "-c", "pass"],
        _env(cli_env, short_tmp),
    )
    assert r.returncode == 0
    note = json.loads(rep.read_text())["instrumentation"]["note"]
    assert "python -S" in note and "python -S" in r.stderr
    r = run_cli(
        [
            "run",
            "--quiet",
            "--report-json",
            str(tmp_path / "r2.json"),
            "--",
            "sh",
            "-c",
            f"{sys.executable} -I -c pass",
        ],
        _env(cli_env, short_tmp),
    )
    note = json.loads((tmp_path / "r2.json").read_text())["instrumentation"]["note"]
    assert "'sh'" in note and "no step phases" in note


SIGNAL_JOB = textwrap.dedent("""
    import signal, sys, time
    got = []
    signal.signal(signal.SIGINT, lambda *a: got.append("INT"))
    signal.signal(signal.SIGTERM, signal.SIG_IGN if sys.argv[2] == "ignore-term" else signal.SIG_DFL)
    open(sys.argv[1] + ".ready", "w").close()
    t0 = time.time()
    while not got and time.time() - t0 < 60:
        time.sleep(0.05)
    time.sleep(1.5)  # the job's own clean-up, which a second SIGINT used to cut short
    open(sys.argv[1], "w").write(",".join(got))
    if sys.argv[2] == "ignore-term":
        time.sleep(60)
""")


def _start(tmp_path: Path, env: dict[str, str], mode: str, *extra: str) -> tuple[subprocess.Popen, Path]:
    job = tmp_path / "job.py"
    job.write_text(SIGNAL_JOB)
    mark = tmp_path / "got"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bottleneckd.cli",
            "run",
            "--quiet",
            *extra,
            "--",
            sys.executable,
            str(job),
            str(mark),
            mode,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not Path(f"{mark}.ready").exists():
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.1)
    time.sleep(0.5)
    return p, mark


def test_ctrl_c_reaches_the_job_once_and_its_clean_up_finishes(tmp_path, cli_env, short_tmp):
    p, mark = _start(tmp_path, _env(cli_env, short_tmp), "default")
    os.killpg(p.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole foreground group
    out, err = p.communicate(timeout=60)
    assert mark.read_text() == "INT", err[-800:]  # once, and the job's finally block completed
    assert p.returncode == 0 and "=== bottleneckd report ===" in err


def test_a_job_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path, cli_env, short_tmp):
    p, mark = _start(tmp_path, _env(cli_env, short_tmp), "ignore-term", "--grace", "1")
    t0 = time.monotonic()
    os.kill(p.pid, signal.SIGTERM)  # to run only (a service manager stopping it)
    out, err = p.communicate(timeout=60)
    assert time.monotonic() - t0 < 20
    assert "ignored SIGTERM for 1 s; sending SIGKILL" in err and p.returncode == 137, err[-800:]
    assert os.listdir(short_tmp) == []


def test_events_reach_the_exporter_and_the_trace_each_once(tmp_path):
    from bottleneckd.model.protocol import Event, encode
    from bottleneckd.outputs.exporter import SnapshotCollector
    from bottleneckd.runtime.sidecar import build_sidecar
    from bottleneckd.runtime.sinks import EventCopier

    side = build_sidecar(nvml=None, listen=False, interval=0.5)
    side.loop.tick()
    written: list = []

    class Writer:
        def event(self, e: Event) -> None:
            written.append(e)

    copy = EventCopier(side.receiver, Writer())
    for k in range(300):  # more than the receiver keeps between two ticks
        side.receiver.ingest(encode(Event("mitigation_applied", f"m{k % 3}", 1e9 + k)))
        if k == 9:
            copy(None)
    copy(None)
    copy(None)  # nothing twice
    kinds = [e.kind for e in written]
    lost = sum(int(e.note.split()[0]) for e in written if e.kind == "events_lost")
    assert kinds.count("mitigation_applied") + lost == 300 and lost == 300 - 10 - side.receiver.events.maxlen
    reg = CollectorRegistry(auto_describe=False)
    reg.register(SnapshotCollector(side.run.latest, side.run.steps, side.run.events))
    assert (
        'bottleneckd_mitigation_applied_timestamp_seconds{changes_semantics="false",mitigation="m2"}'
        in generate_latest(reg).decode()
    )
    side.close()


def test_one_assembly_and_sinks_by_name():
    from bottleneckd.peaks.resolve import PeakTable
    from bottleneckd.runtime.run import Run
    from bottleneckd.runtime.sinks import Outputs

    src = {p: p.read_text() for p in (ROOT / "bottleneckd").rglob("*.py")}
    builds = [
        p.relative_to(ROOT).as_posix()
        for p, t in src.items()
        if re.search(r"\bSamplingLoop\(|\bbuild_samplers\(", t) and p.name not in ("loop.py",)
    ]
    assert builds == ["bottleneckd/runtime/sidecar.py"], builds  # the sidecar is assembled in one place
    assert not [p for p, t in src.items() if "bottleneckd.report.json" in t and p.name != "report_file.py"]
    order: list[str] = []
    run = Run(PeakTable(()))
    run.wire(
        Outputs(view=lambda _s: order.append("view"), stop_when=lambda: order.append("stop") is None), stop=lambda: None
    )
    run.sinks.add("trace", lambda _s: order.append("trace"))
    run.sinks.add("timeline", lambda _s: order.append("timeline" if run.latest() else "timeline before diagnosis"))
    run(Sample(1.0, 1.0, ()))
    assert order == ["trace", "timeline", "view", "stop"]


def test_run_bind_exports_the_jobs_mitigation_events(tmp_path, cli_env, short_tmp):
    """`run --bind` is wired like `serve`: the hook's events become dashboard annotations."""
    from tests.prometheus_server import free_port

    port = free_port()
    job = textwrap.dedent(f"""
        import os, time, urllib.request
        from bottleneckd.model.protocol import Event
        from bottleneckd.channel.link import PhaseSender
        PhaseSender(os.environ["BOTTLENECKD_SOCKET"]).send(Event("mitigation_applied", "channels_last", time.time()))
        for _ in range(60):
            time.sleep(0.5)
            body = urllib.request.urlopen("http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            if 'mitigation="channels_last"' in body:
                print("annotated")
                break
    """)
    r = run_cli(
        [
            "run",
            "--quiet",
            "--interval",
            "0.5",
            "--bind",
            f"127.0.0.1:{port}",
            "--linger",
            "0",
            "--",
            sys.executable,
            "-c",
            job,
        ],
        _env(cli_env, short_tmp),
        timeout=120,
    )
    assert r.returncode == 0 and r.stdout.strip() == "annotated", r.stderr[-800:]


@pytest.mark.parametrize(
    "command,flag",
    [
        (("python", "-S", "train.py"), "-S"),
        (("python3", "-W", "ignore", "-IS", "t.py"), "-S"),
        (("python3.11", "-E", "t.py"), "-E"),
        (("python", "-I", "-m", "train"), "-I"),
        (("env", "-i", "python", "t.py"), "env -i"),
        (("env", "A=1", "python", "-E", "t"), "-E"),
        (("python", "t.py", "-S"), None),
        (("python", "-c", "pass", "-S"), None),
        (("torchrun", "t.py"), None),
        (("sh", "-c", "python -S t"), None),
    ],
)
def test_what_the_command_line_shows_about_instrumentation(command, flag):
    from bottleneckd.runtime.job_env import uninstrumented_reason

    why = uninstrumented_reason(command)
    assert (why is None) if flag is None else (flag in why)


# --- the signals a terminal or a supervisor sends (issue 25 item 5) ------------------------
HUP_JOB = textwrap.dedent("""
    import os, signal, sys, time
    def usr1(*_):
        open(sys.argv[1], "w").write("USR1")
        sys.exit(7)
    signal.signal(signal.SIGUSR1, usr1)
    open(sys.argv[1] + ".pid", "w").write(str(os.getpid()))
    time.sleep(60)
""")


def _hup_default() -> None:
    """In the child: SIGHUP at its default, as a terminal's session has it. Under ``nohup`` (a
    test run started so) the child would inherit SIGHUP ignored, which run keeps ignored by design."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _start_sleeper(tmp_path: Path, env: dict[str, str], **kw) -> tuple[subprocess.Popen, Path, int]:
    kw.setdefault("preexec_fn", _hup_default)
    job = tmp_path / "job.py"
    job.write_text(HUP_JOB)
    mark = tmp_path / "got"
    report = tmp_path / "r.json"
    p = subprocess.Popen(
        [sys.executable, "-m", "bottleneckd.cli", "run", "--quiet", "--report-json", str(report), "--grace", "5"]
        + ["--", sys.executable, str(job), str(mark)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )
    deadline = time.monotonic() + 60
    while not Path(f"{mark}.pid").exists() or not Path(f"{mark}.pid").read_text():
        assert time.monotonic() < deadline and p.poll() is None, p.stderr.read() if p.poll() is not None else ""
        time.sleep(0.1)
    time.sleep(0.5)  # the supervision (and its signal handlers) is running
    return p, mark, int(Path(f"{mark}.pid").read_text())


def _gone(pid: int, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)  # never leave it behind
    return False


def test_sighup_to_run_stops_the_job_and_cleans_up(tmp_path, cli_env, short_tmp):
    """SIGHUP killed run (exit 129) and orphaned the job, leaving /tmp/bottleneckd-run-* and no report."""
    p, _mark, job = _start_sleeper(tmp_path, _env(cli_env, short_tmp))
    os.kill(p.pid, signal.SIGHUP)  # to run only, as a supervisor or a closing terminal's shell sends it
    out, err = p.communicate(timeout=60)
    assert p.returncode == 129, (p.returncode, err[-800:])  # the job's own end: killed by the SIGHUP passed on
    assert _gone(job), "the job was orphaned"
    assert os.listdir(short_tmp) == []
    assert json.loads((tmp_path / "r.json").read_text())["exit_code"] == 129


def test_sigusr1_to_run_is_passed_on_to_the_job(tmp_path, cli_env, short_tmp):
    """SIGUSR1 (Slurm's warning before the time limit) is the job's: passed on, the run goes on to
    the job's end and its report."""
    p, mark, job = _start_sleeper(tmp_path, _env(cli_env, short_tmp))
    os.kill(p.pid, signal.SIGUSR1)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 7 and mark.read_text() == "USR1", (p.returncode, err[-800:])
    assert _gone(job) and os.listdir(short_tmp) == []
    assert json.loads((tmp_path / "r.json").read_text())["exit_code"] == 7


def test_a_sighup_ignored_by_nohup_stays_ignored(tmp_path, cli_env, short_tmp):
    p, _mark, job = _start_sleeper(
        tmp_path, _env(cli_env, short_tmp), preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)
    )
    os.kill(p.pid, signal.SIGHUP)
    time.sleep(2)
    assert p.poll() is None, p.stderr.read()[-800:]
    os.kill(job, 0)  # both still run: raises ProcessLookupError if the job is gone
    os.kill(p.pid, signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 143 and _gone(job), (p.returncode, err[-800:])
    assert os.listdir(short_tmp) == []
