"""Which connections the exporter serves, so that /metrics answers a scrape whatever other
clients do (issue 25 item 3: 64 idle sockets gave 0 scrapes in 20,759; a client sending a header
line every 5 s held its connection forever; with mTLS, certificate-less clients reopening idle
sockets let 27 of ~16,600 scrapes through).

- One deadline per connection, from the moment it is accepted, for the TLS handshake and the whole
  request (``REQUEST_TIMEOUT``), then one for the whole reply: time between bytes does not reset it.
- A connection that has not sent its request ``STALE_AFTER`` seconds after it was accepted is
  stale: a scraper sends its request at once.
- When every slot is taken, a new connection evicts the oldest connection that has not sent its
  request, of the address holding the most such (stale ones first), and takes its slot: idle,
  slow and handshake-less clients cannot keep a scrape out, which sends its request at once.
- One address keeps at most ``MAX_STALE_PER_CLIENT`` stale connections: its oldest goes when it
  opens one more.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

#: seconds a client has, from its connection, to finish the TLS handshake and send its request;
#: Prometheus sends its request at once and its scrape timeout defaults to 10 s
REQUEST_TIMEOUT = 10.0
#: seconds for the whole reply (a /metrics page of a 64-rank node is about 200 kB)
RESPONSE_TIMEOUT = 30.0
#: connections served at once (a thread each)
MAX_CONNECTIONS = 64
#: a connection without a complete request this long after it was accepted is stale: measured on
#: this project's loaded 2-core VM, 50 concurrent scrapers all sent their requests within 0.3 s
STALE_AFTER = 1.0
#: stale connections one client address may hold
MAX_STALE_PER_CLIENT = 8
#: seconds the accepting thread waits for an evicted connection's thread to give its slot back
EVICT_WAIT = 2.0


@dataclass
class _Conn:
    ip: str
    accepted: float
    sock: Any  # the socket to shut down on eviction (the TLS socket once wrapped)
    answered: bool = False
    evicted: bool = field(default=False)


class Connections:
    """The open connections by file descriptor, under one lock; ``admit`` runs in the accepting
    thread, the rest in each connection's own."""

    def __init__(self, max_connections: int = MAX_CONNECTIONS) -> None:
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_connections)
        self._open: dict[int, _Conn] = {}
        self.evicted = 0
        self.refused = 0

    def _pending(self, now: float, ip: str | None = None, stale: bool = True) -> list[tuple[int, _Conn]]:
        """Connections without a complete request yet (only those older than STALE_AFTER if ``stale``)."""
        return [
            (fd, c)
            for fd, c in self._open.items()
            if not c.answered
            and not c.evicted
            and (not stale or now - c.accepted >= STALE_AFTER)
            and (ip is None or c.ip == ip)
        ]

    def _evict(self, fd: int, c: _Conn) -> None:
        c.evicted = True
        self.evicted += 1
        try:
            socket.socket.shutdown(c.sock, socket.SHUT_RDWR)  # its thread's read returns; it gives its slot back
        except OSError:
            pass
        log.debug("evicted a connection from %s that sent no request (fd %d)", c.ip, fd)

    def _victim(self, now: float) -> tuple[int, _Conn] | None:
        """The oldest waiting connection of the address with the most: stale ones first, then any
        that has not sent its request (a scraper's goes within milliseconds, and it is the newest)."""
        waiting = self._pending(now) or self._pending(now, stale=False)
        if not waiting:
            return None
        counts: dict[str, int] = {}
        for _, c in waiting:
            counts[c.ip] = counts.get(c.ip, 0) + 1
        worst = max(counts, key=lambda k: counts[k])
        return min((x for x in waiting if x[1].ip == worst), key=lambda x: x[1].accepted)

    def admit(self, sock: socket.socket, client_address: Any) -> bool:
        """True when the connection gets a slot (a stale one evicted for it if need be); False, and
        counted in ``refused``, when every slot serves a request."""
        ip = str(client_address[0]) if isinstance(client_address, tuple) else str(client_address)
        now = time.monotonic()
        with self._lock:
            mine = sorted(self._pending(now, ip), key=lambda x: x[1].accepted)
            for fd, c in mine[: max(0, len(mine) - MAX_STALE_PER_CLIENT + 1)]:  # room for this one
                self._evict(fd, c)
        if not self._slots.acquire(blocking=False):
            with self._lock:
                victim = self._victim(now)
                if victim is not None:
                    self._evict(*victim)
            if victim is None or not self._slots.acquire(timeout=EVICT_WAIT):
                self.refused += 1
                return False  # every slot serves a request: refuse rather than queue
        with self._lock:
            self._open[sock.fileno()] = _Conn(ip, now, sock)
        return True

    def deadline(self, sock: Any) -> float:
        """The monotonic time by which the connection's request must be read."""
        with self._lock:
            c = self._open.get(sock.fileno())
        return (c.accepted if c else time.monotonic()) + REQUEST_TIMEOUT

    def replace(self, sock: Any) -> None:
        """The connection on this descriptor is now ``sock`` (wrapped for TLS)."""
        with self._lock:
            c = self._open.get(sock.fileno())
            if c is not None:
                c.sock = sock

    def answered(self, sock: Any) -> None:
        with self._lock:
            c = self._open.get(sock.fileno())
            if c is not None:
                c.answered = True

    def release(self, sock: Any) -> None:
        """Before the socket is closed (its descriptor may be reused at once after)."""
        try:
            fd = sock.fileno()
        except OSError:
            return
        with self._lock:
            c = self._open.pop(fd, None)
        if c is not None:
            self._slots.release()

    def count(self) -> int:
        """The connections open now."""
        with self._lock:
            return len(self._open)
