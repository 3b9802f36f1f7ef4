"""Phase accumulation: the steps a clock finished, summed by phase NAME for the next report and
for the current epoch.

Phase names are ``model.resources.HOOK_PHASES`` (the hook's part of ``PHASES``, the one list);
the clocks hand phase tuples in that order and this is the only place that turns them into names.
Compute time (for achieved FLOP/s) is the sum of the phases whose stage is compute or optimizer,
read from ``PHASES``, not from positions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bottleneckd.model.resources import HOOK_PHASES, PHASES, Phase

#: phases that run the model's arithmetic: the roofline's denominator
COMPUTE_PHASES: tuple[str, ...] = tuple(p for p in HOOK_PHASES if PHASES[p] in ("compute", "optimizer"))


@dataclass(frozen=True)
class PhaseTotals:
    """Seconds per phase summed over ``steps`` steps of ``wall_seconds`` in all."""

    steps: int
    wall_seconds: float
    phases: dict[str, float]
    examples: int = 0  # training examples in those steps (0: none counted)

    @property
    def compute_seconds(self) -> float:
        return sum(self.phases.get(p, 0.0) for p in COMPUTE_PHASES)

    def shares(self) -> list[tuple[str, float]]:
        """(phase, share of the summed phase time), largest first, zero phases left out."""
        total = sum(self.phases.values())
        if total <= 0:
            return []
        return sorted(((k, v / total) for k, v in self.phases.items() if v > 0), key=lambda kv: -kv[1])


class PhaseAccumulator:
    """Sums steps for two consumers: the interval report (``take_interval``) and the epoch
    (``take_epoch``, which includes every interval taken since the last epoch end).
    ``on_step(wall, examples)`` sees every step once, in order (trials use it)."""

    def __init__(
        self,
        on_step: Callable[[float, int], None] | None = None,
        *,
        on_steps: Callable[[list[float], list[int]], None] | None = None,
    ) -> None:
        self._on_step = on_step
        self._on_steps = on_steps  # the same, a drained batch at a time (trials.Trials.record_steps)
        self._sums = [0.0] * len(HOOK_PHASES)  # the interval's, aligned with HOOK_PHASES; named in _totals
        self._wall = 0.0
        self._steps = 0
        self._examples = 0
        self._untimed = 0  # the interval's steps added by add_untimed
        #: the last batch of timed steps added (phase sums, steps, examples): the proportions of
        #: untimed steps in an interval with no timed step of its own
        self._recent: tuple[list[float], int, int] | None = None
        self._epoch = PhaseTotals(0, 0.0, dict.fromkeys(HOOK_PHASES, 0.0))
        self._run = PhaseTotals(0, 0.0, dict.fromkeys(HOOK_PHASES, 0.0))  # every interval taken

    def add(self, steps: Sequence[tuple[tuple[float, ...], float]], examples: list[int]) -> int:
        """Add the steps a clock drained (phase tuples in HOOK_PHASES order, and wall), with the
        examples of each step (missing ones count 0). Returns how many steps were added.

        Column by column (issue 23): ``sum(column, start)`` adds in step order from the running
        total, the same additions as one step at a time, without an object made per step."""
        n = len(steps)
        if not n:
            return 0
        sums = self._sums
        before = sums[:]
        for i, col in enumerate(zip(*[ph for ph, _ in steps], strict=True)):
            sums[i] = sum(col, sums[i])
        walls = [wall for _, wall in steps]
        self._wall = sum(walls, self._wall)
        ex = examples[:n]
        if len(ex) < n:
            ex += [0] * (n - len(ex))
        self._examples += sum(ex)
        # these steps' phase sums as the running totals' differences: a second pass over the columns
        # would make a tuple iterator per step again (issue 23's count of containers per step)
        self._recent = ([a - b for a, b in zip(sums, before, strict=True)], n, sum(ex))
        if self._on_steps is not None:
            self._on_steps(walls, ex)
        if self._on_step is not None:
            for wall, e in zip(walls, ex, strict=True):
                self._on_step(wall, e)
        self._steps += n
        return n

    def add_untimed(self, steps: int, wall: float) -> None:
        """``steps`` steps that were not timed (a rest, sampling.py) and took ``wall`` seconds in all:
        counted with their wall, which is shared among the phases, and their examples, in the
        proportions of the timed steps of this interval (or, where it has none: a report taken
        inside a rest, of the last timed steps added, the window before the rest; of the run so far
        where there were none). Trials never see them (a trial times every step)."""
        if steps <= 0 or wall < 0:
            return
        if self._steps == self._untimed and self._recent is not None:
            weights, ref_steps, ref_examples = self._recent
        else:
            ref = self._interval() if self._steps > self._untimed else self._run
            weights, ref_steps, ref_examples = [ref.phases.get(p, 0.0) for p in HOOK_PHASES], ref.steps, ref.examples
        total = sum(weights)
        if total > 0:
            for i, w in enumerate(weights):
                self._sums[i] += wall * w / total
        else:
            self._sums[HOOK_PHASES.index(Phase.OTHER)] += wall
        if ref_steps:
            self._examples += round(steps * ref_examples / ref_steps)
        self._wall += wall
        self._steps += steps
        self._untimed += steps

    @property
    def interval_steps(self) -> int:
        return self._steps

    @property
    def interval_untimed(self) -> int:
        """The interval's steps that were not timed (``add_untimed``)."""
        return self._untimed

    def take_interval(self) -> PhaseTotals:
        """The steps added since the last call, by phase name; they count in the epoch too."""
        out = self._interval()
        self._sums, self._wall, self._steps, self._examples = [0.0] * len(HOOK_PHASES), 0.0, 0, 0
        self._untimed = 0
        self._epoch = _plus(self._epoch, out)
        self._run = _plus(self._run, out)
        return out

    def so_far(self) -> PhaseTotals:
        """Every step added since the start (intervals taken and the one in progress): a
        consumer with its own cadence (a framework's log) takes differences of these."""
        return _plus(self._run, self._interval())

    def _interval(self) -> PhaseTotals:
        return PhaseTotals(self._steps, self._wall, dict(zip(HOOK_PHASES, self._sums, strict=True)), self._examples)

    def take_epoch(self) -> PhaseTotals:
        """Every interval taken since the last epoch end (take the interval first)."""
        out, self._epoch = self._epoch, PhaseTotals(0, 0.0, dict.fromkeys(HOOK_PHASES, 0.0))
        return out


def _plus(a: PhaseTotals, b: PhaseTotals) -> PhaseTotals:
    return PhaseTotals(
        a.steps + b.steps,
        a.wall_seconds + b.wall_seconds,
        {k: v + b.phases.get(k, 0.0) for k, v in a.phases.items()},
        a.examples + b.examples,
    )


def minus(a: PhaseTotals, b: PhaseTotals | None) -> PhaseTotals:
    """The steps of ``a`` (a later ``so_far``) not in ``b`` (an earlier one; None: all of ``a``)."""
    if b is None:
        return a
    return PhaseTotals(
        a.steps - b.steps,
        a.wall_seconds - b.wall_seconds,
        {k: max(0.0, v - b.phases.get(k, 0.0)) for k, v in a.phases.items()},
        a.examples - b.examples,
    )
