"""The sidecar's current report, kept in a file beside the channel socket for the hook's
epoch-end block. Both ends reach the file through the socket's directory held open
(``socket_path.SocketDir``): never through a path another user could have relinked since it was
checked."""

from __future__ import annotations

import json
import os
import secrets
import stat
from typing import Any

from bottleneckd.channel.socket_path import ChannelError, SocketDir

REPORT_FILE_NAME = "bottleneckd.report.json"
MAX_REPORT_BYTES = 4 * 1024 * 1024
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def write_report_file(where: SocketDir, doc: dict[str, Any]) -> None:
    """Replace the report atomically (the hook never reads half of one); raises OSError."""
    tmp = f".report.{secrets.token_hex(6)}"
    try:
        fd = os.open(where.at(tmp), _NEW, 0o600)
    except ChannelError as e:
        raise OSError(str(e)) from e
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
        os.replace(where.at(tmp), where.at(REPORT_FILE_NAME))
    except BaseException:
        try:
            os.unlink(where.at(tmp))
        except (OSError, ChannelError):
            pass
        raise


def read_report_file(socket_path: str, where: SocketDir | None = None) -> dict[str, Any] | None:
    """The last report of the sidecar listening at ``socket_path`` (read through ``where`` when
    the caller holds its directory), or None when there is none, it cannot be read or the
    directory is not to be trusted."""
    held = where
    try:
        if held is None:
            held = SocketDir.open(os.path.dirname(os.path.abspath(socket_path)))
        fd = os.open(held.at(REPORT_FILE_NAME), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (OSError, ChannelError):
        return None
    finally:
        if where is None and held is not None:
            held.close()
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            doc = json.loads(f.read(MAX_REPORT_BYTES + 1)[:MAX_REPORT_BYTES] or b"null")
    except (OSError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def remove_report_file(where: SocketDir | None) -> None:
    if where is None:
        return
    try:
        os.unlink(where.at(REPORT_FILE_NAME))
    except (OSError, ChannelError):
        pass
