"""The step's communication as the DDP comm hook timed it, and how much of it costs the step: gloo on
a CPU job reduces with the cores backward computes on, so the part overlapped with backward is cost
there, not free overlap."""

from __future__ import annotations

from dataclasses import dataclass

from bottleneckd.diagnosis.rules.common import fmt_s, pct, runs_on_gpu
from bottleneckd.diagnosis.rules.cpu_state import cpu_state
from bottleneckd.diagnosis.window import WindowStats

#: gloo on a CPU job reduces gradients with the same cores backward computes on: communication
#: "overlapped" with backward there is not free, it takes cores the step needs. Counted as the
#: step's cost when the job's cores are full (saturated, or contended by the job's own threads)
CPU_BACKENDS = ("gloo", "mpi", "ucc")


@dataclass(frozen=True)
class CommCost:
    """One step's communication as the DDP hook timed it, and how much of it costs the step."""

    step: float  # seconds per step
    exposed: float  # seconds per step backward waited after its last gradient
    overlapped: float  # seconds per step in flight while backward still ran
    shares_cores: bool  # the overlapped part ran on the cores backward needed (gloo on CPU, cores full)
    why: str

    @property
    def cost(self) -> float:
        """Seconds per step the communication costs: the exposed part, plus the overlapped part
        where it shares the compute's cores."""
        return self.exposed + (self.overlapped if self.shares_cores else 0.0)

    @property
    def share(self) -> float:
        return min(1.0, self.cost / self.step) if self.step > 0 else 0.0

    @property
    def overlapped_share(self) -> float:
        return min(1.0, self.overlapped / self.step) if self.step > 0 and self.shares_cores else 0.0

    def describe(self) -> str:
        total = self.exposed + self.overlapped
        s = (
            f"all-reduce in flight {fmt_s(total)} per step: {fmt_s(self.exposed)} exposed (backward waits), "
            f"{fmt_s(self.overlapped)} overlapped with backward"
        )
        if self.shares_cores:
            return (
                s + f" on the same cores ({self.why}): with the exposed part, {pct(self.share)} of the "
                f"{fmt_s(self.step)} step"
            )
        return s + (f" ({self.why})" if self.why else "")


def comm_cost(w: WindowStats) -> CommCost | None:
    """The step's timed communication (DDP comm hook facts), or None when not timed."""
    p = w.phases
    if p is None or not p.steps or p.wall_seconds <= 0:
        return None
    f = p.facts
    total, exposed = f.get("comm_seconds_per_step"), f.get("comm_exposed_seconds_per_step")
    if total is None or exposed is None:
        return None
    overlapped = f.get("comm_overlapped_seconds_per_step")
    overlapped = max(0.0, total - exposed) if overlapped is None else overlapped
    step = p.wall_seconds / p.steps
    backend = str(f.get("comm_backend") or "")
    on_cpu = not runs_on_gpu(w) and backend in CPU_BACKENDS
    cpu = cpu_state(w)
    full = cpu.saturated or cpu.contended
    if on_cpu and full:
        why = f"{backend} on CPU, the ranks' cores full"
    elif on_cpu:
        why = f"{backend} on CPU, but the ranks' cores have room: the overlap is free"
    elif not backend:
        why = "backend unknown: overlap taken as free"
    else:
        why = f"{backend}: on its own engine, overlap free"
    return CommCost(
        step=step, exposed=float(exposed), overlapped=float(overlapped), shares_cores=on_cpu and full, why=why
    )
