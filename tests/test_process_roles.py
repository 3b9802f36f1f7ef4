"""Process roles under real launchers (no fakes: real processes, psutil, /proc), the per-thread
CPU figures, and attach's whole-stack classification."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bottleneckd.samplers.cpu_compute import CpuComputeSampler
from bottleneckd.samplers.process_tree import LAUNCHER, RANK, WORKER, ProcessTree, names_launcher
from bottleneckd.samplers.stacks import StackSampler, classify_frames
from bottleneckd.samplers.threads import ThreadRates, parse_name, parse_stat, threads

SPIN = "import time\ndef spin(s):\n    t = time.time()\n    while time.time() - t < s: pass\n"


def start(tmp_path, name: str, code: str, argv: list[str] | None = None, env: dict | None = None) -> subprocess.Popen:
    p = tmp_path / name
    p.write_text(SPIN + textwrap.dedent(code))
    return subprocess.Popen(argv or [sys.executable, str(p)], env={**os.environ, **(env or {})})


def roles_after(tree: ProcessTree, want: int, ticks: int = 24) -> dict[int, str]:
    roles: dict[int, str] = {}
    for _ in range(ticks):
        time.sleep(0.5)
        members = tree.members(max_age=0)
        roles = {p.pid: tree.role(p.pid) for p in members}
        if len(roles) >= want and LAUNCHER in roles.values():
            break
    return roles


def stop(p: subprocess.Popen) -> None:
    p.kill()
    p.wait(timeout=10)


@pytest.mark.timeout(60)
def test_spawn_parent_that_only_joins_is_the_launcher_and_its_children_are_ranks(tmp_path):
    job = start(
        tmp_path,
        "spawn.py",
        """
        import multiprocessing as mp
        if __name__ == "__main__":
            ctx = mp.get_context("spawn")
            ps = [ctx.Process(target=spin, args=(20,)) for _ in range(2)]
            [p.start() for p in ps]
            [p.join() for p in ps]
    """,
    )
    try:
        tree = ProcessTree(job.pid)
        roles = roles_after(tree, 3)
        assert roles[job.pid] == LAUNCHER
        assert sorted(r for pid, r in roles.items() if pid != job.pid and r != LAUNCHER) == [RANK, RANK]
    finally:
        stop(job)


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_forked_loader_workers_are_workers_of_the_training_process(tmp_path):
    job = start(
        tmp_path,
        "fork.py",
        """
        import multiprocessing as mp
        if __name__ == "__main__":
            ctx = mp.get_context("fork")
            ps = [ctx.Process(target=spin, args=(20,)) for _ in range(2)]
            [p.start() for p in ps]
            spin(20)
    """,
    )
    try:
        tree = ProcessTree(job.pid)
        roles = {}
        for _ in range(8):
            time.sleep(0.5)
            roles = {p.pid: tree.role(p.pid) for p in tree.members(max_age=0)}
        assert roles[job.pid] == RANK
        assert sorted(r for pid, r in roles.items() if pid != job.pid) == [WORKER, WORKER]
    finally:
        stop(job)


@pytest.mark.timeout(60)
def test_a_shell_script_and_a_rank_environment_mark_launchers(tmp_path):
    (tmp_path / "rank.py").write_text(SPIN + "spin(20)\n")
    (tmp_path / "agent.py").write_text(
        textwrap.dedent(f"""
        import os, subprocess, sys
        rank = {str(tmp_path / "rank.py")!r}
        ps = [subprocess.Popen([sys.executable, rank], env={{**os.environ, "RANK": str(r), "LOCAL_RANK": str(r)}})
              for r in range(2)]
        [p.wait() for p in ps]
    """)
    )
    job = subprocess.Popen(["bash", "-c", f"{sys.executable} {tmp_path / 'agent.py'}; true"])
    try:
        tree = ProcessTree(job.pid)
        roles = roles_after(tree, 4)
        by = sorted(roles.values())
        assert roles[job.pid] == LAUNCHER and by.count(LAUNCHER) == 2 and by.count(RANK) == 2, roles
    finally:
        for p in ProcessTree(job.pid).members(max_age=0)[1:]:
            p.kill()
        stop(job)


@pytest.mark.timeout(60)
def test_a_script_that_starts_its_ranks_through_a_shell_and_waits_is_the_launcher(tmp_path):
    """scripts/workloads/ddp_shell_launcher.py's shape: python -> sh -c 'python r0 & python r1 &
    wait', the ranks told apart by argument (no RANK in their environment). The script was taken
    for a rank and its real ranks for its loader workers."""
    (tmp_path / "rank.py").write_text(SPIN + "spin(20)\n")
    ranks = " & ".join(f"{sys.executable} {tmp_path / 'rank.py'} --rank {r}" for r in range(2)) + " & wait"
    (tmp_path / "job.py").write_text(f"import subprocess\nsubprocess.call(['sh', '-c', {ranks!r}])\n")
    job = subprocess.Popen([sys.executable, str(tmp_path / "job.py")])
    try:
        tree = ProcessTree(job.pid)
        roles = roles_after(tree, 4)
        by = sorted(roles.values())
        assert roles[job.pid] == LAUNCHER and by.count(RANK) == 2 and WORKER not in by, roles
    finally:
        for p in ProcessTree(job.pid).members(max_age=0)[1:]:
            p.kill()
        stop(job)


def test_launcher_command_lines():
    assert names_launcher(["/usr/bin/torchrun", "--nproc-per-node", "2", "train.py"])
    assert names_launcher(["python3", "-m", "torch.distributed.run", "train.py"])
    assert names_launcher(["/venv/bin/accelerate", "launch", "train.py"])
    assert names_launcher(["bash", "run.sh"])
    assert not names_launcher(["/venv/bin/accelerate", "config"])
    assert not names_launcher(["python", "train.py"])


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_sampler_reports_the_hot_thread_not_the_process(tmp_path):
    """One thread spinning, the main thread asleep: the hottest thread wants a full core (running
    or waiting on a run queue on this shared machine); the main thread does not."""
    job = start(
        tmp_path,
        "thread.py",
        """
        import threading
        threading.Thread(target=spin, args=(20,), daemon=True).start()
        time.sleep(20)
    """,
    )
    try:
        tree = ProcessTree(job.pid)
        s = CpuComputeSampler(None, tree)  # type: ignore[arg-type]
        figs: dict[str, list[float]] = {}
        for k in range(7):
            time.sleep(0.6)
            tree._walked = 0.0
            for r in s.sample():
                # the first intervals may hold the interpreter starting the job on its main thread
                # (0.81 of a core at load average 14): judged from the third on
                if r.device == "job" and r.value is not None and k >= 2:
                    figs.setdefault(r.metric, []).append(r.value)
        # schedstat adds a wait to its total only when the thread next runs, so under load average
        # 17 a spinning thread's demand over 0.6 s came out below 0.8; 0.5 still tells it from the
        # main thread (< 0.2)
        assert max(figs["hottest_thread_demand"]) >= 0.5
        assert max(figs["main_thread_demand"]) < 0.2 and max(figs["main_busy_cores"]) < 0.2
        assert figs["ranks"][-1] == 1 and figs["workers"][-1] == 0
        assert figs["usable_cores"][-1] == len(os.sched_getaffinity(0))
    finally:
        stop(job)


def test_thread_stat_parsing_handles_names_with_spaces_and_parens():
    line = "1234 (py thread (x)) R 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 100 0 0"
    state, cpu = parse_stat(line)
    assert state == "R" and cpu == pytest.approx(300 / os.sysconf("SC_CLK_TCK"))
    assert parse_name(line) == "py thread (x)"
    own = threads(os.getpid())
    assert any(t.tid == os.getpid() for t in own)
    assert {t.name for t in own if t.tid == os.getpid()} == {Path(f"/proc/{os.getpid()}/comm").read_text().strip()}
    rates = ThreadRates()
    rates.update(own, now=0.0)
    later = [type(t)(t.pid, t.tid, t.state, t.cpu_seconds + 0.5, (t.wait_seconds or 0.0) + 0.25) for t in own]
    r = rates.update(later, now=1.0)[os.getpid()]
    assert r.cpu == pytest.approx(0.5) and r.demand == pytest.approx(0.75 if own[0].wait_seconds is not None else 0.5)


def f(name: str, path: str) -> dict:
    return {"name": name, "filename": path, "line": 0}


def test_attach_reads_the_whole_stack():
    # a model run inside the dataset's __getitem__ is still the data stage
    assert (
        classify_frames(
            [
                f("Linear.forward", "torch/nn/modules/linear.py"),
                f("Module._call_impl", "torch/nn/modules/module.py"),
                f("MyData.__getitem__", "train.py"),
                f("_MapDatasetFetcher.fetch", "torch/utils/data/_utils/fetch.py"),
                f("_SingleProcessDataLoaderIter._next_data", "torch/utils/data/dataloader.py"),
                f("main", "train.py"),
            ]
        )
        == "data_wait"
    )
    # a numpy FFT in __getitem__ with num_workers=0
    assert (
        classify_frames(
            [
                f("fft2", "numpy/fft/_pocketfft.py"),
                f("D.__getitem__", "train.py"),
                f("_MapDatasetFetcher.fetch", "torch/utils/data/_utils/fetch.py"),
                f("main", "train.py"),
            ]
        )
        == "data_wait"
    )
    # a collective called from forward is communication
    assert (
        classify_frames(
            [
                f("all_reduce", "torch/distributed/distributed_c10d.py"),
                f("Net.forward", "train.py"),
                f("Module._call_impl", "torch/nn/modules/module.py"),
            ]
        )
        == "communication"
    )
    # optimizer.step with its helpers on top
    assert (
        classify_frames(
            [
                f("_multi_tensor_adam", "torch/optim/adam.py"),
                f("Adam.step", "torch/optim/adam.py"),
                f("wrapper", "torch/optim/optimizer.py"),
                f("main", "train.py"),
            ]
        )
        == "optimizer"
    )
    assert classify_frames([f("load", "torch/serialization.py"), f("D.__getitem__", "train.py")]) == "file_io"
    assert (
        classify_frames(
            [f("_save", "torch/serialization.py"), f("save", "torch/serialization.py"), f("main", "train.py")]
        )
        == "other"
    )
    assert classify_frames([f("main", "train.py")]) == "other"
    # importing torch.utils.data at start-up is not waiting for data
    assert (
        classify_frames(
            [
                f("<module>", "torch/utils/data/dataloader.py"),
                f("_call_with_frames_removed", "<frozen importlib._bootstrap>"),
                f("<module>", "train.py"),
            ]
        )
        == "startup"
    )
    assert classify_frames([f("<module>", "train.py")]) == "startup"  # module-level set-up (model, data) in C calls


def test_stack_samples_of_start_up_are_not_steps():
    from collections import Counter

    from bottleneckd.samplers.stacks import StackSampler

    s = StackSampler(os.getpid(), py_spy="/bin/true")
    s._counts, s._n = Counter({"startup": 4}), 4
    assert s.drain() is None
    s._counts, s._n = Counter({"startup": 2, "forward": 2}), 4
    ph = s.drain()
    assert ph is not None and ph.steps == 2 and ph.share("forward") == 1.0


def test_a_burst_samples_faster_at_first_then_at_the_rate_and_counts_each_sample_s_seconds():
    """run's code naming: 2 Hz for the first minute (a short job's few samples), then 1 Hz; the
    phase seconds of a drain count each sample at the interval it was taken at."""
    from collections import Counter

    from bottleneckd.samplers.stacks import StackSampler

    s = StackSampler(os.getpid(), 1.0, py_spy="/bin/true", burst=(2.0, 60.0))
    s._started = time.monotonic()
    assert s._wait() == 0.5
    s._started -= 61
    assert s._wait() == 1.0
    s._counts, s._n, s._wall = Counter({"forward": 4}), 4, 4 * 0.5  # four samples of the burst
    ph = s.drain()
    assert ph is not None and ph.wall_seconds == 2.0
    assert StackSampler(os.getpid(), 1.0, py_spy="/bin/true", burst=(2.0, 60.0), ranks=True)._burst is None
    assert StackSampler(os.getpid(), 5.0, py_spy="/bin/true", burst=(2.0, 60.0))._burst is None  # no slower burst


def test_an_fsdp_wrapper_on_the_stack_says_the_parameters_are_sharded():
    """As the hook's probe says under run: attach's advice then fits sharding less (FSDP)."""
    from collections import Counter

    from bottleneckd.samplers.stacks import StackSampler

    s = StackSampler(os.getpid(), py_spy="/bin/true")
    s._counts, s._n, s._wrappers = Counter({"forward": 3}), 3, {"fsdp"}
    ph = s.drain()
    assert ph is not None and ph.facts["fsdp"] is True and ph.facts["sharded"] is True


@pytest.mark.timeout(60)
def test_the_job_s_own_reads_asked_for_versus_fetched_from_the_block_layer(tmp_path):
    """A job rereading a procfs file: read calls and bytes asked for, none fetched from a disk."""
    from bottleneckd.hardware.detect.machine import detect_machine
    from bottleneckd.peaks.resolve import PeakTable
    from bottleneckd.samplers.storage import StorageSampler

    job = start(
        tmp_path,
        "reads.py",
        """
        import pathlib
        pathlib.Path(__file__).with_name("looping").touch()
        t = time.time()
        while time.time() - t < 20:
            open("/proc/self/stat").read()
    """,
    )
    try:
        # measured from the loop on: the interpreter's start-up reads its modules, from a disk when
        # other processes have pushed them out of the page cache (a full test run, 2026-12-03)
        deadline = time.time() + 20
        while not (tmp_path / "looping").exists() and time.time() < deadline:
            time.sleep(0.05)
        s = StorageSampler(PeakTable(()), detect_machine(), tree=ProcessTree(job.pid))
        s.sample()
        time.sleep(1.0)
        got = {r.metric: r.value for r in s.sample() if r.device == "job"}
        assert got["read_calls_per_second"] > 100 and got["read_chars_per_second"] > 10_000
        assert got["read_bytes_per_second"] == 0.0 and got["launcher_bytes_per_second"] == 0.0
    finally:
        stop(job)


def _thread(pid: int, frames: list[dict], active: bool) -> list[dict]:
    """py-spy's ``dump --json`` of a process with only its main thread."""
    return [{"pid": pid, "thread_name": "MainThread", "os_thread_id": pid, "active": active, "frames": frames}]


def test_a_child_followed_while_the_job_waited_is_left_when_the_job_trains():
    # attached while torch.compile waited on its compile workers: the busiest Python child was
    # followed; once the job's own main thread runs forward, the sampler goes back to it
    from bottleneckd.samplers.stacks import StackSampler

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        idle_child = _thread(child.pid, [f("wait", "threading.py"), f("main", "compile_worker/__main__.py")], False)
        forward = [
            f("Linear.forward", "torch/nn/modules/linear.py"),
            f("Module._call_impl", "torch/nn/modules/module.py"),
            f("main", "train.py"),
        ]
        joins = [f("ProcessContext.join", "torch/multiprocessing/spawn.py"), f("main", "train.py")]
        for parent, expected in ((forward, os.getpid()), (joins, child.pid)):
            s = StackSampler(os.getpid(), py_spy="/bin/true")
            dumps = {os.getpid(): _thread(os.getpid(), parent, True), child.pid: idle_child}
            s.dump = lambda pid=None, d=dumps, s=s: d[s.target if pid is None else pid]  # type: ignore[method-assign]
            s.target, s._dumps = child.pid, 2  # a look for the training process at this dump
            s._sample_main()
            assert s.target == expected, parent[0]["name"]
    finally:
        child.kill()
        child.wait()
    # a child followed that has exited since: back to the process attached to
    s = StackSampler(os.getpid(), py_spy="/bin/true")
    s.dump = lambda pid=None: (_ for _ in ()).throw(RuntimeError("Failed to find python version"))  # type: ignore[method-assign]
    s.target, s._dumps = child.pid, 1
    s._sample_main()
    assert s.target == os.getpid() and s.error is None


def test_an_fsdp_module_being_imported_is_not_fsdp_running():
    """A DDP job's stacks once held torch/distributed/fsdp frames under attach (a module imported
    mid-run), and the advice read it as FSDP: module-level frames and import stacks do not count."""
    from bottleneckd.samplers.stack_frames import wrappers

    def f(name: str, filename: str) -> dict:
        return {"name": name, "filename": filename}

    importing = [
        f("<module>", "torch/distributed/fsdp/_fully_shard/_fsdp_api.py"),
        f("_call_with_frames_removed", "<frozen importlib._bootstrap>"),
        f("step", "train.py"),
    ]
    assert wrappers(importing) == set()
    running = [f("forward", "torch/distributed/fsdp/fully_sharded_data_parallel.py"), f("step", "train.py")]
    assert wrappers(running) == {"fsdp"}


def test_a_copy_to_the_device_outside_forward_is_the_transfer_stage(tmp_path):
    """On an H200 a pageable ``b.to("cuda")`` in the loop read as "other" under attach (py-spy shows
    the line that calls the C++ copy, no frame of its own) while pinning the memory made the step
    x2.6 faster; the hook timed it as the transfer stage. The line tells it, as the frameworks'
    copy functions do; a copy back to the host (a wait for the GPU) stays "other"."""
    src = tmp_path / "train.py"
    src.write_text("x = 1\non_dev = batch.to(dev, non_blocking=True)\nm = metric(out.to('cpu'))\nlog(step)\n")

    def at(line: int) -> list[dict]:
        return [{"name": "train_step", "filename": str(src), "line": line}, f("main", str(src))]

    assert classify_frames(at(2)) == "transfer"
    # on a machine with no GPU the same line is a cast in host memory: the other stage
    assert StackSampler(os.getpid(), copies=False)._phase(at(2)) == "other"
    assert StackSampler(os.getpid(), copies=True)._phase(at(2)) == "transfer"
    assert classify_frames(at(3)) == "other"
    assert classify_frames(at(4)) == "other"
    # the same line inside the model's forward is forward (the whole stack decides first)
    assert classify_frames(at(2)[:1] + [f("Module._call_impl", "torch/nn/modules/module.py")]) == "forward"
    lightning = [
        f("batch_to", "lightning/fabric/utilities/apply_func.py"),
        f("apply_to_collection", "lightning_utilities/core/apply_func.py"),
        f("move_data_to_device", "lightning/fabric/utilities/apply_func.py"),
        f("_apply_batch_transfer_handler", "lightning/pytorch/core/module.py"),
        f("advance", "lightning/pytorch/loops/training_epoch_loop.py"),
    ]
    assert classify_frames(lightning) == "transfer"
    gpu_augment = [f("on_after_batch_transfer", "train.py")] + lightning[3:]  # the user's hook: not a copy
    assert classify_frames(gpu_augment) == "other"
    hf = [f("_prepare_input", "transformers/trainer.py"), f("training_step", "transformers/trainer.py")]
    assert classify_frames(hf) == "transfer"
