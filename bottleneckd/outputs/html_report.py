"""The HTML report: one self-contained file (plotly.js embedded, nothing fetched when it is
opened) with the verdict, its evidence and headroom, ranked recommendations with their taxonomy
path and citations, and plots of the run (outputs/html_figures.py).

A ``Recorder`` is fed every sample after the pipeline has seen it (live as a loop sink, or while a
trace is replayed through the same Pipeline); ``render`` turns it and the JSON report into a page.
"""

from __future__ import annotations

import base64
import hashlib
import html
import time
from typing import Any

from bottleneckd.diagnosis.pipeline import Pipeline
from bottleneckd.model.sample import Sample
from bottleneckd.outputs import html_figures as figs
from bottleneckd.outputs.energy import EnergyAccount, EnergyMeter
from bottleneckd.outputs.report import _headroom_text
from bottleneckd.outputs.timeline import Timeline
from bottleneckd.peaks.resolve import PeakTable

CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%;font-size:.9em}
td,th{border:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}
.verdict{font-size:1.3em;font-weight:600}.why{color:#777;font-style:italic}.plot{min-height:380px}"""


class Recorder:
    """A loop sink: the timeline of one run (and its energy meter), read by ``render``."""

    def __init__(self, plotly: str = "inline") -> None:
        self.plotly = plotly  # "inline" or "cdn" (render)
        self.pipeline: Pipeline | None = None
        self.timeline = Timeline()
        self.energy = EnergyMeter()
        self._feed_energy = True

    def attach(self, pipeline: Pipeline, energy: EnergyMeter | None = None) -> Recorder:
        """Read each sample's snapshot from ``pipeline`` (which must see the sample first); with
        ``energy``, that meter (fed elsewhere, e.g. the sidecar's) instead of one of its own."""
        self.pipeline = pipeline
        if energy is not None:
            self.energy, self._feed_energy = energy, False
        elif not self.energy.account().points:  # its own meter, not yet fed: it learns the GPUs' UUIDs
            self.energy = EnergyMeter(gpu_uuids=pipeline.peaks.gpu_uuids())
        return self

    def __call__(self, sample: Sample) -> None:
        self.timeline.add(sample, self.pipeline.latest if self.pipeline else None)
        if self._feed_energy:
            self.energy(sample)

    def write_report(
        self,
        path: str,
        extra: dict[str, Any],
        peaks: PeakTable,
        events: list[dict[str, Any]],
        grams_per_kwh: float | None = None,
        force: bool = False,
        title: str = "bottleneckd report",
        what: str = "--report-html",
        run_totals: Any = None,
    ) -> dict[str, Any]:
        """The page written to ``path`` (atomically; an existing file only with ``force``); returns
        the JSON report it shows (with ``run_totals``, the step phases of the whole run)."""
        from bottleneckd.model.files import write_text
        from bottleneckd.outputs.report import build_report, step_phases_json

        assert self.pipeline is not None, "attach() first"
        doc = build_report(self.pipeline)
        if run_totals is not None and run_totals.steps:
            doc["step_phases"] = {**step_phases_json(run_totals), "over": "the whole run"}
        doc.update(extra)
        doc.setdefault("energy", self.energy.account().to_json(grams_per_kwh))
        write_text(path, render(doc, self, peaks, events, grams_per_kwh, title, self.plotly), what, force)
        return doc


def _e(x: Any) -> str:
    return html.escape(str(x))


def _verdict_html(doc: dict[str, Any]) -> str:
    v = doc["verdict"]
    if v["resource"] == "undetermined":
        head = f'<p class="verdict" id="verdict">Bottleneck: undetermined</p><p>{_e(v.get("reason", ""))}</p>'
    else:
        head = (
            f'<p class="verdict" id="verdict">Bottleneck: {_e(v["resource"])} (stage {_e(v["stage"])}, confidence '
            f"{v['confidence']:.0%})</p>"
        )
    ev = "".join(f"<li>{_e(e)}</li>" for e in v.get("evidence", []))
    out = head + (f"<p>Evidence:</p><ul>{ev}</ul>" if ev else "")
    if v["resource"] != "undetermined":
        out += f"<p>Headroom: {_e(_headroom_text(v.get('headroom'), doc))}</p>"
    if v.get("secondary"):
        out += (
            "<p>Secondary pressures: "
            + ", ".join(f"{_e(s['resource'])} ({s['score']:.2f})" for s in v["secondary"])
            + "</p>"
        )
    held = doc.get("held_seconds") or {}
    if held:
        out += "<p>Held over the run: " + ", ".join(f"{_e(k)} {s:.0f} s" for k, s in held.items()) + "</p>"
    return out


def _recs_html(doc: dict[str, Any]) -> str:
    recs = doc.get("recommendations", [])
    if not recs:
        return (
            '<p class="why">No recommendation: the bottleneck is undetermined or every mitigation for it is '
            "already in effect.</p>"
        )
    rows = []
    for k, r in enumerate(recs, 1):
        mech = r.get("mechanism", {})
        rows.append(
            f"<tr><td>{k}</td><td>{_e(r['name'])}"
            f"{' <b>[changes training semantics]</b>' if r['changes_semantics'] else ''}</td>"
            f"<td>{_e(r['component'])} / {_e(r['subcomponent'])}</td><td>{_e(r['action'])}</td>"
            f"<td>{_e(mech.get('timing', ''))}, {_e(str(mech.get('basis', '')).replace('_', ' '))}</td>"
            f"<td>{_e('; '.join(r['cites'] or r.get('sources') or ()) or 'section ' + r['section'])}</td>"
            f"<td>{_e(r['why'])}</td><td>{_e(r.get('hook') or '-')}</td></tr>"
        )
    skipped = "".join(
        f"<li>{_e(s['id'])}: already in effect ({_e(s['because'])})</li>" for s in doc.get("already_in_effect", [])
    ) + "".join(
        f"<li>{_e(s['id'])}: does not fit ({_e(s['because'])})</li>"
        for s in doc.get("not_fitting", [])
        if s.get("kind") != "stage"
    )
    return (
        '<table id="recommendations"><tr><th>#</th><th>mitigation</th><th>component</th><th>action</th>'
        "<th>mechanism</th><th>citations</th><th>why</th><th>hook</th></tr>"
        + "".join(rows)
        + "</table>"
        + (f"<p>Skipped:</p><ul>{skipped}</ul>" if skipped else "")
    )


def _energy_html(a: EnergyAccount, grams_per_kwh: float | None) -> str:
    d = a.to_json(grams_per_kwh)
    unknown = "".join(f"<li>{_e(k)}: unknown ({_e(v)})</li>" for k, v in d["unknown"].items())
    if not a.known:
        return f'<p id="energy">Energy per step: unknown (no energy counter could be read).</p><ul>{unknown}</ul>'
    items = "".join(f"<li>{_e(k)}: {v:.1f} J</li>" for k, v in d["joules"].items()) + unknown
    per_step = (
        f"{d['joules_per_step']:.3g} J"
        if d["joules_per_step"] is not None
        else f"unknown ({_e(d['joules_per_step_unknown'])})"
    )
    per_ex = (
        f"{d['joules_per_example']:.3g} J"
        if d["joules_per_example"] is not None
        else f"unknown ({_e(d['joules_per_example_unknown'])})"
    )
    carbon = (
        f"{d['carbon_grams']:.3g} g CO2 at {grams_per_kwh:g} g/kWh (intensity given by the user)"
        if d["carbon_grams"] is not None
        else f"unknown ({_e(d['carbon_unknown'])})"
    )
    return (
        f'<p id="energy">Energy per step: {per_step}; per example: {per_ex} (over {d["steps"]} steps in '
        f"{d['measured_seconds']:.0f} s measured). Carbon: {carbon}.</p><ul>{items}</ul>"
    )


def render(
    doc: dict[str, Any],
    rec: Recorder,
    peaks: PeakTable,
    events: list[dict[str, Any]] | None = None,
    grams_per_kwh: float | None = None,
    title: str = "bottleneckd report",
    plotly: str = "inline",
) -> str:
    """The page. Every plot that has data is drawn; where a plot has none, the reason is shown
    instead. ``plotly``: "inline" embeds plotly.js (the page opens offline), "cdn" loads it from
    plotly's CDN (a page of tens of kB instead of ~5 MB; needs the network to draw)."""
    import plotly.io as pio  # lazy: only the report needs plotly

    events = events or []
    acc = rec.energy.account()
    facts = doc.get("facts", {}) or {}
    # (div, heading, its text before the plot, (figure, why there is none or a note))
    sections: list[tuple[str, str, str, tuple[Any | None, str]]] = [
        ("phases", "Step phases", "", figs.phases_figure(rec.timeline)),
        (
            "utilization",
            "Utilisation against peak",
            "",
            figs.utilization_figure(rec.timeline, doc.get("regime_changes", []), events),
        ),
        ("roofline", "Roofline", "", figs.roofline_figure(peaks, facts)),
        ("ranks", "Ranks", "", figs.ranks_figure(rec.timeline)),
        ("energy-plot", "Energy", _energy_html(acc, grams_per_kwh), figs.energy_figure(acc)),  # one section
    ]
    body = [
        f"<h1>{_e(title)}</h1>",
        f"<p>{_e(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(doc.get('created', time.time()))))}; "
        f"{doc.get('samples', 0)} samples.</p>",
        "<h2>Verdict</h2>",
        _verdict_html(doc),
        "<h2>Recommendations</h2>",
        _recs_html(doc),
        "<h2>Throughput</h2>",
        _throughput_html(doc.get("throughput")),
    ]
    for div, name, intro, (fig, why) in sections:
        head = f"<h2>{_e(name)}</h2>{intro}"
        if fig is None:
            if div != "ranks":
                body.append(f'{head}<p class="why" id="{div}-why">{_e(why)}</p>')
            continue
        body.append(
            head
            + pio.to_html(
                fig,
                full_html=False,
                include_plotlyjs=False,
                div_id=div,
                config={"displaylogo": False, "responsive": True},
            )
        )
        if why:
            body.append(f'<p class="why">{_e(why)}</p>')
    unknown = rec.timeline.unknown_series()
    if unknown:
        body.append(
            "<h2>Not measured</h2><ul>"
            + "".join(f"<li>{_e(k)}: {_e(v)}</li>" for k, v in sorted(unknown.items()))
            + "</ul>"
        )
    if doc.get("utilization"):
        body.append(
            "<h2>Mean utilisation</h2><table><tr><th>resource</th><th>device</th><th>mean</th><th>p95</th></tr>"
            + "".join(
                f"<tr><td>{_e(u['resource'])}</td><td>{_e(u['device'])}</td><td>{u['mean']:.0%}</td><td>{u['p95']:.0%}</td></tr>"
                for u in doc["utilization"]
            )
            + "</table>"
        )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title><style>{CSS}</style>'
        f"{plotly_script(plotly)}</head><body>{''.join(body)}</body></html>"
    )


def plotly_script(how: str) -> str:
    """plotly.js inline, or from plotly's CDN at the installed plotly's version with its
    subresource-integrity hash (the browser refuses a file that differs from the one bundled)."""
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    js = get_plotlyjs()
    if how != "cdn":
        return f'<script type="text/javascript">{js}</script>'
    digest = base64.b64encode(hashlib.sha384(js.encode("utf-8")).digest()).decode("ascii")
    url = f"https://cdn.plot.ly/plotly-{get_plotlyjs_version()}.min.js"
    return f'<script charset="utf-8" src="{url}" integrity="sha384-{digest}" crossorigin="anonymous"></script>'


def _throughput_html(t: dict[str, Any] | None) -> str:
    """Samples/s, tokens/s and MFU of the run (model/throughput.py), each with why it is unknown."""
    if not t or not t.get("steps"):
        return '<p class="why" id="throughput-why">no throughput: the hook reported no steps</p>'

    def fig(key: str, fmt: str, why_key: str) -> str:
        v = t.get(key)
        return fmt.format(v) if v is not None else f"unknown ({_e(t.get(why_key) or '')})"

    mfu = (
        f"{t['mfu']:.1%} of the {_e(t.get('peak_path', ''))} peak ({t['peak_flops']:.3g} FLOP/s; "
        f"{_e(t.get('peak_why', ''))})"
        if t.get("mfu") is not None
        else f"unknown ({_e(t.get('mfu_unknown') or '')})"
    )
    return (
        f'<p id="throughput">Samples/s: {fig("samples_per_second", "{:,.4g}", "samples_unknown")}; '
        f"tokens/s: {fig('tokens_per_second', '{:,.4g}', 'tokens_unknown')}; "
        f"model FLOPs utilisation (MFU): {mfu}.</p>"
    )
