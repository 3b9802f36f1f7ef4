"""The epoch-end block: the step time in ms with its change since the last epoch and since each
mitigation in effect was applied, the step-phase shares, the throughput (samples/s, tokens/s, MFU:
model/throughput.py), then the verdict and top recommendations,
printed as one block and returned as an object. An epoch with no timed step gets no verdict.

Shares alone mislead: data wait falling from 67% to 43% reads as a success while the step got
slower (issue 20: 26.4 ms before a mitigation, 26.9-31.8 ms after). The step time is the measure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bottleneckd.model.throughput import Throughput
from bottleneckd.torch.phases import PhaseTotals


@dataclass(frozen=True)
class EpochReport:
    epoch: int
    steps: int
    phases: dict[str, float]
    report: dict[str, Any] | None
    text: str
    #: mean wall time of the epoch's steps, ms (None when no step was timed)
    step_ms: float | None = None
    #: samples/s, tokens/s and MFU of the epoch's steps (None when no step was timed)
    throughput: Throughput | None = None


@dataclass(frozen=True)
class InEffect:
    """A mitigation applied through the hook and not reverted, with the step time before it."""

    name: str
    epoch: int  # the epoch in progress when it was applied (epochs completed)
    before_ms: float | None  # mean step time of the steps before it (None: none timed)


def change(now: float, before: float | None) -> str:
    """'+1.9%' (slower) or '-12.0%' (faster), or '' without a figure before."""
    if before is None or before <= 0:
        return ""
    return f"{now / before - 1:+.1%}"


def in_effect_line(m: InEffect, now_ms: float) -> str:
    if m.before_ms is None:
        return f"in effect: {m.name} (applied in epoch {m.epoch}; no step was timed before it)"
    d = now_ms / m.before_ms - 1
    verdict = "faster" if d < 0 else "not faster"
    return (
        f"in effect: {m.name} (applied in epoch {m.epoch}): step {m.before_ms:.1f} ms before it, "
        f"{now_ms:.1f} ms now ({change(now_ms, m.before_ms)}: {verdict})"
    )


def render_epoch(
    epoch: int,
    totals: PhaseTotals,
    report: dict[str, Any] | None,
    notes: list[str],
    previous: EpochReport | None = None,
    in_effect: tuple[InEffect, ...] = (),
    throughput: Throughput | None = None,
) -> EpochReport:
    """``report`` is the sidecar's (None when none answered); it is left out when no step was timed.
    ``previous``: the last epoch's block (its step time is compared); ``in_effect``: the
    mitigations applied and not reverted."""
    if totals.steps == 0:
        text = f"[bottleneckd] epoch {epoch}: no training step was timed: no verdict (nothing to measure)"
        return EpochReport(epoch, 0, totals.phases, None, text)
    step_ms = 1000.0 * totals.wall_seconds / totals.steps
    since = change(step_ms, previous.step_ms if previous is not None else None)
    share = ", ".join(f"{k} {v:.0%}" for k, v in totals.shares()) or "no phase time"
    text = (
        f"[bottleneckd] epoch {epoch}: {totals.steps} steps, {step_ms:.1f} ms per step"
        + (f" ({since} since epoch {previous.epoch})" if since and previous is not None else "")
        + f"; step time: {share}"
    )
    if throughput is not None:
        text += f"\n[bottleneckd] {throughput.text()}"
    for m in in_effect:
        text += f"\n[bottleneckd] {in_effect_line(m, step_ms)}"
    for n in notes:
        text += f"\n[bottleneckd] {n}"
    if report is not None:
        from bottleneckd.outputs.report import render_text

        # the block's own throughput line is the epoch's; the report's is the sidecar's window
        text += "\n" + render_text({k: v for k, v in report.items() if k != "throughput"}, top=3)
    return EpochReport(epoch, totals.steps, totals.phases, report, text, step_ms, throughput)
