"""The live view: one terminal screen redrawn each interval (drawn with ``rich``), or plain lines
when the output is not a terminal.

The screen is one ``rich`` renderable: a table with a bar per resource (utilization of its peak,
or why it is unknown), a bar per step phase, the verdict with its stage and evidence, and the top
recommendation. ``render_screen`` gives the same screen as text (for tests and logs).
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any, TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from bottleneckd.advice.stage import Snapshot
from bottleneckd.model.resources import PHASES, RESOURCES, UNDETERMINED
from bottleneckd.model.sample import StepPhases
from bottleneckd.model.units import fmt_seconds
from bottleneckd.peaks.resolve import PeakTable


def unknown_reasons(peaks: PeakTable | None) -> dict[str, str]:
    """Why each resource's peak is unknown, for resources no sampler reports."""
    out: dict[str, str] = {}
    for p in peaks.peaks if peaks else ():
        if p.value is None:
            out.setdefault(p.resource, p.source)
    return out


def _bar(fraction: float, width: int) -> Text:
    n = max(0, min(width, round(fraction * width)))
    style = "red" if fraction >= 0.8 else "yellow" if fraction >= 0.5 else "green"
    return Text.assemble("[", ("#" * n, style), ("-" * (width - n), "dim"), "]")


def screen(snap: Snapshot, width: int = 100, reasons: dict[str, str] | None = None) -> Group:
    """The live screen as one renderable."""
    w = snap.stats
    bw = max(10, min(40, width - 60))
    res = Table.grid(padding=(0, 1))
    res.add_column(min_width=26, no_wrap=True)
    res.add_column(min_width=bw + 2, no_wrap=True)
    res.add_column(no_wrap=True, overflow="ellipsis", max_width=max(10, width - bw - 31))
    for r in RESOURCES:
        best = w.busiest(r)
        if best is None:
            note = w.note(r) or (reasons or {}).get(r) or "not sampled here"
            res.add_row(r, Text(" " * (bw + 2)), Text(f"unknown: {note}", style="dim"))
        else:
            dev, u = best
            res.add_row(r, _bar(u, bw), f"{u * 100:5.1f}%  {dev}")
    parts: list[Any] = [Text("bottleneckd — live (Ctrl-C stops)", style="bold"), Text(""), res, Text("")]
    ph = w.phases
    if ph and ph.steps and ph.wall_seconds > 0:
        parts.append(Text(_counted(ph, "in the window")))
        steps = Table.grid(padding=(0, 1))
        steps.add_column(min_width=16, no_wrap=True)
        steps.add_column(min_width=bw + 2, no_wrap=True)
        steps.add_column(no_wrap=True)
        for k in PHASES:
            share = ph.phases.get(k, 0.0) / ph.wall_seconds
            steps.add_row(f"  {k}", _bar(share, bw), f"{share * 100:5.1f}%")
        parts.append(steps)
    else:
        parts.append(Text("step phases: none reported (no torch hook, or no steps in the window)", style="dim"))
    v = snap.verdict
    parts.append(Text(""))
    if v.resource == UNDETERMINED:
        parts.append(Text(f"verdict: {UNDETERMINED} — {v.reason}", style="yellow"))
    else:
        parts.append(Text(f"verdict: {v.resource} (stage {v.stage}, confidence {v.confidence:.0%})", style="bold red"))
        for e in v.evidence[:3]:
            parts.append(Text(f"  {e}", overflow="ellipsis", no_wrap=True))
        if v.code is not None and v.code.sites:  # the user's functions the stage runs (diagnosis/code.py)
            named = ", ".join(f"{s.where} {s.share:.0%}" for s in v.code.sites)
            parts.append(Text(f"  code: {named}", style="bold", overflow="ellipsis", no_wrap=True))
    if snap.recommendations:
        top = snap.recommendations[0]
        m = top.mitigation
        pred = f" ({top.prediction.text()})" if top.prediction is not None and top.prediction.known else ""
        parts.append(Text(f"top recommendation: {m.name}{pred}", style="green", overflow="ellipsis", no_wrap=True))
        parts.append(Text(f"  {m.taxonomy_path}; {m.citation}", overflow="ellipsis", no_wrap=True))
    return Group(*parts)


def _counted(ph: StepPhases, where: str = "") -> str:
    """What the phases are over, in their own units: timed steps (``run``, the hook) with their
    mean time, or stack samples (``attach``, py-spy), which say nothing of the step's length."""
    if ph.sampled:
        where = f" {where}" if where else ""
        return f"stage shares from {ph.steps} stack samples{where} (py-spy; no step time)"
    return f"{ph.steps} steps" + (f" {where}" if where else "") + f", {fmt_seconds(ph.wall_seconds / ph.steps)}/step"


def render_screen(snap: Snapshot, width: int = 100, reasons: dict[str, str] | None = None) -> str:
    """The screen as plain text, ``width`` columns wide."""
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False, legacy_windows=False)
    console.print(screen(snap, width, reasons))
    return console.file.getvalue().rstrip("\n")  # type: ignore[attr-defined]


def live_line(snap: Snapshot) -> str:
    """One line per interval where no screen can be drawn: the verdict, its stage, the busiest resources."""
    v = snap.verdict
    utils = sorted(
        (
            (r.resource, r.device, r.value)
            for r in snap.sample.readings
            if r.metric == "utilization" and r.value is not None
        ),
        key=lambda x: -x[2],
    )[:4]
    u = ", ".join(f"{r}[{d}] {x:.0%}" for r, d, x in utils)
    ph = snap.stats.phases
    steps = f"; {_counted(ph)}" if ph and ph.steps else ""
    what = f"{v.resource}/{v.stage}" if v.resource != UNDETERMINED else f"{UNDETERMINED} ({v.reason.split(':')[0]})"
    return f"[bottleneckd] {what} (confidence {v.confidence:.0%}){steps}; {u}"


class LiveView:
    """Called with each snapshot. On a terminal with ``live``: one screen redrawn in place;
    otherwise a plain line when the verdict or its stage changes (and every ``every`` ticks)."""

    def __init__(
        self, live: bool, quiet: bool, out: TextIO = sys.stderr, every: int = 10, peaks: PeakTable | None = None
    ) -> None:
        self.reasons = unknown_reasons(peaks)
        self.tty = out.isatty()
        self.live = live
        self.quiet = quiet
        self.out = out
        self.every = every
        self.n = 0
        self._last: tuple[str, str] | None = None
        self._screen: Live | None = None

    def __call__(self, snap: Snapshot) -> None:
        self.n += 1
        if self.live and self.tty:
            self._draw(snap)
            return
        if self.quiet:
            return
        now = (snap.verdict.resource, snap.verdict.stage)
        if self.live or now != self._last or self.n % self.every == 0:
            self.out.write(live_line(snap) + "\n")
            self.out.flush()
        self._last = now

    def _draw(self, snap: Snapshot) -> None:
        try:
            width = os.get_terminal_size(self.out.fileno()).columns  # the stream we draw on, not stdout
        except OSError:
            width = 100
        if self._screen is None:
            console = Console(file=self.out, width=width)
            self._screen = Live(console=console, auto_refresh=False, screen=True, transient=True)
            self._screen.start()
        self._screen.console.width = width
        self._screen.update(screen(snap, width, self.reasons), refresh=True)

    def close(self) -> None:
        """Leave the alternate screen (the report that follows is printed on the normal one)."""
        if self._screen is not None:
            self._screen.stop()
            self._screen = None
