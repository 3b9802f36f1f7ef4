"""Where the channel's socket may live, checked rather than assumed (issue 16 item 6).

The directory must be ours (or root's) and writable by nobody else: at a predictable path under
/tmp another user could otherwise create it first, replace our socket and receive the hook's
messages. A path that holds anything but a socket is never replaced; a socket someone listens
on is never taken over; a stale socket of ours (its sidecar gone) is.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import tempfile

from bottleneckd.model.errors import InputError


class ChannelError(InputError):
    """The socket cannot be used safely: one line naming the path and the fix (exit code 2)."""


def default_socket_path() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR") or os.path.join(tempfile.gettempdir(), f"bottleneckd-{os.getuid()}")
    return os.environ.get("BOTTLENECKD_SOCKET") or os.path.join(base, "bottleneckd.sock")


def untrusted_dir(d: str) -> str | None:
    """Why the directory ``d`` is unsafe for our socket (owned by another user, or writable by
    group or others), or None when it is ours alone (or root's)."""
    try:
        st = os.stat(d)
    except OSError as e:
        return f"cannot stat it ({e.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid not in (os.geteuid(), 0):
        return f"it is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return (
            f"it is writable by {'others' if st.st_mode & 0o002 else 'its group'} (mode {stat.S_IMODE(st.st_mode):04o})"
        )
    return None


def is_live(path: str) -> bool:
    """Whether a process is bound to the datagram socket at ``path``."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        probe.connect(path)
        return True
    except OSError as e:
        return e.errno not in (errno.ECONNREFUSED, errno.ENOENT)
    finally:
        probe.close()


def prepare_socket_path(path: str) -> None:
    """Make ``path`` ready to bind, or raise ChannelError naming the problem and the fix."""
    d = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
    except OSError as e:
        raise ChannelError(
            f"{d}: cannot create the socket directory ({e.strerror}); pass --socket in a directory you own"
        ) from e
    why = untrusted_dir(d)
    if why is not None:
        raise ChannelError(
            f"{d}: unsafe directory for the channel socket: {why}; another user could take over the socket. "
            f"Remove it (it is recreated with mode 0700) or pass --socket in a directory only you can write"
        )
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise ChannelError(f"{path}: exists and is not a socket; refusing to replace it: pass another --socket path")
    if is_live(path):
        raise ChannelError(
            f"{path}: another bottleneckd sidecar is listening on this socket; stop it or pass another --socket path"
        )
    if st.st_uid != os.geteuid():
        raise ChannelError(f"{path}: a stale socket owned by uid {st.st_uid}; remove it or pass another --socket path")
    os.unlink(path)  # a stale socket of ours: its sidecar is gone


def node_sidecar_socket() -> str | None:
    """A ``bottleneckd serve`` already receiving on this node (bound to the default socket, in a
    directory only this user can write): a job's ranks report to it, not to a second sidecar."""
    path = default_socket_path()
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if (
        not stat.S_ISSOCK(st.st_mode)
        or st.st_uid != os.geteuid()
        or untrusted_dir(os.path.dirname(os.path.abspath(path)))
    ):
        return None
    return path if is_live(path) else None
