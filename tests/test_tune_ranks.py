"""``--tune`` on a multi-rank job: rank 0 plans and measures, every rank switches at the same step
(torch/tune_ranks.py), through the job's own c10d store."""

from __future__ import annotations

from datetime import timedelta

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from bottleneckd.torch import tune as tune_mod  # noqa: E402
from bottleneckd.torch.tune_ranks import MAX_TICK_STEPS, MIN_TICK_STEPS, RankLink, Tick, tick_steps  # noqa: E402
from tests import ddp_workers  # noqa: E402
from tests.ddp_workers import rec  # noqa: E402
from tests.test_ranks import _spawn  # noqa: E402


def test_a_tick_comes_back_from_its_text():
    t = Tick(({"start": 1, "hook": "dataloader_settings", "params": {"num_workers": 2}},), 120)
    assert Tick.loads(t.dumps()) == t
    assert Tick.loads(Tick((), 9).dumps().encode()) == Tick((), 9)  # the store gives bytes


def test_ticks_come_about_every_tick_seconds_within_bounds():
    assert tick_steps(0.01) == 100  # 1 s of 10 ms steps
    assert tick_steps(0.0) == MIN_TICK_STEPS and tick_steps(5.0) == MIN_TICK_STEPS
    assert tick_steps(1e-6) == MAX_TICK_STEPS


def test_a_rank_out_of_step_gets_an_error_after_its_wait_not_a_hang():
    store = dist.TCPStore("127.0.0.1", 0, 1, True, timedelta(seconds=30))
    leader, follower = RankLink(store, 0, 2), RankLink(store, 1, 2, wait_seconds=0.2)
    leader.publish(0, Tick((), 16))
    assert follower.read(0) == Tick((), 16)
    with pytest.raises(Exception):  # noqa: B017 - the store's own error (a timeout), whatever its class
        follower.read(1)  # rank 0 never wrote tick 1


@pytest.mark.slow
def test_every_rank_of_a_ddp_job_switches_its_loader_at_the_same_steps(tmp_path):
    """Two gloo ranks, each loader waiting 3 ms a sample with no worker; the sidecar recommends
    hiding the latency. Without ticks each rank planned and turned its blocks at its own time (a
    trial's blocks then mixed both settings); here the worker count, step by step, is the same
    on both ranks, rank 0 decided the trial and rank 1 reported nothing of its own."""
    ranks = _spawn(tmp_path, ddp_workers.tune_steps, 1200)
    lead, follow = ranks
    assert (lead["role"], follow["role"]) == ("leader", "follower")
    assert len(lead["workers"]) == len(follow["workers"]) == 1200
    assert max(lead["workers"]) == 2, lead  # the trial of 2 workers ran
    assert lead["workers"] == follow["workers"]  # switched at the same steps, both ways
    decided = [o for o in lead["outcomes"] if o[1] in ("kept", "reverted")]
    assert decided and decided[0][0] == "dataloader_settings" and decided[0][2] == 2, lead["outcomes"]
    assert follow["outcomes"] == [] and follow["stopped"] is None, follow
    assert "rank 0 measured and reports" in follow["summary"][0]


def test_a_follower_that_hears_nothing_stops_and_reverts_its_trial(tmp_path, monkeypatch):
    """A rank whose rank 0 wrote nothing for its tick (out of step, or rank 0's hook gone): it
    waits its wait, stops tuning, reverts the loader setting it had in trial, and ticks no more."""
    from tests.test_tune import Data, train, tuned_watcher

    w, model, opt, loader = tuned_watcher(
        tmp_path, monkeypatch, [rec("hide_loader_latency", "dataloader_settings")], Data()
    )
    store = dist.TCPStore("127.0.0.1", 0, 1, True, timedelta(seconds=30))
    try:
        train(w, model, opt, loader, until=lambda: w.steps >= 2)
        tuner = w.tuner
        tuner.role, tuner._link = "follower", RankLink(store, 1, 2, wait_seconds=0.2)
        tuner._begin(tune_mod.Candidate("dataloader_settings", "hide_loader_latency", {"num_workers": 2}, False), 50, 2)
        assert loader.num_workers == 2 and tuner.current is not None
        w._cadence.tick_at(w.steps + 1)  # the next step is a tick; rank 0 never wrote it
        train(w, model, opt, loader, until=lambda: True)
        train(w, model, opt, loader, until=lambda: True)  # the next forward does the revert
        assert tuner.role == "done" and "did not come within" in (tuner.stopped or "")
        assert loader.num_workers == 0 and tuner.current is None
        assert w._cadence.tick_step == float("inf")
    finally:
        w.close()


def test_a_trial_measured_but_not_yet_settled_when_the_job_ends_is_reported_as_measured(tmp_path, monkeypatch):
    """Rank 0's trial whose blocks ended after its last tick: at the job's end its verdict is
    taken from the blocks (kept or reverted, with the ratio), not reported as unfinished."""
    from tests.test_tune import Data, train, tuned_watcher

    w, model, opt, loader = tuned_watcher(
        tmp_path, monkeypatch, [rec("hide_loader_latency", "dataloader_settings")], Data(sleep=0.002)
    )
    store = dist.TCPStore("127.0.0.1", 0, 1, True, timedelta(seconds=30))
    try:
        train(w, model, opt, loader, until=lambda: w.steps >= 2)
        tuner = w.tuner
        tuner.role, tuner._link = "leader", RankLink(store, 0, 2)
        w._cadence.tick_at(float("inf"))  # no tick comes before the end
        cand = tune_mod.Candidate("dataloader_settings", "hide_loader_latency", {"num_workers": 2}, False)
        t = tuner._begin(cand, 6, 2)
        assert t is not None
        t.held = True
        train(w, model, opt, loader, until=lambda: w.trials.current is None)
        assert t.kept is None and len(t.with_blocks) == len(t.without_blocks) == 3  # measured, held
    finally:
        w.close()
    o = tuner.outcomes[-1]
    assert o.status in ("kept", "reverted") and o.ratio is not None, o
