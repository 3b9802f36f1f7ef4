"""The roofline count as a component of the watcher: one chosen step runs under the counting
dispatch modes of ``roofline.StepCounter``; its FLOPs and operand bytes become facts, and with the
measured compute time they give achieved FLOP/s and bytes/s.

Fail-open includes undoing what was half-installed: if entering the modes, leaving them or the
count itself fails, every mode that was entered is left again (a mode left on would slow every
later step several times), counting is switched off for good, and timing goes on.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from bottleneckd.torch.roofline import StepCounter, StepCounts

log = logging.getLogger("bottleneckd.torch")


def weight_shapes(model: Any) -> frozenset[tuple[int, ...]]:
    """The shapes of ``model``'s parameters (empty when they cannot be read)."""
    try:
        return frozenset(tuple(p.shape) for p in model.parameters())
    except Exception:  # noqa: BLE001 - the share goes unknown, the count goes on
        return frozenset()


class RooflineCounting:
    def __init__(self, at_step: int | None, weight_shapes: frozenset[tuple[int, ...]] = frozenset()) -> None:
        self.at_step = at_step  # the index of the step to count (None: never)
        self.weight_shapes = weight_shapes  # the model's parameters' shapes (the weights' share of the bytes)
        self._counter = StepCounter()
        self.flops: float | None = None
        self.operand_bytes: float | None = None
        self.failed = ""
        self.unknown = ""  # why the counted step's FLOPs are not its FLOPs (operators without a formula)
        self.active = False  # the modes are on (a plain attribute: read once per step)
        self._eager: Any = None  # torch.compiler stance to restore after the count
        self._uncompiled: tuple[Any, Any] | None = None  # (model, its compiled __call__) set aside for the count

    def maybe_start(self, step_index: int) -> None:
        """At a forward start: count this step if it is the chosen one."""
        if self.at_step is None or step_index != self.at_step or self.active or self.failed:
            return
        try:
            self.active = True
            if self._eager is None:
                self._eager = _force_eager()
            self._counter.start(self.weight_shapes)
        except Exception as e:  # noqa: BLE001
            self._fail(f"could not start: {type(e).__name__}: {e}")

    def prepare(self, next_step: int, model: Any) -> None:
        """At a step's end: the next is the counted one. Compiled code runs eagerly for it
        (restored after the count). A model compiled in place (``model.compile()``) runs its whole
        ``__call__`` in a compiled frame, which puts back the dispatch modes it found on leaving:
        modes entered in our forward wrapper inside it would miss the backward. For the counted
        step that model runs uncompiled (its ``_compiled_call_impl`` set aside, then restored)."""
        if self.at_step != next_step or self._eager is not None or self.failed:
            return
        try:
            self._eager = _force_eager()
            impl = getattr(model, "__dict__", {}).get("_compiled_call_impl")
            if impl is not None:
                self._uncompiled = (model, impl)
                model._compiled_call_impl = None
        except Exception:  # noqa: BLE001 - counted as it runs: see notes()
            pass

    def finish(self) -> dict[str, Any]:
        """At the counted step's end: leave the modes; the facts of the count (empty if it failed)."""
        if not self.active:
            return {}
        self.active = False
        try:
            counts = self._counter.stop()
        except Exception as e:  # noqa: BLE001
            self._fail(f"could not finish: {type(e).__name__}: {e}")
            return {}
        finally:
            self._restore_stance()
        if counts is None:
            return {}
        self.operand_bytes = float(counts.operand_bytes)
        unknown = counts.flops_unknown
        if unknown:  # unknown is not zero: no FLOPs, intensity or achieved FLOP/s from a partial count
            self.flops = None
            self.unknown = unknown
            return {"operand_bytes_per_step": self.operand_bytes, "flops_unknown": unknown}
        self.flops = float(counts.flops)
        return {
            "flops_per_step": self.flops,
            "operand_bytes_per_step": self.operand_bytes,
            "arithmetic_intensity": counts.intensity,
            "weight_byte_share": counts.weight_byte_share if self.weight_shapes else None,  # unknown, not 0
            **precision_facts(counts),
        }

    def why_no_flops(self) -> str:
        """Why there is no FLOP count ('' when there is one): for MFU's reason."""
        if self.flops is not None:
            return ""
        if self.failed:
            return f"the FLOP count failed ({self.failed})"
        if self.unknown:
            return f"the step's FLOPs are unknown: {self.unknown}"
        if self.at_step is None:
            return "FLOP counting is off (roofline_step=None)"
        return f"the FLOPs are counted on step {self.at_step}, not reached yet"

    def achieved(self, compute_seconds_per_step: float) -> dict[str, Any]:
        """Achieved FLOP/s and operand bytes/s over the measured compute time of a step."""
        if self.flops is None or self.operand_bytes is None or compute_seconds_per_step <= 0:
            return {}
        return {
            "achieved_flops": self.flops / compute_seconds_per_step,
            "achieved_bytes_per_second": self.operand_bytes / compute_seconds_per_step,
        }

    def notes(self, compiled: bool) -> list[str]:
        """The epoch block's line on what a compiled model's count is."""
        if not compiled or self.operand_bytes is None:
            return []
        return [
            "torch.compile: the roofline step was counted with the model run eagerly: its FLOPs are the "
            "model's, its bytes the unfused operators' (an upper bound on the compiled kernels' traffic)"
        ]

    def _restore_stance(self) -> None:
        eager, self._eager = self._eager, None
        uncompiled, self._uncompiled = self._uncompiled, None
        if uncompiled is not None:
            model, impl = uncompiled
            if model.__dict__.get("_compiled_call_impl") is None:
                model._compiled_call_impl = impl
        if eager is not None:
            try:
                eager.__exit__(None, None, None)
            except Exception:  # noqa: BLE001
                pass

    def abort(self) -> None:
        """Leave any mode still entered (a step that never ended, close, disable)."""
        self.active = False
        self._restore_stance()
        c = self._counter
        for mode in (getattr(c, "_bytes", None), getattr(c, "_flops", None)):  # entered flops first, bytes second
            if mode is None:
                continue
            try:
                mode.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - not entered, or already left
                pass
        c._flops = c._bytes = None

    def _fail(self, why: str) -> None:
        self.abort()
        self.failed = why
        log.warning("bottleneckd: roofline count off (%s); step timing goes on", why)


def _force_eager() -> Any:
    """Compiled code runs eagerly for the counted step (``torch.compiler.set_stance("force_eager")``),
    so that the dispatch modes see every operator: a compiled forward's kernels and AOT backward are
    otherwise invisible to them (a compiled MLP counted its forward's FLOPs only). Only where dynamo
    is already loaded (a job that compiles); returns what restores the previous stance."""
    if "torch._dynamo" not in sys.modules:
        return None
    import torch

    set_stance = getattr(torch.compiler, "set_stance", None)  # torch >= 2.6
    return set_stance("force_eager") if set_stance is not None else None


def precision_facts(counts: StepCounts) -> dict[str, Any]:
    """The arithmetic the counted step ran, measured (whatever the parameters' dtype: autocast,
    Lightning's and the HF Trainer's mixed precision, FSDP's MixedPrecision, FP8 matmuls):
    the dtype of most FLOPs outside FP8 matmuls, the FP8 and the convolutions' shares."""
    shares = counts.shares()
    if not shares:
        return {"compute_dtype": None, "fp8_flop_share": None, "conv_flop_share": None}
    kinds = {k: v for k, v in shares.items() if k in ("bfloat16", "float16", "float32", "float64")}
    main = max(kinds.items(), key=lambda kv: kv[1])[0] if kinds else ("float8" if shares.get("float8") else None)
    return {
        "compute_dtype": main,
        "fp8_flop_share": shares.get("float8", 0.0),
        "conv_flop_share": shares.get("conv", 0.0),
    }
