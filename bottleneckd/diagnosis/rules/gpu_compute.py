"""GPU compute vs GPU memory bandwidth vs launch/host overhead, judged on each of the job's GPUs.

- The job's GPUs (diagnosis/job_gpus.py): the GPUs its ranks name (each rank's identity and CUDA
  UUIDs), else NVML's process lists; other tenants' GPUs are left out. Unknown (no hook, no
  process lists, another PID namespace): the GPUs that ran kernels where they can only be the
  job's (model/job_gpus.py), else every GPU, said in the evidence. A job seen on no GPU
  is not judged here (a CPU job on a GPU node).
- Every rank's own GPU is judged (gpu_one.py), with that rank's facts (its roofline and dtype):
  the job's facts are one rank's, and the ranks of a job need not be alike.
- A step mostly outside the phases is judged here when the job's GPUs never idle (job_gpus.py
  ``never_idle``; rules/other.py leaves it). With phases from stack samples (attach) the host waited
  on them there (a ``.item()`` spinning in a synchronisation, seen by py-spy as the loop's own
  line), so the compute stage is judged. With the hook's CUDA events the phases are the GPU's own
  timeline, where a synchronisation leaves no gap: time outside them is the GPU's work outside the
  training step (an evaluation, an EMA copy's update, metrics on the GPU), judged in the other stage.
- An optimizer phase longer than forward, backward and the GPU waits together (the hook's CUDA
  events) puts the findings in the optimizer stage: the GPU's work is mostly the optimizer's. So
  does an optimizer stepping parameter by parameter (the hook's fact ``optimizer_impl``: for-loop)
  at FOR_LOOP_OPTIMIZER_HIGH of the step or more: its kernels are the step's cheapest to cut.
- The job's verdict over its GPUs: each resource named on k of the n GPUs judged scores its
  strongest GPU's score times k/n, so the resource most GPUs name leads, and the evidence names
  the GPUs (and ranks) behind each; the straggler, if any, is named beside it (diagnosis/straggler.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from bottleneckd.diagnosis.job_gpus import co_tenants, never_idle, runs_on_gpu, window_job_gpus
from bottleneckd.diagnosis.rules.common import compute_share, cuda_timed, offloaded, other_share, pct
from bottleneckd.diagnosis.rules.cpu_state import cpu_state, loader_workers
from bottleneckd.diagnosis.rules.gpu_one import one_gpu
from bottleneckd.diagnosis.thresholds import COMPUTE_STAGE, FOR_LOOP_OPTIMIZER_HIGH, INPUT_HIGH, NO_WORKERS, OTHER_HIGH
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.job_gpus import JobGpus
from bottleneckd.model.resources import Phase, Resource, Stage
from bottleneckd.model.units import fmt_value
from bottleneckd.peaks.resolve import PeakTable


def gpu_compute(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    if not runs_on_gpu(w, peaks):
        return []
    comp_share = compute_share(w)
    what = "forward+backward (the optimizer offloaded to the CPU)" if offloaded(w) else "forward+backward+optimizer"
    base = [f"{what} {pct(comp_share)} of step time"] if comp_share is not None else []
    stage: Stage | None = None  # the findings' own (compute), unless the GPU's work is outside the step
    if comp_share is not None and comp_share < COMPUTE_STAGE:
        busy, outside = never_idle(w, peaks), other_share(w) or 0.0
        if busy is None or outside < OTHER_HIGH:  # the other stage's rule leaves such a step to this one
            return []
        if cuda_timed(w):
            base.append(
                f"{pct(outside)} of the step's GPU time outside its phases (CUDA events) while {busy[0]}, the job's "
                f"least busy GPU, ran kernels {pct(busy[1])} of the time: GPU work outside the training step "
                "(evaluation, an EMA model, metrics)"
            )
            stage = Stage.OTHER
        else:
            base.append(
                f"{pct(outside)} outside the phases while {busy[0]}, the job's least busy GPU, ran kernels "
                f"{pct(busy[1])} of the time: the host waited on the GPU there (a synchronisation such as .item())"
            )
    lead = _optimizer_lead(w) if stage is None else None
    if lead is not None:
        stage = Stage.OPTIMIZER
        base.append(lead)
    jg = window_job_gpus(w, peaks)
    if not jg.devices:
        return []
    if not jg.known:
        base.append(jg.note)
    judged = _judged(w, jg)
    several = len(judged) > 1 or len(w.devices(Resource.GPU_COMPUTE)) > 1
    per = []
    for dev, ranks, facts in judged:
        where = [f"on {_label(dev, ranks)}"] if several else []
        found = one_gpu(w, peaks, dev, facts, where)
        shared = co_tenants(w, dev)
        if shared is not None:
            note = (
                f"{dev} shared with {shared[0]} process{'es' if shared[0] > 1 else ''} other than the job's ranks, "
                f"holding {fmt_value(shared[1], 'B')} of its memory: their kernels are time-sliced with the job's "
                "(its busy and SM figures count theirs too), unless they are the job's own helpers"
            )
            found = [replace(f, evidence=(*f.evidence, note)) for f in found]
        per.append((dev, ranks, found if stage is None else [replace(f, stage=stage) for f in found]))
    return _behind_the_loader(w, peaks, _over_gpus(per, base))


def _behind_the_loader(w: WindowStats, peaks: PeakTable, found: list[Finding]) -> list[Finding]:
    """The GPU's findings where its step waits for batches that loader workers make beside it: at
    INPUT_HIGH of the step or more the workers do not keep up, and a faster GPU step would only wait
    longer for them (the loader, not the GPU, sets the pace). Each finding's score is scaled by the
    share of the step that is not that wait (chosen: the data stage's findings, at most 0.95 from
    INPUT_HIGH, then lead; the GPU's stays a secondary pressure). A blind trace: a SATA disk 99% busy,
    the step waiting 40% for its 8 workers' batches, read gpu_memory_bandwidth/compute from the
    roofline at 56% of the GPU's bandwidth. Without workers the loading runs between the steps on the
    training thread, serial with the GPU's work where the step synchronises: both stages count. A GPU
    that never idles (job_gpus.py ``never_idle``) is not waiting for batches: its findings stand."""
    data = w.phases.share(Phase.DATA_WAIT) if w.phases is not None else None  # not file reads of its own
    if data is None or data < INPUT_HIGH or not found:
        return found
    workers = loader_workers(cpu_state(w).n_workers, w.phases.facts if w.phases is not None else {}) or 0.0
    if workers < NO_WORKERS or never_idle(w, peaks) is not None:
        return found
    why = (
        f"the step waits {pct(data)} of its time for batches its loader workers make beside the GPU: they do not "
        "keep up, and a faster GPU step would wait longer for them"
    )
    return [
        replace(f, score=f.score * (1.0 - data), evidence=(*f.evidence, why))
        if f.stage in (Stage.COMPUTE, Stage.OPTIMIZER)
        else f
        for f in found
    ]


def _optimizer_lead(w: WindowStats) -> str | None:
    """Why the compute stage's advice is the optimizer's, or None: the optimizer phase (on the GPU:
    not offloaded) longer than forward+backward+GPU waits (a dense Adam over a large embedding), or
    a for-loop optimizer (kernels per parameter) at FOR_LOOP_OPTIMIZER_HIGH of the step or more
    (independent probes' traces, read as forward and backward's before). Timed by the hook's CUDA
    events only."""
    p = w.phases
    # the hook's CUDA events only: in stack samples (attach) a long optimizer phase is as often the
    # host blocked in a synchronisation there (GradScaler's check for inf) while backward's kernels run
    if p is None or offloaded(w) or not cuda_timed(w):
        return None
    opt = p.share(Phase.OPTIMIZER) or 0.0
    rest = sum(p.share(k) or 0.0 for k in (Phase.FORWARD, Phase.BACKWARD, Phase.GPU_WAIT))
    if opt > rest:
        return (
            f"the optimizer step {pct(opt)} of step time, longer than forward and backward together "
            f"({pct(rest)}): most of the GPU's work is the optimizer's"
        )
    if p.facts.get("optimizer_impl") == "for-loop" and opt >= FOR_LOOP_OPTIMIZER_HIGH:
        return (
            f"the optimizer step {pct(opt)} of step time (at least {pct(FOR_LOOP_OPTIMIZER_HIGH)}), its update "
            "run parameter by parameter (a for-loop optimizer: foreach=False): the step's cheapest part to cut"
        )
    return None


def _judged(w: WindowStats, jg: JobGpus) -> list[tuple[str, tuple[int, ...], Mapping[str, Any]]]:
    """Each GPU to judge, the ranks on it, and the facts to judge it with (its lowest rank's)."""
    job_facts: Mapping[str, Any] = w.phases.facts if w.phases else {}
    views = {r.rank: r for r in w.ranks}
    on: dict[str, list[int]] = {}
    for rank, dev in jg.ranks:
        on.setdefault(dev, []).append(rank)
    out = []
    for dev in jg.devices:
        ranks = tuple(sorted(on.get(dev, ())))
        view = views.get(ranks[0]) if ranks else None
        out.append((dev, ranks, view.facts if view is not None and view.facts else job_facts))
    return out


def _label(dev: str, ranks: tuple[int, ...]) -> str:
    if not ranks:
        return dev
    return f"{dev} (rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))})"


def _over_gpus(per: list[tuple[str, tuple[int, ...], list[Finding]]], base: list[str]) -> list[Finding]:
    """One finding per resource over the GPUs judged (see the module's docstring)."""
    n = len(per)
    if n == 1:
        return [replace(f, evidence=(*base, *f.evidence)) for f in per[0][2]]
    by: dict[str, list[tuple[str, tuple[int, ...], Finding]]] = {}
    for dev, ranks, fs in per:
        for f in fs:
            by.setdefault(f.resource, []).append((dev, ranks, f))
    out = []
    for resource, items in by.items():
        items.sort(key=lambda x: -x[2].score)
        best = items[0][2]
        who = ", ".join(_label(d, r) for d, r, _ in items)
        others = [
            f"{_label(d, r)}: {f.resource} ({f.evidence[-1] if f.evidence else ''})"
            for d, r, fs in per
            for f in fs
            if f.resource != resource
        ]
        unjudged = [_label(d, r) for d, r, fs in per if not fs]
        ev = [
            *base,
            f"{resource} on {len(items)} of the {n} GPUs judged ({who})",
            *best.evidence,
            *[f"elsewhere: {o}" for o in others[:4]],
            *([f"nothing limiting on {', '.join(unjudged)}"] if unjudged else []),
        ]
        out.append(replace(best, score=best.score * len(items) / n, evidence=tuple(ev)))
    return out
