"""DDP communication hooks: gradients compressed to fp16 or bf16 for the all-reduce, or
PowerSGD (Vogels et al., 2019). DDP accepts one comm hook per model, so a dispatching hook is
registered once and this mitigation switches what it does: reverting goes back to the plain
all-reduce. Compression changes the gradients' numerics (semantics)."""

from __future__ import annotations

from typing import Any

import torch
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

from bottleneckd.torch.mitigations.base import Context, HookMitigation, declared_hook


class _Dispatch:
    def __init__(self, group: Any = None) -> None:
        self.group = group
        self.kind = "allreduce"
        self.state: Any = None
        self.calls: dict[str, int] = {}

    def hook(self, _state, bucket):  # noqa: ANN001, ANN201 - DDP rejects string annotations on its hooks
        self.calls[self.kind] = self.calls.get(self.kind, 0) + 1
        if self.kind == "fp16":
            return default_hooks.fp16_compress_hook(self.group, bucket)
        if self.kind == "bf16":
            return default_hooks.bf16_compress_hook(self.group, bucket)
        if self.kind == "powersgd":
            return powerSGD_hook.powerSGD_hook(self.state, bucket)
        return default_hooks.allreduce_hook(self.group, bucket)


def dispatcher(model: torch.nn.parallel.DistributedDataParallel) -> _Dispatch:
    d = getattr(model, "_bottleneckd_comm_dispatch", None)
    if d is None:
        d = _Dispatch()
        model.register_comm_hook(None, d.hook)
        model._bottleneckd_comm_dispatch = d  # type: ignore[attr-defined, assignment]
    return d


class DdpCommHook(HookMitigation):
    hook = declared_hook("ddp_comm_hook")
    facts = {"comm_hook": str}
    changes_semantics = True

    def __init__(self, kind: str = "fp16", rank: int = 1) -> None:
        if kind not in ("fp16", "bf16", "powersgd"):
            raise ValueError("kind must be fp16, bf16 or powersgd")
        self.kind = kind
        self.rank = rank
        self._d: _Dispatch | None = None
        self.note = f"gradient all-reduce in {kind}" if kind != "powersgd" else f"PowerSGD rank {rank}"

    def apply(self, ctx: Context) -> None:
        if not isinstance(ctx.model, torch.nn.parallel.DistributedDataParallel):
            raise ValueError("communication hooks need the DistributedDataParallel model passed to watch()")
        self._d = dispatcher(ctx.model)
        if self.kind == "powersgd":
            self._d.state = powerSGD_hook.PowerSGDState(
                process_group=None, matrix_approximation_rank=self.rank, start_powerSGD_iter=2
            )
        self._d.kind = self.kind
        ctx.facts.set("comm_hook", self.kind)

    def revert(self) -> None:
        if self._d is not None:
            self._d.kind = "allreduce"
