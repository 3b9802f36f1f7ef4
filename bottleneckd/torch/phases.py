"""Phase accumulation: the steps a clock finished, summed by phase NAME for the next report and
for the current epoch.

Phase names are ``model.resources.HOOK_PHASES`` (the hook's part of ``PHASES``, the one list);
the clocks hand phase tuples in that order and this is the only place that turns them into names.
Compute time (for achieved FLOP/s) is the sum of the phases whose stage is compute or optimizer,
read from ``PHASES``, not from positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from bottleneckd.model.resources import HOOK_PHASES, PHASES

#: phases that run the model's arithmetic: the roofline's denominator
COMPUTE_PHASES: tuple[str, ...] = tuple(p for p in HOOK_PHASES if PHASES[p] in ("compute", "optimizer"))


@dataclass(frozen=True)
class PhaseTotals:
    """Seconds per phase summed over ``steps`` steps of ``wall_seconds`` in all."""

    steps: int
    wall_seconds: float
    phases: dict[str, float]

    @property
    def compute_seconds(self) -> float:
        return sum(self.phases.get(p, 0.0) for p in COMPUTE_PHASES)

    def shares(self) -> list[tuple[str, float]]:
        """(phase, share of the summed phase time), largest first, zero phases left out."""
        total = sum(self.phases.values())
        if total <= 0:
            return []
        return sorted(((k, v / total) for k, v in self.phases.items() if v > 0), key=lambda kv: -kv[1])


class _Sum:
    __slots__ = ("steps", "wall", "phases")

    def __init__(self) -> None:
        self.steps = 0
        self.wall = 0.0
        self.phases = dict.fromkeys(HOOK_PHASES, 0.0)

    def totals(self) -> PhaseTotals:
        return PhaseTotals(self.steps, self.wall, dict(self.phases))


class PhaseAccumulator:
    """Sums steps for two consumers: the interval report (``take_interval``) and the epoch
    (``take_epoch``). ``on_step(wall, examples)`` sees every step once, in order (trials use it)."""

    def __init__(self, on_step: Callable[[float, int], None] | None = None) -> None:
        self._interval = _Sum()
        self._epoch = _Sum()
        self._on_step = on_step

    def add(self, steps: Iterable[tuple[tuple[float, ...], float]], examples: list[int]) -> int:
        """Add the steps a clock drained (phase tuples in HOOK_PHASES order, and wall), with the
        examples of each step (missing ones count 0). Returns how many steps were added."""
        n = 0
        iv, ep = self._interval, self._epoch
        ivp, epp = iv.phases, ep.phases
        for ph, wall in steps:
            for name, sec in zip(HOOK_PHASES, ph):
                ivp[name] += sec
                epp[name] += sec
            iv.wall += wall
            ep.wall += wall
            ex = examples[n] if n < len(examples) else 0
            n += 1
            if self._on_step is not None:
                self._on_step(wall, ex)
        iv.steps += n
        ep.steps += n
        return n

    @property
    def interval_steps(self) -> int:
        return self._interval.steps

    @property
    def epoch_steps(self) -> int:
        return self._epoch.steps

    def take_interval(self) -> PhaseTotals:
        out, self._interval = self._interval.totals(), _Sum()
        return out

    def take_epoch(self) -> PhaseTotals:
        out, self._epoch = self._epoch.totals(), _Sum()
        return out
