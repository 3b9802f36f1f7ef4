"""Mitigations on a watched loop: apply by hook id or object, verify with a trial, revert. The
engine runs them on the watcher's events; the trials decide; the transport records each applied
and reverted mitigation as an Event for the sidecar's trace and exporter."""

from __future__ import annotations

import time
from typing import Any, Protocol, TextIO

from bottleneckd.advice.knowledge import Mitigation
from bottleneckd.advice.predict import Prediction, predict_hook, unknown
from bottleneckd.advice.recommend import Recommendation
from bottleneckd.diagnosis.step_inputs import StepInputs
from bottleneckd.model.facts import FactBoard
from bottleneckd.model.hooks import HOOKS, Hook
from bottleneckd.model.protocol import Event
from bottleneckd.torch.epoch import InEffect
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

    def unplain(self) -> None: ...


SEMANTICS = " This changes training semantics: check model quality (section 5 of the paper)."


def resolve(mitigation: Any, kwargs: dict[str, Any]) -> Any:
    """The object to apply: a hook's class made with ``kwargs`` for a hook id, a ``Hook``, a
    knowledge-base ``Mitigation`` or a ``Recommendation`` (whose hook it is); else the object."""
    from bottleneckd.torch.mitigations import REGISTRY

    entry = mitigation.mitigation if isinstance(mitigation, Recommendation) else mitigation
    if isinstance(entry, Mitigation):
        if entry.hook is None:
            raise ValueError(f"{entry.id}: bottleneckd.torch cannot apply it ({entry.name}): change the code")
        mitigation = entry.hook
    if isinstance(mitigation, str):
        if mitigation not in HOOKS:
            raise ValueError(f"unknown mitigation {mitigation!r}; one of: {', '.join(sorted(HOOKS))}")
        mitigation = HOOKS[mitigation]
    if isinstance(mitigation, Hook):
        return REGISTRY[mitigation](**kwargs)
    if kwargs:
        raise TypeError(f"options {sorted(kwargs)} are for a hook id; this mitigation is already made")
    return mitigation


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
        """Apply a mitigation: a declared hook (``"mixed_precision"``, a ``Hook``, or a knowledge-base
        entry or recommendation whose hook it is: kwargs go to its class) or an object.

        With ``verify=True`` blocks of ``steps`` steps with and without the mitigation take turns,
        ``blocks`` of each (``warmup`` steps skipped after each turn); it is kept only if the blocks
        with it are faster at ``alpha`` (one-sided t-test) and by more than ``min_gain``; the ratio
        and its confidence interval are printed and kept in ``w.trials``. The mitigation must
        apply and revert repeatably, and take effect at once (not at the next epoch)."""
        w = self._w
        mitigation = resolve(mitigation, kwargs)
        if w.model is None:
            raise ValueError("mitigations need the model: use watch(model, optimizer, loader)")
        w.unplain()  # a rest of untimed steps ends first: our forward wrapper is on before anything wraps it
        inputs = self._measured() if verify else None  # the window before it is applied
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
            epoch=w.epoch,
        )
        self.engine.apply(mitigation, w.steps, w.epoch, w.optimizer_calls)
        if verify:
            t.predicted = self._predict(mitigation, inputs)
        self.trials.begin(t)
        if verify and isinstance(w.clock, CudaClock):
            w.clock.every = 1  # time every step while the verdict is measured
        self._say(f"applied {mitigation.name}: {mitigation.note}.{SEMANTICS if t.changes_semantics else ''}")
        self._event("mitigation_applied", t, str(mitigation.note))
        return t

    def _measured(self) -> StepInputs | None:
        """The what-if inputs of the sidecar's latest window (None when it has none)."""
        try:
            doc = self._w.transport.report()
        except Exception:  # noqa: BLE001 - no prediction, never a failed apply
            return None
        return StepInputs.from_json((doc or {}).get("whatif_inputs"))

    def _predict(self, mitigation: Any, inputs: StepInputs | None) -> Prediction:
        """The model's prediction for this mitigation with its own parameters, shown beside the
        measured gain (``Trial.message``)."""
        try:
            return predict_hook(mitigation.name, hook_params(mitigation), inputs)
        except Exception as e:  # noqa: BLE001 - a prediction that fails is unknown, never a failed apply
            return unknown("none", f"{type(e).__name__}: {e}")

    def in_effect(self) -> tuple[InEffect, ...]:
        """The mitigations applied and not reverted, each with the step time before it; not one
        being measured (``verify``: on and off in turns, its epoch's step time is both sides': the
        demo's 1 -> 2 workers trial read "in effect ... -23.7%: faster" two blocks in, and was
        reverted later as not significantly faster)."""
        return tuple(
            InEffect(
                t.name,
                t.epoch,
                None if t.before_step_seconds is None else 1000.0 * t.before_step_seconds,
            )
            for t in self.trials.all
            if t.kept is not False and not _measuring(t) and t.mitigation in self.engine.active
        )

    def measuring(self) -> list[str]:
        """The epoch block's line for each mitigation being measured (``verify=True``)."""
        return [
            f"measuring: {t.name}: block {len(t.with_blocks) + len(t.without_blocks) + 1} of {2 * t.blocks}, "
            "with it and without it in turns; in effect only once kept"
            for t in self.trials.all
            if _measuring(t)
        ]

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

    def settle(self, t: Trial, keep: bool) -> None:
        """A held trial (``Trial.held``) kept or reverted; its verdict said where measured here."""
        self.trials.settle(t, keep)  # switched by the trial's toggle, at the next forward
        measured = t.verdict is not None
        self._ended(t, t.message if measured else "reverted as rank 0 measured", say=measured)

    def _decided(self, t: Trial) -> None:
        if not t.kept:
            self.engine.revert_later(t.mitigation)  # not inside the optimizer's hook loop: at the next forward
        self._ended(t, t.message, say=True)

    def _ended(self, t: Trial, note: str, say: bool) -> None:
        """A trial kept or reverted: every step timed no more (CUDA), the revert recorded, its verdict said."""
        w = self._w
        if isinstance(w.clock, CudaClock):
            w.clock.every = w.cuda_sample_every
        if not t.kept:
            self._event("mitigation_reverted", t, note)
        if say:
            self._say(t.message)

    def _say(self, text: str) -> None:
        print(f"[bottleneckd] {text}", file=self._w.print_to, flush=True)

    def _event(self, kind: str, t: Trial, note: str) -> None:
        self._w.transport.send(Event(kind, t.name, time.time(), bool(t.changes_semantics), note[:256]))


def hook_params(m: Any) -> dict[str, Any]:
    """A hook mitigation's parameters as the what-if models name them (after it was applied: the
    DataLoader's new worker count is the one it set)."""
    out: dict[str, Any] = {k: getattr(m, k) for k in ("factor", "k", "kind") if hasattr(m, k)}
    if hasattr(m, "dtype"):
        out["dtype"] = str(m.dtype).rsplit(".", 1)[-1]
    loader = getattr(m, "_loader", None)
    wanted = getattr(m, "wanted", None)
    if isinstance(wanted, dict) and wanted.get("num_workers") is not None:
        out["num_workers"] = wanted["num_workers"]
    elif loader is not None and hasattr(loader, "num_workers"):
        out["num_workers"] = loader.num_workers
    return out


def _measuring(t: Trial) -> bool:
    return t.verify and t.kept is None
