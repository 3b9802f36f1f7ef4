"""A recorded run as a Chrome trace (the JSON "Trace Event Format" that Perfetto, chrome://tracing and
HolisticTraceAnalysis read): ``bottleneckd report TRACE... --format chrome-trace -o run.json``.

Tracks:

- one process per rank (``rank 3 @ host``, sorted by rank), its thread "step phases": for each
  sampling interval in which the rank reported steps, the interval's step phases laid end to end
  in proportion to their seconds (slices named by phase, category ``bottleneckd.phase``; the args
  give the steps, seconds per step and share). These are interval summaries, not single steps:
  a step's own ranges are in the user's profiler trace (torch/ranges.py). A counter "step time"
  gives the rank's mean step time (ms) per interval. A job without per-rank reports gets one
  track, "job".
- a process "bottleneckd" with the diagnosis as instant events (``ph: i``, global scope): each
  regime change (``before -> after``, its label), each mitigation applied or reverted through the
  hook (the trace's events), and the run's verdict at its end with its evidence; and a counter per
  resource of its utilisation against its peak (the resources the run measured).

Times are microseconds from the first sample's start; ``otherData`` holds that start as Unix
time, the trace files and the schema. Events are sorted by time; every slice has a duration.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.sample import Sample, StepPhases

SCHEMA = "bottleneckd.chrome-trace/1"
DIAGNOSIS_PID = 1  # the "bottleneckd" process
RANK_PID0 = 10  # rank tracks: 10, 11, ... in rank order
PHASE_TID = 1
CATEGORY = "bottleneckd.phase"


def _us(t: float, t0: float) -> float:
    return round((t - t0) * 1e6, 3)


def _meta(pid: int, name: str, sort: int, tid: int | None = None, thread: str = "") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": name}},
        {"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index", "args": {"sort_index": sort}},
    ]
    if tid is not None:
        out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": thread}})
    return out


def _phase_slices(pid: int, start_us: float, span_us: float, ph: StepPhases) -> list[dict[str, Any]]:
    """The interval's phases end to end over its span, in proportion to their seconds."""
    total = sum(v for v in ph.phases.values() if v > 0)
    if total <= 0 or ph.steps <= 0:
        return []
    out, at = [], start_us
    for name, secs in ph.phases.items():
        if secs <= 0:
            continue
        dur = span_us * secs / total
        out.append(
            {
                "ph": "X",
                "cat": CATEGORY,
                "name": name,
                "pid": pid,
                "tid": PHASE_TID,
                "ts": round(at, 3),
                "dur": round(dur, 3),
                "args": {
                    "steps": ph.steps,
                    "seconds_per_step": secs / ph.steps,
                    "share": secs / total,
                },
            }
        )
        at += dur
    return out


def _instant(ts: float, name: str, cat: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "i", "s": "g", "cat": cat, "name": name, "pid": DIAGNOSIS_PID, "tid": 0, "ts": ts, "args": args}


def chrome_trace(
    samples: Iterable[Sample],
    events: list[dict[str, Any]],
    report: dict[str, Any],
    traces: list[str],
) -> dict[str, Any]:
    """The trace of a run: its samples (in time order), the hook's events (``Event.to_json()``) and
    the report the pipeline made of them (verdict, regime changes)."""
    items = sorted(samples, key=lambda s: s.t)
    if not items:
        raise ValueError("no samples")
    t0 = items[0].t - items[0].interval
    out: list[dict[str, Any]] = [*_meta(DIAGNOSIS_PID, "bottleneckd", 0, 0, "diagnosis")]
    pids: dict[str, int] = {}
    idents: dict[str, RankIdentity] = {}
    for s in items:
        for r in s.ranks:
            idents.setdefault(r.identity.key, r.identity)
    for k, ident in sorted(idents.items(), key=lambda kv: (kv[1].rank, kv[0])):
        pids[k] = RANK_PID0 + len(pids)
        gpu = f", {ident.gpu}" if ident.gpu else ""
        out += _meta(pids[k], f"rank {ident.rank} @ {ident.node}{gpu}", len(pids), PHASE_TID, "step phases")
    job_pid = None
    if not pids and any(s.phases is not None and s.phases.steps for s in items):
        job_pid = RANK_PID0
        out += _meta(job_pid, "job", 1, PHASE_TID, "step phases")
    last_end: dict[int, float] = {}  # a track's slices never overlap (recorded intervals are rounded)
    for s in items:
        start, end = _us(s.t - s.interval, t0), _us(s.t, t0)
        tracks: list[tuple[int, StepPhases]] = [(pids[r.identity.key], r.phases) for r in s.ranks]
        if job_pid is not None and s.phases is not None:
            tracks = [(job_pid, s.phases)]
        for pid, ph in tracks:
            begin = max(start, last_end.get(pid, start))
            slices = _phase_slices(pid, begin, max(0.0, end - begin), ph)
            if slices:
                last_end[pid] = slices[-1]["ts"] + slices[-1]["dur"]
            out += slices
            if ph.steps > 0 and ph.wall_seconds > 0:
                step_ms = 1000.0 * ph.wall_seconds / ph.steps
                out.append({"ph": "C", "pid": pid, "tid": 0, "name": "step time", "ts": start, "args": {"ms": step_ms}})
        util = {
            f"{r.resource}:{r.device}": round(r.value, 4)
            for r in s.readings
            if r.metric == "utilization" and r.value is not None
        }
        for key, value in util.items():
            out.append(
                {
                    "ph": "C",
                    "pid": DIAGNOSIS_PID,
                    "tid": 0,
                    "name": f"utilization {key}",
                    "ts": start,
                    "args": {"ratio": value},
                }
            )
    for c in report.get("regime_changes") or []:
        args = {"before": c.get("before"), "after": c.get("after"), "label": c.get("label")}
        out.append(_instant(_us(c["t"], t0), f"regime change: {c.get('before')} -> {c.get('after')}", "regime", args))
    for e in events:
        if str(e.get("kind", "")).startswith("mitigation_"):
            verb = e["kind"].removeprefix("mitigation_")
            args = {"mitigation": e.get("name"), "changes_semantics": e.get("changes_semantics"), "note": e.get("note")}
            out.append(_instant(_us(float(e["t"]), t0), f"mitigation {verb}: {e.get('name')}", "mitigation", args))
    v = report.get("verdict") or {}
    end = _us(items[-1].t, t0)
    out.append(
        _instant(
            end,
            f"verdict: {v.get('resource', 'undetermined')}" + (f" ({v['stage']})" if v.get("stage") else ""),
            "verdict",
            {
                "confidence": v.get("confidence"),
                "headroom": v.get("headroom"),
                "evidence": list(v.get("evidence") or []),
                "recommendations": [r.get("name") for r in (report.get("recommendations") or [])[:5]],
            },
        )
    )
    meta = [e for e in out if e["ph"] == "M"]
    timed = sorted((e for e in out if e["ph"] != "M"), key=lambda e: e["ts"])
    return {
        "traceEvents": meta + timed,
        "displayTimeUnit": "ms",
        "otherData": {"schema": SCHEMA, "start_unix": t0, "traces": list(traces)},
    }
