"""Recorded traces: versioned JSON lines (see docs/trace-format.md).

Line 1 is the header (machine, peaks, interval); each further line is a sample, flushed as it
is written, so SIGTERM or a crash loses at most the interval being written. ``read_trace`` yields
the good part of a damaged trace and then raises TraceError naming the first bad line.
"""

from __future__ import annotations

import errno
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.model.errors import InputError, TraceError
from bottleneckd.model.files import MAX_LINE_BYTES, create_stream, json_problem, loads_strict, open_regular
from bottleneckd.model.protocol import VERSION as MESSAGE_VERSION
from bottleneckd.model.protocol import Event, ProtocolError
from bottleneckd.model.protocol import from_json as message_from_json
from bottleneckd.model.sample import Sample, interval_seconds, unix_time
from bottleneckd.peaks.resolve import PeakTable

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
    """A sink writing one line per sample, flushed as written. A write that fails (disk full, the
    file-size limit) ends recording with one message to ``on_error``; later samples are ignored."""

    def __init__(
        self,
        path: str,
        machine: Machine,
        peaks: PeakTable,
        interval: float,
        meta: dict[str, Any] | None = None,
        overwrite: bool = False,
        what: str = "trace",
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.what = what
        self.failed: str | None = None
        self._on_error = on_error
        self._f, self._tmp = create_stream(path, what, overwrite)
        self._write(
            {
                "type": "header",
                "format": FORMAT,
                "version": VERSION,
                "created": time.time(),
                "interval": interval,
                "machine": machine.to_json(),
                "peaks": peaks.to_json(),
                "meta": meta or {},
            }
        )

    def _write(self, doc: dict[str, Any]) -> None:
        if self.failed:
            return
        try:
            self._f.write(json.dumps(doc, separators=(",", ":")) + "\n")
            self._f.flush()
        except OSError as e:
            self._fail(e)

    def _fail(self, e: OSError) -> None:
        why = "the file-size limit (ulimit -f) is reached" if e.errno == errno.EFBIG else (e.strerror or str(e))
        self.failed = f"{self.what} {self.path}: recording stopped: {why}; the lines written so far are kept"
        try:
            self._f.close()
        except OSError:
            pass
        if self._on_error is not None:
            self._on_error(self.failed)
        else:
            raise InputError(self.failed) from e

    def __call__(self, sample: Sample) -> None:
        self._write(sample.to_json())

    def event(self, e: Event) -> None:
        """An event line: the wire message's own keys (``kind``, ``name``, ``t`` ...)."""
        self._write(e.to_json())

    def close(self) -> None:
        if not self._f.closed:
            try:
                self._f.close()
            except OSError as e:
                self._fail(e)
        if self._tmp is not None:  # --force onto an existing trace: it is replaced only now, whole
            os.replace(self._tmp, self.path)
            self._tmp = None


def read_header(path: str, line: str) -> TraceHeader:
    """The header of the trace at ``path``, from its first ``line``. Raises TraceError (an
    InputError naming the file and line 1) when it is not JSON, not a bottleneckd trace, of another
    version, or missing a field."""
    try:
        d = loads_strict(line)
    except (ValueError, RecursionError) as e:
        raise TraceError(path, 1, f"header is not usable JSON ({json_problem(e)}); is this a bottleneckd trace?") from e
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise TraceError(path, 1, f"not a bottleneckd trace (format is not {FORMAT!r})")
    if d.get("version") != VERSION:
        raise TraceError(
            path, 1, f"trace version {d.get('version')!r} is not supported (this bottleneckd reads version {VERSION})"
        )
    try:
        return TraceHeader(
            VERSION,
            unix_time(d["created"]),
            interval_seconds(d["interval"]),
            machine := Machine.from_json(d["machine"]),
            PeakTable.from_json(d["peaks"]).with_gpu_uuids({g.device: g.uuid for g in machine.gpus if g.uuid}),
            dict(d.get("meta", {})),
        )
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise TraceError(path, 1, f"header field missing or malformed: {type(e).__name__}: {e}") from e


def _lines(path: str, f: IO[bytes]) -> Iterator[tuple[int, str, bool]]:
    """(line number, text, ends with a newline), each line at most MAX_LINE_BYTES, UTF-8."""
    lineno = 0
    while True:
        raw = f.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > MAX_LINE_BYTES:
            raise TraceError(
                path, lineno, f"line longer than {MAX_LINE_BYTES // 2**20} MiB; is this a bottleneckd trace?"
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise TraceError(path, lineno, "not UTF-8 text (binary data?); is this a bottleneckd trace?") from e
        yield lineno, text, raw.endswith(b"\n")


def read_events(path: str) -> list[Event]:
    """The event lines of a trace (mitigations applied ...), in order; bad lines are skipped."""
    out = []
    try:
        with open_regular(path, "trace") as f:
            for _n, line, _nl in _lines(path, f):
                if '"type":"event"' in line.replace(" ", ""):
                    try:
                        d = loads_strict(line)
                        if isinstance(d, dict):
                            d.setdefault("version", MESSAGE_VERSION)  # lines written before messages had versions
                        e = message_from_json(d)
                    except (ValueError, RecursionError, ProtocolError):
                        continue
                    if isinstance(e, Event):
                        out.append(e)
    except (InputError, OSError):
        pass
    return out


def read_trace(path: str) -> tuple[TraceHeader, Iterator[Sample]]:
    """The header, and an iterator over samples. A bad line raises TraceError after the good
    lines before it have been yielded; a last line cut short by a crash is skipped silently.
    Only a regular file is read (a FIFO or /dev/zero is refused), a line at a time, bounded."""
    f = open_regular(path, "trace")
    lines = _lines(path, f)
    try:
        first = next(lines, None)
    except TraceError:
        f.close()
        raise
    if first is None:
        f.close()
        raise TraceError(path, 1, "empty file")
    header = read_header(path, first[1])

    def samples() -> Iterator[Sample]:
        with f:
            for lineno, line, newline in lines:
                if not line.strip():
                    continue
                try:
                    d = loads_strict(line)
                except json.JSONDecodeError as e:
                    if not newline and not f.read(1):
                        return  # truncated final line: the interval being written at a crash
                    raise TraceError(
                        path, lineno, f"not valid JSON ({e.msg}); the samples before it were analysed"
                    ) from e
                except (ValueError, RecursionError) as e:
                    raise TraceError(path, lineno, f"{json_problem(e)}; the samples before it were analysed") from e
                if not isinstance(d, dict):
                    raise TraceError(path, lineno, "expected a JSON object")
                if d.get("type") != "sample":
                    continue
                try:
                    yield Sample.from_json(d)
                except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
                    raise TraceError(path, lineno, f"malformed sample ({type(e).__name__}: {e})") from e

    return header, samples()
