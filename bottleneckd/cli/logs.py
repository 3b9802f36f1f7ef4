"""Logging for every command: ``--log-level`` and ``--log-format text|json`` (one JSON object a
line, for log collectors: Loki, Fluent Bit, Vector, Cloud Logging). With JSON the commands' own
status lines (``say``) are log records too, so stderr holds nothing a collector cannot parse but
the final report (which ``--report-json`` writes as JSON)."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "json")
#: the commands' status lines (serving on ..., joined the node's sidecar ...) go to this logger
STATUS = logging.getLogger("bottleneckd.status")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False)


_json = False


def configure(level: str = "warning", fmt: str = "text", debug: bool = False) -> None:
    global _json
    _json = fmt == "json"
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if _json else logging.Formatter("bottleneckd: %(levelname)s: %(message)s"))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else getattr(logging, level.upper()))
    STATUS.setLevel(logging.INFO)  # status lines show at every level, as they did before --log-level


def json_lines() -> bool:
    """True when ``--log-format json`` is in effect (status lines go out as log records)."""
    return _json
