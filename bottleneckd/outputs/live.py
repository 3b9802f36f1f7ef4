"""The live view: one terminal screen redrawn each interval, or plain lines when not a terminal."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.diagnosis.pipeline import Snapshot
from bottleneckd.model.resources import PHASES, RESOURCES, UNDETERMINED
from bottleneckd.model.units import fmt_seconds, fmt_value

CLEAR = "\x1b[H\x1b[2J"


def bar(x: float, width: int) -> str:
    n = max(0, min(width, round(x * width)))
    return "#" * n + "-" * (width - n)


def unknown_reasons(peaks: PeakTable | None) -> dict[str, str]:
    """Why each resource's peak is unknown, for resources no sampler reports."""
    out: dict[str, str] = {}
    for p in peaks.peaks if peaks else ():
        if p.value is None:
            out.setdefault(p.resource, p.source)
    return out


def live_line(snap: Snapshot) -> str:
    """One line: the verdict, the step time, the four busiest resources."""
    v = snap.verdict
    utils = sorted(((r.resource, r.device, r.value) for r in snap.sample.readings if r.metric == "utilization" and r.value is not None),
                   key=lambda x: -x[2])[:4]
    u = ", ".join(f"{r}[{d}] {x:.0%}" for r, d, x in utils)
    ph = snap.stats.phases
    steps = f"; {ph.steps} steps, {fmt_value(ph.wall_seconds / ph.steps, 's')}/step" if ph and ph.steps else ""
    what = f"{v.resource}/{v.stage}" if v.resource != UNDETERMINED else f"{UNDETERMINED} ({v.reason.split(':')[0]})"
    return f"[bottleneckd] {what} (confidence {v.confidence:.0%}){steps}; {u}"


def render_screen(snap: Snapshot, width: int = 100, reasons: dict[str, str] | None = None) -> str:
    w = snap.stats
    lines = ["bottleneckd — live (Ctrl-C stops)", ""]
    bw = max(10, min(40, width - 60))
    for r in RESOURCES:
        best = w.busiest(r)
        if best is None:
            note = w.note(r) or (reasons or {}).get(r) or "not sampled here"
            lines.append(f"{r:<26} {'':{bw + 2}} unknown: {note[: max(10, width - bw - 39)]}")
        else:
            dev, u = best
            lines.append(f"{r:<26} [{bar(u, bw)}] {u * 100:5.1f}%  {dev}")
    ph = w.phases
    lines.append("")
    if ph and ph.steps and ph.wall_seconds > 0:
        lines.append(f"step: {fmt_seconds(ph.wall_seconds / ph.steps)} over {ph.steps} steps in the window")
        for k in list(PHASES):
            share = ph.phases.get(k, 0.0) / ph.wall_seconds
            lines.append(f"  {k:<14} [{bar(share, bw)}] {share * 100:5.1f}%")
    else:
        lines.append("step phases: none reported (no torch hook, or no steps in the window)")
    v = snap.verdict
    lines.append("")
    if v.resource == UNDETERMINED:
        lines.append(f"verdict: undetermined — {v.reason}")
    else:
        lines.append(f"verdict: {v.resource} (stage {v.stage}, confidence {v.confidence:.0%})")
        for e in v.evidence[:3]:
            lines.append(f"  {e}"[:width])
    if snap.recommendations:
        m = snap.recommendations[0].mitigation
        lines.append(f"top recommendation: {m.name}"[:width])
        lines.append(f"  {m.taxonomy_path}; {m.citation}"[:width])
    return "\n".join(lines)


class LiveView:
    def __init__(self, live: bool, quiet: bool, out: TextIO = sys.stderr, every: int = 10, peaks: PeakTable | None = None) -> None:
        self.reasons = unknown_reasons(peaks)
        self.tty = out.isatty()
        self.live = live
        self.quiet = quiet
        self.out = out
        self.every = every
        self.n = 0
        self._last_resource: tuple[str, str] | None = None

    def __call__(self, snap: Snapshot) -> None:
        self.n += 1
        if self.live and self.tty:
            try:
                width = os.get_terminal_size(self.out.fileno()).columns  # the stream we draw on, not stdout
            except OSError:
                width = 100
            self.out.write(CLEAR + render_screen(snap, width, self.reasons) + "\n")
            self.out.flush()
            return
        if self.quiet:
            return
        changed = (snap.verdict.resource, snap.verdict.stage) != self._last_resource
        if self.live or changed or self.n % self.every == 0:
            self.out.write(live_line(snap) + "\n")
            self.out.flush()
        self._last_resource = (snap.verdict.resource, snap.verdict.stage)
