"""The HTML report: one self-contained file (plotly.js embedded, nothing fetched when it is
opened) with the verdict, its evidence and headroom, ranked recommendations with their taxonomy
path and citations, and plots of the run (outputs/html_figures.py).

The page draws a run's report (``Run.report``), its timeline (the "timeline" sink, fed every
sample after it was diagnosed, live or while a trace is replayed) and its energy account.
"""

from __future__ import annotations

import base64
import hashlib
import html
import time
from typing import Any

from bottleneckd.model.resources import UNDETERMINED
from bottleneckd.outputs import html_figures as figs
from bottleneckd.outputs.energy import EnergyAccount
from bottleneckd.outputs.report import _headroom_text, last_window_text, period_text, prediction_text
from bottleneckd.outputs.timeline import Timeline
from bottleneckd.peaks.resolve import PeakTable

CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%;font-size:.9em}
td,th{border:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}
.verdict{font-size:1.3em;font-weight:600}.why{color:#777;font-style:italic}.plot{min-height:380px}"""


def write_html(
    path: str,
    doc: dict[str, Any],
    timeline: Timeline,
    energy: EnergyAccount,
    peaks: PeakTable,
    events: list[dict[str, Any]],
    grams_per_kwh: float | None = None,
    force: bool = False,
    title: str = "bottleneckd report",
    what: str = "--report-html",
    plotly: str = "inline",
) -> None:
    """The page for ``doc`` written to ``path`` (atomically; an existing file only with ``force``).
    ``plotly``: "inline" or "cdn" (``render``)."""
    from bottleneckd.model.files import write_text

    write_text(path, render(doc, timeline, energy, peaks, events, grams_per_kwh, title, plotly), what, force)


def _e(x: Any) -> str:
    return html.escape(str(x))


def _verdict_html(doc: dict[str, Any]) -> str:
    v = doc["verdict"]
    if v["resource"] == UNDETERMINED:
        head = f'<p class="verdict" id="verdict">Bottleneck: undetermined</p><p>{_e(v.get("reason", ""))}</p>'
    else:
        head = (
            f'<p class="verdict" id="verdict">Bottleneck: {_e(v["resource"])} (stage {_e(v["stage"])}, confidence '
            f"{v['confidence']:.0%})</p>"
        )
    ev = "".join(f"<li>{_e(e)}</li>" for e in v.get("evidence", []))
    out = head + (f"<p>Over {_e(period_text(doc))}.</p>" if period_text(doc) else "")
    out += f"<p>Evidence:</p><ul>{ev}</ul>" if ev else ""
    out += _code_html(v.get("code"))
    if v["resource"] != UNDETERMINED:
        out += f"<p>Headroom: {_e(_headroom_text(v.get('headroom'), doc))}</p>"
    if last_window_text(doc):
        out += f'<p class="why">Last window: {_e(last_window_text(doc))}</p>'
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


def _code_html(code: dict[str, Any] | None) -> str:
    """The user's functions the stage's time goes to (the verdict's ``code``), as a table."""
    if not code or not code.get("sites"):
        return ""
    who = " (in the DataLoader workers)" if code.get("role") == "worker" else ""
    rows = "".join(
        f"<tr><td>{_e(s['function'])}</td><td>{_e(s['file'])}:{s['line']}</td>"
        f"<td><code>{_e(s.get('text', ''))}</code></td>"
        f"<td>{s['share']:.0%} ({s['low']:.0%} to {s['high']:.0%})</td></tr>"
        for s in code["sites"]
    )
    return (
        f"<p>Where the {_e(code['stage'])} stage runs in your code{who}: {code['samples']} stack samples "
        f"({_e(code['source'])}).</p>"
        '<table id="code"><tr><th>function</th><th>file:line</th><th>line</th><th>share of the stage (95% CI)</th></tr>'
        + rows
        + "</table>"
    )


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
            f"<td>{_e(r['why'])}</td><td>{_e(r.get('hook') or '-')}</td>"
            f"<td>{_e(prediction_text(r.get('prediction')))}</td></tr>"
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
        "<th>mechanism</th><th>citations</th><th>why</th><th>hook</th><th>predicted speed-up (model)</th></tr>"
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
    timeline: Timeline,
    acc: EnergyAccount,
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
    facts = doc.get("facts", {}) or {}
    # (div, heading, its text before the plot, (figure, why there is none or a note))
    sections: list[tuple[str, str, str, tuple[Any | None, str]]] = [
        ("phases", "Step phases", "", figs.phases_figure(timeline)),
        (
            "utilization",
            "Utilisation against peak",
            "",
            figs.utilization_figure(timeline, doc.get("regime_changes", []), events),
        ),
        ("roofline", "Roofline", "", figs.roofline_figure(peaks, facts)),
        ("ranks", "Ranks", "", figs.ranks_figure(timeline)),
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
    unknown = timeline.unknown_series()
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
