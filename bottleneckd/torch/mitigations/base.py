"""What a mitigation is: something the hook applies to a running training loop and can revert,
driven by the watcher's events (as Composer's algorithms run on the engine's events).

Each has a ``name`` (the knowledge base's ``hook`` id), ``changes_semantics`` (then applying it
says so, and the paper's section 5 quality check applies), ``note``, ``apply(ctx)``, ``revert()``
and, optionally, ``events`` (the :class:`Event` s it wants) with ``on_event(event, ctx)``.

A mitigation never counts steps itself (``ctx.step``, ``ctx.optimizer_calls`` are the watcher's
counts), never patches anything process-wide, and never writes facts: it records fact changes on
``ctx.facts``; the engine applies them and restores the previous values when it is reverted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

import torch


class Event(Enum):
    BEFORE_OPTIMIZER_STEP = "before_optimizer_step"  # inside optimizer.step(), before it updates anything
    STEP_END = "step_end"  # an optimizer step (not a micro-step) completed
    EPOCH_END = "epoch_end"


@dataclass
class FactChanges:
    """Facts a mitigation sets (a value) or unsets (None); applied by the engine."""

    changes: dict[str, Any] = field(default_factory=dict)

    def set(self, name: str, value: Any) -> None:
        self.changes[name] = value

    def unset(self, name: str) -> None:
        self.changes[name] = None


@dataclass
class Context:
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer | None
    loader: Any  # bottleneckd.torch.loader.InstrumentedLoader, or None
    step: int = 0  # optimizer steps completed (micro-steps not counted)
    epoch: int = 0  # epochs completed
    optimizer_calls: int = 0  # optimizer.step() calls, this one included at BEFORE_OPTIMIZER_STEP
    facts: FactChanges = field(default_factory=FactChanges)
    micro_step: bool = False  # set at BEFORE_OPTIMIZER_STEP: this call only accumulates (not a step)


class Mitigation(Protocol):
    name: str
    changes_semantics: bool
    note: str

    def apply(self, ctx: Context) -> None: ...

    def revert(self) -> None: ...


class Handles:
    """Removable things collected by apply(), undone by revert() in reverse order."""

    def __init__(self) -> None:
        self._undo: list[Any] = []

    def add(self, undo: Any) -> None:
        self._undo.append(undo)

    def undo(self) -> None:
        while self._undo:
            u = self._undo.pop()
            u.remove() if hasattr(u, "remove") else u()
