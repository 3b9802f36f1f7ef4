"""Mitigations on a watched loop: apply by hook id or object, verify with a trial, revert. The
engine runs them on the watcher's events; the trials decide; the transport records each applied
and reverted mitigation as an Event for the sidecar's trace and exporter."""

from __future__ import annotations

import time
from typing import Any, Protocol, TextIO

from bottleneckd.model.facts import FactBoard
from bottleneckd.model.protocol import Event
from bottleneckd.torch.mitigations.engine import MitigationEngine
from bottleneckd.torch.timing import CudaClock, HostClock
from bottleneckd.torch.transport import Transport
from bottleneckd.torch.trials import Trial, Trials


class Watched(Protocol):
    """What the control reads and sets of the watched loop (``torch/watch.py``'s ``Watcher``)."""

    model: Any
    optimizer: Any
    facts: FactBoard
    clock: HostClock | CudaClock
    cuda_sample_every: int
    steps: int
    epoch: int
    optimizer_calls: int
    print_to: TextIO
    transport: Transport

    def drain(self) -> None: ...


SEMANTICS = " This changes training semantics: check model quality (section 5 of the paper)."


class MitigationControl:
    def __init__(self, w: Watched, loader: Any) -> None:
        self._w = w
        self.engine = MitigationEngine(w.model, w.optimizer, loader, w.facts.__setitem__, w.facts.get)
        self.trials = Trials(self._decided, self._toggle)

    def apply(
        self,
        mitigation: Any,
        *,
        verify: bool,
        steps: int,
        warmup: int,
        min_gain: float,
        blocks: int = 3,
        alpha: float = 0.05,
        **kwargs: Any,
    ) -> Trial:
        """Apply a mitigation by knowledge-base hook id (e.g. ``"mixed_precision"``) or object.

        With ``verify=True`` blocks of ``steps`` steps with and without the mitigation take turns,
        ``blocks`` of each (``warmup`` steps skipped after each turn); it is kept only if the blocks
        with it are faster at ``alpha`` (one-sided t-test) and by more than ``min_gain``; the ratio
        and its confidence interval are printed and kept in ``w.trials``. The mitigation must
        apply and revert repeatably, and take effect at once (not at the next epoch)."""
        from bottleneckd.torch.mitigations import REGISTRY

        w = self._w
        if isinstance(mitigation, str):
            if mitigation not in REGISTRY:
                raise ValueError(f"unknown mitigation {mitigation!r}; one of: {', '.join(sorted(REGISTRY))}")
            mitigation = REGISTRY[mitigation](**kwargs)
        if w.model is None:
            raise ValueError("mitigations need the model: use watch(model, optimizer, loader)")
        w.drain()
        t = self.trials.start(
            mitigation.name,
            mitigation,
            verify=verify,
            steps=steps,
            warmup=warmup,
            min_gain=min_gain,
            blocks=blocks,
            alpha=alpha,
        )
        self.engine.apply(mitigation, w.steps, w.epoch, w.optimizer_calls)
        self.trials.begin(t)
        if verify and isinstance(w.clock, CudaClock):
            w.clock.every = 1  # time every step while the verdict is measured
        self._say(f"applied {mitigation.name}: {mitigation.note}.{SEMANTICS if t.changes_semantics else ''}")
        self._event("mitigation_applied", t, str(mitigation.note))
        return t

    def revert(self, name: str) -> None:
        for t in self.trials.active(name):
            self.engine.revert(t.mitigation)
            t.kept = False
            self._event("mitigation_reverted", t, "reverted by the user")

    def _toggle(self, t: Trial, on: bool) -> None:
        """A verification's turn: done by the engine at the next forward, never inside an optimizer hook."""
        w = self._w
        if on:
            self.engine.apply_later(t.mitigation, w.steps, w.epoch, w.optimizer_calls)
        else:
            self.engine.revert_later(t.mitigation)

    def _decided(self, t: Trial) -> None:
        w = self._w
        if isinstance(w.clock, CudaClock):
            w.clock.every = w.cuda_sample_every
        if not t.kept:
            self.engine.revert_later(t.mitigation)  # not inside the optimizer's hook loop: at the next forward
            self._event("mitigation_reverted", t, t.message)
        self._say(t.message)

    def _say(self, text: str) -> None:
        print(f"[bottleneckd] {text}", file=self._w.print_to, flush=True)

    def _event(self, kind: str, t: Trial, note: str) -> None:
        self._w.transport.send(Event(kind, t.name, time.time(), bool(t.changes_semantics), note[:256]))
