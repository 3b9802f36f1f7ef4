"""The roofline count as a component of the watcher: one chosen step runs under the counting
dispatch modes of ``roofline.StepCounter``; its FLOPs and operand bytes become facts, and with the
measured compute time they give achieved FLOP/s and bytes/s.

Fail-open includes undoing what was half-installed: if entering the modes, leaving them or the
count itself fails, every mode that was entered is left again (a mode left on would slow every
later step several times), counting is switched off for good, and timing goes on.
"""

from __future__ import annotations

import logging
from typing import Any

from bottleneckd.torch.roofline import StepCounter

log = logging.getLogger("bottleneckd.torch")


class RooflineCounting:
    def __init__(self, at_step: int | None) -> None:
        self.at_step = at_step  # the index of the step to count (None: never)
        self._counter = StepCounter()
        self.flops: float | None = None
        self.operand_bytes: float | None = None
        self.failed = ""
        self.unknown = ""  # why the counted step's FLOPs are not its FLOPs (operators without a formula)
        self.active = False  # the modes are on (a plain attribute: read once per step)

    def maybe_start(self, step_index: int) -> None:
        """At a forward start: count this step if it is the chosen one."""
        if self.at_step is None or step_index != self.at_step or self.active or self.failed:
            return
        try:
            self.active = True
            self._counter.start()
        except Exception as e:  # noqa: BLE001
            self._fail(f"could not start: {type(e).__name__}: {e}")

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

    def abort(self) -> None:
        """Leave any mode still entered (a step that never ended, close, disable)."""
        self.active = False
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
