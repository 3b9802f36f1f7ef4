"""channels_last memory layout for convolutional models: weights converted once, 4-D inputs
converted in a forward pre-hook. Does not change training semantics."""

from __future__ import annotations

from typing import Any

import torch

from bottleneckd.torch.mitigations.base import Context, Handles, HookMitigation, declared_hook


class ChannelsLast(HookMitigation):
    hook = declared_hook("channels_last")
    facts = {"channels_last": bool}
    changes_semantics = False
    note = "weights and 4-D inputs in channels_last layout"

    def __init__(self) -> None:
        self._h = Handles()
        self._model: torch.nn.Module | None = None

    def apply(self, ctx: Context) -> None:
        self._model = ctx.model
        ctx.model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]  # documented; not in the stubs

        def convert(_m: Any, args: tuple) -> tuple:
            return tuple(
                a.contiguous(memory_format=torch.channels_last) if isinstance(a, torch.Tensor) and a.dim() == 4 else a
                for a in args
            )

        self._h.add(ctx.model.register_forward_pre_hook(convert))
        ctx.facts.set("channels_last", True)

    def revert(self) -> None:
        self._h.undo()
        if self._model is not None:
            self._model.to(memory_format=torch.contiguous_format)  # type: ignore[call-overload]
