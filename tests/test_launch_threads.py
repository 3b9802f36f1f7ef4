"""The threads that launch a rank's kernels, measured on a real process: the main thread and the
autograd engine's device thread (named ``pt_autograd_<device>`` by PyTorch), which take turns as
forward and backward do on CUDA."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import textwrap
import time

import pytest

from bottleneckd.samplers.cpu_compute import CpuComputeSampler
from bottleneckd.samplers.process_tree import ProcessTree
from bottleneckd.samplers.threads import AUTOGRAD_THREAD, parse_name, threads

JOB = textwrap.dedent(
    """
    import ctypes, threading, time
    libc = ctypes.CDLL(None)
    turn = threading.Condition()
    state = {"who": "main"}

    def spin(s):
        t = time.perf_counter()
        while time.perf_counter() - t < s:
            pass

    def autograd():  # backward on the device thread while the main thread waits in backward()
        libc.prctl(15, b"pt_autograd_0", 0, 0, 0)  # PR_SET_NAME, as c10::setThreadName does
        while True:
            with turn:
                turn.wait_for(lambda: state["who"] == "autograd")
            spin(0.01)
            with turn:
                state["who"] = "main"
                turn.notify_all()

    threading.Thread(target=autograd, daemon=True).start()
    end = time.time() + 30
    while time.time() < end:
        spin(0.009)  # forward and the optimizer on the main thread
        with turn:
            state["who"] = "autograd"
            turn.notify_all()
            turn.wait_for(lambda: state["who"] == "main")
    """
)


def test_thread_names_come_from_the_stat_line():
    assert parse_name("77 (pt_autograd_0) S 1 2 3") == "pt_autograd_0"
    assert parse_name("77 (py (x) y) R 1") == "py (x) y"
    assert any(t.tid == os.getpid() and t.name for t in threads(os.getpid()))


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_main_and_autograd_threads_are_counted_together_as_the_launching_threads(tmp_path):
    """Main ~0.45 and autograd ~0.5 of a core, in turns: the rank's main thread alone is under the
    one-core floor, its launching threads together are near a core."""
    p = tmp_path / "job.py"
    p.write_text(JOB)
    job = subprocess.Popen([sys.executable, str(p)])
    try:
        tree = ProcessTree(job.pid)
        s = CpuComputeSampler(None, tree)  # type: ignore[arg-type] - peaks are not read for the job's threads
        deadline = time.time() + 10
        while time.time() < deadline and not any(t.name.startswith(AUTOGRAD_THREAD) for t in threads(job.pid)):
            time.sleep(0.1)
        main, launch = [], []
        s.sample()
        for _ in range(6):
            time.sleep(0.6)
            tree._walked = 0.0
            got = {r.metric: r.value for r in s.sample() if r.device == "job"}
            if got.get("launch_thread_cores") is not None:
                main.append(got["main_busy_cores"])
                launch.append(got["launch_thread_cores"])
        assert len(launch) >= 4
        m, lt = statistics.median(main), statistics.median(launch)
        # the autograd thread does about as much as main (whatever CPU the loaded machine gives the process)
        assert m > 0 and lt >= 1.6 * m, (main, launch)
        assert lt <= 1.05
    finally:
        job.kill()
        job.wait(timeout=10)
