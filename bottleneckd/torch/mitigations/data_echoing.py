"""Data echoing (Choi et al., 2019): each batch the loader gives is used ``factor`` times, so a
slow input pipeline feeds more steps. Changes training semantics (repeated data)."""

from __future__ import annotations

from bottleneckd.torch.mitigations.base import Context, HookMitigation, declared_hook


class DataEchoing(HookMitigation):
    hook = declared_hook("data_echoing")
    facts = {"data_echoing": int}
    changes_semantics = True

    def __init__(self, factor: int = 2) -> None:
        if factor < 2:
            raise ValueError("an echo factor below 2 does nothing")
        self.factor = factor
        self.note = f"each batch used {factor} times"
        self._loader = None

    def apply(self, ctx: Context) -> None:
        if ctx.loader is None:
            raise ValueError("data echoing needs the loader: watch(model, optimizer, loader)")
        self._loader = ctx.loader
        ctx.loader.echo = self.factor
        ctx.facts.set("data_echoing", self.factor)

    def revert(self) -> None:
        if self._loader is not None:
            self._loader.echo = 1
