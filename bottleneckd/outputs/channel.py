"""The local channel from the torch hook to the sidecar: JSON over a Unix datagram socket.

The sender never blocks (MSG_DONTWAIT) and drops messages when no sidecar listens or its queue
is full: training is never slowed by us. The socket lives in an owner-only directory and is
chmod 0600. Messages are JSON, never pickle.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import threading
from collections import deque
from typing import Any

from bottleneckd.model.sample import StepPhases

log = logging.getLogger(__name__)
MAX_DATAGRAM = 65536


def default_socket_path() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR") or os.path.join(tempfile.gettempdir(), f"bottleneckd-{os.getuid()}")
    return os.environ.get("BOTTLENECKD_SOCKET") or os.path.join(base, "bottleneckd.sock")


class EventLog(deque):
    """A bounded deque of events that counts every append: position ``appended - len`` is the
    sequence number of its oldest entry, so a reader can ask what came after one it has seen."""

    def __init__(self, maxlen: int) -> None:
        super().__init__(maxlen=maxlen)
        self.appended = 0

    def append(self, item: Any) -> None:
        super().append(item)
        self.appended += 1


class PhaseSender:
    """Used by the hook. Lossy by design."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or default_socket_path()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setblocking(False)
        self.sent = 0
        self.dropped = 0

    def send(self, doc: dict[str, Any]) -> bool:
        try:
            self._sock.sendto(json.dumps(doc, separators=(",", ":")).encode(), self.path)
            self.sent += 1
            return True
        except OSError:  # no sidecar, queue full, message too big: drop
            self.dropped += 1
            return False

    def close(self) -> None:
        self._sock.close()


class PhaseReceiver:
    """Used by the sidecar: accumulates step phases between drains. With ``listen=False`` there is
    no socket: the watcher's own sampling thread hands it messages through ``ingest``."""

    def __init__(self, path: str | None = None, listen: bool = True) -> None:
        self.path = path or default_socket_path()
        self._sock: socket.socket | None = None
        if listen:
            d = os.path.dirname(self.path)
            os.makedirs(d, mode=0o700, exist_ok=True)
            if os.path.exists(self.path):
                os.unlink(self.path)
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._sock.bind(self.path)
            os.chmod(self.path, 0o600)
            self._sock.settimeout(0.2)
        self._lock = threading.Lock()
        self._steps = 0
        self._wall = 0.0
        self._phases: dict[str, float] = {}
        self._facts: dict[str, Any] = {}
        self.received = 0
        self.rejected = 0
        self.events: EventLog = EventLog(maxlen=256)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bottleneckd-channel", daemon=True)

    def start(self) -> "PhaseReceiver":
        if self._sock is not None:
            self._thread.start()
        return self

    def _run(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                data = self._sock.recv(MAX_DATAGRAM)
            except socket.timeout:
                continue
            except OSError:
                return
            self.ingest(data)

    def ingest(self, data: bytes) -> None:
        try:
            d = json.loads(data)
            if isinstance(d, dict) and "event" in d:
                with self._lock:
                    self.events.append({"event": str(d["event"]), "name": str(d.get("name", "")), "t": float(d.get("t", 0.0)),
                                        "changes_semantics": bool(d.get("changes_semantics", False)), "note": str(d.get("note", ""))})
                    self.received += 1
                return
            steps = int(d["steps"])
            wall = float(d["wall"])
            phases = {str(k): float(v) for k, v in d["phases"].items()}
            facts = dict(d.get("facts", {}))
        except (ValueError, KeyError, TypeError, AttributeError):
            self.rejected += 1
            return
        with self._lock:
            self.received += 1
            self._steps += steps
            self._wall += wall
            for k, v in phases.items():
                self._phases[k] = self._phases.get(k, 0.0) + v
            self._facts.update(facts)

    def events_since(self, seq: int) -> tuple[list[Any], int, int]:
        """Events after sequence number ``seq`` (0: from the start), the number to pass next
        time, and how many were lost in between because the log was full."""
        with self._lock:
            first = self.events.appended - len(self.events)
            new = list(self.events)[max(0, seq - first):]
            return new, self.events.appended, max(0, first - seq)

    def drain(self) -> StepPhases | None:
        with self._lock:
            if not self._steps:
                return None
            out = StepPhases(self._steps, self._wall, dict(self._phases), dict(self._facts))
            self._steps, self._wall, self._phases = 0, 0.0, {}
            return out

    def close(self) -> None:
        self._stop.set()
        if self._sock is None:
            return
        self._sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass
