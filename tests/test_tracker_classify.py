"""The verdict tracker (hold, jump, stage changes as regime changes), classify (strongest finding,
undetermined findings, idle and balanced) and Pipeline.dominant."""

from bottleneckd.diagnosis.classify import ACTIVE, classify, findings
from bottleneckd.diagnosis.pipeline import Pipeline
from bottleneckd.diagnosis.stability import VerdictTracker
from bottleneckd.diagnosis.verdict import Verdict
from bottleneckd.model.resources import UNDETERMINED
from tests.windows import HOST, NO_PEAKS, job, sample, window

W = window(HOST)


def v(resource: str, stage: str = "compute", conf: float = 0.7, t: float = 0.0) -> Verdict:
    return Verdict(resource=resource, stage=stage, confidence=conf, evidence=("e",), t=t, since=t)


def test_tracker_holds_a_new_verdict_until_it_repeats():
    tr = VerdictTracker(hold=3, jump=0.35)
    assert tr.update(v("cpu_compute", t=0), W).resource == "cpu_compute"
    assert tr.update(v("storage_bandwidth", "data", t=1), W).resource == "cpu_compute"
    assert tr.update(v("storage_bandwidth", "data", t=2), W).resource == "cpu_compute"
    out = tr.update(v("storage_bandwidth", "data", t=3), W)
    assert (out.resource, out.since) == ("storage_bandwidth", 3)
    assert [(c.before, c.after, c.t) for c in tr.changes] == [("cpu_compute", "storage_bandwidth", 3)]


def test_tracker_a_flapping_candidate_never_takes_over():
    tr = VerdictTracker(hold=2, jump=0.9)
    tr.update(v("cpu_compute"), W)
    for i in range(6):
        tr.update(v("storage_bandwidth" if i % 2 else "cpu_memory_bandwidth", t=i), W)
    assert tr.current.resource == "cpu_compute" and tr.changes == ()


def test_tracker_keeps_a_bounded_immutable_list_of_regime_changes():
    """A run that flaps for weeks keeps the latest MAX_REGIME_CHANGES and counts them all; the
    tuple is replaced only on a change, so a snapshot shares it instead of copying it each tick."""
    from bottleneckd.diagnosis.stability import MAX_REGIME_CHANGES

    tr = VerdictTracker(hold=1)
    tr.update(v("cpu_compute", t=0), W)
    n = MAX_REGIME_CHANGES + 25
    cycle = ("storage_bandwidth", "cpu_memory", "cpu_compute")  # never straight back to the one just left
    for i in range(1, n + 1):
        tr.update(v(cycle[(i - 1) % 3], t=i), W)
    assert len(tr.changes) == MAX_REGIME_CHANGES and tr.changes_total == n
    assert tr.changes[-1].t == n and tr.changes[0].t == n - MAX_REGIME_CHANGES + 1
    before = tr.changes
    tr.update(v(tr.current.resource, t=n + 1), W)
    assert tr.changes is before


def test_tracker_turns_a_third_time_between_two_regimes_only_over_a_whole_window():
    """A finding whose figure sits on its threshold: the sliding windows cross it in runs of two or
    three. An excursion and its return are taken on the hold; leaving again for the same regime
    soon after needs WINDOW_SAMPLES windows in a row, and neither the hold nor a jump."""
    from bottleneckd.diagnosis.thresholds import FLAP_WINDOWS, WINDOW_SAMPLES

    tr = VerdictTracker(hold=2, jump=0.35)
    tr.update(v("gpu_compute", conf=0.6, t=0), W)
    for t in (1, 2):  # the excursion
        tr.update(v(UNDETERMINED, "other", conf=0.0, t=t), W)
    assert tr.current.resource == UNDETERMINED and tr.changes_total == 1
    for t in (3, 4):  # its return, on the hold
        tr.update(v("gpu_compute", conf=0.6, t=t), W)
    assert tr.current.resource == "gpu_compute" and tr.changes_total == 2
    for t in range(5, 5 + WINDOW_SAMPLES - 1):  # away again, for one window too few
        tr.update(v(UNDETERMINED, "other", conf=0.0, t=t), W)
    assert tr.current.resource == "gpu_compute" and tr.changes_total == 2
    assert tr.update(v(UNDETERMINED, "other", conf=0.0, t=9), W).resource == UNDETERMINED
    # a different regime is taken on the hold as any other
    tr2 = VerdictTracker(hold=2, jump=0.35)
    for t, r in enumerate(["gpu_compute", "cpu_compute", "cpu_compute", "gpu_compute", "gpu_compute"]):
        tr2.update(v(r, t=t), W)
    assert tr2.current.resource == "gpu_compute"
    tr2.update(v("storage_bandwidth", "data", t=5), W)
    assert tr2.update(v("storage_bandwidth", "data", t=6), W).resource == "storage_bandwidth"
    # and the same turn long after the return, too
    tr3 = VerdictTracker(hold=2, jump=0.35)
    for t, r in enumerate(["gpu_compute", "cpu_compute", "cpu_compute", "gpu_compute", "gpu_compute"]):
        tr3.update(v(r, t=t), W)
    for t in range(5, 5 + FLAP_WINDOWS):
        tr3.update(v("gpu_compute", t=t), W)
    tr3.update(v("cpu_compute", t=40), W)
    assert tr3.update(v("cpu_compute", t=41), W).resource == "cpu_compute"


def test_tracker_a_much_stronger_verdict_takes_over_at_once():
    tr = VerdictTracker(hold=5, jump=0.35)
    tr.update(v("cpu_compute", conf=0.4), W)
    assert tr.update(v("storage_bandwidth", "data", conf=0.9, t=1), W).resource == "storage_bandwidth"


def test_tracker_a_change_of_stage_on_the_same_resource_is_a_regime_change():
    tr = VerdictTracker(hold=2)
    tr.update(v("cpu_compute", "compute", t=0), W)
    tr.update(v("cpu_compute", "data", t=1), W)
    out = tr.update(v("cpu_compute", "data", t=2), W)
    assert out.stage == "data" and out.since == 2
    c = tr.changes[-1]
    assert (c.before, c.after, c.before_stage, c.after_stage) == ("cpu_compute", "cpu_compute", "compute", "data")
    assert "data stage" in c.label


def test_tracker_same_regime_keeps_its_since_time():
    tr = VerdictTracker()
    tr.update(v("cpu_compute", t=0), W)
    assert tr.update(v("cpu_compute", t=5), W).since == 0


def test_classify_picks_the_strongest_finding_and_lists_secondaries():
    w = window({**HOST, **job(1.0, 0.98), "cpu_memory/host/utilization": 0.93}, {"data_wait": 0.6, "forward": 0.4})
    fs = findings(w, NO_PEAKS)
    out = classify(w, NO_PEAKS)
    assert out.resource == fs[0].resource == "cpu_compute" and out.stage == "data"
    assert [r for r, _ in out.secondary] == [f.resource for f in fs[1:] if f.score >= 0.3]
    assert 0.0 < out.confidence <= 1.0


def test_classify_an_undetermined_finding_on_top_gives_an_undetermined_verdict_with_its_reason():
    w = window({**HOST, **job(0.2, 0.05)}, {"data_wait": 0.7, "forward": 0.3})
    out = classify(w, NO_PEAKS)
    assert out.resource == UNDETERMINED and out.stage == "data"
    assert "no sampler measures" in out.reason and all(r != UNDETERMINED for r, _ in out.secondary)


def test_classify_idle_and_balanced():
    idle = classify(window({**HOST, "cpu_compute/host/utilization": 0.02}), NO_PEAKS)
    assert idle.resource == UNDETERMINED and idle.reason.startswith("idle")
    bal = classify(
        window({**HOST, **job(2.0, 0.5)}, {"forward": 0.5, "backward": 0.3, "data_wait": 0.02, "optimizer": 0.18}),
        NO_PEAKS,
    )
    assert bal.resource == UNDETERMINED


def test_classify_threshold_is_the_active_score():
    assert 0.0 < ACTIVE < 1.0


def feed(p: Pipeline, figures, shares, n, t0):
    for i in range(n):
        p(sample(figures, shares, t=t0 + i))
    return t0 + n


def test_dominant_is_the_verdict_held_longest_while_training():
    p = Pipeline(NO_PEAKS, window=1, hold=1)
    t = feed(p, {**HOST, "cpu_compute/host/utilization": 0.01}, None, 10, 0.0)  # set-up: idle, no steps
    t = feed(p, {**HOST, **job(1.0, 0.98)}, {"data_wait": 0.7, "forward": 0.3}, 4, t)
    feed(p, {**HOST, **job(7.9, 1.0)}, {"forward": 0.5, "backward": 0.5}, 6, t)
    d = p.dominant()
    assert (d.resource, d.stage) == ("cpu_compute", "compute")
    assert p.held["cpu_compute"] == 10.0 and p.held[UNDETERMINED] == 10.0


def test_dominant_prefers_a_bottleneck_that_held_three_intervals_over_longer_undetermined_stretches():
    p = Pipeline(NO_PEAKS, window=1, hold=1)
    t = feed(p, {**HOST, **job(0.2, 0.05)}, {"data_wait": 0.7, "forward": 0.3}, 8, 0.0)  # undetermined, training
    feed(p, {**HOST, **job(7.9, 1.0)}, {"forward": 0.5, "backward": 0.5}, 3, t)
    assert p.dominant().resource == "cpu_compute"


def test_dominant_is_undetermined_when_a_verdict_held_briefly_in_a_run_undetermined_throughout():
    """A run undetermined for 28 s of training whose last 5 s looked CPU-bound (ranks shutting down,
    a noisy window) is undetermined: the few seconds do not become the run's verdict."""
    p = Pipeline(NO_PEAKS, window=1, hold=1)
    t = feed(p, {**HOST, **job(0.2, 0.05)}, {"data_wait": 0.7, "forward": 0.3}, 28, 0.0)
    feed(p, {**HOST, **job(7.9, 1.0)}, {"forward": 0.5, "backward": 0.5}, 5, t)
    assert p.latest.verdict.resource == "cpu_compute"
    assert p.dominant().resource == UNDETERMINED


def test_dominant_is_undetermined_when_nothing_held_long_enough():
    p = Pipeline(NO_PEAKS, window=1, hold=1)
    t = feed(p, {**HOST, **job(0.2, 0.05)}, {"data_wait": 0.7, "forward": 0.3}, 8, 0.0)
    feed(p, {**HOST, **job(7.9, 1.0)}, {"forward": 0.5, "backward": 0.5}, 2, t)
    assert p.dominant().resource == UNDETERMINED
    assert Pipeline(NO_PEAKS).dominant() is None


def test_dominant_keeps_the_stage_that_held_longest_not_the_last_one():
    """A job compute-bound for 8 intervals whose last windows (tear-down, a summary printed) look
    like Python code outside the phases: the job's stage is compute."""
    p = Pipeline(NO_PEAKS, window=1, hold=1)
    t = feed(p, {**HOST, **job(7.9, 1.0)}, {"forward": 0.5, "backward": 0.5}, 8, 0.0)
    feed(p, {**HOST, **job(1.0, 0.99)}, {"other": 0.9, "forward": 0.1}, 2, t)
    assert p.latest.verdict.stage == "other"
    d = p.dominant()
    assert (d.resource, d.stage) == ("cpu_compute", "compute")
