"""DDP under attach (issue 21, item 1): with no hook to time the all-reduce, attach names
communication from what it sees - the main thread waiting inside backward (py-spy's idle flag),
the backend's threads' CPU (gloo's threads, by name), collectives on the stack - and compute when
those are small. Figures from ddp_spawn on the 2-core VM (rules/stack_comm.py's docstring)."""

from __future__ import annotations

import pytest

from bottleneckd.diagnosis.classify import classify
from bottleneckd.diagnosis.rules.communication import FULL_SHARE
from bottleneckd.diagnosis.rules.stack_comm import stack_comm
from bottleneckd.diagnosis.thresholds import SHARED_COMM_HIGH
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


def test_below_the_shared_threshold_only_the_exposed_part_counts_against_compute():
    # ddp_compute under attach (eval run of 2026-12-02): 2 gloo ranks whose half batch proved the
    # compute (x1.72); waiting 18% of all samples, collectives 3%, gloo threads 7% of the ranks'
    # CPU on full cores: 27% with the overlapped part, under SHARED_COMM_HIGH, so as under `run`
    # only the exposed 21% counts, and compute (the rest of the step) is named
    full = {**HOST, "cpu_compute/host/cores": 2.0, **job(1.9, 0.9, ranks=2, usable=2.0, waiting=0.2)}
    fig = {**full, "cpu_compute/job/rank_busy_cores": 0.95, "cpu_compute/job/comm_thread_cores": 0.067}
    shares = {"forward": 0.16, "backward": 0.81, "communication": 0.03}
    facts = {**STACK_DDP, "compute_idle_share": 0.19}
    sc = stack_comm(window(fig, shares, facts))
    assert sc is not None and sc.shares_cores and sc.share < SHARED_COMM_HIGH <= sc.share + 0.1
    v = verdict(fig, facts, shares)
    assert (v.resource, v.stage) == ("cpu_compute", "compute"), v
    assert ("inter_gpu_interconnect", pytest.approx(sc.exposed / FULL_SHARE, abs=0.01)) in v.secondary, v.secondary


def test_without_the_waiting_figure_it_stays_undetermined():
    fig = {**CONTENDED, "cpu_compute/job/rank_busy_cores": 0.4, "cpu_compute/job/comm_thread_cores": 0.12}
    v = verdict(fig, STACK_DDP)
    assert v.resource == UNDETERMINED and "cannot be told apart" in v.reason


def test_a_gpu_job_or_timed_phases_are_not_read_from_stacks():
    fig = {**CONTENDED, "cpu_compute/job/comm_thread_cores": 0.12, "gpu_compute/0/utilization": 0.9}
    assert stack_comm(window(fig, SHARES, {**STACK_DDP, "compute_idle_share": 0.5, "device": "cuda:0"})) is None
    assert stack_comm(window(CONTENDED, SHARES, {"ddp": True, "compute_idle_share": 0.5})) is None  # hook phases


def test_attach_predictions_see_the_communication_the_verdict_names():
    """The what-if inputs under attach carry the reducer's wait as communication (taken from
    forward/backward) and the backend threads' CPU on full cores as the overlap's cost, so less
    frequent sync is predicted from the share the evidence states, not from a communication phase
    the stack samples never hold (it was x1.00 beside "communication about 44% of the step")."""
    from bottleneckd.advice.predict import less_frequent_sync
    from bottleneckd.diagnosis.step_inputs import step_inputs
    from bottleneckd.peaks.resolve import PeakTable

    fig = {**CONTENDED, "cpu_compute/job/rank_busy_cores": 0.4, "cpu_compute/job/comm_thread_cores": 0.12}
    facts = {**STACK_DDP, "compute_idle_share": 0.23}
    st = window(fig, SHARES, facts)
    sc = stack_comm(st)
    assert sc is not None and sc.overlapped > 0
    i = step_inputs(st, {}, PeakTable(()), facts)
    assert i is not None
    assert i.share("communication").value == pytest.approx(SHARES["communication"] + sc.waiting)
    compute = i.share("forward").value + i.share("backward").value
    assert compute == pytest.approx(SHARES["forward"] + SHARES["backward"] - sc.waiting)
    assert i.comm_overlap_cost == pytest.approx(sc.overlapped)
    assert less_frequent_sync(i).speedup > 1.3


def test_the_backends_threads_at_work_stand_for_a_ddp_frame_never_sampled():
    """ddp_torchrun under attach (eval of 2026-12-02): its forward, where DDP's frame runs, is 4.5% of
    the step, so in 20 s of 2 stack samples a second none was seen, and with no ``ddp`` fact the
    reducer's wait (30% of backward's samples) and gloo's 0.6 cores went unread: compute was named."""
    fig = {**CONTENDED, "cpu_compute/job/rank_busy_cores": 0.4, "cpu_compute/job/comm_thread_cores": 0.12}
    facts = {"phase_source": "py-spy", "low_intensity_op_share": 0.0, "compute_idle_share": 0.23}
    v = verdict(fig, facts)
    assert (v.resource, v.stage) == ("inter_gpu_interconnect", "communication"), v
    idle = {**fig, "cpu_compute/job/comm_thread_cores": 0.0}  # no collective at work: nothing to read
    assert stack_comm(window(idle, SHARES, facts)) is None
