"""DDP under attach (issue 21, item 1): with no hook to time the all-reduce, attach names
communication from what it sees - the main thread waiting inside backward (py-spy's idle flag),
the backend's threads' CPU (gloo's threads, by name), collectives on the stack - and compute when
those are small. Figures from ddp_spawn on the 2-core VM (rules/stack_comm.py's docstring)."""

from __future__ import annotations

from bottleneckd.diagnosis.classify import classify
from bottleneckd.diagnosis.rules.stack_comm import stack_comm
from bottleneckd.model.resources import UNDETERMINED
from tests.windows import HOST, NO_PEAKS, job, window

STACK_DDP = {"phase_source": "py-spy", "ddp": True, "low_intensity_op_share": 0.0}
SHARES = {"forward": 0.1, "backward": 0.7, "optimizer": 0.1, "communication": 0.08, "other": 0.02}
#: two ranks on a 2-core host shared with other work: each rank's threads wait on a run queue
CONTENDED = {**HOST, "cpu_compute/host/cores": 2.0, **job(0.4, 0.13, ranks=2, usable=2.0, waiting=1.5)}


def verdict(figures: dict, facts: dict, shares: dict = SHARES):
    return classify(window(figures, shares, facts, n=5), NO_PEAKS)


def test_backward_waiting_on_the_reducer_and_busy_gloo_threads_name_communication():
    fig = {**CONTENDED, "cpu_compute/job/rank_busy_cores": 0.4, "cpu_compute/job/comm_thread_cores": 0.12}
    v = verdict(fig, {**STACK_DDP, "compute_idle_share": 0.23})
    assert (v.resource, v.stage) == ("inter_gpu_interconnect", "communication"), v
    assert any("waiting inside forward/backward" in e for e in v.evidence)
    assert any("backend's threads" in e for e in v.evidence)


def test_the_same_job_under_no_sync_is_compute_not_undetermined():
    fig = {**CONTENDED, "cpu_compute/job/rank_busy_cores": 0.4, "cpu_compute/job/comm_thread_cores": 0.0}
    shares = {"forward": 0.25, "backward": 0.55, "optimizer": 0.12, "communication": 0.05, "other": 0.03}
    v = verdict(fig, {**STACK_DDP, "compute_idle_share": 0.0}, shares)
    assert v.resource == "cpu_compute" and v.stage == "compute", v


def test_without_the_waiting_figure_it_stays_undetermined():
    fig = {**CONTENDED, "cpu_compute/job/rank_busy_cores": 0.4, "cpu_compute/job/comm_thread_cores": 0.12}
    v = verdict(fig, STACK_DDP)
    assert v.resource == UNDETERMINED and "cannot be told apart" in v.reason


def test_a_gpu_job_or_timed_phases_are_not_read_from_stacks():
    fig = {**CONTENDED, "cpu_compute/job/comm_thread_cores": 0.12, "gpu_compute/0/utilization": 0.9}
    assert stack_comm(window(fig, SHARES, {**STACK_DDP, "compute_idle_share": 0.5, "device": "cuda:0"})) is None
    assert stack_comm(window(CONTENDED, SHARES, {"ddp": True, "compute_idle_share": 0.5})) is None  # hook phases
