"""The local channel from the torch hook to the sidecar: versioned JSON messages
(model/protocol.py) over a Unix datagram socket (its path: ``socket_path.py``).

The sender never blocks (MSG_DONTWAIT) and drops messages when no sidecar listens, its queue is
full or the socket's directory is not to be trusted: training is never slowed by us.

The receiver survives anything a local process can send: every datagram is parsed in isolation
and a bad one is counted (``received``, ``rejected``, ``unknown_version``), never raised; the
thread never dies. Step reports are accumulated per rank (``RankIdentity.key``); a rank's facts
are *replaced* by each report (what the hook unset is gone). The socket lives in a directory only
we can write (checked, not assumed), is chmod 0600, is never bound over a live sidecar's socket or
over a file that is not a socket, and on close only our own socket (same inode) is unlinked.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from bottleneckd.channel.socket_path import ChannelError, default_socket_path, prepare_socket_path, untrusted_dir
from bottleneckd.model.facts import Facts
from bottleneckd.model.identity import RankIdentity
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
MAX_RANKS = 4096  # ranks tracked at once; the least recently heard is forgotten beyond this
MAX_EVENTS = 256


class PhaseSender:
    """Used by the hook. Lossy by design: never blocks, never raises."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or default_socket_path()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setblocking(False)
        self._trusted = False
        self._checked = 0.0
        self.sent = 0
        self.dropped = 0
        self.untrusted = ""  # why the socket's directory is not trusted ("" when it is, or unchecked)

    def _trust(self) -> bool:
        """Send only into a directory of ours: another user's directory at the default path could
        hold their socket. Checked once, re-checked at most every 5 s while it fails."""
        if self._trusted:
            return True
        now = time.monotonic()
        if now - self._checked < 5.0 and self._checked:
            return False
        self._checked = now
        why = untrusted_dir(os.path.dirname(os.path.abspath(self.path)))
        self._trusted = why is None
        if why is not None and why != self.untrusted and not why.startswith("cannot stat"):
            log.warning("bottleneckd: not sending to %s: %s", self.path, why)
        self.untrusted = why or ""
        return self._trusted

    def send(self, msg: Message) -> bool:
        try:
            if not self._trust():
                self.dropped += 1
                return False
            self._sock.sendto(encode(msg), self.path)
            self.sent += 1
            return True
        except (OSError, ValueError):  # no sidecar, queue full, message too big: drop
            self.dropped += 1
            return False

    def close(self) -> None:
        self._sock.close()


@dataclass
class _Rank:
    identity: RankIdentity
    facts: Facts
    steps: int = 0
    wall: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    examples: int | None = 0  # None once a report came without an example count


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


class PhaseReceiver:
    """Used by the sidecar: accumulates each rank's step phases between drains. With
    ``listen=False`` there is no socket: the watcher's own sampling thread hands it messages
    through ``ingest``."""

    def __init__(self, path: str | None = None, listen: bool = True) -> None:
        self.path = path or default_socket_path()
        self._sock: socket.socket | None = None
        self._inode: tuple[int, int] | None = None
        if listen:
            prepare_socket_path(self.path)
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                self._sock.bind(self.path)
            except OSError as e:
                self._sock.close()
                raise ChannelError(
                    f"{self.path}: cannot bind the channel socket ({e.strerror}); pass another --socket path"
                ) from e
            os.chmod(self.path, 0o600)
            st = os.stat(self.path)
            self._inode = (st.st_dev, st.st_ino)
            self._sock.settimeout(0.2)
        self._lock = threading.Lock()
        self._ranks: dict[str, _Rank] = {}
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
            key = msg.identity.key
            r = self._ranks.pop(key, None)  # re-inserted last: the dict stays in order of last report
            if r is None:
                if len(self._ranks) >= MAX_RANKS:
                    self._ranks.pop(next(iter(self._ranks)))
                r = _Rank(msg.identity, msg.facts)
            self._ranks[key] = r
            r.identity, r.facts = msg.identity, msg.facts  # the whole fact state: replaced, not merged
            r.steps += msg.steps
            r.wall += msg.wall_seconds
            r.examples = _add(r.examples, msg.examples)
            for k, v in msg.phases.items():
                r.phases[k] = r.phases.get(k, 0.0) + v

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
            ranks = []
            for r in self._ranks.values():
                if r.steps:
                    ranks.append(
                        RankPhases(r.identity, StepPhases(r.steps, r.wall, dict(r.phases), r.facts, r.examples))
                    )
                    r.steps, r.wall, r.phases, r.examples = 0, 0.0, {}, 0
        if not ranks:
            return None, ()
        ranks.sort(key=lambda rp: (rp.identity.rank, rp.identity.key))
        phases: dict[str, float] = {}
        for rp in ranks:
            for k, v in rp.phases.phases.items():
                phases[k] = phases.get(k, 0.0) + v
        examples: int | None = 0
        for rp in ranks:
            examples = _add(examples, rp.phases.examples)
        job = StepPhases(
            sum(rp.phases.steps for rp in ranks),
            sum(rp.phases.wall_seconds for rp in ranks),
            phases,
            ranks[0].phases.facts,
            examples,
        )
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
        try:
            st = os.lstat(self.path)
            if (st.st_dev, st.st_ino) == self._inode:  # only our own socket, never a successor's
                os.unlink(self.path)
        except OSError:
            pass
