"""Other processes on the job's cores: named by name and pid (a fake /proc tree, and real busy
processes outside the job on this machine), said in the evidence, the wait put on them only where
they hold cores, and giving the job its cores back recommended first with its predicted gain
(issue 20: the held-out "other processes on the machine" pattern; scripts/workloads/other_processes.py
proves it: x1.90 with the busy loops stopped)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bottleneckd.advice.predict import cores_back
from bottleneckd.diagnosis.rules.cpu_state import cpu_state
from bottleneckd.diagnosis.step_inputs import Share, StepInputs
from bottleneckd.diagnosis.thresholds import OUTSIDE_BUSY, OUTSIDE_PROCESS_SHOWN
from bottleneckd.model.outside import OUTSIDE_METRIC
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.runtime.run import Run
from bottleneckd.samplers.cpu_compute import CpuComputeSampler
from bottleneckd.samplers.outside_processes import OutsideProcesses, descendants
from bottleneckd.samplers.process_tree import ProcessTree
from bottleneckd.samplers.threads import TICK
from tests.windows import HOST, job, sample, window


def _stat(proc: Path, pid: int, name: str, ppid: int, cpu_seconds: float) -> None:
    ticks = int(round(cpu_seconds * TICK))
    d = proc / str(pid)
    d.mkdir(parents=True, exist_ok=True)
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    (d / "stat").write_text(f"{pid} ({name}) R {ppid} {pid} {pid} 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0\n")


def test_a_scan_names_the_busiest_processes_outside_the_job_from_two_scans(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    me = os.getpid()
    procs = {
        101: ("stress", 1, 0.0, 0.9),  # pid: (name, ppid, cpu at the first scan, cpu added by the second)
        102: ("backup (nightly)", 1, 5.0, 0.5),  # a name with a space and a parenthesis
        103: ("idle", 1, 1.0, 0.02),  # under OUTSIDE_PROCESS_SHOWN: not named
        104: ("py-spy", me, 0.0, 0.8),  # the sidecar's own child: left out
        105: ("python", 1, 0.0, 0.95),  # the job's rank: left out
        106: ("rsync", 1, 0.0, 0.3),
        107: ("gzip", 1, 0.0, 0.2),  # fourth busiest: past OUTSIDE_TOP
    }
    for pid, (name, ppid, cpu, _) in procs.items():
        _stat(proc, pid, name, ppid, cpu)
    scan = OutsideProcesses(str(proc), OUTSIDE_PROCESS_SHOWN)
    assert scan.scan({105}, now=10.0) == []  # the first scan only sets the baseline
    for pid, (name, ppid, cpu, more) in procs.items():
        _stat(proc, pid, name, ppid, cpu + more)
    _stat(proc, 108, "new", 1, 3.0)  # started between the scans: no rate yet
    got = scan.scan({105}, now=11.0)
    assert [(p.pid, p.name) for p in got] == [(101, "stress"), (102, "backup (nightly)"), (106, "rsync")]
    assert got[0].cores == pytest.approx(0.9, abs=1.0 / TICK)
    # a gap of 9 s (samples not scanned): the rate is the average over it
    _stat(proc, 101, "stress", 1, 0.9 + 9 * 0.5)
    again = {p.pid: p.cores for p in scan.scan({105}, now=20.0)}
    assert again[101] == pytest.approx(0.5, abs=1.0 / TICK)


def test_kernel_threads_and_a_reused_pid_are_not_named(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    _stat(proc, 57, "kswapd0", 2, 0.0)  # a kernel thread (kthreadd's child): often the job's own reclaim
    _stat(proc, 300, "make", 1, 0.0)
    scan = OutsideProcesses(str(proc), OUTSIDE_PROCESS_SHOWN)
    scan.scan(set(), now=0.0)
    _stat(proc, 57, "kswapd0", 2, 0.9)
    _stat(proc, 300, "cc1", 1, 0.9)  # pid 300 exited and was reused: no rate from another's baseline
    assert scan.scan(set(), now=1.0) == []


def test_descendants_follow_the_parent_ids() -> None:
    assert descendants(1, {2: 1, 3: 2, 4: 9, 5: 3}) == {1, 2, 3, 5}


def _busy_outside() -> int:
    """A busy loop outside this process's tree (forked twice: a child of init), ended by the caller."""
    r, w = os.pipe()
    code = "import os, sys\nos.write(int(sys.argv[1]), str(os.getpid()).encode())\nwhile True:\n    pass\n"
    subprocess.run(["sh", "-c", f'"{sys.executable}" -c "$0" {w} & ', code], pass_fds=(w,), check=True, timeout=30)
    os.close(w)
    pid = int(os.read(r, 32).decode())
    os.close(r)
    return pid


def test_the_cpu_sampler_names_a_real_busy_process_outside_the_job() -> None:
    """On this machine: a sleeping job and a busy loop forked off outside it. With the scan's gate at
    0 cores the sampler names the loop (by its pid) from its second sample; never the job."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    hog = _busy_outside()
    try:
        s = CpuComputeSampler(None, ProcessTree(sleeper.pid), outside=(0.0, 0.1))  # type: ignore[arg-type]
        s.sample()
        time.sleep(1.0)
        got = s.sample()
        named = {r.device: r.value for r in got if r.metric == OUTSIDE_METRIC}
        own = [r.value for r in got if r.device == "sidecar" and r.metric == "busy_cores"]
        assert len(own) == 1 and own[0] is not None and 0.0 <= own[0] < 0.3  # this test process sleeps
        assert any(d.endswith(f"[{hog}]") and v >= 0.1 for d, v in named.items()), named
        assert not any(d.endswith(f"[{sleeper.pid}]") or d.endswith(f"[{os.getpid()}]") for d in named)
        # a child this process ran to its end (as py-spy's dumps are) is the sidecar's own CPU
        since = time.monotonic()  # just after the last sample: the next one's interval is at most this long
        subprocess.run(
            [sys.executable, "-c", "import time\nt = time.process_time() + 0.5\nwhile time.process_time() < t: pass"],
            check=True,
        )
        own = [r.value for r in s.sample() if r.device == "sidecar" and r.metric == "busy_cores"]
        # 0.5 s of CPU (0.45 at the least, measured by the child) over the time since the last sample,
        # ~1-2 s here, longer where a loaded machine gives the child less than a core
        assert own[0] is not None and own[0] >= 0.45 / (time.monotonic() - since), own
        never = CpuComputeSampler(None, ProcessTree(sleeper.pid))  # type: ignore[arg-type]
        never.sample()
        time.sleep(0.3)
        assert not [r for r in never.sample() if r.metric == OUTSIDE_METRIC]
    finally:
        os.kill(hog, 9)
        sleeper.kill()
        sleeper.wait()


#: the suite's other_processes job as the sampler saw it: one thread at 0.55 of a core asking for
#: 0.97, two busy loops outside the job on the 2 cores
CONTENDED = {
    **HOST,
    "cpu_compute/host/cores": 2.0,
    "cpu_compute/host/utilization": 1.0,
    "cpu_compute/host/busy_cores": 2.0,
    **job(0.55, 0.55, usable=2.0, waiting=0.42),
    "cpu_compute/job/main_thread_demand": 0.97,
    "cpu_compute/job/hottest_thread_demand": 0.97,
    f"cpu_compute/python[14639]/{OUTSIDE_METRIC}": 0.72,
    f"cpu_compute/python[14641]/{OUTSIDE_METRIC}": 0.69,
}
STEP = {"forward": 0.3, "backward": 0.55, "optimizer": 0.08, "data_wait": 0.07}


def test_the_evidence_names_the_processes_the_job_waits_behind() -> None:
    st = cpu_state(window(CONTENDED, STEP))
    assert st.waits_behind_others and st.outside == pytest.approx(1.45)
    assert st.outside_named == (("python[14639]", pytest.approx(0.72)), ("python[14641]", pytest.approx(0.69)))
    ev = " ".join(st.describe())
    assert "other processes share these cores (1.45 cores busy outside the job: python[14639] at 0.72" in ev


def test_a_process_named_in_one_sample_of_five_counts_as_a_fifth() -> None:
    from bottleneckd.diagnosis.window import Window

    w = Window(5)
    for k in range(5):
        fig = dict(CONTENDED)
        if k:
            del fig[f"cpu_compute/python[14639]/{OUTSIDE_METRIC}"]
        w.add(sample(fig, STEP, t=float(k)))
    named = cpu_state(w.stats()).outside_named
    assert named == (("python[14641]", pytest.approx(0.69)), ("python[14639]", pytest.approx(0.72 / 5)))


def test_the_sidecars_own_cpu_is_not_other_processes() -> None:
    """py-spy and the sidecar at 0.3 cores are the tool's cost: left out of the cores busy outside
    the job (1.45 with the busy loops; 0.25 left without them, under OUTSIDE_BUSY, is none)."""
    assert cpu_state(window({**CONTENDED, "cpu_compute/sidecar/busy_cores": 0.3}, STEP)).outside == pytest.approx(1.15)
    ours = {**CONTENDED, "cpu_compute/host/busy_cores": 0.55 + 0.3 + 0.2, "cpu_compute/sidecar/busy_cores": 0.3}
    st = cpu_state(window(ours, STEP))
    assert st.outside == pytest.approx(0.2) and not st.waits_behind_others


def test_no_wait_is_put_on_other_processes_under_outside_busy() -> None:
    quiet = {**CONTENDED, "cpu_compute/host/busy_cores": 0.55 + OUTSIDE_BUSY * 0.8}
    assert not cpu_state(window(quiet, STEP)).waits_behind_others
    no_wait = {**CONTENDED, "cpu_compute/job/runqueue_wait_cores": 0.02}
    assert not cpu_state(window(no_wait, STEP)).waits_behind_others


def test_the_wait_is_put_on_other_processes_only_where_they_are_named_and_the_job_has_the_host() -> None:
    """Busy cores outside the job that no process accounts for (a loader worker started in the
    interval, whose first CPU reading is none; many small processes) are not acted on; nor, on a job
    confined to some of the host's cores (affinity, quota), is CPU busy on the others."""
    assert cpu_state(window(CONTENDED, STEP)).waits_behind_others
    unnamed = {k: v for k, v in CONTENDED.items() if OUTSIDE_METRIC not in k}
    st = cpu_state(window(unnamed, STEP))
    assert st.outside == pytest.approx(1.45) and not st.waits_behind_others
    assert "other processes share these cores (1.45 cores busy outside the job)" in " ".join(st.describe())
    small = {**unnamed, f"cpu_compute/make[9]/{OUTSIDE_METRIC}": OUTSIDE_BUSY * 0.8}
    assert not cpu_state(window(small, STEP)).waits_behind_others
    eight = {**CONTENDED, "cpu_compute/host/cores": 8.0, "cpu_compute/host/busy_cores": 8.0}
    assert not cpu_state(window(eight, STEP)).waits_behind_others  # the job may use 2 of the 8 cores
    quota = {**CONTENDED, "cpu_compute/job/usable_cores": 1.9}  # a quota of 1.9 cores on 2: the host's
    assert cpu_state(window(quota, STEP)).waits_behind_others


def test_outside_processes_are_not_exported_without_host_detail() -> None:
    from bottleneckd.model.sample import Reading
    from bottleneckd.outputs.metric_names import host_detail

    assert host_detail(Reading("cpu_compute", "python[14639]", OUTSIDE_METRIC, 0.72, "cores"), ())
    assert not host_detail(Reading("cpu_compute", "job", "busy_cores", 0.55, "cores"), ())


def test_cores_back_worked_numbers() -> None:
    i = StepInputs(
        step=0.05,
        shares={"forward": Share(0.3, 0.3, 0.3)},
        main_cores=0.55,
        main_demand=0.97,
        cores=2.0,
        busy_cores=0.55,
        waiting_cores=0.42,
        outside_cores=1.45,
        outside_processes=("python[14639] at 0.72",),
    )
    p = cores_back(i)
    # the training thread waits 42% of the time: x1/(1-0.42) = 1.72; the job's threads ask for
    # 0.97 cores and run 0.55: x1.76; the point their geometric mean
    assert p.low == pytest.approx(1 / 0.58) and p.high == pytest.approx(0.97 / 0.55)
    assert p.speedup == pytest.approx((1 / 0.58 * 0.97 / 0.55) ** 0.5)
    assert "python[14639] at 0.72" in p.formula
    # capped by the cores the others held: a job asking for 1.5 more cores where they held 0.3
    capped = cores_back(StepInputs(**{**i.__dict__, "waiting_cores": 1.45, "outside_cores": 0.3, "main_demand": 0.6}))
    assert capped.high == pytest.approx(0.85 / 0.55)
    assert not cores_back(StepInputs(**{**i.__dict__, "outside_cores": None})).known


def test_giving_the_job_its_cores_back_comes_first_with_its_prediction() -> None:
    p = Run(PeakTable(()), window=5)
    for k in range(6):
        snap = p(sample(CONTENDED, STEP, t=float(k)))
    v = snap.verdict
    assert (v.resource, v.stage) == ("cpu_compute", "compute")
    top = snap.recommendations[0]
    assert top.mitigation.id == "isolate_cores" and top.first, [r.mitigation.id for r in snap.recommendations]
    assert top.prediction is not None and top.prediction.speedup == pytest.approx(1.74, abs=0.02)
    assert "python[14639]" in top.prediction.formula
    alone = {k: v for k, v in CONTENDED.items() if OUTSIDE_METRIC not in k}
    alone.update({"cpu_compute/host/busy_cores": 0.6, "cpu_compute/job/runqueue_wait_cores": 0.0})
    q = Run(PeakTable(()), window=5)
    for k in range(6):
        snap = q(sample(alone, STEP, t=float(k)))
    assert "isolate_cores" not in [r.mitigation.id for r in snap.recommendations]


def test_a_loader_bound_step_is_paced_by_its_busiest_worker() -> None:
    """data_cpu_bound beside two busy loops (measured on this VM): 94% data wait, one worker running
    0.59 of a core while asking for 1.00, the training thread at 0.08: the worker's wait sets the
    least (x1/(1-0.41)), not the training thread's 8%. The busy loops stopped measured x1.43 there."""
    i = StepInputs(
        step=0.2,
        shares={"data_wait": Share(0.94, 0.93, 0.95), "forward": Share(0.04, 0.03, 0.05)},
        loader_workers=1.0,
        worker_cores=0.59,
        worker_demand=1.0,
        worker_max_cores=0.59,
        main_cores=0.08,
        main_demand=0.16,
        cores=2.0,
        busy_cores=0.62,
        waiting_cores=0.47,
        outside_cores=1.38,
    )
    p = cores_back(i)
    assert p.low == pytest.approx(1 / 0.59) and "the busiest loader worker waits 41%" in p.formula
    assert p.high == pytest.approx(1.09 / 0.62)
    # two workers, the busiest at 0.59 asking for 1.0 and the other at 0.2: its wait is the busiest's
    # (0.41), not the busiest's demand less the mean worker's running share (1.0 - 0.395)
    two = cores_back(StepInputs(**{**i.__dict__, "loader_workers": 2.0, "worker_cores": 0.79}))
    assert two.low == pytest.approx(1 / 0.59)


def test_of_two_put_first_the_one_that_keeps_the_training_goes_first() -> None:
    from bottleneckd.advice.knowledge import load_knowledge
    from bottleneckd.advice.predict import Prediction
    from bottleneckd.advice.recommend import Recommendation, rank_key

    kb = {m.id: m for m in load_knowledge()}
    fast = Prediction(1.9, 1.9, 20.0, "", "")
    cheaper = Recommendation(kb["simplify_augmentation"], "cpu_compute", 1.0, "", fast, "x")
    cores = Recommendation(kb["isolate_cores"], "cpu_compute", 1.0, "", Prediction(1.73, 1.71, 1.76, "", ""), "y")
    assert kb["simplify_augmentation"].changes_semantics and not kb["isolate_cores"].changes_semantics
    assert sorted([cheaper, cores], key=rank_key) == [cores, cheaper]
    not_first = Recommendation(kb["isolate_cores"], "cpu_compute", 1.0, "", Prediction(3.0, 3.0, 3.0, "", ""))
    assert sorted([not_first, cheaper], key=rank_key) == [cheaper, not_first]
