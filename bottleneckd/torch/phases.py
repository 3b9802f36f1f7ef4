"""Phase accumulation: the steps a clock finished, summed by phase NAME for the next report and
for the current epoch.

Phase names are ``model.resources.HOOK_PHASES`` (the hook's part of ``PHASES``, the one list);
the clocks hand phase tuples in that order and this is the only place that turns them into names.
Compute time (for achieved FLOP/s) is the sum of the phases whose stage is compute or optimizer,
read from ``PHASES``, not from positions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import add

from bottleneckd.model.resources import HOOK_PHASES, PHASES

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

    def __init__(self, on_step: Callable[[float, int], None] | None = None) -> None:
        self._on_step = on_step
        self._sums = [0.0] * len(HOOK_PHASES)  # the interval's, aligned with HOOK_PHASES; named in _totals
        self._wall = 0.0
        self._steps = 0
        self._examples = 0
        self._epoch = PhaseTotals(0, 0.0, dict.fromkeys(HOOK_PHASES, 0.0))
        self._run = PhaseTotals(0, 0.0, dict.fromkeys(HOOK_PHASES, 0.0))  # every interval taken

    def add(self, steps: Iterable[tuple[tuple[float, ...], float]], examples: list[int]) -> int:
        """Add the steps a clock drained (phase tuples in HOOK_PHASES order, and wall), with the
        examples of each step (missing ones count 0). Returns how many steps were added."""
        n = 0
        sums, on_step = self._sums, self._on_step
        for ph, wall in steps:
            sums[:] = map(add, sums, ph)
            self._wall += wall
            ex = examples[n] if n < len(examples) else 0
            self._examples += ex
            if on_step is not None:
                on_step(wall, ex)
            n += 1
        self._steps += n
        return n

    @property
    def interval_steps(self) -> int:
        return self._steps

    def take_interval(self) -> PhaseTotals:
        """The steps added since the last call, by phase name; they count in the epoch too."""
        out = self._interval()
        self._sums, self._wall, self._steps, self._examples = [0.0] * len(HOOK_PHASES), 0.0, 0, 0
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
