"""One run, as ``compare`` sees it: how long its steps took (from a trace or a JSON report) and
its quality over time (from a CSV or JSON-lines log the user names).

A run argument is ``PATH`` or ``PATH,LOG``: PATH a bottleneckd trace, a JSON report written by
``bottleneckd report --json``, or (with ``--metric``) a quality log alone; LOG a quality log.
A log's time column is one of ``TIME_COLUMNS``; unix times (after 2001) are made relative to the
run's start (the trace's first sample, else the log's first row).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bottleneckd.model.errors import InputError
from bottleneckd.model.sample import Sample

TIME_COLUMNS = ("elapsed", "seconds", "time", "t", "wall_time", "timestamp")
UNIX_AFTER = 1e9  # a time past this is a unix timestamp, not seconds since the start


@dataclass(frozen=True)
class Run:
    name: str
    steps: int  # 0 when unknown
    examples: int | None
    wall_seconds: float | None  # time the steps took (the hook's step walls summed)
    start: float | None  # unix time of the first sample
    quality: tuple[tuple[float, float], ...] = ()  # (seconds since start, metric value)

    @property
    def seconds_per_step(self) -> float | None:
        return self.wall_seconds / self.steps if self.steps and self.wall_seconds else None

    def time_to_target(self, target: float, minimize: bool) -> float | None:
        """Seconds until the metric first reached the target (the evaluation at which it did, as
        MLPerf counts it); None if it never did."""
        for t, v in self.quality:
            if (v <= target) if minimize else (v >= target):
                return t
        return None

    def final_quality(self, minimize: bool) -> float | None:
        """The best value the run reached."""
        vals = [v for _, v in self.quality]
        return (min(vals) if minimize else max(vals)) if vals else None


def _trace(path: str) -> tuple[int, int | None, float | None, float | None]:
    from bottleneckd.outputs.trace import read_trace

    return totals(read_trace(path)[1])


def totals(samples: Iterable[Sample]) -> tuple[int, int | None, float | None, float | None]:
    """(steps, examples or None, their wall seconds or None, unix start) over a run's samples."""
    steps, examples, wall, start = 0, 0, 0.0, None
    for s in samples:
        start = s.t - s.interval if start is None else start
        if s.phases is not None and s.phases.steps:
            steps += s.phases.steps
            wall += s.phases.wall_seconds
            examples = None if examples is None or s.phases.examples is None else examples + s.phases.examples
    return steps, examples if steps else None, wall if steps else None, start


def _report(path: str, doc: dict) -> tuple[int, int | None, float | None, float | None]:
    th = doc.get("throughput")
    if not isinstance(th, dict) or not th.get("steps"):
        raise InputError(
            f"{path}: this report has no throughput (steps and their wall time); pass the run's trace "
            "(bottleneckd run --trace T) or a report from 'bottleneckd report --json'"
        )
    return int(th["steps"]), th.get("examples"), float(th["wall_seconds"]), th.get("start")


def read_quality(path: str, metric: str) -> list[tuple[float, float]]:
    """(time, value) rows of a CSV (with a header) or JSON-lines log, in file order."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"{path}: cannot read the quality log ({e.strerror or e})") from e
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if first.lstrip().startswith("{"):
        rows = []
        for k, ln in enumerate(text.splitlines(), 1):
            if ln.strip():
                try:
                    rows.append(json.loads(ln))
                except json.JSONDecodeError as e:
                    raise InputError(f"{path}:{k}: not valid JSON ({e.msg}); expected one object per line") from e
    else:
        rows = list(csv.DictReader(text.splitlines()))
    if not rows:
        raise InputError(f"{path}: the quality log is empty")
    cols = set().union(*(r.keys() for r in rows if isinstance(r, dict)))
    tcol = next((c for c in TIME_COLUMNS if c in cols), None)
    if tcol is None:
        raise InputError(
            f"{path}: no time column; name one of: {', '.join(TIME_COLUMNS)} (seconds since the start, or unix time)"
        )
    if metric not in cols:
        raise InputError(f"{path}: no column {metric!r}; the log has: {', '.join(sorted(cols))}")
    out = []
    for k, r in enumerate(rows, 1):
        if not isinstance(r, dict) or r.get(metric) in (None, "") or r.get(tcol) in (None, ""):
            continue  # a row that logs something else (a training loss line without an evaluation)
        try:
            t, v = float(r[tcol]), float(r[metric])
        except (TypeError, ValueError) as e:
            raise InputError(
                f"{path}: row {k}: {tcol}={r.get(tcol)!r}, {metric}={r.get(metric)!r} are not numbers"
            ) from e
        if not (math.isfinite(t) and math.isfinite(v)):
            raise InputError(f"{path}: row {k}: a value is not finite")
        out.append((t, v))
    if not out:
        raise InputError(f"{path}: no row has both {tcol} and {metric}")
    return out


def load_run(arg: str, metric: str | None) -> Run:
    path, _, log = arg.partition(",")
    if not Path(path).is_file():
        raise InputError(f"{path}: no such file (a run is PATH or PATH,LOG: a trace or JSON report, and a quality log)")
    steps, examples, wall, start = 0, None, None, None
    head = Path(path).read_text(encoding="utf-8", errors="replace")[:4096].lstrip()
    quality_only = False
    if head.startswith("{") and '"bottleneckd.trace"' in head.split("\n", 1)[0]:
        steps, examples, wall, start = _trace(path)
    elif head.startswith("{") and '"bottleneckd.report/' in head[:200]:
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise InputError(f"{path}: not valid JSON ({e.msg})") from e
        steps, examples, wall, start = _report(path, doc)
    elif metric and not log:
        quality_only, log = True, path
    else:
        raise InputError(
            f"{path}: neither a bottleneckd trace nor a JSON report"
            + ("" if metric else " (a quality log needs --metric)")
        )
    quality: list[tuple[float, float]] = []
    if log:
        if not metric:
            raise InputError(f"{arg}: a quality log was given but no --metric to read from it")
        quality = read_quality(log, metric)
        if quality[0][0] > UNIX_AFTER:
            t0 = start if start is not None and not quality_only else quality[0][0]
            quality = [(t - t0, v) for t, v in quality]
    return Run(arg, steps, examples, wall, start, tuple(quality))
