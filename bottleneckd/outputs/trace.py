"""Recorded traces: versioned JSON lines (see docs/trace-format.md).

Line 1 is the header (machine, peaks, interval); each further line is a sample, flushed as it
is written, so SIGTERM or a crash loses at most the interval being written. ``read_trace`` yields
the good part of a damaged trace and then raises TraceError naming the first bad line.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import IO, Any, Iterator

from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.model.errors import InputError, TraceError
from bottleneckd.model.protocol import VERSION as MESSAGE_VERSION
from bottleneckd.model.protocol import Event, ProtocolError
from bottleneckd.model.protocol import from_json as message_from_json
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.model.sample import Sample

FORMAT = "bottleneckd.trace"
VERSION = 1


@dataclass(frozen=True)
class TraceHeader:
    version: int
    created: float
    interval: float
    machine: Machine
    peaks: PeakTable
    meta: dict[str, Any]


class TraceWriter:
    def __init__(self, path: str, machine: Machine, peaks: PeakTable, interval: float, meta: dict[str, Any] | None = None,
                 overwrite: bool = False) -> None:
        if os.path.exists(path) and not overwrite:
            raise InputError(f"{path}: already exists; choose another -o or pass --force to overwrite")
        self.path = path
        self._f: IO[str] = open(path, "w", encoding="utf-8")
        self._write({"type": "header", "format": FORMAT, "version": VERSION, "created": time.time(), "interval": interval,
                     "machine": machine.to_json(), "peaks": peaks.to_json(), "meta": meta or {}})

    def _write(self, doc: dict[str, Any]) -> None:
        self._f.write(json.dumps(doc, separators=(",", ":")) + "\n")
        self._f.flush()

    def __call__(self, sample: Sample) -> None:
        self._write(sample.to_json())

    def event(self, e: Event) -> None:
        """An event line: the wire message's own keys (``kind``, ``name``, ``t`` ...)."""
        self._write(e.to_json())

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()


def read_header(path: str, line: str) -> TraceHeader:
    try:
        d = json.loads(line)
    except json.JSONDecodeError as e:
        raise TraceError(path, 1, f"header is not JSON ({e.msg}); is this a bottleneckd trace?") from e
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise TraceError(path, 1, f"not a bottleneckd trace (format is not {FORMAT!r})")
    if d.get("version") != VERSION:
        raise TraceError(path, 1, f"trace version {d.get('version')!r} is not supported (this bottleneckd reads version {VERSION})")
    try:
        return TraceHeader(VERSION, float(d["created"]), float(d["interval"]), Machine.from_json(d["machine"]),
                           PeakTable.from_json(d["peaks"]), dict(d.get("meta", {})))
    except (KeyError, TypeError, ValueError) as e:
        raise TraceError(path, 1, f"header field missing or malformed: {e}") from e


def read_events(path: str) -> list[Event]:
    """The event lines of a trace (mitigations applied ...), in order; bad lines are skipped."""
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if '"type":"event"' in line.replace(" ", ""):
                    try:
                        d = json.loads(line)
                        if isinstance(d, dict):
                            d.setdefault("version", MESSAGE_VERSION)  # lines written before messages had versions
                        e = message_from_json(d)
                    except (ValueError, RecursionError, ProtocolError):
                        continue
                    if isinstance(e, Event):
                        out.append(e)
    except OSError:
        pass
    return out


def read_trace(path: str) -> tuple[TraceHeader, Iterator[Sample]]:
    """The header, and an iterator over samples. A bad line raises TraceError after the good
    lines before it have been yielded; a last line cut short by a crash is skipped silently."""
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise InputError(f"{path}: cannot read the trace ({e.strerror or e})") from e
    first = f.readline()
    if not first:
        f.close()
        raise TraceError(path, 1, "empty file")
    header = read_header(path, first)

    def samples() -> Iterator[Sample]:
        with f:
            lineno = 1
            for line in f:
                lineno += 1
                if not line.strip():
                    continue
                try:
                    d = json.loads(line)
                except json.JSONDecodeError as e:
                    if not line.endswith("\n") and not f.read(1):
                        return  # truncated final line: the interval being written at a crash
                    raise TraceError(path, lineno, f"not valid JSON ({e.msg}); the {lineno - 2} samples before it were analysed") from e
                if not isinstance(d, dict):
                    raise TraceError(path, lineno, "expected a JSON object")
                if d.get("type") != "sample":
                    continue
                try:
                    yield Sample.from_json(d)
                except (KeyError, TypeError, ValueError, IndexError) as e:
                    raise TraceError(path, lineno, f"malformed sample ({type(e).__name__}: {e})") from e

    return header, samples()
