"""The epoch-end block: step-phase shares of the epoch, then the verdict and top recommendations,
printed as one block and returned as an object. An epoch with no timed step gets no verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bottleneckd.torch.phases import PhaseTotals


@dataclass(frozen=True)
class EpochReport:
    epoch: int
    steps: int
    phases: dict[str, float]
    report: dict[str, Any] | None
    text: str


def render_epoch(epoch: int, totals: PhaseTotals, report: dict[str, Any] | None, notes: list[str]) -> EpochReport:
    """``report`` is the sidecar's (None when none answered); it is left out when no step was timed."""
    if totals.steps == 0:
        text = f"[bottleneckd] epoch {epoch}: no training step was timed: no verdict (nothing to measure)"
        return EpochReport(epoch, 0, totals.phases, None, text)
    share = ", ".join(f"{k} {v:.0%}" for k, v in totals.shares()) or "no phase time"
    text = f"[bottleneckd] epoch {epoch}: {totals.steps} steps; step time: {share}"
    for n in notes:
        text += f"\n[bottleneckd] {n}"
    if report is not None:
        from bottleneckd.outputs.report import render_text

        text += "\n" + render_text(report, top=3)
    return EpochReport(epoch, totals.steps, totals.phases, report, text)
