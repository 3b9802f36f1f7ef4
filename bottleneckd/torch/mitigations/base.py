"""What a mitigation is: something the hook applies to a running training loop and can revert.

Each has a ``name`` (the knowledge base's ``hook`` id), ``changes_semantics`` (then applying it
says so, and the paper's section 5 quality check applies), ``apply(ctx)`` and ``revert()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import torch


@dataclass
class Context:
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer | None
    loader: Any  # the watcher's loader proxy, or None
    watcher: Any


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
