"""A straggler's own extra work: evening the ranks' work out is the first advice, with its gain
predicted from the straggler's lag behind the ranks' mean; under attach every rank's stack
samples (samplers/rank_stacks.py) find it as the hook's timings do under run."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from dataclasses import replace

import psutil
import pytest

from bottleneckd.advice.knowledge import load_knowledge
from bottleneckd.advice.predict import predict
from bottleneckd.advice.recommend import recommend
from bottleneckd.diagnosis.measured import measured_facts
from bottleneckd.diagnosis.straggler import find_straggler, with_straggler
from bottleneckd.diagnosis.verdict import Verdict
from bottleneckd.diagnosis.window import Window
from bottleneckd.model.facts import Facts
from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.sample import RankPhases, Sample, StepPhases
from bottleneckd.samplers.rank_stacks import (
    PER_TICK,
    RankStacks,
    classify_rank_sample,
    rank_numbers,
    uses_cuda,
)
from bottleneckd.samplers.threads import schedstat
from tests.test_straggler import window

COMM = Verdict(
    resource="inter_gpu_interconnect",
    stage="communication",
    confidence=0.8,
    evidence=("gradient communication 40% of step time",),
    headroom=1.6,
)


def cpu_ident(rank: int) -> RankIdentity:
    return RankIdentity(
        job="j", run="", restart=0, rank=rank, local_rank=rank, world_size=2, local_world_size=2, node="n1", node_rank=0
    )


PY_SPY = {"phase_source": "py-spy"}


def sampled_window(busy: dict[int, float], n: int = 10, per: int = 4, seed: int = 3) -> list[Sample]:
    """Intervals of ``per`` stack samples of each rank (0.5 s each), busy in backward with
    probability ``busy[rank]``, else waiting in the all-reduce (as attach's rank view reports)."""
    rnd = random.Random(seed)
    out = []
    for t in range(n):
        ranks = []
        for r, p in busy.items():
            k = sum(rnd.random() < p for _ in range(per))
            ranks.append(
                RankPhases(
                    cpu_ident(r),
                    StepPhases(
                        per,
                        per * 0.5,
                        {"backward": k * 0.5, "communication": (per - k) * 0.5},
                        {"phase_source": "py-spy"},
                    ),
                )
            )
        out.append(Sample(float(t), 1.0, (), None, (), tuple(ranks)))
    return out


def test_a_timed_straggler_gives_the_share_the_ranks_save_with_even_work() -> None:
    s = find_straggler(window({0: 0.05, 1: 0.15}, noise=0.0))
    assert s is not None and s.rank == 1 and not s.sampled
    # busy 0.15 against the mean 0.10, a step of 0.152 (the median rank's busy + wait)
    assert s.balance_share == pytest.approx(0.05 / 0.152, rel=0.02)
    assert s.to_json()["balance_share"] == s.balance_share


def test_stack_samples_of_every_rank_name_the_straggler_in_shares_not_times() -> None:
    samples = sampled_window({0: 0.35, 1: 0.95})
    s = find_straggler(samples)
    assert s is not None and s.rank == 1 and s.sampled
    assert 0.15 < (s.balance_share or 0) < 0.45
    ev = s.evidence()
    assert ev[0].startswith("straggler: rank 1") and "of its stack samples" in ev[0]
    assert not any(" ms" in e for e in ev), ev  # a sample stands for a share of the time, not a step's ms
    v = with_straggler(COMM, samples)
    assert v.resource == "cpu_compute" and v.stage == "compute" and v.straggler["limits_the_step"]
    assert "from stack samples" in v.reason and " ms" not in v.reason
    # even ranks sampled alike: no one is named
    assert find_straggler(sampled_window({0: 0.6, 1: 0.6})) is None


def test_the_straggler_limiting_the_step_makes_even_work_the_first_advice_with_its_gain() -> None:
    samples = window({0: 0.05, 1: 0.15}, noise=0.0)
    v = with_straggler(COMM, samples)
    assert v.straggler and v.straggler["limits_the_step"]
    w = Window(10)
    for s in samples:
        w.add(s)
    stats = w.stats(Facts())
    assert stats is not None
    facts = measured_facts(stats, v)
    assert facts["straggler_limits_the_step"] is True
    assert facts["straggler_balance_share"] == pytest.approx(0.05 / 0.152, rel=0.02)
    # without a straggler named (or one slowed from outside: no balance share) neither fact is set
    assert "straggler_limits_the_step" not in measured_facts(stats, COMM)

    from bottleneckd.diagnosis.step_inputs import Share, StepInputs

    inputs = StepInputs(
        step=0.152,
        shares={"backward": Share(0.6, 0.6, 0.6), "communication": Share(0.4, 0.4, 0.4)},
        straggler_balance=facts["straggler_balance_share"],
    )
    p = predict("balance_ranks", inputs)
    assert p.speedup == pytest.approx(1 / (1 - 0.05 / 0.152), rel=0.02)
    assert p.low is not None and p.low < p.speedup == p.high
    recs = recommend(v, load_knowledge(), dict(facts), inputs=inputs)
    assert recs[0].mitigation.id == "balance_ranks" and recs[0].first
    assert not recs[0].mitigation.changes_semantics
    # a throttled GPU is restored, not given less work
    throttled = {**facts, "gpu_throttled": ("hw_thermal",)}
    assert "balance_ranks" not in [r.mitigation.id for r in recommend(v, load_knowledge(), throttled, inputs=inputs)]
    # no straggler: it does not fit, and says why
    recs = recommend(v, load_knowledge(), {}, inputs=inputs)
    assert "balance_ranks" not in [r.mitigation.id for r in recs]
    assert predict("balance_ranks", StepInputs(step=0.1, shares={})).speedup is None


def test_a_rank_sample_waiting_inside_backward_is_the_all_reduce_wait() -> None:
    assert classify_rank_sample("backward", True) == "communication"
    assert classify_rank_sample("forward", True) == "communication"
    assert classify_rank_sample("backward", False) == "backward"
    assert classify_rank_sample("other", True) == "other"
    assert classify_rank_sample("communication", False) == "communication"


def _sleepers(n: int, env: dict[str, str] | None = None) -> list[subprocess.Popen]:
    out = []
    for i in range(n):
        e = {**os.environ, **(env or {})}
        if env is not None:
            e["RANK"] = str(n - 1 - i)  # started last-first: the environment, not the order, numbers them
        out.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=e))
        time.sleep(0.05)
    return out


def test_ranks_are_numbered_by_their_environment_else_by_start_order() -> None:
    procs = _sleepers(3)
    named = _sleepers(2, env={})
    try:
        ps = [psutil.Process(p.pid) for p in procs]
        assert rank_numbers(ps) == {p.pid: i for i, p in enumerate(procs)}
        ns = [psutil.Process(p.pid) for p in named]
        time.sleep(0.2)  # the environment is read from /proc once the child has exec'd
        assert rank_numbers(ns) == {named[0].pid: 1, named[1].pid: 0}
    finally:
        for p in procs + named:
            p.kill()
            p.wait()


def test_every_cpu_rank_is_sampled_at_one_rate_and_drained_as_sampled_phases() -> None:
    procs = _sleepers(2)
    try:
        view = RankStacks(0.5, host="h")
        view.set_ranks([psutil.Process(p.pid) for p in procs])
        assert not uses_cuda(procs[0].pid)
        turn = view.turn()
        assert sorted(turn) == sorted(p.pid for p in procs)  # two ranks: both every tick
        view.add(procs[0].pid, "backward")
        view.add(procs[0].pid, "communication")
        view.add(procs[1].pid, "backward")
        ranks = view.drain()
        assert [r.identity.rank for r in ranks] == [0, 1]
        r0 = ranks[0].phases
        assert r0.sampled and r0.steps == 2 and r0.wall_seconds == pytest.approx(1.0)
        assert r0.phases == {"backward": 0.5, "communication": 0.5}
        assert isinstance(r0.facts.get("thread_cpu_seconds"), float)
        assert view.drain() == ()  # drained
        # one process is no distributed job: nothing is sampled
        view.set_ranks([psutil.Process(procs[0].pid)])
        assert view.turn() == []
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_more_ranks_than_a_tick_holds_take_turns_and_each_sample_stands_for_longer() -> None:
    procs = _sleepers(PER_TICK + 2)
    try:
        view = RankStacks(0.5, host="h")
        view.set_ranks([psutil.Process(p.pid) for p in procs])
        seen = view.turn() + view.turn() + view.turn()
        assert len(set(seen)) == len(procs) and len(view.turn()) == PER_TICK
        assert view.period == pytest.approx(0.5 * len(procs) / PER_TICK)
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_schedstat_reads_the_main_threads_cpu_and_wait() -> None:
    got = schedstat(os.getpid())
    assert got is not None and got[0] > 0 and got[1] >= 0
    assert schedstat(2**22 + 12345) is None


def _attach_ranks(tmp_path, env: dict, *args: str) -> dict:  # noqa: ANN001
    """A 2-rank gloo job under torchrun (tests/rank_job.py, RANK in each rank's environment),
    attached 4 s in until it exits."""
    import json
    import socket

    from tests.conftest import ROOT, job_output, run_cli

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(port)]
    job = subprocess.Popen([*cmd, str(ROOT / "tests" / "rank_job.py"), *args], env=env, stdout=subprocess.DEVNULL)
    try:
        time.sleep(4)
        rep = tmp_path / "a.json"
        r = run_cli(
            ["attach", "--pid", str(job.pid), "--quiet", "--force", "--report-json", str(rep)], env, timeout=180
        )
        assert r.returncode == 0, job_output(r)
        return json.loads(rep.read_text())
    finally:
        job.kill()
        job.wait()


@pytest.mark.slow
@pytest.mark.integration
def test_attach_names_a_rank_doing_nine_times_the_forward_work_and_advises_even_work(tmp_path, cli_env):
    pytest.importorskip("torch")
    doc = _attach_ranks(tmp_path, cli_env, "--seconds", "34", "--slow-rank", "1", "--extra", "8")
    v = doc["verdict"]
    assert (v.get("straggler") or {}).get("rank") == 1, v["evidence"]
    assert v["straggler"].get("sampled") is True
    # the others' wait is for it: its work is the verdict, and evening it out the first advice
    assert v["straggler"].get("limits_the_step") is True, v["evidence"]
    assert v["resource"] == "cpu_compute" and doc["recommendations"][0]["id"] == "balance_ranks"


@pytest.mark.slow
@pytest.mark.integration
def test_attach_names_no_rank_when_the_work_is_even(tmp_path, cli_env):
    pytest.importorskip("torch")
    doc = _attach_ranks(tmp_path, cli_env, "--seconds", "26")
    assert doc["verdict"].get("straggler") is None, doc["verdict"]["evidence"]
    assert "balance_ranks" not in [r["id"] for r in doc["recommendations"]]


def test_the_runs_verdict_is_the_stragglers_when_named_in_most_windows_since_ranks_reported() -> None:
    """The ranks' wait in communication holds while the straggler is being held (5 intervals, then
    5 of 7 windows): over a short job it can hold longer than the straggler's verdict did. Named in
    at least half the windows, the straggler's verdict is the run's; named rarely, the run's verdict
    stays and says it."""
    from bottleneckd.diagnosis.straggler_history import StragglerHistory

    def feed(hist: StragglerHistory, samples: list[Sample]) -> None:
        for s in samples:
            hist.update(with_straggler(COMM, hist.observe(s), hist))

    hist = StragglerHistory()
    feed(hist, window({0: 0.05, 1: 0.15}, n=20, noise=0.0))
    v = hist.apply(COMM)
    assert v is not None and v.resource == "gpu_compute" and v.stage == "compute"  # the window's ranks have GPUs
    assert v.straggler is not None and v.straggler["rank"] == 1 and v.straggler["limits_the_step"]
    assert v.straggler["windows_named"] * 2 >= v.straggler["windows"]

    rare = StragglerHistory()
    feed(rare, window({0: 0.10, 1: 0.10}, n=30, noise=0.0) + window({0: 0.05, 1: 0.15}, n=12, noise=0.0, t0=30.0))
    v = rare.apply(COMM)
    assert v is not None and v.resource == COMM.resource and v.straggler is not None
    assert any(e.startswith("straggler over the run: rank 1") for e in v.evidence)


def test_the_runs_verdict_carries_the_straggler_that_made_it_where_other_rules_said_it_too() -> None:
    """The run's verdict is the straggler's own (its rank's compute), held over windows in which it
    was named and others in which the plain rules said the same (a main thread at a full core under
    attach; scripts/workloads/straggler_uneven.py, 2026-12-03): the straggler limits the step in
    the run's verdict too, so evening the ranks' work out fits; a verdict it never made gets the
    straggler as evidence only."""
    from bottleneckd.diagnosis.straggler_history import StragglerHistory

    samples = window({0: 0.05, 1: 0.15}, n=20, noise=0.0)
    hist = StragglerHistory()
    for s in samples:
        hist.update(with_straggler(COMM, hist.observe(s), hist))
    made = hist.apply(COMM)
    assert made is not None and made.straggler["limits_the_step"]
    plain = replace(made, straggler=None, evidence=("one thread at a full core",))  # the plain rules' verdict
    v = hist.apply(plain)
    assert v is not None and (v.resource, v.stage) == (made.resource, made.stage)
    assert v.straggler["rank"] == 1 and v.straggler["limits_the_step"] and v.evidence[0] == "one thread at a full core"
    assert any(e.startswith("straggler over the run: rank 1") for e in v.evidence)
    w = Window(10)
    for s in samples:
        w.add(s)
    stats = w.stats(Facts())
    assert stats is not None and measured_facts(stats, v).get("straggler_limits_the_step") is True
    other = hist.apply(replace(plain, resource="cpu_memory_bandwidth", stage="compute"))
    assert other is not None and not other.straggler.get("limits_the_step")


def test_under_attach_the_run_counts_the_windows_whose_stack_samples_could_name_the_straggler() -> None:
    """Under attach a window's intervals (stack samples of each rank) grow over the run, and a rank
    is named once they are enough: here from the 15th interval of 20, in 6 of 16 windows, every one
    from then on (straggler_uneven under attach: 4 of 13, 2026-12-04, and its advice lost
    balance_ranks). The windows that judged fewer intervals than the first to name it could not
    name it: the run's verdict carries the straggler that made it."""
    from bottleneckd.diagnosis.straggler_history import StragglerHistory

    hist, named = StragglerHistory(), []
    for s in sampled_window({0: 0.5, 1: 0.9}, n=20, per=1, seed=3):
        v = with_straggler(COMM, hist.observe(s), hist)
        hist.update(v)
        named.append(bool(v.straggler))
    assert named == [False] * 14 + [True] * 6 and hist.windows == 16
    plain = replace(COMM, resource="cpu_compute", stage="compute", evidence=("one thread at a full core",))
    v = hist.apply(plain)
    assert v is not None and (v.resource, v.stage) == ("cpu_compute", "compute")
    assert v.straggler["rank"] == 1 and v.straggler["limits_the_step"] is True
    assert (v.straggler["windows_named"], v.straggler["windows"]) == (6, 16)


def test_a_rank_named_live_in_fewer_than_the_minimum_windows_is_not_the_runs_straggler() -> None:
    """A rank named live in under STRAGGLER_RUN_MIN_WINDOWS windows (the even accelerate_ddp under
    attach: rank 0 in 1 of 17, 2026-12-04) is said in the evidence, not carried as the run's
    straggler; at the minimum it is."""
    from bottleneckd.diagnosis.straggler_history import StragglerHistory
    from bottleneckd.diagnosis.thresholds import STRAGGLER_RUN_MIN_WINDOWS

    plain = replace(COMM, resource="cpu_memory_bandwidth", stage="compute", evidence=("memory bus at 90%",))
    for extra, named_in in ((STRAGGLER_RUN_MIN_WINDOWS - 1, None), (STRAGGLER_RUN_MIN_WINDOWS, 1)):
        hist, named = StragglerHistory(), []
        for s in sampled_window({0: 0.5, 1: 0.9}, n=14 + extra, per=1, seed=3):
            v = with_straggler(COMM, hist.observe(s), hist)
            hist.update(v)
            named.append(bool(v.straggler))
        assert named == [False] * 14 + [True] * extra
        v = hist.apply(plain)
        assert v is not None and (v.resource, v.stage) == (plain.resource, plain.stage)
        assert (v.straggler or {}).get("rank") == named_in
        few = [e for e in v.evidence if "not the run's straggler" in e]
        assert few == (
            [
                f"named a straggler in {extra} of {hist.windows} windows only: rank 1 on n1, fewer than 3, "
                "not the run's straggler"
            ]
            if named_in is None
            else []
        )


def test_a_window_that_already_names_the_stragglers_work_keeps_its_verdict_with_the_straggler_limiting() -> None:
    """Under attach the rank followed can be the straggler itself, computing while the others wait:
    the window's verdict is its compute already. The straggler they wait for limits the step there
    too (straggler_uneven under attach had no balance_ranks advice: 2026-12-03)."""
    samples = window({0: 0.05, 1: 0.15}, noise=0.0)  # its ranks have GPUs: gpu_compute
    plain = Verdict(resource="gpu_compute", stage="compute", confidence=0.8, evidence=("compute 97% of the step",))
    v = with_straggler(plain, samples)
    assert (v.resource, v.stage, v.headroom) == ("gpu_compute", "compute", plain.headroom)
    assert v.evidence[0] == "compute 97% of the step" and v.straggler["rank"] == 1
    assert v.straggler["limits_the_step"] is True
    # another verdict (not the straggler's work, not the ranks' wait): the straggler as evidence only
    other = with_straggler(replace(plain, resource="cpu_memory_bandwidth"), samples)
    assert other.straggler["rank"] == 1 and "limits_the_step" not in other.straggler
