"""One run, as ``compare`` sees it: how long its steps took (from a trace or a JSON report) and
its quality over time (from a CSV or JSON-lines log the user names).

A run argument is ``PATH`` or ``PATH,LOG``: PATH a bottleneckd trace, a JSON report written by
``bottleneckd report --json``, or (with ``--metric``) a quality log alone; LOG a quality log.
A log's time column is one of ``TIME_COLUMNS``; unix times (after 2001) are made relative to the
run's start (the trace's first sample, else the log's first row).

Every file is read through ``model/files.py``'s regular-file readers, bounded (issue 25 item 2):
a FIFO or a device is refused, a trace or log is read a bounded line at a time, a report is at
most ``MAX_DATA_BYTES``, JSON is parsed strictly (no NaN, no 5000-digit integers, no nesting past
the recursion limit), and a log must hold times that are not negative.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard

from bottleneckd.model.errors import InputError
from bottleneckd.model.files import json_problem, loads_strict, open_regular, read_json_file
from bottleneckd.model.sample import Sample

TIME_COLUMNS = ("elapsed", "seconds", "time", "t", "wall_time", "timestamp")
UNIX_AFTER = 1e9  # a time past this is a unix timestamp, not seconds since the start
#: the longest line of a quality log: a CSV row or a JSON-lines record of a training loop is under 1 kB
MAX_LOG_LINE = 1024 * 1024
#: the most a quality log may hold: a year of one row per second at ~30 bytes a row is ~1 GB
MAX_LOG_BYTES = 1024**3
#: rows with both a time and the metric kept per log (an evaluation every second for ~11 days)
MAX_QUALITY_ROWS = 1_000_000
HEAD_BYTES = 4096  # read to tell a trace from a report from a log


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
    steps, wall = 0, 0.0
    examples: int | None = 0
    start: float | None = None
    for s in samples:
        start = s.t - s.interval if start is None else start
        if s.phases is not None and s.phases.steps:
            steps += s.phases.steps
            wall += s.phases.wall_seconds
            examples = None if examples is None or s.phases.examples is None else examples + s.phases.examples
    return steps, examples if steps else None, wall if steps else None, start


def _report(path: str, doc: Any) -> tuple[int, int | None, float | None, float | None]:
    th = doc.get("throughput") if isinstance(doc, dict) else None
    if not isinstance(th, dict) or not th.get("steps"):
        raise InputError(
            f"{path}: this report has no throughput (steps and their wall time); pass the run's trace "
            "(bottleneckd run --trace T) or a report from 'bottleneckd report --json'"
        )
    steps, wall, examples, start = th.get("steps"), th.get("wall_seconds"), th.get("examples"), th.get("start")
    if type(steps) is not int or steps < 1 or not _positive(wall):
        raise InputError(
            f"{path}: throughput.steps must be a whole number of steps and throughput.wall_seconds a positive "
            f"number of seconds (got {str(steps)[:20]}, {str(wall)[:20]}); is this a report of bottleneckd's?"
        )
    if examples is not None and (type(examples) is not int or examples < 0):
        raise InputError(f"{path}: throughput.examples must be a whole number (got {str(examples)[:20]})")
    if start is not None and not _positive(start):
        raise InputError(f"{path}: throughput.start must be a unix time (got {str(start)[:20]})")
    return steps, examples, float(wall), None if start is None else float(start)


def _positive(x: Any) -> TypeGuard[float]:
    return type(x) in (int, float) and math.isfinite(x) and x > 0


def _log_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of a quality log: a regular file, UTF-8, each line and the whole bounded."""
    with open_regular(path, "quality log") as f:
        total = k = 0
        while True:
            raw = f.readline(MAX_LOG_LINE + 1)
            if not raw:
                return
            k += 1
            total += len(raw)
            if len(raw) > MAX_LOG_LINE or total > MAX_LOG_BYTES:
                what = (
                    f"line longer than {MAX_LOG_LINE // 2**20} MiB" if len(raw) > MAX_LOG_LINE else "larger than 1 GiB"
                )
                raise InputError(f"{path}:{k}: {what}; is this the right file (a CSV or JSON-lines log)?")
            try:
                yield k, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(
                    f"{path}:{k}: not UTF-8 text (byte {raw[e.start]:#04x}); is this the right file (a CSV or "
                    "JSON-lines log)?"
                ) from e


def _rows(path: str) -> Iterator[tuple[int, Any]]:
    """The log's rows (CSV with a header, or one JSON object per line), as (number, row)."""
    lines = _log_lines(path)
    first = next(((k, ln) for k, ln in lines if ln.strip()), None)
    if first is None:
        return
    if first[1].lstrip().startswith("{"):
        for k, ln in _chain(first, lines):
            if not ln.strip():
                continue
            try:
                yield k, loads_strict(ln)
            except (ValueError, RecursionError) as e:
                raise InputError(f"{path}:{k}: {json_problem(e)}; expected one JSON object per line") from e
        return
    try:
        yield from enumerate(csv.DictReader(ln for _k, ln in _chain(first, lines)), 1)
    except csv.Error as e:
        raise InputError(f"{path}: not a CSV log ({e}); is this the right file?") from e


def _chain(first: tuple[int, str], rest: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    yield first
    yield from rest


def read_quality(path: str, metric: str) -> list[tuple[float, float]]:
    """(time, value) rows of a CSV (with a header) or JSON-lines log, in file order."""
    cols: set[str] = set()
    kept: list[tuple[int, dict[str, Any], Any]] = []  # (row, its time columns, the metric's value)
    seen = 0
    for k, r in _rows(path):
        seen += 1
        if not isinstance(r, dict):
            continue
        if len(cols) < 1000:  # enough to name them in a message
            cols.update(str(c) for c in r)
        if r.get(metric) in (None, ""):
            continue  # a row that logs something else (a training loss line without an evaluation)
        kept.append((k, {c: r[c] for c in TIME_COLUMNS if r.get(c) not in (None, "")}, r[metric]))
        if len(kept) > MAX_QUALITY_ROWS:
            raise InputError(f"{path}: more than {MAX_QUALITY_ROWS:,} rows with {metric}; is this the right log?")
    if not seen:
        raise InputError(f"{path}: the quality log is empty")
    tcol = next((c for c in TIME_COLUMNS if c in cols), None)
    if tcol is None:
        raise InputError(
            f"{path}: no time column; name one of: {', '.join(TIME_COLUMNS)} (seconds since the start, or unix time)"
        )
    if metric not in cols:
        raise InputError(f"{path}: no column {metric!r}; the log has: {', '.join(sorted(cols))[:400]}")
    out = []
    for k, times, value in kept:
        if tcol not in times:
            continue
        try:
            t, v = float(times[tcol]), float(value)
        except (TypeError, ValueError, OverflowError) as e:
            raise InputError(
                f"{path}: row {k}: {tcol}={str(times[tcol])[:40]!r}, {metric}={str(value)[:40]!r} are not numbers"
            ) from e
        if not (math.isfinite(t) and math.isfinite(v)):
            raise InputError(f"{path}: row {k}: a value is not finite")
        if t < 0:
            raise InputError(
                f"{path}: row {k}: {tcol}={t:g} is negative; the time column holds seconds since the start "
                "or unix times"
            )
        out.append((t, v))
    if not out:
        raise InputError(f"{path}: no row has both {tcol} and {metric}")
    return out


def _head(path: str) -> str:
    """The first bytes of a run's file: a regular file (a FIFO would hang, /dev/zero never ends)."""
    with open_regular(path, "run (a trace, a JSON report or a quality log)") as f:
        return f.read(HEAD_BYTES).decode("utf-8", "replace").lstrip()


def load_run(arg: str, metric: str | None) -> Run:
    path, _, log = arg.partition(",")
    steps, examples, wall, start = 0, None, None, None
    head = _head(path)
    quality_only = False
    if head.startswith("{") and '"bottleneckd.trace"' in head.split("\n", 1)[0]:
        steps, examples, wall, start = _trace(path)
    elif head.startswith("{") and '"bottleneckd.report/' in head[:200]:
        doc = read_json_file(path, "JSON report", "write it with 'bottleneckd report --json' or pass the run's trace")
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
            early = min(t for t, _ in quality)
            if early < 0:
                raise InputError(
                    f"{log}: a row is {-early:.0f} s before the run's first sample ({path}); "
                    "is this the log of that run?"
                )
    return Run(arg, steps, examples, wall, start, tuple(quality))
