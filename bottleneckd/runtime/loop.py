"""The one sampling loop: every sampler timed and isolated; one Sample per tick, handed to the run
(runtime/run.py) that diagnoses it and feeds its sinks."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from bottleneckd.model.code import StackCounts
from bottleneckd.model.sample import RankPhases, Reading, Sample, SamplerStatus, StepPhases
from bottleneckd.runtime.sinks import failing
from bottleneckd.samplers.base import Sampler

MIN_INTERVAL = 0.1  # 10 Hz
#: the job's step phases since the last tick, and each rank's (empty for one process)
PhaseSource = Callable[[], tuple[StepPhases | None, tuple[RankPhases, ...]]]


class SamplingLoop:
    def __init__(
        self,
        samplers: list[Sampler],
        interval: float = 1.0,
        consumer: Callable[[Sample], object] | None = None,
        phases: PhaseSource | None = None,
        code: Callable[[], StackCounts | None] | None = None,
    ) -> None:
        if interval < MIN_INTERVAL:
            raise ValueError(f"interval {interval} s is below {MIN_INTERVAL} s (10 Hz)")
        self.samplers = samplers
        self.interval = interval
        self._consumer = consumer
        self._phases = phases
        self._code = code  # stack samples by the user's code (model/code.py), when stacks are sampled
        self._failed: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last = time.monotonic()
        self._tick_lock = threading.Lock()

    def tick(self) -> Sample:
        """One sample through every sampler and sink (thread-safe: ticks never interleave)."""
        with self._tick_lock:
            return self._tick()

    def _tick(self) -> Sample:
        readings: list[Reading] = []
        statuses = []
        for s in self.samplers:
            t0 = time.perf_counter()
            try:
                got = s.sample()
                readings += got
                statuses.append(SamplerStatus(s.name, True, time.perf_counter() - t0))
                self._failed.discard(s.name)
            except Exception as e:  # noqa: BLE001 - one failing sampler must not stop the others
                failing(self._failed, s.name, f"sampler {s.name}", e)
                statuses.append(SamplerStatus(s.name, False, time.perf_counter() - t0, f"{type(e).__name__}: {e}"))
        now = time.monotonic()
        phases: StepPhases | None = None
        ranks: tuple[RankPhases, ...] = ()
        if self._phases:
            try:
                phases, ranks = self._phases()  # the job's phases, and each rank's
                self._failed.discard("phases")
            except Exception as e:  # noqa: BLE001 - the tick goes on without step phases (unknown, not zero)
                failing(self._failed, "phases", "step phases", e)
        stacks = None
        if self._code:
            try:
                stacks = self._code()
                self._failed.discard("code")
            except Exception as e:  # noqa: BLE001 - the tick goes on without naming code
                failing(self._failed, "code", "stack samples", e)
        sample = Sample(time.time(), now - self._last, tuple(readings), phases, tuple(statuses), ranks, stacks)
        self._last = now
        if self._consumer is not None:
            self._consumer(sample)  # the run isolates its own stages and sinks
        return sample

    def run(self, duration: float | None = None) -> None:
        """Tick at a fixed rate until stop() (or ``duration`` seconds)."""
        start = time.monotonic()
        next_t = start + self.interval
        self._last = start
        while not self._stop.is_set():
            if self._stop.wait(max(0.0, next_t - time.monotonic())):
                break
            self.tick()
            next_t += self.interval
            if next_t < time.monotonic():  # fell behind: skip, do not burst
                next_t = time.monotonic() + self.interval
            if duration is not None and time.monotonic() - start >= duration:
                break

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="bottleneckd-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
