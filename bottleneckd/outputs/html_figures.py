"""The HTML report's plots, drawn with plotly. Each function returns a figure, or None with the
reason when the run has nothing to draw (the page then says why instead of showing an empty plot).
plotly is imported here only, and only when a report is drawn."""

from __future__ import annotations

import datetime as dt
from typing import Any

from bottleneckd.model.resources import Phase, Resource, stage_of
from bottleneckd.outputs.energy import EnergyAccount
from bottleneckd.outputs.timeline import Timeline
from bottleneckd.peaks.resolve import PeakTable

PHASE_ORDER = (
    Phase.DATA_WAIT,
    Phase.FILE_IO,
    Phase.TRANSFER,
    Phase.FORWARD,
    Phase.BACKWARD,
    Phase.GPU_WAIT,
    Phase.OPTIMIZER,
    Phase.COMMUNICATION,
    Phase.OTHER,
)


def _go():  # noqa: ANN202
    import plotly.graph_objects as go  # lazy: the daemon side does not need plotly

    return go


def _time(t: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(t, tz=dt.timezone.utc)


def _layout(fig: Any, title: str, y: str, **kw: Any) -> Any:
    fig.update_layout(
        title=title,
        yaxis_title=y,
        template="plotly_white",
        height=380,
        margin={"l": 60, "r": 20, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.2},
        **kw,
    )
    return fig


def phases_figure(tl: Timeline) -> tuple[Any | None, str]:
    rows = [r for r in tl.rows if r.steps]
    if not rows:
        return (
            None,
            "no step phases: the torch hook reported no training steps (use bottleneckd run, or watch() in the script)",
        )
    go = _go()
    names = [p for p in PHASE_ORDER if any(p in r.phases for r in rows)] + sorted(
        {p for r in rows for p in r.phases} - set(PHASE_ORDER)
    )
    fig = go.Figure()
    x = [_time(r.t) for r in rows]
    for p in names:
        fig.add_trace(go.Bar(x=x, y=[r.phases.get(p, 0.0) for r in rows], name=f"{p} ({stage_of(p)})"))
    fig.add_trace(
        go.Scatter(
            x=x, y=[r.step_seconds for r in rows], name="wall time per step", mode="lines", line={"color": "black"}
        )
    )
    return _layout(fig, "Step phases over time (seconds per step)", "seconds per step", barmode="stack"), ""


def _marks(fig: Any, changes: list[dict[str, Any]], events: list[dict[str, Any]], t0: float, t1: float) -> None:
    for c in changes:
        if t0 <= c["t"] <= t1:
            fig.add_vline(
                x=_time(c["t"]).timestamp() * 1000,
                line_dash="dash",
                line_color="#c0392b",
                annotation_text=f"regime: {c['before']} → {c['after']}",
                annotation_position="top left",
            )
    for e in events:
        if e.get("kind") == "mitigation_applied" and t0 <= e.get("t", 0.0) <= t1:
            fig.add_vline(
                x=_time(e["t"]).timestamp() * 1000,
                line_dash="dot",
                line_color="#27ae60",
                annotation_text=f"applied {e.get('name', '')}",
                annotation_position="bottom right",
            )


def utilization_figure(
    tl: Timeline, changes: list[dict[str, Any]], events: list[dict[str, Any]]
) -> tuple[Any | None, str]:
    series = tl.known_series()
    if not tl.rows or not series:
        return None, "no utilisation known against a peak in this run"
    go = _go()
    fig = go.Figure()
    for key in series:
        pts = [(r.t, r.util[key]) for r in tl.rows if key in r.util]
        fig.add_trace(go.Scatter(x=[_time(t) for t, _ in pts], y=[v for _, v in pts], name=key, mode="lines"))
    t0, t1 = tl.rows[0].t, tl.rows[-1].t
    fig.add_hline(y=1.0, line_color="gray", annotation_text="peak", annotation_position="top right")
    _marks(fig, changes, events, t0, t1)
    return _layout(fig, "Each resource's utilisation against its peak", "fraction of peak"), ""


def ceilings(peaks: PeakTable, on_gpu: bool) -> tuple[float | None, float | None, str]:
    """(compute FLOP/s, memory bandwidth B/s, why either is unknown) for the device that trains."""
    if on_gpu:
        c = max(
            (p.value for p in peaks.for_resource(Resource.GPU_COMPUTE) if p.value and p.unit == "FLOP/s"), default=None
        )
        b = max((p.value for p in peaks.for_resource(Resource.GPU_MEMORY_BANDWIDTH) if p.value), default=None)
    else:
        c = max(
            (p.value for p in peaks.for_resource(Resource.CPU_COMPUTE) if p.value and p.unit == "FLOP/s"), default=None
        )
        b = max((p.value for p in peaks.for_resource(Resource.CPU_MEMORY_BANDWIDTH) if p.value), default=None)
    why = []
    if c is None:
        why.append(f"{'GPU' if on_gpu else 'CPU'} compute peak unknown (run 'bottleneckd calibrate')")
    if b is None:
        why.append(f"{'GPU' if on_gpu else 'CPU'} memory bandwidth peak unknown (run 'bottleneckd calibrate')")
    return c, b, "; ".join(why)


def roofline_figure(peaks: PeakTable, facts: dict[str, Any]) -> tuple[Any | None, str]:
    on_gpu = str(facts.get("device", "cpu")).startswith("cuda")
    c, b, why = ceilings(peaks, on_gpu)
    if c is None or b is None:
        return None, f"no roofline: {why}"
    go = _go()
    ridge = c / b
    flops, byts = facts.get("flops_per_step"), facts.get("operand_bytes_per_step")
    achieved = facts.get("achieved_flops")
    ai = flops / byts if flops and byts else facts.get("arithmetic_intensity")
    lo = min(ridge, ai or ridge) / 100
    hi = max(ridge, ai or ridge) * 100
    xs = [lo * (hi / lo) ** (k / 60) for k in range(61)]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[min(c, b * x) for x in xs],
            name="attainable (min of the ceilings)",
            mode="lines",
            line={"color": "black"},
        )
    )
    fig.add_trace(
        go.Scatter(x=[lo, hi], y=[c, c], name=f"compute ceiling {c:.3g} FLOP/s", mode="lines", line={"dash": "dot"})
    )
    fig.add_trace(
        go.Scatter(
            x=[lo, hi], y=[b * lo, b * hi], name=f"bandwidth ceiling {b:.3g} B/s", mode="lines", line={"dash": "dot"}
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[ridge],
            y=[c],
            name=f"ridge point {ridge:.3g} FLOP/byte",
            mode="markers",
            marker={"size": 10, "symbol": "diamond"},
        )
    )
    note = ""
    if ai and achieved:
        fig.add_trace(
            go.Scatter(
                x=[ai],
                y=[achieved],
                name=f"this job: {ai:.3g} FLOP/byte, {achieved:.3g} FLOP/s",
                mode="markers",
                marker={"size": 14, "color": "#c0392b"},
            )
        )
    else:
        note = "the job's point is unknown: the torch hook counted no step's FLOPs and operand bytes"
    fig.update_xaxes(type="log", title="arithmetic intensity (FLOP per byte of operands)")
    fig.update_yaxes(type="log")
    return _layout(fig, f"Roofline ({'GPU' if on_gpu else 'CPU'}; operand sizes, section 2.3)", "FLOP/s"), note


def ranks_figure(tl: Timeline) -> tuple[Any | None, str]:
    per: dict[str, list[tuple[int, float, dict[str, float]]]] = {}
    for r in tl.rows:
        for rk in r.ranks:
            per.setdefault(rk.label, []).append((rk.steps, rk.step_seconds, rk.phases))
    if len(per) < 2:
        return None, "one rank: no straggler view"
    go = _go()
    labels = sorted(per, key=lambda s: (len(s), s))
    means: dict[str, dict[str, float]] = {}
    for lab in labels:
        steps = sum(n for n, _, _ in per[lab])
        acc: dict[str, float] = {}
        for n, _, ph in per[lab]:
            for k, v in ph.items():
                acc[k] = acc.get(k, 0.0) + v * n
        means[lab] = {k: v / steps for k, v in acc.items()}
    fig = go.Figure()
    for p in [p for p in PHASE_ORDER if any(p in m for m in means.values())]:
        fig.add_trace(go.Bar(x=labels, y=[means[lab].get(p, 0.0) for lab in labels], name=p))
    fig.add_trace(
        go.Box(
            x=[lab for lab in labels for _ in per[lab]],
            y=[s for lab in labels for _, s, _ in per[lab]],
            name="wall time per step (each interval)",
            marker={"color": "black"},
            boxpoints="all",
        )
    )
    return _layout(
        fig, "Ranks: mean seconds per step by phase (a straggler stands out)", "seconds per step", barmode="stack"
    ), ""


def energy_figure(acc: EnergyAccount) -> tuple[Any | None, str]:
    pts = [p for p in acc.points if p.steps]
    if not pts:
        return None, (
            "no energy counter could be read (see Energy above)"
            if not acc.known
            else "no training steps reported while energy was measured"
        )
    go = _go()
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[_time(p.t) for p in pts],
            y=[p.joules / p.steps for p in pts],
            name="joules per step",
            mode="lines+markers",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[_time(p.t) for p in pts],
            y=[p.joules / p.seconds for p in pts],
            name="watts (all measured domains)",
            mode="lines",
            yaxis="y2",
        )
    )
    fig.update_layout(yaxis2={"title": "W", "overlaying": "y", "side": "right"})
    return _layout(fig, "Energy per step over time", "J per step"), ""
