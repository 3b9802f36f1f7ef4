"""The window's readings over the intervals its timed steps ran in (``WindowStats.over_phases``),
and whether the steps cover them (``steps_cover_readings``): a checkpoint, an evaluation or a
recompilation running when the last step ended is in the readings and in no phase yet.

Found by blind traces (tests/data/construct_blind_gpu3.py periodic_checkpoint, compile_recompiles):
the GPU's idle seconds of a checkpoint, averaged over the window, were set beside the phases of
the short steps around it, and a compute-bound job read "launch-bound" (cpu_compute) for a few
windows after each checkpoint."""

from __future__ import annotations

from bottleneckd.diagnosis.window import Window
from bottleneckd.model.sample import Sample
from tests.windows import sample

BUSY = "gpu_compute/gpu0/busy_fraction"
COMPUTE = {"forward": 0.3, "backward": 0.65, "optimizer": 0.05}


def stats(samples: list[Sample]):  # noqa: ANN201
    w = Window(5)
    for s in samples:
        w.add(s)
    st = w.stats()
    assert st is not None
    return st


def test_a_steady_job_reads_its_steps_intervals_and_they_cover_them():
    st = stats([sample({BUSY: 0.9 + 0.02 * i}, COMPUTE, t=float(i)) for i in range(5)])
    # the last two intervals' phases (PHASE_SAMPLES), ten 0.1 s steps each: the last two intervals' readings
    assert st.over_phases("gpu_compute", "gpu0", "busy_fraction") == 0.97
    assert st.steps_cover_readings


def test_an_interval_with_no_step_ended_is_left_out():
    steady = [sample({BUSY: 1.0}, COMPUTE, t=float(i)) for i in range(3)]
    # one 0.3 s step ended early in the interval; then a checkpoint: the GPU idle, no step ends
    short = sample({BUSY: 0.3}, COMPUTE, t=3.0, steps=1, step=0.3)
    ckpt = Sample(4.0, 1.0, sample({BUSY: 0.0}).readings, None)
    st = stats([*steady, short, ckpt])
    # the phases are the last two intervals' (the short step alone): its interval's readings, not
    # the checkpoint's after it, which is in no phase
    assert st.over_phases("gpu_compute", "gpu0", "busy_fraction") == 0.3
    assert st.get("gpu_compute", "gpu0", "busy_fraction") == (3.0 + 0.3) / 5
    # 0.7 s of its interval outside the step: within STEP_REPORT_LAG (a step reported a tick late)
    assert st.steps_cover_readings


def test_steps_that_leave_most_of_their_interval_uncovered_do_not_speak_for_its_readings():
    """At 5 s intervals (``--interval 5``), an interval whose ten steps took 1 s: 4 s of it outside
    any step, more than a step, a tenth of it and STEP_REPORT_LAG: something else ran there. (At
    1 s intervals the intervals taken exceed the steps by less than one: the walk back over the
    steps' own time is the alignment, and this check a guard for longer intervals.)"""

    def tick(t: float, busy: float, wall: float) -> Sample:
        s = sample({BUSY: busy}, COMPUTE, t=t, steps=10, step=wall / 10)
        return Sample(s.t, 5.0, s.readings, s.phases)

    st = stats([tick(5.0 * i, 1.0, 5.0) for i in range(4)] + [tick(20.0, 0.2, 1.0)])
    # the last two intervals' steps (6 s) over their two intervals (10 s): 4 s outside them
    assert st.over_phases("gpu_compute", "gpu0", "busy_fraction") == 0.6
    assert not st.steps_cover_readings


def test_a_steady_job_reporting_every_half_second_is_covered():
    """The hook reports at most every 0.5 s, at the first step end after: a tick's steps took 0.5 to
    1.5 s, two ticks' 1.5 to 2.5 s (a review's simulation: with one step's slack alone 35-65% of
    such ticks read uncovered)."""
    for walls in ((0.5, 1.0), (1.0, 0.5), (0.75, 0.75), (1.5, 0.5)):
        ticks = [sample({BUSY: 0.9}, COMPUTE, t=float(i), steps=10, step=0.1) for i in range(3)]
        ticks += [sample({BUSY: 0.9}, COMPUTE, t=3.0 + i, steps=int(w * 10), step=0.1) for i, w in enumerate(walls)]
        assert stats(ticks).steps_cover_readings, walls


def test_a_step_longer_than_an_interval_reads_the_intervals_it_ran_in():
    """A 2.5 s step (a checkpoint inside it) reported whole in the interval where it ends: its
    readings are those of the three intervals it ran in, and it covers them."""
    steady = [sample({BUSY: 1.0}, COMPUTE, t=float(i)) for i in range(2)]
    running = [Sample(2.0 + i, 1.0, sample({BUSY: 0.0}).readings, None) for i in range(2)]
    ended = sample({BUSY: 0.5}, {"forward": 0.1, "backward": 0.2, "other": 0.7}, t=4.0, steps=1, step=2.5)
    st = stats([*steady, *running, ended])
    assert st.over_phases("gpu_compute", "gpu0", "busy_fraction") == 0.5 / 3
    assert st.steps_cover_readings


def test_stack_sampled_phases_read_the_window():
    attach = {"phase_source": "py-spy"}
    st = stats([sample({BUSY: 0.2 * i}, COMPUTE, attach, t=float(i)) for i in range(5)])
    assert st.phase_means == {} and st.over_phases("gpu_compute", "gpu0", "busy_fraction") == 0.4
