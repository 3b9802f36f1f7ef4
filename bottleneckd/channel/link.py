"""The local channel from the torch hook to the sidecar: versioned JSON messages
(model/protocol.py) over a Unix datagram socket (its path: ``socket_path.py``).

The sender never blocks (MSG_DONTWAIT) and drops messages when no sidecar listens, its queue is
full or the socket's directory is not to be trusted: training is never slowed by us.

The receiver survives anything a local process can send: every datagram is parsed in isolation
and a bad one is counted (``received``, ``rejected``, ``unknown_version``), never raised; the
thread never dies. Step reports are accumulated per rank in a bounded table (``ranks.py``). The
socket lives in a directory only we can write, checked and then held by descriptor on both ends
(``socket_path.SocketDir``), is chmod 0600, is never bound over a live sidecar's socket or over a
file that is not a socket, and on close only our own socket (same inode) is unlinked.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import threading
import time
from collections import deque

from bottleneckd.channel.ranks import MAX_RANKS, RankTable, merge
from bottleneckd.channel.socket_path import ChannelError, SocketDir, default_socket_path, prepare_socket_path
from bottleneckd.model.protocol import (
    MAX_MESSAGE,
    Event,
    Message,
    ProtocolError,
    StepReport,
    UnknownVersion,
    decode,
    encode,
)
from bottleneckd.model.sample import RankPhases, StepPhases

__all__ = ["PhaseSender", "PhaseReceiver", "MAX_DATAGRAM", "MAX_RANKS"]

log = logging.getLogger(__name__)
MAX_DATAGRAM = MAX_MESSAGE
MAX_EVENTS = 256
#: seconds between two attempts to open an untrusted or missing socket directory: one open and
#: fstat, far from a training step's budget at this rate
RECHECK_SECONDS = 5.0


class PhaseSender:
    """Used by the hook. Lossy by design: never blocks, never raises. The socket's directory is
    checked and held open at the first send (and re-opened, checked again, when the socket is gone
    from it), so swapping the path for a link afterwards redirects nothing."""

    def __init__(self, path: str | None = None) -> None:
        self.path = os.path.abspath(path or default_socket_path())
        self._name = os.path.basename(self.path)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setblocking(False)
        self._dir: SocketDir | None = None
        self._checked = 0.0
        self.sent = 0
        self.dropped = 0
        self.untrusted = ""  # why the socket's directory is not trusted ("" when it is, or unchecked)

    def _held(self) -> SocketDir | None:
        """The socket's directory, held open once it passed the checks; re-tried at most every
        RECHECK_SECONDS while it fails."""
        if self._dir is not None:
            return self._dir
        now = time.monotonic()
        if self._checked and now - self._checked < RECHECK_SECONDS:
            return None
        self._checked = now
        try:
            self._dir = SocketDir.open(os.path.dirname(self.path))
        except ChannelError as e:
            why = str(e)
            if why != self.untrusted and not isinstance(e.__cause__, FileNotFoundError):
                log.warning("bottleneckd: not sending to %s: %s", self.path, why)
            self.untrusted = why
            return None
        self.untrusted = ""
        return self._dir

    def send(self, msg: Message) -> bool:
        try:
            held = self._held()
            if held is None:
                self.dropped += 1
                return False
            self._sock.sendto(encode(msg), held.at(self._name))
            self.sent += 1
            return True
        except OSError as e:  # no sidecar, queue full: drop
            if e.errno == errno.ENOENT and self._dir is not None and self._dir.removed():
                self._dir.close()  # the directory was removed (and may be made anew): checked again later
                self._dir, self._checked = None, time.monotonic()
            self.dropped += 1
            return False
        except (ValueError, ChannelError):  # message too big; the directory was replaced (no /proc)
            self.dropped += 1
            return False

    def report_dir(self) -> SocketDir | None:
        """The held directory (where the sidecar's report file is), or None."""
        return self._held()

    def close(self) -> None:
        self._sock.close()
        if self._dir is not None:
            self._dir.close()
            self._dir = None


class PhaseReceiver:
    """Used by the sidecar: accumulates each rank's step phases between drains. With
    ``listen=False`` there is no socket: the watcher's own sampling thread hands it messages
    through ``ingest``."""

    def __init__(self, path: str | None = None, listen: bool = True) -> None:
        self.path = path or default_socket_path()
        self._sock: socket.socket | None = None
        self._inode: tuple[int, int] | None = None
        self.dir: SocketDir | None = None  # the socket's directory, held open (None without a socket)
        self._name = os.path.basename(self.path)
        if listen:
            self.dir, at = prepare_socket_path(self.path)
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                self._sock.bind(at)
                os.chmod(at, 0o600)
                st = os.stat(at)
            except OSError as e:
                self._sock.close()
                self.dir.close()
                raise ChannelError(
                    f"{self.path}: cannot bind the channel socket ({e.strerror}); pass another --socket path"
                ) from e
            self._inode = (st.st_dev, st.st_ino)
            self._sock.settimeout(0.2)
        self._lock = threading.Lock()
        self._ranks = RankTable()
        self.received = 0
        self.rejected = 0
        self.unknown_version = 0
        self.facts_rejected = 0  # facts dropped from otherwise good reports
        self.last_error = ""
        self.events: deque[Event] = deque(maxlen=MAX_EVENTS)
        self.events_total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bottleneckd-channel", daemon=True)

    def start(self) -> PhaseReceiver:
        if self._sock is not None:
            self._thread.start()
        return self

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def counters(self) -> dict[str, int]:
        return {
            "received": self.received,
            "rejected": self.rejected,
            "unknown_version": self.unknown_version,
            "facts_rejected": self.facts_rejected,
            "ranks_dropped": self._ranks.dropped,
        }

    def _run(self) -> None:
        sock = self._sock
        assert sock is not None
        while not self._stop.is_set():
            try:
                data = sock.recv(MAX_DATAGRAM + 1)
            except TimeoutError:
                continue
            except OSError as e:
                if self._stop.is_set() or e.errno == errno.EBADF:
                    return
                log.warning("channel: receive failed (%s); going on", e)
                self._stop.wait(0.05)
                continue
            try:
                self.ingest(data)
            except Exception as e:  # noqa: BLE001 - one datagram never stops the channel
                self.rejected += 1
                self.last_error = f"internal: {type(e).__name__}"

    def ingest(self, data: bytes) -> None:
        """One datagram: accepted, or counted as rejected / unknown version. Never raises."""
        try:
            msg = decode(data)
        except UnknownVersion as e:
            self.unknown_version += 1
            self.last_error = str(e)
            return
        except ProtocolError as e:
            self.rejected += 1
            self.last_error = str(e)[:200]
            return
        self.accept(msg)

    def accept(self, msg: Message) -> None:
        with self._lock:
            self.received += 1
            if isinstance(msg, Event):
                self.events.append(msg)
                self.events_total += 1
                return
            assert isinstance(msg, StepReport)
            self.facts_rejected += msg.facts.rejected
            self._ranks.add(msg)

    def events_since(self, seen: int) -> tuple[list[Event], int]:
        """Events after the first ``seen`` ever received, and the new count (older ones that no
        longer fit the buffer are skipped, never repeated)."""
        with self._lock:
            new = min(self.events_total - seen, len(self.events))
            return (list(self.events)[len(self.events) - new :] if new > 0 else []), self.events_total

    def drain_ranks(self) -> tuple[StepPhases | None, tuple[RankPhases, ...]]:
        """The job's step phases since the last drain (phases and wall summed over ranks, so shares
        and per-step figures are means over ranks; facts of the lowest rank that reported) and each
        rank's own."""
        with self._lock:
            ranks = self._ranks.drain()
        job = merge(ranks)
        return job, tuple(ranks)

    def drain(self) -> StepPhases | None:
        """The job's merged step phases (see ``drain_ranks``; the per-rank view is dropped)."""
        return self.drain_ranks()[0]

    def close(self) -> None:
        self._stop.set()
        if self._sock is None:
            return
        if self._thread.is_alive():
            self._thread.join(timeout=1.0)  # wakes within its 0.2 s receive timeout
        self._sock.close()
        self._sock = None
        assert self.dir is not None
        try:
            at = self.dir.at(self._name)
            st = os.lstat(at)
            if (st.st_dev, st.st_ino) == self._inode:  # only our own socket, never a successor's
                os.unlink(at)
        except (OSError, ChannelError):
            pass
        self.dir.close()
