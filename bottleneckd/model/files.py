"""The user's files, read and written safely: every path a command reads or writes goes through here.

Reading: only regular files (a FIFO would hang, /dev/zero never ends), opened without blocking,
bounded in size; text must be UTF-8 and JSON must hold finite numbers. Writing: checked before any
work starts (the directory exists and is writable, not /proc or /sys, nothing is overwritten
without ``force``), then written to a temporary file in the same directory and renamed into
place, so a crash leaves either the old file or the new one, never half of one; a symbolic link
at the path is replaced, never followed.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import tempfile
from typing import IO, Any

from bottleneckd.model.errors import InputError

#: the most a JSON data file (catalog, profile, web config) may hold
MAX_DATA_BYTES = 16 * 1024 * 1024
#: the longest line a trace may hold (a sample with its facts is a few kB)
MAX_LINE_BYTES = 16 * 1024 * 1024
KERNEL_TREES = ("/proc", "/sys")


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def under_kernel_tree(path: str) -> str | None:
    """/proc or /sys when ``path`` (links resolved) is in one of them, else None."""
    real = os.path.realpath(path)
    for root in KERNEL_TREES:
        if real == root or real.startswith(root + "/"):
            return root
    return None


def open_regular(path: str, what: str) -> IO[bytes]:
    """``path`` opened for reading, if it is a regular file (symbolic links to one are fine)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise InputError(f"{path}: cannot read the {what} ({e.strerror or e})") from e
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise InputError(f"{path}: the {what} must be a regular file, this is {_kind(st.st_mode)}")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_text(path: str, what: str, limit: int = MAX_DATA_BYTES) -> str:
    """A regular file's text (UTF-8, at most ``limit`` bytes), or one InputError."""
    with open_regular(path, what) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{path}: the {what} is larger than {limit // 2**20} MiB; is this the right file?")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{path}: the {what} is not UTF-8 text (byte {e.start} is {data[e.start]:#04x}); is this the right file?"
        ) from e


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"number {text[:20]} is out of range")
    return x


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 19:
        raise ValueError(f"integer {text[:20]}... is out of range")
    return int(text)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


#: a \\u escape of a UTF-16 surrogate: the only way a lone surrogate gets into strictly decoded UTF-8 JSON
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def _no_lone_surrogate(doc: Any) -> None:
    """ValueError for a string (key or value) that is not valid Unicode text: a lone surrogate
    (``"\\ud800"``) cannot be encoded as UTF-8, so the exporter and every file written after it
    would fail on it (issue 25 item 4). Iterative: no depth limit of its own."""
    todo = [doc]
    while todo:
        x = todo.pop()
        if isinstance(x, str):
            try:
                x.encode("utf-8")
            except UnicodeEncodeError as e:
                raise ValueError(
                    f"string {x[:20]!r} holds a lone surrogate (\\u{ord(x[e.start]):04x}): not valid Unicode text"
                ) from None
        elif isinstance(x, dict):
            todo.extend(x.keys())
            todo.extend(x.values())
        elif isinstance(x, list):
            todo.extend(x)


def loads_strict(text: str | bytes) -> Any:
    """json.loads that refuses NaN, Infinity, numbers out of float range (1e400), 20-digit
    integers and strings that are not valid Unicode text (a lone surrogate); raises ValueError
    (json.JSONDecodeError is one) or RecursionError for deep nesting."""
    doc = json.loads(text, parse_float=_finite, parse_int=_bounded_int, parse_constant=_no_constant)
    escape = _SURROGATE_ESCAPE.search(text) if isinstance(text, str) else _SURROGATE_ESCAPE_BYTES.search(text)
    if escape:  # rare: only then is every string checked
        _no_lone_surrogate(doc)
    return doc


def json_problem(e: BaseException) -> str:
    if isinstance(e, json.JSONDecodeError):
        return f"line {e.lineno}: not valid JSON ({e.msg})"
    if isinstance(e, RecursionError):
        return "nested too deeply"
    return str(e)


def read_json_file(path: str, what: str, fix: str, limit: int = MAX_DATA_BYTES) -> Any:
    text = read_text(path, what, limit)
    try:
        return loads_strict(text)
    except (ValueError, RecursionError) as e:
        raise InputError(f"{path}: the {what} is not usable JSON ({json_problem(e)}); {fix}") from e


def check_output(path: str, what: str, force: bool = False) -> str:
    """Refuse, before any work starts, an output that cannot or must not be written. Returns the
    absolute path."""
    if not path:
        raise InputError(f"{what}: empty path")
    ab = os.path.abspath(path)
    parent = os.path.dirname(ab)
    root = under_kernel_tree(parent)
    if root:
        raise InputError(
            f"{what} {path}: {root} is a kernel interface, not a place for files; write under your own directory"
        )
    if not os.path.exists(parent):
        raise InputError(f"{what} {path}: directory {parent} does not exist; create it first")
    if not os.path.isdir(parent):
        raise InputError(f"{what} {path}: {parent} is not a directory")
    if os.path.lexists(ab):
        mode = os.lstat(ab).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise InputError(f"{what} {path}: exists and is {_kind(mode)}; give a file path")
        if not force:
            raise InputError(f"{what} {path}: already exists; choose another path or pass --force to replace it")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{what} {path}: cannot write in {parent} (permission denied)")
    return ab


def _umask() -> int:
    m = os.umask(0o022)
    os.umask(m)
    return m


def _temp_beside(path: str) -> tuple[int, str]:
    """A new hidden temporary file in ``path``'s directory (same file system: renamed onto
    ``path`` at the end), with the mode a new file would get; raises OSError."""
    d, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{name}.", suffix=".tmp")
    os.fchmod(fd, 0o666 & ~_umask())
    return fd, tmp


class AtomicFile:
    """Text written to a temporary file beside ``path`` and renamed onto it by ``commit()``;
    ``discard()`` (or a crash) leaves ``path`` as it was. Without ``force`` the rename never
    replaces a file that appeared meanwhile."""

    def __init__(self, path: str, what: str, force: bool = False) -> None:
        self.path = check_output(path, what, force)
        self.what = what
        self.force = force
        try:
            fd, self.tmp = _temp_beside(self.path)
        except OSError as e:
            raise InputError(f"{what} {path}: cannot write ({e.strerror or e})") from e
        self.f: IO[str] = os.fdopen(fd, "w", encoding="utf-8")

    def write(self, text: str) -> None:
        self.f.write(text)

    def flush(self) -> None:
        self.f.flush()

    def commit(self) -> None:
        try:
            self.f.flush()
            os.fsync(self.f.fileno())
            self.f.close()
            if self.force:
                os.replace(self.tmp, self.path)
            else:
                os.link(self.tmp, self.path)  # fails if something appeared at path: never overwrites
                os.unlink(self.tmp)
        except OSError as e:
            self.discard()
            raise InputError(f"{self.what} {self.path}: cannot write ({e.strerror or e})") from e

    def discard(self) -> None:
        try:
            self.f.close()
        except OSError:
            pass
        try:
            os.unlink(self.tmp)
        except OSError:
            pass


def write_text(path: str, text: str, what: str, force: bool = False) -> None:
    """Write a whole file atomically (see AtomicFile)."""
    out = AtomicFile(path, what, force)
    try:
        out.write(text)
    except OSError as e:
        out.discard()
        raise InputError(f"{what} {path}: cannot write ({e.strerror or e})") from e
    out.commit()


def create_stream(path: str, what: str, force: bool = False) -> tuple[IO[str], str | None]:
    """A file for a stream of lines flushed as they come (a trace), created at ``path`` when
    nothing is there (never following a link). When ``force`` replaces an existing file, the
    stream goes to a temporary file first; the second value is that temporary path, to be renamed
    onto ``path`` at the end (until then the old file is intact)."""
    ab = check_output(path, what, force)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        if not os.path.lexists(ab):
            return os.fdopen(os.open(ab, flags, 0o666), "w", encoding="utf-8"), None
        fd, tmp = _temp_beside(ab)
        return os.fdopen(fd, "w", encoding="utf-8"), tmp
    except OSError as e:
        raise InputError(f"{what} {path}: cannot create ({e.strerror or e})") from e
