"""Attach's figures in its own units (issue 21, item 10): stage shares counted from py-spy stack
samples are said as such (no step count, no ms/step), read over enough samples to be stable, give a
headroom consistent with the evidence, and a run-queue wait is put on whoever causes it."""

from __future__ import annotations

import pytest

from bottleneckd.diagnosis.rules import data_wait
from bottleneckd.diagnosis.rules.common import headroom
from bottleneckd.diagnosis.rules.cpu_state import cpu_state
from bottleneckd.diagnosis.window import STACK_SAMPLES, Window
from bottleneckd.model.sample import StepPhases
from bottleneckd.outputs.live import live_line, render_screen
from bottleneckd.outputs.report import render_text, step_phases_json
from bottleneckd.runtime.run import Run
from tests.windows import HOST, NO_PEAKS, job, sample, window

STACKS = {"phase_source": "py-spy"}


def stacked(shares: dict[str, float], n: int = 2, interval: float = 0.5, main: float = 0.97):
    """One tick of ``n`` stack samples at ``1/interval`` Hz, as StackSampler.drain gives it (the main
    thread at ``main`` of a core: a loader with no workers building each batch)."""
    return sample({**HOST, **job(1.0, main)}, shares, {**STACKS, "stack_samples": n}, steps=n, step=interval)


def test_the_live_line_and_the_screen_count_stack_samples_not_steps():
    p = Run(NO_PEAKS)
    for _ in range(6):
        snap = p(stacked({"data_wait": 1.0}))
    line = live_line(snap)
    assert "stack samples" in line and "/step" not in line and " steps," not in line, line
    screen = render_screen(snap)
    assert "stack samples" in screen and "ms/step" not in screen and "over 2 steps" not in screen


def test_the_report_says_stack_samples_where_attach_counted_them():
    ph = StepPhases(40, 20.0, {"data_wait": 14.0, "forward": 6.0}, STACKS)
    assert step_phases_json(ph) == {"stack_samples": 40, "share": {"data_wait": 0.7, "forward": 0.3}}
    timed = StepPhases(40, 2.0, {"forward": 2.0})
    assert step_phases_json(timed)["steps"] == 40


def test_a_stage_in_every_stack_sample_has_a_headroom_not_no_removable_stage():
    """4 of 4 samples waiting for data: the evidence says the stage is removable; the headroom
    must say so too (it said 'no removable stage' while run measured 3.7x on the same job)."""
    assert headroom(1.0, samples=4) == pytest.approx(10.0)  # (4 + 1/2) / (4 + 1) = 0.9
    assert headroom(0.5, samples=40) == pytest.approx(1 / (1 - 20.5 / 41))
    assert headroom(1.0) == pytest.approx(100.0)  # timed: capped, never None
    assert headroom(None) is None
    p = Run(NO_PEAKS)
    for _ in range(6):
        p(stacked({"data_wait": 1.0}))
    doc = p.report(current=True)
    assert doc["verdict"]["stage"] == "data" and doc["verdict"]["headroom"] > 2
    assert "no removable stage" not in render_text(doc)


def test_stack_sampled_phases_are_read_over_enough_samples():
    """Two ticks at 2 Hz are 4 samples: a stage's share from them is +-0.25. The window reads
    stack-sampled phases over STACK_SAMPLES (20) of them, timed phases over the last 2 ticks."""
    w = Window(5)
    for _ in range(8):
        w.add(stacked({"data_wait": 1.0}))
    for _ in range(2):
        w.add(stacked({"forward": 1.0}))
    ph = w.stats().phases
    assert ph.steps == STACK_SAMPLES and ph.share("forward") == pytest.approx(4 / 20)
    timed = Window(5)
    for shares in [{"data_wait": 1.0}] * 8 + [{"forward": 1.0}] * 2:
        timed.add(sample({**HOST}, shares))
    assert timed.stats().phases.share("forward") == pytest.approx(1.0)


def test_a_run_queue_wait_behind_the_jobs_own_loader_workers_is_not_blamed_on_other_processes():
    own = {**HOST, "cpu_compute/host/cores": 2.0, "cpu_compute/host/busy_cores": 1.95}
    fig = {**own, **job(1.9, 0.6, workers=1.3, n_workers=2, usable=2.0, waiting=0.8)}
    ev = " ".join(cpu_state(window(fig, {"data_wait": 0.6, "forward": 0.4})).describe())
    assert "other processes" not in ev and "2 loader workers" in ev and "wait for each other" in ev
    busy_host = {**fig, "cpu_compute/host/busy_cores": 2.0, "cpu_compute/job/busy_cores": 0.9}
    ev = " ".join(cpu_state(window(busy_host, {"forward": 1.0})).describe())
    assert "other processes share these cores (1.10 cores busy outside the job)" in ev


def test_data_wait_evidence_from_stacks_names_its_samples():
    w = window({**HOST, **job(1.0, 0.98)}, {"data_wait": 0.75, "forward": 0.25}, STACKS)
    f = max(data_wait(w, NO_PEAKS), key=lambda f: f.score)
    assert any("stack samples (py-spy)" in e for e in f.evidence) and f.headroom is not None


def test_a_mixed_step_read_from_stack_samples_does_not_flip_its_verdict():
    """A step 35% waiting for its batch, 65% in forward, sampled at 2 Hz (each sample in one stage,
    seeded): over 4 samples the share swings between 0 and 1 and the stage flipped; over 20 it holds."""
    import random

    rng = random.Random(3)
    p = Run(NO_PEAKS)
    stages = []
    for _ in range(60):
        picks = ["data_wait" if rng.random() < 0.35 else "forward" for _ in range(2)]
        shares = {k: picks.count(k) / 2 for k in set(picks)}
        stages.append(p(stacked(shares)).verdict.stage)
    settled = stages[12:]  # once 20 samples are in
    changes = sum(a != b for a, b in zip(settled, settled[1:], strict=False))
    assert settled[-1] == "data" and changes <= 2, stages
