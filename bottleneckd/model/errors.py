"""Errors a user can act on. The CLI turns InputError into one line and exit code 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class InputError(Exception):
    """Bad input from the user: a file, a field, an argument. The message is one line that
    names what was wrong and how to fix it."""


class TraceError(InputError):
    """A trace line that cannot be read. ``line`` is 1-based."""

    def __init__(self, path: str, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


def read_json(path: Path, what: str, fix: str) -> Any:
    """A JSON file's contents, or one InputError naming the file (and line) and saying ``fix``.
    Only a regular file of bounded size is read; NaN, infinities and 1e400 are refused."""
    from bottleneckd.model.files import read_json_file

    return read_json_file(str(path), what, fix)
