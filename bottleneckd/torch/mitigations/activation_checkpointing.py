"""Activation checkpointing (Chen et al., 2016; Jain et al., 2020): chosen modules keep no
activations for backward and recompute them. Trades time for memory; semantics unchanged."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

from bottleneckd.torch.mitigations.base import Context, HookMitigation, declared_hook


def default_blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The children of the model's largest sequence of blocks (a Sequential or ModuleList)."""
    best: list[torch.nn.Module] = []
    for m in model.modules():
        if isinstance(m, (torch.nn.Sequential, torch.nn.ModuleList)) and len(m) > len(best):
            best = [c for c in m if any(p.requires_grad for p in c.parameters())]
    return best or [model]


class ActivationCheckpointing(HookMitigation):
    hook = declared_hook("activation_checkpointing")
    facts = {"activation_checkpointing": bool}
    changes_semantics = False

    def __init__(self, modules: list[torch.nn.Module] | None = None) -> None:
        self.modules = modules
        self._saved: list[tuple[torch.nn.Module, Any]] = []
        self.note = ""

    def apply(self, ctx: Context) -> None:
        mods = self.modules or default_blocks(ctx.model)
        for m in mods:
            original = m.forward

            def forward(*args: Any, _f: Any = original, **kw: Any) -> Any:
                if torch.is_grad_enabled():
                    return checkpoint(_f, *args, use_reentrant=False, **kw)
                return _f(*args, **kw)

            m.forward = forward  # type: ignore[method-assign]
            self._saved.append((m, original))
        self.note = f"{len(mods)} modules recompute their activations in backward"
        ctx.facts.set("activation_checkpointing", True)

    def revert(self) -> None:
        for m, _original in self._saved:
            if "forward" in m.__dict__:
                del m.forward
        self._saved = []
