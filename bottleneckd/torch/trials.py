"""Verification that an applied mitigation really helped: a component with its own state.

With ``verify`` a Trial takes turns: a block of steps with the mitigation, a block without it,
``blocks`` times each (a drift in the machine's load then falls on both), and keeps it only when
the blocks with it are faster at the stated ``alpha``: the statistics of ``bottleneckd compare``
(``compare/blocks.py``: a one-sided Welch t-test, the throughput ratio with its confidence
interval). Each turn is asked of the watcher (``toggle``) and done by the mitigation engine at the
next forward, never inside an optimizer hook (removing a hook there would break the user's step);
the first ``warmup`` steps of each block are not counted (the step in flight at a turn, caches),
nor the more steps a mitigation says still run on work begun before the turn (``settle_steps``: a
DataLoader's batches in flight).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bottleneckd.advice.predict import Prediction
from bottleneckd.compare.blocks import BlockVerdict, decide

Steps = list[tuple[float, int]]  # (wall seconds, examples) per step


@dataclass(repr=False)
class Trial:
    """A mitigation applied by ``Watcher.apply``; with ``verify`` it is measured in alternating
    blocks of ``steps`` steps (``warmup`` skipped after each turn), ``blocks`` with and ``blocks``
    without, and kept only if throughput rose significantly (and by more than ``min_gain``).
    Printed (``repr``), it says in one line what was applied and what is known of its effect."""

    name: str
    mitigation: Any
    verify: bool
    steps: int
    warmup: int
    before: float | None  # examples (or steps) per second over the steps before
    blocks: int = 3
    alpha: float = 0.05
    min_gain: float = 0.0
    with_blocks: list[Steps] = field(default_factory=list)
    without_blocks: list[Steps] = field(default_factory=list)
    kept: bool | None = None  # None while measuring
    verdict: BlockVerdict | None = None
    applied: bool = True  # the state being measured now
    #: mean wall time of the steps before it was applied (None: none timed yet)
    before_step_seconds: float | None = None
    epoch: int = 0  # epochs completed when it was applied
    #: the speed-up the what-if model predicted from the window before it was applied (advice/predict.py)
    predicted: Prediction | None = None
    #: kept or reverted only when settled (``Trials.settle``), not when its blocks end: the ranks
    #: of a multi-rank job switch at the same step, as rank 0 measured it (torch/tune_ranks.py)
    held: bool = False
    _skip: int = 0
    _block: Steps = field(default_factory=list)

    @property
    def changes_semantics(self) -> bool:
        return bool(self.mitigation.changes_semantics)

    @property
    def ratio(self) -> float | None:
        """Throughput with the mitigation over throughput without it (None until decided)."""
        return None if self.verdict is None else self.verdict.ratio

    @property
    def ci(self) -> tuple[float, float] | None:
        c = None if self.verdict is None else self.verdict.comparison
        return None if c is None else c.ci

    def __repr__(self) -> str:
        note = str(getattr(self.mitigation, "note", "") or "")
        what = f"{self.name}: applied" + (f" ({note})" if note else "")
        before = (
            f"; step time before it {1000 * self.before_step_seconds:.1f} ms"
            if self.before_step_seconds is not None
            else ""
        )
        sem = "; changes training semantics: check quality" if self.changes_semantics else ""
        if self.kept is None and self.verify:
            return f"{what}{sem}; measuring: {self.blocks} blocks of {self.steps} steps with it and without it{before}"
        if self.verdict is not None:
            return f"{self.message}{sem}"
        state = "reverted" if self.kept is False else f"not verified (verify=True measures it){before}"
        return f"{what}{sem}; {state}"

    @property
    def message(self) -> str:
        pred = f"; {self.predicted.text()}" if self.predicted is not None else ""
        if self.verdict is None:
            return f"{self.name}: not verified: {'kept' if self.kept is not False else 'reverted'}{pred}"
        return f"{self.name}: {self.verdict.message}{pred}"


def settle_steps(t: Trial) -> int:
    """The steps after a turn the mitigation says still run on what was begun before it."""
    settle = getattr(t.mitigation, "settle_steps", None)
    return int(settle()) if callable(settle) else 0


def throughput(steps: Steps) -> float | None:
    """Examples per second over the steps (steps per second when batch sizes are unknown)."""
    wall = sum(w for w, _ in steps)
    if not steps or wall <= 0:
        return None
    ex = sum(e for _, e in steps)
    return (ex if ex else len(steps)) / wall


class Trials:
    """The step history and the trial being measured. ``record_step`` is fed every timed step;
    ``toggle(trial, on)`` asks for the mitigation to be applied again or reverted between blocks;
    ``on_decided(trial)`` is called once a trial is decided (kept or not)."""

    def __init__(
        self,
        on_decided: Callable[[Trial], None],
        toggle: Callable[[Trial, bool], None] | None = None,
        history: int = 256,
    ) -> None:
        self.history: deque[tuple[float, int]] = deque(maxlen=history)
        self.all: list[Trial] = []
        self.current: Trial | None = None
        self._on_decided = on_decided
        self._toggle = toggle or (lambda t, on: None)

    def record_steps(self, walls: list[float], examples: list[int]) -> None:
        """``record_step`` for a drained batch of steps: with no trial in progress only the history's
        last ``maxlen`` entries are made (the same deque as one step at a time)."""
        if self.current is None:
            keep = self.history.maxlen or len(walls)
            self.history.extend(zip(walls[-keep:], examples[-keep:], strict=True))
            return
        for wall, ex in zip(walls, examples, strict=True):
            self.record_step(wall, ex)

    def record_step(self, wall: float, examples: int) -> None:
        self.history.append((wall, examples))
        t = self.current
        if t is None:
            return
        if t._skip > 0:
            t._skip -= 1
            return
        t._block.append((wall, examples))
        if len(t._block) < t.steps:
            return
        (t.with_blocks if t.applied else t.without_blocks).append(t._block)
        t._block = []
        if len(t.with_blocks) >= t.blocks and len(t.without_blocks) >= t.blocks:
            if t.held:
                self.current = None  # measured out: without it since the last turn, until settled
            else:
                self._decide(t)
            return
        t.applied = not t.applied
        t._skip = max(1, t.warmup, settle_steps(t))  # at least the step in flight when the turn was asked for
        self._toggle(t, t.applied)

    def _decide(self, t: Trial) -> None:
        t.verdict = decide(t.without_blocks, t.with_blocks, t.alpha, t.min_gain)
        t.kept = t.verdict.keep
        if t.kept and not t.applied:
            self._toggle(t, True)  # the last block ran without it
        t.applied = bool(t.kept)
        self.current = None
        self._on_decided(t)

    def measure(self, t: Trial) -> BlockVerdict:
        """A held trial's verdict from its blocks, nothing switched (``settle`` does that)."""
        t.verdict = decide(t.without_blocks, t.with_blocks, t.alpha, t.min_gain)
        return t.verdict

    def settle(self, t: Trial, keep: bool) -> None:
        """A held trial kept (applied again where its last block ran without it) or reverted, at
        the next forward, whether or not its blocks are over here."""
        if self.current is t:
            self.current = None
        if keep != t.applied:
            self._toggle(t, keep)
        t.applied = t.kept = keep

    def start(
        self,
        name: str,
        mitigation: Any,
        *,
        verify: bool,
        steps: int,
        warmup: int,
        min_gain: float,
        blocks: int = 3,
        alpha: float = 0.05,
        epoch: int = 0,
    ) -> Trial:
        """A trial for a mitigation about to be applied, with the throughput of the steps before."""
        if verify and (steps < 1 or blocks < 2):
            raise ValueError(
                "verify needs steps >= 1 per block and blocks >= 2 (two blocks a side at least, for a spread)"
            )
        if verify and not 0 < alpha < 0.5:
            raise ValueError(f"alpha {alpha} must be in (0, 0.5)")
        recent = list(self.history)[-steps:]
        before = throughput(recent)
        return Trial(
            name,
            mitigation,
            verify,
            steps,
            warmup,
            before,
            blocks,
            alpha,
            min_gain,
            _skip=warmup,
            before_step_seconds=sum(w for w, _ in recent) / len(recent) if recent else None,
            epoch=epoch,
        )

    def begin(self, t: Trial) -> None:
        """Called once the mitigation is applied (its steps in flight are known then)."""
        t._skip = max(t._skip, settle_steps(t))
        self.all.append(t)
        if t.verify:
            self.current = t

    def active(self, name: str) -> list[Trial]:
        return [t for t in self.all if t.name == name and t.kept is not False]
