"""`bottleneckd run` and `bottleneckd attach` end to end, with real processes, torch and py-spy."""

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from bottleneckd.samplers.stacks import StackSampler, classify_frames, find_py_spy, op_intensity, thread_idle
from tests.conftest import ROOT, run_cli

PLAIN_JOB = textwrap.dedent("""
    import sys, time, torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
    m = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4))
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    lf = nn.CrossEntropyLoss()
    dl = DataLoader(TensorDataset(torch.randn(2048, 64), torch.randint(0, 4, (2048,))), batch_size=32)
    t0 = time.time()
    while time.time() - t0 < float(sys.argv[1]):
        for x, y in dl:
            opt.zero_grad(); lf(m(x), y).backward(); opt.step()
    print("job output line")
""")


@pytest.fixture
def plain_job(tmp_path):
    p = tmp_path / "train.py"
    p.write_text(PLAIN_JOB)
    return p


@pytest.mark.slow
def test_run_passes_the_exit_code_and_leaves_job_output_intact(tmp_path, cli_env):
    r = run_cli(
        ["run", "--quiet", "--", sys.executable, "-c", "print('hello from the job'); import sys; sys.exit(3)"], cli_env
    )
    assert r.returncode == 3
    assert r.stdout == "hello from the job\n"  # our output goes to stderr
    assert "=== bottleneckd report ===" in r.stderr


@pytest.mark.slow
def test_run_instruments_an_unmodified_torch_script(tmp_path, cli_env, plain_job):
    rep = tmp_path / "r.json"
    trace = tmp_path / "t.jsonl"
    r = run_cli(
        ["run", "--quiet", "--report-json", str(rep), "--trace", str(trace), "--", sys.executable, str(plain_job), "4"],
        cli_env,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("job output line")
    doc = json.loads(rep.read_text())
    assert doc["schema"] == "bottleneckd.report/1" and doc["exit_code"] == 0
    assert doc["step_phases"] and doc["step_phases"]["steps"] > 0  # phases from an unmodified script
    assert doc["step_phases"]["over"] == "the whole run"  # not only the last window (the job may take long to exit)
    assert doc["facts"]["loader_workers"] == 0 and doc["facts"]["device"] == "cpu"
    assert "[bottleneckd] epoch 0" in r.stderr  # the epoch-end block, on stderr
    lines = trace.read_text().splitlines()
    assert json.loads(lines[0])["meta"]["command"][-1] == "4"


def test_run_rejects_a_missing_program(cli_env):
    r = run_cli(["run", "--", "/nonexistent/program"], cli_env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no such program" in r.stderr


@pytest.mark.slow
def test_ctrl_c_stops_the_job_and_the_sidecar_with_a_report(tmp_path, cli_env):
    # SIGINT at its default in run (and so in the job), as a terminal's foreground job has it: a test
    # run started in the background of a non-interactive shell (`bash .ci/run &`) inherits SIGINT
    # ignored, which run and the job keep as they would without run; the job then trained on until
    # --grace's SIGTERM (exit 143)
    job = tmp_path / "train.py"
    job.write_text(PLAIN_JOB.replace("t0 = time.time()", "print('training', flush=True)\nt0 = time.time()", 1))
    p = subprocess.Popen(
        [sys.executable, "-m", "bottleneckd.cli", "run", "--quiet", "--", sys.executable, str(job), "60"],
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "training"  # Ctrl-C once it trains
    time.sleep(2)
    os.killpg(p.pid, signal.SIGINT)  # what the terminal does on Ctrl-C: the whole foreground group
    out, err = p.communicate(timeout=60)
    assert p.returncode in (130, 1), (p.returncode, err[-500:])  # the job's own exit (KeyboardInterrupt or SIGINT)
    assert "=== bottleneckd report ===" in err


@pytest.mark.slow
def test_attach_samples_stacks_and_ends_with_the_target(tmp_path, cli_env, plain_job):
    job = subprocess.Popen([sys.executable, str(plain_job), "12"], env=cli_env, stdout=subprocess.DEVNULL)
    try:
        time.sleep(3)
        rep, trace = tmp_path / "a.json", tmp_path / "a.jsonl"
        r = run_cli(
            [
                "attach",
                "--pid",
                str(job.pid),
                "--quiet",
                "--rate",
                "5",
                "--report-json",
                str(rep),
                "--trace",
                str(trace),
            ],
            cli_env,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        assert job.poll() is not None  # attach ended because the target exited
        doc = json.loads(rep.read_text())
        assert doc["pid"] == job.pid and doc["stack_samples"] > 10
        assert doc["verdict"]["resource"] != "undetermined" or doc["verdict"]["reason"]
        assert doc["facts"].get("phase_source") == "py-spy"
        # the recorded trace replays to the same verdict, stage shares and code (analyze: the same pipeline)
        a = run_cli(["analyze", str(trace), "--format", "json"], cli_env)
        assert a.returncode == 0, a.stderr
        replayed = json.loads(a.stdout)
        for key in ("resource", "stage", "evidence"):
            assert replayed["verdict"][key] == doc["verdict"][key], key
        assert replayed["step_phases"] == doc["step_phases"]
    finally:
        job.kill()


def test_attach_without_ptrace_says_what_to_grant_and_goes_on(tmp_path):
    fake = tmp_path / "py-spy"
    fake.write_text(
        "#!/bin/sh\necho 'Error: Permission Denied: ptrace_attach failed (Operation not permitted)' >&2\nexit 1\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    s = StackSampler(os.getpid(), py_spy=str(fake))
    why = s.check()
    assert why is not None and "SYS_PTRACE" in why and "without stacks" in why and "\n" not in why


def test_attach_to_a_missing_pid_is_exit_2(cli_env):
    r = run_cli(["attach", "--pid", "999999999", "--duration", "1"], cli_env)
    assert r.returncode == 2 and "no such process" in r.stderr


def test_stack_classification():
    f = lambda name, path: {"name": name, "filename": path, "line": 0}  # noqa: E731
    assert (
        classify_frames(
            [
                f("Queue.get", "multiprocessing/queues.py"),
                f("_MultiProcessingDataLoaderIter._try_get_data", "torch/utils/data/dataloader.py"),
            ]
        )
        == "data_wait"
    )
    assert classify_frames([f("SGD.step", "torch/optim/sgd.py")]) == "optimizer"
    assert (
        classify_frames(
            [f("_engine_run_backward", "torch/autograd/graph.py"), f("backward", "torch/autograd/__init__.py")]
        )
        == "backward"
    )
    assert classify_frames([f("all_reduce", "torch/distributed/distributed_c10d.py")]) == "communication"
    assert (
        classify_frames(
            [f("Linear.forward", "torch/nn/modules/linear.py"), f("Module._call_impl", "torch/nn/modules/module.py")]
        )
        == "forward"
    )
    assert classify_frames([f("main", "train.py")]) == "other"
    assert op_intensity([f("layer_norm", "torch/nn/functional.py")]) == "low"
    assert op_intensity([f("Linear.forward", "torch/nn/modules/linear.py")]) == "high"


def test_thread_idle_from_py_spy_flag_and_wait_frames():
    f = lambda name, path: {"name": name, "filename": path, "line": 0}  # noqa: E731
    assert thread_idle({"active": False, "frames": [f("step", "train.py")]})  # time.sleep: a C call, py-spy's flag
    assert thread_idle({"active": True, "frames": [f("Event.wait", "/usr/lib/python3.11/threading.py")]})
    assert thread_idle({"frames": [f("Popen._try_wait", "/usr/lib/python3.11/subprocess.py")]})
    assert not thread_idle({"active": True, "frames": [f("step", "train.py")]})
    assert not thread_idle({"active": True, "frames": [f("get", "mycache.py")]})  # a user's get() is code, not a wait


SLEEPER = """
import time
def step():
    sum(range(2000))
    time.sleep(0.1)
while True:
    step()
"""
LAUNCHER = """
import subprocess, sys, time
def monitor(p):
    while p.poll() is None:
        time.sleep(0.2)
p = subprocess.Popen([sys.executable, "-c", "def spin():\\n    while True: sum(range(1000))\\nspin()"])
monitor(p)
"""


def _sample(code: str, seconds: float = 4.0):
    job = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL)
    try:
        time.sleep(1.5)
        s = StackSampler(job.pid, rate_hz=8)
        assert s.check() is None
        s.start()
        time.sleep(seconds)
        s.stop()
        return job.pid, s, s.drain()
    finally:
        for c in __import__("psutil").Process(job.pid).children(recursive=True):
            c.kill()
        job.kill()
        job.wait()


@pytest.mark.slow
@pytest.mark.skipif(find_py_spy() is None, reason="py-spy not installed")
def test_stacks_of_a_sleeping_job_are_other_and_waiting():
    """time.sleep outside the phases: "other", but the sampled thread waits (not computing)."""
    _, _, ph = _sample(SLEEPER)
    assert ph is not None and ph.facts["other_idle_share"] >= 0.7


@pytest.mark.slow
@pytest.mark.skipif(find_py_spy() is None, reason="py-spy not installed")
def test_a_launcher_that_sleeps_while_its_child_trains_is_followed_to_the_child():
    """torchrun's agent sleeps in a monitor loop: its wait is not the training thread's."""
    pid, s, ph = _sample(LAUNCHER, 5.0)
    assert s.target != pid
    assert ph is not None and ph.facts.get("other_idle_share", 0.0) < 0.5


def test_live_screen_shows_every_resource_and_the_verdict():
    from bottleneckd.model.resources import RESOURCES
    from bottleneckd.outputs.live import render_screen
    from bottleneckd.runtime.replay import load

    rep = load((str(ROOT / "tests/data/cpu_compute/trace.jsonl"),))
    rep.feed()
    screen = render_screen(rep.run.latest(), 120)
    for r in RESOURCES:
        assert r in screen
    assert "verdict: cpu_compute (stage data" in screen and "top recommendation" in screen
    lines = {ln.split()[0]: ln for ln in screen.splitlines() if ln.strip()}
    assert "[#" in lines["cpu_compute"] and "%" in lines["cpu_compute"]  # a bar and its figure
    assert "unknown:" in lines["gpu_compute"]  # no GPU here: unknown, with why
    assert "[####" in lines["data_wait"]  # the phase that dominates this trace
    assert all(len(ln) <= 120 for ln in screen.splitlines())


@pytest.mark.skipif(find_py_spy() is None, reason="py-spy not installed")
def test_check_tries_again_after_a_transient_py_spy_failure(tmp_path):
    """py-spy sometimes fails once on a busy process ("Failed to find python version"): attach
    must not go on without stacks for the whole run because of one failed read."""
    flaky = tmp_path / "py-spy"
    mark = tmp_path / "failed-once"
    flaky.write_text(
        f"#!/bin/sh\nif [ ! -e {mark} ]; then touch {mark};"
        " echo 'Error: Failed to find python version from target process' >&2; "
        f'exit 1; fi\nexec {find_py_spy()} "$@"\n'
    )
    flaky.chmod(flaky.stat().st_mode | stat.S_IEXEC)
    job = subprocess.Popen([sys.executable, "-c", SLEEPER], stdout=subprocess.DEVNULL)
    try:
        time.sleep(1.5)
        assert StackSampler(job.pid, py_spy=str(flaky)).check() is None
        assert mark.exists()
    finally:
        job.kill()
        job.wait()


def test_attach_ddp_collectives_and_native_reducer_frames_are_communication():
    from bottleneckd.samplers.stacks import wrappers

    def f(name, path):
        return {"name": name, "filename": path, "line": 1}

    ddp = "torch/nn/parallel/distributed.py"
    # DDP's buffer broadcast before forward: a collective, whatever sits on top
    assert (
        classify_frames(
            [
                f("_broadcast_coalesced", ddp),
                f("_sync_buffers", ddp),
                f("_pre_forward", ddp),
                f("DistributedDataParallel.forward", ddp),
                f("Module._call_impl", "torch/nn/modules/module.py"),
            ]
        )
        == "communication"
    )
    # DDP's forward itself (the model's layers under it) is forward, and says the model is DDP-wrapped
    stack = [
        f("Linear.forward", "torch/nn/modules/linear.py"),
        f("DistributedDataParallel._run_ddp_forward", ddp),
        f("Module._call_impl", "torch/nn/modules/module.py"),
    ]
    assert classify_frames(stack) == "forward" and wrappers(stack) == {"ddp"}
    # native frames (a recorded native stack): the reducer waiting for its buckets inside backward
    assert (
        classify_frames(
            [
                f("c10d::Reducer::finalize_backward", "reducer.cpp"),
                f("_engine_run_backward", "torch/autograd/graph.py"),
                f("backward", "torch/autograd/__init__.py"),
            ]
        )
        == "communication"
    )
    assert (
        classify_frames([f("gloo::AllreduceRing::run", "allreduce_ring.h"), f("backward", "torch/_tensor.py")])
        == "communication"
    )
    assert (
        classify_frames(
            [f("_engine_run_backward", "torch/autograd/graph.py"), f("backward", "torch/autograd/__init__.py")]
        )
        == "backward"
    )


def test_attach_set_up_and_teardown_stacks_are_not_steps():
    """Building the model, DDP's constructor, joining/leaving the group and an interpreter with no
    Python frame (atexit, shutdown: py-spy dumps an empty stack) are left out, not "other"."""

    def f(name, path):
        return {"name": name, "filename": path, "line": 1}

    assert classify_frames([]) == "startup"
    assert (
        classify_frames(
            [
                f("kaiming_uniform_", "torch/nn/init.py"),
                f("Linear.reset_parameters", "torch/nn/modules/linear.py"),
                f("Linear.__init__", "torch/nn/modules/linear.py"),
                f("mlp", "common.py"),
                f("rank_main", "job.py"),
            ]
        )
        == "startup"
    )
    assert (
        classify_frames(
            [
                f("_verify_param_shape_across_processes", "torch/distributed/utils.py"),
                f("DistributedDataParallel.__init__", "torch/nn/parallel/distributed.py"),
                f("rank_main", "job.py"),
            ]
        )
        == "startup"
    )
    assert (
        classify_frames(
            [f("destroy_process_group", "torch/distributed/distributed_c10d.py"), f("timed_loop", "ranks.py")]
        )
        == "startup"
    )
    # a step's collective is still communication, the model's forward still forward
    assert (
        classify_frames([f("all_reduce", "torch/distributed/distributed_c10d.py"), f("timed_loop", "ranks.py")])
        == "communication"
    )
    assert (
        classify_frames(
            [f("Linear.forward", "torch/nn/modules/linear.py"), f("Module._call_impl", "torch/nn/modules/module.py")]
        )
        == "forward"
    )
