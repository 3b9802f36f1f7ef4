"""The sidecar's current report, kept in a file beside the channel socket for the hook's
epoch-end block. Both ends name the file through ``report_file_path``."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from typing import Any

REPORT_FILE_NAME = "bottleneckd.report.json"
MAX_REPORT_BYTES = 4 * 1024 * 1024


def report_file_path(socket_path: str) -> str:
    return os.path.join(os.path.dirname(socket_path), REPORT_FILE_NAME)


def write_report_file(socket_path: str, doc: dict[str, Any]) -> None:
    """Replace the report atomically (the hook never reads half of one)."""
    path = report_file_path(socket_path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".report.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_report_file(socket_path: str) -> dict[str, Any] | None:
    """The sidecar's last report, or None when there is none (or it cannot be read)."""
    try:
        fd = os.open(report_file_path(socket_path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            doc = json.loads(f.read(MAX_REPORT_BYTES + 1)[:MAX_REPORT_BYTES] or b"null")
    except (OSError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def remove_report_file(socket_path: str) -> None:
    try:
        os.unlink(report_file_path(socket_path))
    except OSError:
        pass
