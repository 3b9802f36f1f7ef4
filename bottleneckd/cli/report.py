"""``bottleneckd report TRACE... -o report.html``: recorded traces through the same pipeline as
live samples, drawn as one self-contained HTML page, or with ``--format chrome-trace`` written as a
Chrome/Perfetto trace (outputs/chrome_trace.py)."""

from __future__ import annotations

import importlib.util

import click

from bottleneckd.cli.common import Context, check_outputs, say
from bottleneckd.model.errors import InputError

GRID_INTENSITY_HELP = "Grid carbon intensity in gCO2/kWh, for the carbon figure (yours to give: nothing is looked up)."
PLOTLY_HELP = "plotly.js inside the HTML report (it opens offline, ~5 MB) or loaded from plotly's CDN (small file)."
FORMATS = ("html", "chrome-trace")


def html_needs_plotly(path: str | None) -> None:
    """An HTML report needs plotly: checked before any work."""
    if path and importlib.util.find_spec("plotly") is None:
        raise InputError("the HTML report needs plotly: pip install 'bottleneckd[report]'")


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

    from bottleneckd.model.files import write_text
    from bottleneckd.outputs.chrome_trace import chrome_trace
    from bottleneckd.outputs.html_report import write_html
    from bottleneckd.outputs.report import render_text
    from bottleneckd.runtime.replay import load
    from bottleneckd.runtime.sinks import Outputs

    check_outputs(force, output=output, json=json_path)
    if fmt == "html":
        html_needs_plotly(output)
    rep = load(traces, window=window, one_machine=True)
    items = rep.read_all() if fmt == "chrome-trace" else None  # the chrome trace draws every sample
    wired = rep.feed(Outputs(timeline=fmt == "html"))
    if not rep.fed:
        raise rep.error or InputError(f"{', '.join(traces)}: no samples to report")
    run = rep.run
    events = [e.to_json() for e in rep.events]
    doc = run.report(extra={"traces": list(traces), "events": events}, energy=True, grid_intensity=grid_intensity)
    if items is not None:  # --format chrome-trace
        write_text(output, json.dumps(chrome_trace(items, events, doc, list(traces))) + "\n", "-o", force)
    else:
        assert wired.timeline is not None
        title = f"bottleneckd report: {', '.join(traces)}"
        write_html(
            output,
            doc,
            wired.timeline,
            run.energy.account(),
            run.peaks,
            events,
            grid_intensity,
            force,
            title,
            "-o",
            plotly=plotly,
        )
    if json_path:
        write_text(json_path, json.dumps(doc, indent=1) + "\n", "--json", force)
    say(render_text(doc))
    say(f"bottleneckd: wrote {output}")
    if rep.error is not None:
        raise rep.error
