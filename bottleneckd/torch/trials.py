"""Mitigations applied to a running loop, and verification that they really helped.

A Trial compares wall-clock throughput (examples per second) over the steps before a mitigation
with the steps after it, and reverts the mitigation unless it was faster. Reverting never happens
inside an optimizer hook (removing a hook there would break the user's step): it waits for the
next forward.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from bottleneckd.model.protocol import Event
from bottleneckd.torch.timing import CudaClock


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
    after_walls: list[float]
    after_examples: list[int]
    kept: bool | None = None  # None while measuring
    ratio: float | None = None
    min_gain: float = 0.0  # kept only if throughput rose by more than this fraction

    @property
    def changes_semantics(self) -> bool:
        return bool(self.mitigation.changes_semantics)


def _throughput(steps: list[tuple[float, int]]) -> float | None:
    """Examples per second over the steps (steps per second when batch sizes are unknown)."""
    wall = sum(w for w, _ in steps)
    if not steps or wall <= 0:
        return None
    ex = sum(e for _, e in steps)
    return (ex if ex else len(steps)) / wall


class TrialsMixin:
    """The watcher's apply/revert/verify behaviour (state lives on the Watcher)."""

    def _record_step(self, wall: float, ex: int) -> None:
        self._history.append((wall, ex))
        t = self._trial
        if t is None:
            return
        if t.warmup > 0:
            t.warmup -= 1
            return
        t.after_walls.append(wall)
        t.after_examples.append(ex)
        if len(t.after_walls) >= t.steps:
            after = _throughput(list(zip(t.after_walls, t.after_examples)))
            t.ratio = after / t.before if after and t.before else None
            t.kept = t.ratio is not None and t.ratio > 1.0 + t.min_gain
            self._trial = None
            if isinstance(self._clock, CudaClock):
                self._clock.every = self._cuda_every
            if not t.kept:
                # never inside the optimizer's own hook loop: removing a hook there would break the
                # step ("OrderedDict mutated during iteration"); done at the next forward instead
                self._pending_reverts.append(t.mitigation)
                self._sender.send(Event("mitigation_reverted", t.name, time.time(), t.changes_semantics,
                                        f"throughput x{t.ratio:.3f}" if t.ratio else "throughput not measurable"))
            verdict = "kept" if t.kept else "reverted"
            print(f"[bottleneckd] {t.name}: throughput x{t.ratio:.3f} over {t.steps} steps (wall clock): {verdict}" if t.ratio
                  else f"[bottleneckd] {t.name}: could not measure throughput: {verdict}", file=self.print_to, flush=True)

    def apply(self, mitigation: Any, *, verify: bool = False, steps: int = 20, warmup: int = 2, min_gain: float = 0.02,
              **kwargs: Any) -> Trial:
        """Apply a mitigation by knowledge-base hook id (e.g. ``"mixed_precision"``) or object.

        With ``verify=True`` the throughput of the ``steps`` steps before is compared with ``steps``
        steps after (``warmup`` skipped); the mitigation is reverted unless it was faster by more
        than ``min_gain`` (2% by default: a margin for step-time noise; 0 keeps any gain)."""
        from bottleneckd.torch.mitigations import REGISTRY, Context

        if isinstance(mitigation, str):
            if mitigation not in REGISTRY:
                raise ValueError(f"unknown mitigation {mitigation!r}; one of: {', '.join(sorted(REGISTRY))}")
            mitigation = REGISTRY[mitigation](**kwargs)
        self._drain()
        before = _throughput(list(self._history)[-steps:])
        if verify and (before is None or len(self._history) < 3):
            raise ValueError("verify needs at least 3 timed steps before the mitigation is applied")
        if self.model is None:
            raise ValueError("mitigations need the model: use watch(model, optimizer, loader)")
        mitigation.apply(Context(self.model, self.optimizer, self.dataloader, self))
        t = Trial(mitigation.name, mitigation, verify, steps, warmup, before, [], [], min_gain=min_gain)
        self.trials.append(t)
        if verify:
            self._trial = t
            if isinstance(self._clock, CudaClock):
                self._clock.every = 1  # time every step while the verdict is measured
        sem = " This changes training semantics: check model quality (section 5 of the paper)." if mitigation.changes_semantics else ""
        print(f"[bottleneckd] applied {mitigation.name}: {mitigation.note}.{sem}", file=self.print_to, flush=True)
        self._sender.send(Event("mitigation_applied", mitigation.name, time.time(), bool(mitigation.changes_semantics),
                                str(mitigation.note)[:256]))
        return t

    def revert(self, name: str) -> None:
        for t in self.trials:
            if t.name == name and t.kept is not False:
                t.mitigation.revert()
                t.kept = False
                self._sender.send(Event("mitigation_reverted", t.name, time.time(), t.changes_semantics, "reverted by the user"))

