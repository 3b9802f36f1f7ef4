"""Energy per step and per example, from the cumulative energy readings of a sample stream.

GPU energy is NVML's total-energy counter (samplers/gpu.py), CPU package and DRAM energy RAPL's
(samplers/energy.py). Energy is taken over spans of at least ``MIN_SPAN`` seconds (NVML updates
its counter too coarsely for shorter ones) and divided by the steps and examples the torch hook
reported in the same span (a step of a job with several ranks is one step of each rank; its
examples are every rank's). A counter that goes backwards (driver reload) loses that span for that
source, never counts negative. Live samples and recorded traces go through this same meter; the
exporter reads its counters, the reports its account.

GPU energy is the job's GPUs' only (model/job_gpus.py: the GPUs its ranks name, else NVML's
process lists), not every GPU of a shared node; where they are not known every GPU is counted and
the account says so (``gpu_scope``). A CPU job on a GPU node counts no GPU energy.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bottleneckd.model.job_gpus import JobGpus, job_gpus
from bottleneckd.model.resources import Resource
from bottleneckd.model.sample import RankPhases, Sample, StepPhases

MIN_SPAN = 0.1  # seconds: NVML's energy counter is not meaningful over shorter windows
#: resource an energy reading is booked to -> the energy domain it measures
DOMAINS = {Resource.GPU_COMPUTE: "gpu", Resource.CPU_COMPUTE: "cpu_package", Resource.CPU_MEMORY: "dram"}
JOULES_PER_KWH = 3.6e6


@dataclass(frozen=True)
class EnergyPoint:
    """One span: its end time, length, the energy of every known source, and the hook's steps in it."""

    t: float
    seconds: float
    joules: float
    steps: int
    examples: int | None


@dataclass(frozen=True)
class EnergyAccount:
    joules: dict[str, float]  # "domain:device" -> joules over the measured spans
    unknown: dict[str, str]  # "domain:device" -> why its energy is unknown
    seconds: float
    training_joules: float  # in spans in which the hook reported steps
    steps: int
    examples: int | None  # None when some training span had no example count
    points: tuple[EnergyPoint, ...] = field(default=())
    gpu_scope: str = ""  # which GPUs' energy is counted, and how they were found

    @property
    def known(self) -> bool:
        return bool(self.joules)

    @property
    def per_step(self) -> float | None:
        return self.training_joules / self.steps if self.known and self.steps else None

    @property
    def per_example(self) -> float | None:
        return self.training_joules / self.examples if self.known and self.examples else None

    def why_per_step_unknown(self) -> str:
        if not self.known:
            return "no energy counter readable: " + (
                "; ".join(f"{k}: {v}" for k, v in self.unknown.items()) or "no energy readings in the samples"
            )
        if not self.steps:
            return "no training steps reported by the torch hook while energy was measured"
        return ""

    def why_per_example_unknown(self) -> str:
        return self.why_per_step_unknown() or (
            "" if self.examples else "the torch hook did not report examples per interval"
        )

    def carbon_grams(self, grams_per_kwh: float | None, training: bool = False) -> float | None:
        if grams_per_kwh is None or not self.known:
            return None
        return (self.training_joules if training else sum(self.joules.values())) / JOULES_PER_KWH * grams_per_kwh

    def to_json(self, grams_per_kwh: float | None = None) -> dict[str, Any]:
        per_ex = self.per_example
        return {
            "joules": {k: round(v, 3) for k, v in sorted(self.joules.items())},
            "gpu_scope": self.gpu_scope,
            "unknown": dict(self.unknown),
            "measured_seconds": round(self.seconds, 3),
            "training_joules": round(self.training_joules, 3) if self.known else None,
            "steps": self.steps,
            "examples": self.examples,
            "joules_per_step": None if self.per_step is None else round(self.per_step, 6),
            "joules_per_step_unknown": self.why_per_step_unknown(),
            "joules_per_example": None if per_ex is None else round(per_ex, 9),
            "joules_per_example_unknown": self.why_per_example_unknown(),
            "grid_intensity_g_per_kwh": grams_per_kwh,
            "carbon_grams": self.carbon_grams(grams_per_kwh),
            "training_carbon_grams": self.carbon_grams(grams_per_kwh, training=True),
            "carbon_unknown": ""
            if grams_per_kwh is not None
            else "no grid intensity given (--grid-intensity gCO2/kWh)",
        }


def _scope(sample: Sample, uuid_of: dict[str, str], last: JobGpus | None) -> JobGpus | None:
    """The job's GPUs as this sample tells (the ranks' UUIDs, the process lists), else the last answer."""
    devs = sorted({r.device for r in sample.readings if r.resource == Resource.GPU_COMPUTE})
    if not devs:
        return last
    if sample.ranks:
        named = {r.identity.rank: [r.identity.gpu, *(r.phases.facts.get("cuda_uuids") or ())] for r in sample.ranks}
    elif sample.phases is not None:
        named = {0: list(sample.phases.facts.get("cuda_uuids") or ())}
    else:
        named = {}
    device = str((sample.phases.facts.get("device") if sample.phases is not None else None) or "")
    seen = {
        r.device: r.value
        for r in sample.readings
        if r.resource == Resource.GPU_COMPUTE and r.metric == "job_process" and r.value is not None
    }
    got = job_gpus(devs, uuid_of, named, seen, device)
    return last if not got.known and last is not None and last.known else got


def _energy(sample: Sample, scope: JobGpus | None) -> tuple[dict[str, float], dict[str, str]]:
    known, unknown = {}, {}
    mine = None if scope is None or not scope.known else set(scope.devices)
    for r in sample.readings:
        if r.metric != "energy" or r.unit != "J" or r.resource not in DOMAINS:
            continue
        if r.resource == Resource.GPU_COMPUTE and mine is not None and r.device not in mine:
            continue  # another tenant's GPU (or a CPU job's node): not the job's energy
        key = f"{DOMAINS[r.resource]}:{r.device}"
        if r.value is None:
            unknown[key] = r.note or "unknown"
        else:
            known[key] = r.value
    return known, unknown


def job_steps_of(phases: StepPhases, ranks: tuple[RankPhases, ...] = ()) -> int:
    """The job's training steps in an interval: with several ranks the job's phases add up every
    rank's steps, and one step of the job is a step on each rank, so their mean."""
    if ranks:
        return round(sum(r.phases.steps for r in ranks) / len(ranks))
    return phases.steps


def job_steps(sample: Sample) -> int:
    """The job's steps in a sample with phases (one step on eight ranks is one step)."""
    assert sample.phases is not None
    return job_steps_of(sample.phases, sample.ranks)


class EnergyMeter:
    """A sink: feed it every sample in order; ``account()`` says what was measured so far."""

    def __init__(self, max_points: int = 20000, gpu_uuids: dict[str, str] | None = None) -> None:
        """``gpu_uuids``: GPU unit -> NVML UUID (``PeakTable.gpu_uuids()``), to match the GPUs the
        ranks name; without it only NVML's process lists tell the job's GPUs."""
        self._uuid_of = dict(gpu_uuids or {})
        self._scope: JobGpus | None = None
        self._lock = threading.Lock()
        self._start: tuple[float, dict[str, float]] | None = None
        self._steps = 0
        self._examples: int | None = 0
        self._joules: dict[str, float] = {}
        self._unknown: dict[str, str] = {}
        self._seconds = 0.0
        self._training = 0.0
        self._total_steps = 0
        self._total_examples: int | None = 0
        self._points: deque[EnergyPoint] = deque(maxlen=max_points)

    def __call__(self, sample: Sample) -> None:
        with self._lock:
            self._scope = _scope(sample, self._uuid_of, self._scope)
        known, unknown = _energy(sample, self._scope)
        with self._lock:
            for k, why in unknown.items():
                if k not in self._joules:
                    self._unknown[k] = why
            if self._start is None:
                self._start = (sample.t, known)
                return
            if sample.phases is not None and sample.phases.steps:
                self._steps += job_steps(sample)
                ex = sample.phases.examples
                self._examples = None if ex is None or self._examples is None else self._examples + ex
            t0, e0 = self._start
            if sample.t - t0 < MIN_SPAN:
                return
            joules = 0.0
            for k, e in known.items():
                if k in e0 and e >= e0[k]:  # a counter that went backwards (driver reload) loses this span
                    self._joules[k] = self._joules.get(k, 0.0) + (e - e0[k])
                    self._unknown.pop(k, None)
                    joules += e - e0[k]
            if any(k in e0 for k in known):
                self._seconds += sample.t - t0
                if self._steps:
                    self._training += joules
                    self._total_steps += self._steps
                    self._total_examples = (
                        None
                        if self._examples is None or self._total_examples is None
                        else self._total_examples + self._examples
                    )
                self._points.append(EnergyPoint(sample.t, sample.t - t0, joules, self._steps, self._examples))
            self._start = (sample.t, known)
            self._steps, self._examples = 0, 0

    def account(self) -> EnergyAccount:
        """What was measured so far (a copy: the meter goes on)."""
        with self._lock:
            return EnergyAccount(
                dict(self._joules),
                dict(self._unknown),
                self._seconds,
                self._training,
                self._total_steps,
                self._total_examples if self._total_steps else None,
                tuple(self._points),
                self._scope_text(),
            )

    def _scope_text(self) -> str:
        s = self._scope
        if s is None:
            return ""
        if s.known:
            return f"the job's GPUs: {', '.join(s.devices)} ({s.note})" if s.devices else f"no GPU ({s.note})"
        return f"every GPU counted: {s.note}"


class EnergyCollector:
    """Prometheus counters of the meter (a scrape only reads them). Each domain's own counter is
    the exporter's ``bottleneckd_energy_joules_total{domain,device}`` (outputs/exporter.py); this
    adds the energy of the intervals in which the job trained. Joules per step over any range is
    ``rate(bottleneckd_training_energy_joules_total[5m]) / rate(bottleneckd_steps_total[5m])``
    (one step counter: the job's steps); carbon is the energy times the grid intensity, done in
    PromQL with the user's figure."""

    def __init__(self, meter: EnergyMeter) -> None:
        self._meter = meter

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        a = self._meter.account()
        if not a.known:
            return
        yield CounterMetricFamily(
            "bottleneckd_training_energy",
            "Energy of all measured domains in intervals with training steps",
            value=a.training_joules,
            unit="joules",
        )
        if a.examples is not None:
            yield CounterMetricFamily(
                "bottleneckd_energy_examples",
                "Training examples in the intervals whose energy was measured",
                value=a.examples,
            )
        if a.per_step is not None:
            yield GaugeMetricFamily(
                "bottleneckd_energy_per_step_joules",
                "Joules per training step since the sidecar started",
                value=a.per_step,
                unit="joules",
            )
        if a.per_example is not None:
            yield GaugeMetricFamily(
                "bottleneckd_energy_per_example_joules",
                "Joules per training example since the sidecar started",
                value=a.per_example,
                unit="joules",
            )
