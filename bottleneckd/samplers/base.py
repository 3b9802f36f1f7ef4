"""What a sampler is, and the rate helper the counter-based ones share."""

from __future__ import annotations

import time
from typing import Protocol

from bottleneckd.model.sample import Reading


class Sampler(Protocol):
    name: str

    def available(self) -> tuple[bool, str]:
        """(True, "") or (False, why): a sampler that cannot work here yields nothing."""
        ...

    def sample(self) -> list[Reading]: ...


class Rates:
    """Turns cumulative counters into per-second rates over the real elapsed time."""

    def __init__(self) -> None:
        self._prev: dict[str, tuple[float, float]] = {}

    def rate(self, key: str, counter: float | None, now: float | None = None) -> float | None:
        if counter is None:
            return None
        now = time.monotonic() if now is None else now
        prev = self._prev.get(key)
        self._prev[key] = (now, counter)
        if prev is None or now <= prev[0] or counter < prev[1]:  # first read, or counter reset
            return None
        return (counter - prev[1]) / (now - prev[0])
