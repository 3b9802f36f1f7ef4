"""The one sampling loop: every sampler timed and isolated; one Sample per tick to each sink.

Sinks are named; they run in the order of ``SINK_ORDER`` whoever adds them (a trace line is
written before the diagnosis reads the sample, the view after it, the stop test last)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from bottleneckd.model.code import StackCounts
from bottleneckd.model.sample import RankPhases, Reading, Sample, SamplerStatus, StepPhases
from bottleneckd.samplers.base import Sampler

log = logging.getLogger(__name__)
Sink = Callable[[Sample], None]

MIN_INTERVAL = 0.1  # 10 Hz
#: where each named sink runs in a tick; names not listed run after these, in the order added
SINK_ORDER = ("trace", "trace_events", "pipeline", "report_file", "view", "stop")


class SamplingLoop:
    def __init__(
        self,
        samplers: list[Sampler],
        interval: float = 1.0,
        sinks: dict[str, Sink] | list[Sink] | None = None,
        phases: Callable[[], StepPhases | None | tuple[StepPhases | None, tuple[RankPhases, ...]]] | None = None,
        code: Callable[[], StackCounts | None] | None = None,
    ) -> None:
        if interval < MIN_INTERVAL:
            raise ValueError(f"interval {interval} s is below {MIN_INTERVAL} s (10 Hz)")
        self.samplers = samplers
        self.interval = interval
        self._sinks: dict[str, Sink] = {}
        for name, sink in (
            sinks.items() if isinstance(sinks, dict) else ((f"sink{k}", x) for k, x in enumerate(sinks or []))
        ):
            self.add_sink(name, sink)
        self._phases = phases
        self._code = code  # stack samples by the user's code (model/code.py), when stacks are sampled
        self._failed: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last = time.monotonic()
        self._tick_lock = threading.Lock()

    def add_sink(self, name: str, sink: Sink) -> None:
        """Add a sink under ``name``; it runs at the place SINK_ORDER gives that name."""
        if name in self._sinks:
            raise ValueError(f"sink {name!r} is already set")
        self._sinks[name] = sink
        rank = {n: k for k, n in enumerate(SINK_ORDER)}
        self._sinks = dict(sorted(self._sinks.items(), key=lambda kv: rank.get(kv[0], len(SINK_ORDER))))

    def remove_sink(self, name: str) -> None:
        self._sinks.pop(name, None)

    @property
    def sink_names(self) -> tuple[str, ...]:
        return tuple(self._sinks)

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
                self._failing(s.name, f"sampler {s.name}", e)
                statuses.append(SamplerStatus(s.name, False, time.perf_counter() - t0, f"{type(e).__name__}: {e}"))
        now = time.monotonic()
        got = None
        if self._phases:
            try:
                got = self._phases()
                self._failed.discard("phases")
            except Exception as e:  # noqa: BLE001 - the tick goes on without step phases (unknown, not zero)
                self._failing("phases", "step phases", e)
        phases, ranks = got if isinstance(got, tuple) else (got, ())  # the job's phases, and each rank's
        stacks = None
        if self._code:
            try:
                stacks = self._code()
                self._failed.discard("code")
            except Exception as e:  # noqa: BLE001 - the tick goes on without naming code
                self._failing("code", "stack samples", e)
        sample = Sample(time.time(), now - self._last, tuple(readings), phases, tuple(statuses), ranks, stacks)
        self._last = now
        for name, sink in list(self._sinks.items()):
            try:
                sink(sample)
                self._failed.discard(f"sink:{name}")
            except Exception as e:  # noqa: BLE001 - one failing sink must not stop the others
                self._failing(f"sink:{name}", f"sink {name}", e)
        return sample

    def _failing(self, key: str, what: str, e: Exception) -> None:
        """Log a failure once, with its traceback, until that part works again (not every tick)."""
        if key not in self._failed:
            log.warning("%s failed (%s: %s); skipped until it recovers", what, type(e).__name__, e, exc_info=e)
            self._failed.add(key)

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
