"""Errors a user can act on. The CLI turns InputError into one line and exit code 2."""

from __future__ import annotations

import json
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
    """A JSON file's contents, or one InputError naming the file (and line) and saying ``fix``."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"{path}: cannot read the {what} ({e.strerror or e}); {fix}") from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}: the {what} is not valid JSON ({e.msg}); {fix}") from e
