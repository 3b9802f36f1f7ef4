"""The engine that runs mitigations on the watcher's events, applies the fact changes they
record, and undoes both on revert (a reverted mitigation's facts are back to what they were)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bottleneckd.torch.mitigations.base import Context, FactChanges, HookMitigation, LoopEvent


def _nothing() -> None:
    return None


class MitigationEngine:
    def __init__(
        self,
        model: Any,
        optimizer: Any,
        loader: Any,
        set_fact: Callable[[str, Any], None],
        get_fact: Callable[[str], Any],
    ) -> None:
        self.model, self.optimizer, self.loader = model, optimizer, loader
        self._set, self._get = set_fact, get_fact
        self.active: list[Any] = []
        self._saved: dict[int, dict[str, Any]] = {}  # per mitigation: the facts it changed, as they were
        self._pending: list[Any] = []
        self._pending_apply: list[tuple[Any, int, int, int]] = []
        self.pending = False  # reverts or re-applies waiting for the next safe point (read at every forward)
        self.listening: dict[LoopEvent, list[Any]] = {e: [] for e in LoopEvent}
        #: called whenever ``pending`` or ``listening`` change (the watcher's hot path falls back to
        #: its full step, hot_path.py)
        self.changed: Callable[[], None] = _nothing

    def _ctx(self, step: int = 0, epoch: int = 0, calls: int = 0) -> Context:
        return Context(self.model, self.optimizer, self.loader, step, epoch, calls)

    @staticmethod
    def _changes(m: Any) -> FactChanges:
        """An empty record of m's fact changes: a hook mitigation may change only the facts it declares."""
        if isinstance(m, HookMitigation):
            return FactChanges(allowed=m.declared_facts, owner=type(m).__name__)
        return FactChanges()

    def _commit(self, m: Any, changes: FactChanges) -> None:
        saved = self._saved.setdefault(id(m), {})
        for name, value in changes.changes.items():
            if name not in saved:
                saved[name] = self._get(name)
            self._set(name, value)

    def apply(self, m: Any, step: int, epoch: int, calls: int) -> None:
        ctx = self._ctx(step, epoch, calls)
        ctx.facts = self._changes(m)
        try:
            m.apply(ctx)
        except BaseException:
            try:
                m.revert()  # what it did before it failed; its facts were never committed
            except Exception:  # noqa: BLE001, S110 - the apply's error is the one to report
                pass
            raise
        self._commit(m, ctx.facts)
        self.active.append(m)
        for e in getattr(m, "events", ()):
            self.listening[e].append(m)
        self.changed()

    def revert(self, m: Any) -> None:
        if m not in self.active:
            return
        self.active.remove(m)
        for subs in self.listening.values():
            if m in subs:
                subs.remove(m)
        self.changed()
        try:
            m.revert()
        finally:
            for name, value in self._saved.pop(id(m), {}).items():
                self._set(name, value)

    def revert_later(self, m: Any) -> None:
        """Reverted at the next safe point (``revert_pending``), never inside an optimizer hook."""
        self._pending_apply = [p for p in self._pending_apply if p[0] is not m]
        self._pending.append(m)
        self.pending = True
        self.changed()

    def apply_later(self, m: Any, step: int, epoch: int, calls: int) -> None:
        """Applied again at the next safe point (a verification's turn back to the mitigation)."""
        self._pending = [p for p in self._pending if p is not m]
        self._pending_apply.append((m, step, epoch, calls))
        self.pending = True
        self.changed()

    def revert_pending(self) -> None:
        """The reverts and re-applies asked for since the last safe point, in that order."""
        try:
            while self._pending:
                self.revert(self._pending.pop(0))
            while self._pending_apply:
                m, step, epoch, calls = self._pending_apply.pop(0)
                if m not in self.active:
                    self.apply(m, step, epoch, calls)
        finally:
            self.pending = bool(self._pending or self._pending_apply)

    def run(self, event: LoopEvent, step: int, epoch: int, calls: int = 0) -> Context:
        ctx = self._ctx(step, epoch, calls)
        for m in list(self.listening[event]):
            ctx.facts = self._changes(m)
            m.on_event(event, ctx)
            if ctx.facts.changes:
                self._commit(m, ctx.facts)
        ctx.facts = FactChanges()
        return ctx

    def names(self) -> list[str]:
        return [m.name for m in self.active]
