"""Which steps the watcher times (issue 23): all of them when that is cheap, a sample of them when
the step is so short that timing every one would cost more than the overhead budget.

A timed step costs ``TIMED_STEP_COST_S`` in situ on the fast path (hot_path.py): three entries
into Python between the model's kernels, a floor that no trimming of our own code removes
(docs/measurements.md, "The hot path"). On a 1.7 ms step that is 2.2%. So on short steps the
watcher alternates windows of ``WINDOW_STEPS`` timed steps with rests during which the model's
forward wrapper and both optimizer step hooks are off and only the timed iterator's ``__next__``
runs, counting the batches (``UNTIMED_STEP_COST_S``). A rest's steps go into the reports with
their exact count and wall time, their phases in the proportions of the timed steps around them
(``PhaseAccumulator.add_untimed``), and each report says which share of its steps was timed (the
fact ``timed_step_share``).

The share of steps timed is the largest that keeps the expected cost per step within
``budget`` x the step's own time:

    share x TIMED + (1 - share) x UNTIMED <= budget x step

and never below ``MIN_TIMED_SHARE``. On steps longer than TIMED / budget (8 ms at the defaults)
every step is timed, as before. On steps shorter than about (UNTIMED + MIN x TIMED) / budget (4.2 ms
at the defaults) the budget cannot be met: the least share is timed, and the cost is about an
untimed step's, the Python frame of the timed iterator, which a loop fed by it always pays.

Only a loop fed by the timed iterator, one batch a step (the window's fetches equal its steps),
rests: the fetches count the untimed steps, and a rest begins and ends at a fetch, never inside a
dict of hooks torch is iterating. A rest goes on through reports: it is cut into parts that end
where a report is due (by time at the window's step time; one step before an epoch's last by
steps, which is timed), and the report is taken at the fetch between two parts with our hooks off
(``Watcher.rest_goes_on``; a rest that ended at each report cost a timed window after every report:
6.9% of a 2 ms step timed, not 5%). Its length is drawn within ``REST_JITTER`` of the budget's. It
ends early at a batch of another iterator (under
``bottleneckd run`` every DataLoader is timed: a validation loader read inside the step), while
the profiler records, and for anything the fast path does not handle (a mitigation applied, a
trial, a public mark); a step under way then is timed if its forward or step is still to come,
and counted at the next fetch otherwise (``Watcher.wake``). Our hooks go back on at the end of
torch's hook dicts: a step pre-hook of the user's registered after ours then runs before it.
"""

from __future__ import annotations

import logging
import math
import os
import random

log = logging.getLogger("bottleneckd.torch")

#: the default budget: the hook's cost at most 0.5% of the step (issue 23's target). ``watch(...,
#: overhead_budget=None)`` or ``BOTTLENECKD_OVERHEAD_BUDGET=off`` times every step.
OVERHEAD_BUDGET = 0.005
#: a timed step's cost in situ: the watcher on its fast path minus a bare loop, +37.7 us (95% CI
#: +26.1 to +46.9) on a 1.69 ms step, 2-core VM (docs/measurements.md, ``python
#: scripts/bench_hook_floor.py --rounds 250``); the upper end of similar runs (+38.5, +39.8 us).
#: Interleaved every 8 steps (``scripts/bench_hook_steady.py --every-step``), which cancels the
#: VM's drift, it measured +84.5 us on a 2.6 ms step: an underestimate, kept (docs/measurements.md,
#: "The steady state": with the measured costs the sampler would spend its whole budget)
TIMED_STEP_COST_S = 40e-6
#: an untimed step's cost in situ: the timed iterator's ``__next__`` counting the batch, the one
#: Python frame left in the loop, +22.5 us (95% CI +10.6 to +36.1) with ~11% of the block's steps
#: timed, ~20 us an untimed step, on a 2.1 ms step (docs/measurements.md, "Sampled steps";
#: ``python scripts/bench_hook_floor.py --rounds 250 --arms untimed``); a trivial Python iterator
#: class around the same list costs as much there (10-15 us, within the noise). Interleaved every 8
#: steps an untimed step measured 3-4 us (docs/measurements.md, "The steady state"): an
#: overestimate, kept as the margin for what the model leaves out (the reports, ~0.5 ms every 0.5 s,
#: and the switching at each window's ends), which keeps the least share timed on a 2 ms step
UNTIMED_STEP_COST_S = 20e-6
#: timed steps in a row before a rest: a window of consecutive steps keeps each step's phases
#: whole; 16 steps make the cost of switching the hooks off and on again (~10 us, once a window)
#: small beside the window's own
WINDOW_STEPS = 16
#: the least share of steps timed, whatever the step's length: a window every 640 steps on average,
#: so that a 2 ms step still has ~12 timed steps a second (~120 in a 10 s diagnosis window) and a
#: 0.3 ms step ~80. 5% before: on a 2 ms step the timed windows (66-85 us a timed step in situ)
#: were ~4 of its ~12.7 us (docs/measurements.md, "The steady state"); a report with no timed step
#: of its own takes the proportions of the window before (phases.PhaseAccumulator.add_untimed)
MIN_TIMED_SHARE = 0.025
#: a rest's length is drawn uniformly within this share either side of the budget's (the mean kept):
#: with fixed rests a loop whose slow steps come every k steps, k dividing window + rest, would have
#: its windows meet the same steps of the period each time (always or never the slow one)
REST_JITTER = 0.5
#: the seed of each watcher's draws: the same loop rests alike from one run to the next
JITTER_SEED = 23


def budget_from_env(value: float | None | str = "env") -> float | None:
    """The overhead budget: ``value`` when given (None: time every step; else a fraction of the
    step above 0: ValueError otherwise), else BOTTLENECKD_OVERHEAD_BUDGET (a fraction, or ``off``;
    anything else is warned about and the default used), else ``OVERHEAD_BUDGET``."""
    if value != "env":
        if value is None:
            return None
        b = _fraction(value)
        if b is None:
            raise ValueError(
                f"overhead_budget: expected a fraction of the step above 0 (0.005 is 0.5%), or None to time "
                f"every step; got {value!r:.40}"
            )
        return b
    raw = os.environ.get("BOTTLENECKD_OVERHEAD_BUDGET", "").strip().lower()
    if raw in ("off", "none"):
        return None
    if not raw:
        return OVERHEAD_BUDGET
    b = _fraction(raw)
    if b is None:
        log.warning(
            "BOTTLENECKD_OVERHEAD_BUDGET=%.40r: expected a fraction of the step above 0 or 'off'; using %g",
            raw,
            OVERHEAD_BUDGET,
        )
        return OVERHEAD_BUDGET
    return b


def _fraction(value: object) -> float | None:
    try:
        b = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return b if 0 < b <= 1 else None


def timed_share(step_seconds: float, budget: float | None) -> float:
    """The share of steps to time for steps of ``step_seconds`` (see the module docstring)."""
    if budget is None or not step_seconds > 0:
        return 1.0
    allowed = budget * step_seconds
    if allowed >= TIMED_STEP_COST_S:
        return 1.0
    share = (allowed - UNTIMED_STEP_COST_S) / (TIMED_STEP_COST_S - UNTIMED_STEP_COST_S)
    return max(MIN_TIMED_SHARE, share)


def jittered(rest: int, rng: random.Random) -> int:
    """A rest of ``rest`` steps on average, drawn within ``REST_JITTER`` of it (at least one step)."""
    return max(1, round(rest * rng.uniform(1.0 - REST_JITTER, 1.0 + REST_JITTER)))


def rest_steps(step_seconds: float, budget: float | None) -> int:
    """Untimed steps after a window of WINDOW_STEPS timed ones (0: time every step)."""
    share = timed_share(step_seconds, budget)
    if share >= 1.0:
        return 0
    return math.ceil(WINDOW_STEPS * (1.0 - share) / share)
