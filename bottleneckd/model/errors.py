"""Errors a user can act on. The CLI turns InputError into one line and exit code 2."""

from __future__ import annotations


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
