"""Running the sidecar in the foreground: signals, the live line, the report file for the hook."""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
from typing import Callable

from bottleneckd.runtime.sidecar import Sidecar
from bottleneckd.diagnosis.pipeline import Snapshot
from bottleneckd.outputs.report import build_report
from bottleneckd.model.units import fmt_value


def live_line(snap: Snapshot) -> str:
    v = snap.verdict
    utils = sorted(((r.resource, r.device, r.value) for r in snap.sample.readings if r.metric == "utilization" and r.value is not None),
                   key=lambda x: -x[2])[:4]
    u = ", ".join(f"{r}[{d}] {x:.0%}" for r, d, x in utils)
    ph = snap.stats.phases
    steps = f"; {ph.steps} steps, {fmt_value(ph.wall_seconds / ph.steps, 's')}/step" if ph and ph.steps else ""
    what = f"{v.resource}/{v.stage}" if v.resource != "undetermined" else f"undetermined ({v.reason.split(':')[0]})"
    return f"[bottleneckd] {what} (confidence {v.confidence:.0%}){steps}; {u}"


class ReportFile:
    """Writes the current report next to the channel socket, atomically, for the hook's epoch-end block."""

    def __init__(self, side: Sidecar, every: int = 2) -> None:
        self.side = side
        self.every = every
        self.n = 0
        d = os.path.dirname(side.receiver.path) if side.receiver else None
        self.path = os.path.join(d, "bottleneckd.report.json") if d else None

    def __call__(self, _sample: object) -> None:
        self.n += 1
        if self.path is None or self.n % self.every:
            return
        doc = build_report(self.side.pipeline, self.side.pipeline.latest.verdict if self.side.pipeline.latest else None)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(self.path), prefix=".report.")
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, self.path)


def run_foreground(side: Sidecar, duration: float | None, on_tick: Callable[[Snapshot], None] | None = None,
                   stop_when: Callable[[], bool] | None = None, install_signals: bool = True) -> None:
    """Run the loop in this thread until SIGINT/SIGTERM, ``duration`` or ``stop_when()``."""
    stop = threading.Event()

    def handler(signum: int, _frame: object) -> None:
        stop.set()
        side.loop.stop()

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)} if install_signals else {}
    side.loop.sinks.append(ReportFile(side))
    if on_tick is not None:
        side.loop.sinks.append(lambda _s: on_tick(side.pipeline.latest) if side.pipeline.latest else None)
    if stop_when is not None:
        side.loop.sinks.append(lambda _s: side.loop.stop() if stop_when() else None)
    try:
        side.loop.run(duration)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if side.receiver is not None:
            side.receiver.close()
        sys.stdout.flush()
