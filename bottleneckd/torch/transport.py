"""Where the watcher's messages go: a sidecar listening on the local socket, or the in-process
sidecar (``torch/local.py``) when none listens. Either way the messages are the versioned types of
``model/protocol.py`` (``StepReport`` with the rank's identity and its whole fact state, ``Event``),
and the epoch-end report comes back through ``report()``.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Protocol

from bottleneckd.channel.link import PhaseSender
from bottleneckd.channel.report_file import read_report_file
from bottleneckd.channel.socket_path import default_socket_path
from bottleneckd.model.protocol import Message

log = logging.getLogger("bottleneckd.torch")


class Transport(Protocol):
    @property
    def sent(self) -> int: ...

    @property
    def dropped(self) -> int: ...

    def send(self, msg: Message) -> None: ...

    def report(self) -> dict[str, Any] | None: ...

    def close(self) -> None: ...


class SocketTransport:
    """Datagrams to a sidecar (``bottleneckd run`` / ``serve``); lossy by design. The epoch report is
    the one the sidecar keeps next to its socket."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._sender = PhaseSender(path)

    @property
    def sent(self) -> int:
        return self._sender.sent

    @property
    def dropped(self) -> int:
        return self._sender.dropped

    def send(self, msg: Message) -> None:
        self._sender.send(msg)

    def report(self) -> dict[str, Any] | None:
        return read_report_file(self.path, self._sender.report_dir())

    def close(self) -> None:
        self._sender.close()


class LocalTransport:
    """The in-process sidecar (a sampling thread of the training process): messages go straight to
    its receiver; nothing is sent on a socket."""

    def __init__(self, pid: int, interval: float) -> None:
        from bottleneckd.torch.local import LocalSidecar

        self._local = LocalSidecar(pid, interval)
        self.sent = 0
        self.dropped = 0

    @property
    def receiver(self) -> Any:
        return self._local.receiver

    def send(self, msg: Message) -> None:
        self._local.receiver.accept(msg)
        self.sent += 1

    def report(self) -> dict[str, Any] | None:
        return self._local.report()

    def close(self) -> None:
        self._local.stop()


def make_transport(socket_path: str | None, local_sampling: bool | None, interval: float) -> Transport:
    """The local sidecar when asked for (or, by default, when no socket exists at the path)."""
    path = socket_path or default_socket_path()
    if local_sampling is None:
        local_sampling = not os.path.exists(path)
    if local_sampling:
        try:
            return LocalTransport(os.getpid(), interval)
        except Exception as e:  # noqa: BLE001 - no local sampling: still send to the socket
            log.warning("bottleneckd: local sampling unavailable (%s)", e)
    return SocketTransport(path)


def read_sidecar_report(sock_path: str) -> dict[str, Any] | None:
    """The sidecar's report file, named and read in one module (channel/report_file.py)."""
    return read_report_file(sock_path)


__all__ = [
    "Transport",
    "SocketTransport",
    "LocalTransport",
    "make_transport",
    "read_sidecar_report",
]
