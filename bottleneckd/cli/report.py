"""``bottleneckd report TRACE... -o report.html``: recorded traces through the same pipeline as
live samples, drawn as one self-contained HTML page, or with ``--format chrome-trace`` written as a
Chrome/Perfetto trace (outputs/chrome_trace.py)."""

from __future__ import annotations

from typing import Any

import click

from bottleneckd.cli.common import Context, check_outputs, say
from bottleneckd.model.errors import InputError

GRID_INTENSITY_HELP = "Grid carbon intensity in gCO2/kWh, for the carbon figure (yours to give: nothing is looked up)."
PLOTLY_HELP = "plotly.js inside the HTML report (it opens offline, ~5 MB) or loaded from plotly's CDN (small file)."
FORMATS = ("html", "chrome-trace")


def html_recorder(path: str | None, plotly: str = "inline") -> Any:
    """A Recorder for an HTML report at ``path`` (None without one)."""
    if not path:
        return None
    from bottleneckd.outputs.html_report import Recorder

    return Recorder(plotly)


@click.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "-o", "--output", required=True, type=click.Path(dir_okay=False), help="The file to write (HTML, or the trace)."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="html",
    show_default=True,
    help="html: the report page; chrome-trace: a trace for Perfetto or chrome://tracing (a track per rank).",
)
@click.option("--plotly", type=click.Choice(["inline", "cdn"]), default="inline", show_default=True, help=PLOTLY_HELP)
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@click.option(
    "--window", type=click.IntRange(1, 3600), default=5, show_default=True, help="Samples per diagnosis window."
)
@click.option("--grid-intensity", type=click.FloatRange(0, 5000), default=None, help=GRID_INTENSITY_HELP)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the JSON report (with energy) here.",
)
@click.pass_obj
def report(
    obj: Context,
    traces: tuple[str, ...],
    output: str,
    fmt: str,
    plotly: str,
    force: bool,
    window: int,
    grid_intensity: float | None,
    json_path: str | None,
) -> None:
    """Draw recorded traces (one run, possibly in several pieces) as one HTML report (or a Chrome trace)."""
    import json

    from bottleneckd.compare.runs import totals
    from bottleneckd.diagnosis.pipeline import Pipeline
    from bottleneckd.diagnosis.throughput import run_throughput_json
    from bottleneckd.model.errors import TraceError
    from bottleneckd.model.files import write_text
    from bottleneckd.outputs.chrome_trace import chrome_trace
    from bottleneckd.outputs.report import build_report, render_text
    from bottleneckd.outputs.trace import read_events, read_trace

    check_outputs(force, output=output, json=json_path)
    rec = html_recorder(output, plotly) if fmt == "html" else None
    opened = [(path, *read_trace(path)) for path in traces]
    hosts = {h.machine.hostname for _, h, _ in opened}
    if len(hosts) > 1:
        raise InputError(
            f"the traces come from {len(hosts)} machines ({', '.join(sorted(hosts))}): "
            "one report covers one machine's run; report each machine's traces separately"
        )
    header = opened[0][1]
    pipeline = Pipeline(header.peaks, window=window)
    if rec is not None:
        rec.attach(pipeline)
    error: TraceError | None = None
    items = []
    for _, _, samples in opened:
        try:
            for s in samples:  # the samples before a bad line are kept
                items.append(s)
        except TraceError as e:  # the good part is kept; the error is raised after the report is written
            error = error or e
    if not items:
        raise error or InputError(f"{', '.join(traces)}: no samples to report")
    for s in sorted(items, key=lambda s: s.t):  # the same pipeline as live samples
        pipeline(s)
        if rec is not None:
            rec(s)
    events = sorted((e.to_json() for path in traces for e in read_events(path)), key=lambda e: e["t"])
    steps, examples, wall, start = totals(items)
    extra = {
        "traces": list(traces),
        "events": events,
        "throughput": run_throughput_json(steps, examples, wall, start, pipeline.latest),
    }
    if rec is None:  # --format chrome-trace
        doc = {**build_report(pipeline), **extra}
        trace = chrome_trace(items, events, doc, list(traces))
        write_text(output, json.dumps(trace) + "\n", "-o", force)
    else:
        doc = rec.write_report(
            output, extra, header.peaks, events, grid_intensity, force, f"bottleneckd report: {', '.join(traces)}", "-o"
        )
    if json_path:
        write_text(json_path, json.dumps(doc, indent=1) + "\n", "--json", force)
    say(render_text(doc))
    say(f"bottleneckd: wrote {output}")
    if error is not None:
        raise error
