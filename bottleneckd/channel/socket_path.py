"""Where the channel's socket may live, checked rather than assumed (issue 16 item 6, issue 25 item 1).

The directory must be ours (or root's) and writable by nobody else: at a predictable path under
/tmp another user could otherwise create it first, replace our socket and receive the hook's
messages. It must not be a symbolic link (checked with ``lstat``, opened with ``O_NOFOLLOW``):
another user can make ``/tmp/bottleneckd-0`` a link to a root-owned directory, which passes the
owner check, and later swap it for a link to their own. Both ends therefore hold the directory by
descriptor once it is checked (``SocketDir``): the socket is bound, sent to and unlinked, and the
report file written and removed, through ``/proc/self/fd/N/``, so renaming or relinking the path
afterwards redirects nothing. Where /proc is not mounted the path is re-checked against the held
directory (same device and inode, still no link) at every use.

A path that holds anything but a socket is never replaced; a socket someone listens on is never
taken over; a stale socket of ours (its sidecar gone) is. The default directory is
``$XDG_RUNTIME_DIR`` (per user, 0700, made by the login manager) and only without it
``$TMPDIR/bottleneckd-<uid>``.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import tempfile

from bottleneckd.model.errors import InputError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class ChannelError(InputError):
    """The socket cannot be used safely: one line naming the path and the fix (exit code 2)."""


def default_socket_path() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR") or os.path.join(tempfile.gettempdir(), f"bottleneckd-{os.getuid()}")
    return os.environ.get("BOTTLENECKD_SOCKET") or os.path.join(base, "bottleneckd.sock")


def _unsafe_mode(st: os.stat_result) -> str | None:
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid not in (os.geteuid(), 0):
        return f"it is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return (
            f"it is writable by {'others' if st.st_mode & 0o002 else 'its group'} (mode {stat.S_IMODE(st.st_mode):04o})"
        )
    return None


def _link_problem(d: str) -> str:
    try:
        target = os.readlink(d)
    except OSError:
        target = "?"
    return f"it is a symbolic link (to {target}), which another user could redirect"


def untrusted_dir(d: str) -> str | None:
    """Why the directory ``d`` is unsafe for our socket (a symbolic link, owned by another user,
    or writable by group or others), or None when it is ours alone (or root's)."""
    try:
        st = os.lstat(d)
    except OSError as e:
        return f"cannot stat it ({e.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return _link_problem(d)
    return _unsafe_mode(st)


class SocketDir:
    """The socket's directory, checked once and held open: ``at(name)`` is the path of ``name``
    inside *that* directory for bind, connect, sendto, open and unlink, whatever the directory's
    path names later."""

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self.fd = fd
        st = os.fstat(fd)
        self._inode = (st.st_dev, st.st_ino)
        self._proc = f"/proc/self/fd/{fd}"
        self._via_proc = os.path.isdir(self._proc) and os.stat(self._proc).st_ino == st.st_ino

    @staticmethod
    def open(d: str, create: bool = False) -> SocketDir:
        """The directory ``d`` held open, after the checks of ``untrusted_dir`` on what was
        opened (not on what the path names by then); ``create`` makes it (mode 0700) when missing.
        Raises ChannelError naming the problem and the fix."""
        d = os.path.abspath(d)
        if create:
            try:
                os.mkdir(d, 0o700)
            except FileExistsError:
                pass
            except OSError as e:
                raise ChannelError(
                    f"{d}: cannot create the socket directory ({e.strerror}); pass --socket in a directory you own"
                ) from e
        try:
            fd = os.open(d, _DIR_FLAGS)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(d):
                why = _link_problem(d)
            elif e.errno == errno.ENOTDIR:
                why = "it is not a directory"
            else:
                raise ChannelError(f"{d}: cannot open the socket directory ({e.strerror})") from e
            raise ChannelError(_refusal(d, why)) from e
        unsafe = _unsafe_mode(os.fstat(fd))
        if unsafe is not None:
            os.close(fd)
            raise ChannelError(_refusal(d, unsafe))
        return SocketDir(d, fd)

    def at(self, name: str) -> str:
        """Where ``name`` in the held directory is reached. Without /proc, the path itself once it
        is checked to still name the held directory; ChannelError when it no longer does."""
        if self._via_proc:
            return f"{self._proc}/{name}"
        try:
            st = os.lstat(self.path)
        except OSError as e:
            raise ChannelError(f"{self.path}: the socket directory is gone ({e.strerror})") from e
        if stat.S_ISLNK(st.st_mode) or (st.st_dev, st.st_ino) != self._inode:
            raise ChannelError(f"{self.path}: the socket directory was replaced since it was checked")
        return os.path.join(self.path, name)

    def removed(self) -> bool:
        """Whether the held directory was removed (no name links to it any more)."""
        try:
            return self.fd < 0 or os.fstat(self.fd).st_nlink == 0
        except OSError:
            return True

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _refusal(d: str, why: str) -> str:
    return (
        f"{d}: unsafe directory for the channel socket: {why}; another user could take over the socket. "
        f"Remove it (it is recreated with mode 0700) or pass --socket in a directory only you can write"
    )


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


def prepare_socket_path(path: str) -> tuple[SocketDir, str]:
    """The socket's directory held open (created if missing) and the path to bind in it, ready
    (a stale socket of ours removed); or ChannelError naming the problem and the fix."""
    d, name = os.path.split(os.path.abspath(path))
    parent = os.path.dirname(d)
    if not os.path.isdir(parent):
        try:
            os.makedirs(parent, mode=0o700, exist_ok=True)
        except OSError as e:
            raise ChannelError(
                f"{d}: cannot create the socket directory ({e.strerror}); pass --socket in a directory you own"
            ) from e
    held = SocketDir.open(d, create=True)
    try:
        at = held.at(name)
        try:
            st = os.lstat(at)
        except FileNotFoundError:
            return held, at
        if not stat.S_ISSOCK(st.st_mode):
            raise ChannelError(
                f"{path}: exists and is not a socket; refusing to replace it: pass another --socket path"
            )
        if is_live(at):
            raise ChannelError(
                f"{path}: another bottleneckd sidecar is listening on this socket; stop it or pass another "
                "--socket path"
            )
        if st.st_uid != os.geteuid():
            raise ChannelError(
                f"{path}: a stale socket owned by uid {st.st_uid}; remove it or pass another --socket path"
            )
        os.unlink(at)  # a stale socket of ours: its sidecar is gone
        return held, at
    except BaseException:
        held.close()
        raise
