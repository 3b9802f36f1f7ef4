"""Shared by the labelled workloads: a timed training loop that reports its throughput."""

from __future__ import annotations

import time
from typing import Callable, Iterable


def train(step: Callable[[object], None], batches: Callable[[], Iterable], seconds: float) -> None:
    """Run epochs of ``batches()`` until ``seconds`` have passed; print steps per second."""
    t0 = time.perf_counter()
    steps = 0
    while time.perf_counter() - t0 < seconds:
        for b in batches():
            step(b)
            steps += 1
            if time.perf_counter() - t0 >= seconds:
                break
    dt = time.perf_counter() - t0
    print(f"throughput: {steps / dt:.3f} steps/s ({steps} steps in {dt:.1f} s)", flush=True)
