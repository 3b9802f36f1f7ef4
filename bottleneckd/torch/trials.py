"""Verification that an applied mitigation really helped: a component with its own state.

A Trial compares wall-clock throughput (examples per second) over the steps before a mitigation
with the steps after it, and asks for the mitigation's revert unless it was faster. The revert
itself is the engine's (``mitigations/engine.py``); it never happens inside an optimizer hook
(removing a hook there would break the user's step) but at the next forward.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Trial:
    """A mitigation applied by ``Watcher.apply``; with ``verify`` it is measured over ``steps``
    steps after ``warmup`` and kept only if throughput (examples per second of wall clock) rose."""

    name: str
    mitigation: Any
    verify: bool
    steps: int
    warmup: int
    before: float | None  # examples (or steps) per second over the steps before
    after_walls: list[float] = field(default_factory=list)
    after_examples: list[int] = field(default_factory=list)
    kept: bool | None = None  # None while measuring
    ratio: float | None = None
    min_gain: float = 0.0  # kept only if throughput rose by more than this fraction

    @property
    def changes_semantics(self) -> bool:
        return bool(self.mitigation.changes_semantics)

    @property
    def message(self) -> str:
        verdict = "kept" if self.kept else "reverted"
        if self.ratio:
            return f"{self.name}: throughput x{self.ratio:.3f} over {self.steps} steps (wall clock): {verdict}"
        return f"{self.name}: could not measure throughput: {verdict}"


def throughput(steps: list[tuple[float, int]]) -> float | None:
    """Examples per second over the steps (steps per second when batch sizes are unknown)."""
    wall = sum(w for w, _ in steps)
    if not steps or wall <= 0:
        return None
    ex = sum(e for _, e in steps)
    return (ex if ex else len(steps)) / wall


class Trials:
    """The step history and the trial being measured. ``record_step`` is fed every timed step;
    ``on_decided(trial)`` is called once a trial is decided (kept or not)."""

    def __init__(self, on_decided: Callable[[Trial], None], history: int = 256) -> None:
        self.history: deque[tuple[float, int]] = deque(maxlen=history)
        self.all: list[Trial] = []
        self.current: Trial | None = None
        self._on_decided = on_decided

    def record_step(self, wall: float, examples: int) -> None:
        self.history.append((wall, examples))
        t = self.current
        if t is None:
            return
        if t.warmup > 0:
            t.warmup -= 1
            return
        t.after_walls.append(wall)
        t.after_examples.append(examples)
        if len(t.after_walls) >= t.steps:
            after = throughput(list(zip(t.after_walls, t.after_examples)))
            t.ratio = after / t.before if after and t.before else None
            t.kept = t.ratio is not None and t.ratio > 1.0 + t.min_gain
            self.current = None
            self._on_decided(t)

    def start(self, name: str, mitigation: Any, *, verify: bool, steps: int, warmup: int, min_gain: float) -> Trial:
        """A trial for a mitigation about to be applied, with the throughput of the steps before."""
        before = throughput(list(self.history)[-steps:])
        if verify and (before is None or len(self.history) < 3):
            raise ValueError("verify needs at least 3 timed steps before the mitigation is applied")
        return Trial(name, mitigation, verify, steps, warmup, before, min_gain=min_gain)

    def begin(self, t: Trial) -> None:
        self.all.append(t)
        if t.verify:
            self.current = t

    def active(self, name: str) -> list[Trial]:
        return [t for t in self.all if t.name == name and t.kept is not False]
