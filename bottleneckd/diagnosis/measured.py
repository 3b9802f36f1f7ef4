"""Facts measured from a window and its verdict, for the advice's conditions (advice/fit.py):
what the job's own figures say about whether a mitigation can help, not what the hook declared.

- ``job_idle_cores``: the cores the job may use that its processes neither ran on nor waited for
  over the window (usable cores - busy cores - run-queue wait). More loader workers only help
  while idle cores remain (the knowledge base's caveat for them); a job whose two workers fill
  both cores has none left.
- ``idle_wait_stage``: the stage (data or other) in which the step spends its time waiting with
  nothing busy: the diagnosis ruled every resource out there (no thread near a full core, no
  storage, network or I/O wait), so the step waits on latency (a sleep, a remote service, a lock).
  Concurrency (more workers, prefetching, asynchronous work) hides latency; it needs no idle core.
"""

from __future__ import annotations

from bottleneckd.diagnosis.rules.cpu_state import cpu_state
from bottleneckd.diagnosis.rules.other import other_share
from bottleneckd.diagnosis.thresholds import INPUT_HIGH, OTHER_HIGH
from bottleneckd.diagnosis.verdict import Verdict
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.facts import Facts
from bottleneckd.model.resources import UNDETERMINED


def measured_facts(w: WindowStats, verdict: Verdict) -> Facts:
    """The facts this window measures (those it cannot are left out: unknown, not zero)."""
    out: dict[str, object] = {}
    cpu = cpu_state(w)
    if cpu.busy is not None:
        out["job_idle_cores"] = round(max(0.0, cpu.cores - cpu.busy - (cpu.waiting or 0.0)), 3)
    stage = idle_wait_stage(w, verdict)
    if stage is not None:
        out["idle_wait_stage"] = stage
    return Facts(out)


def idle_wait_stage(w: WindowStats, verdict: Verdict) -> str | None:
    """The stage the step waits in with nothing busy, or None."""
    if verdict.resource != UNDETERMINED or w.phases is None or not w.phases.steps:
        return None
    if verdict.stage == "data":
        waiting = (w.phases.share("data_wait") or 0.0) + (w.phases.share("file_io") or 0.0)
        return "data" if waiting >= INPUT_HIGH else None
    if verdict.stage == "other":
        outside = other_share(w)
        return "other" if outside is not None and outside >= OTHER_HIGH else None
    return None
