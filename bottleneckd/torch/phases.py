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
        out = PhaseTotals(self._steps, self._wall, dict(zip(HOOK_PHASES, self._sums)), self._examples)
        self._sums, self._wall, self._steps, self._examples = [0.0] * len(HOOK_PHASES), 0.0, 0, 0
        e = self._epoch
        self._epoch = PhaseTotals(
            e.steps + out.steps, e.wall_seconds + out.wall_seconds, {k: v + out.phases[k] for k, v in e.phases.items()}
        )
        return out

    def take_epoch(self) -> PhaseTotals:
        """Every interval taken since the last epoch end (take the interval first)."""
        out, self._epoch = self._epoch, PhaseTotals(0, 0.0, dict.fromkeys(HOOK_PHASES, 0.0))
        return out
