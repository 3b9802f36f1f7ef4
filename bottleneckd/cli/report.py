"""``bottleneckd report TRACE... -o report.html``: recorded traces through the same pipeline as
live samples, drawn as one self-contained HTML page."""

from __future__ import annotations

import click

from bottleneckd.cli.common import Context
from bottleneckd.model.errors import InputError

GRID_INTENSITY_HELP = "Grid carbon intensity in gCO2/kWh, for the carbon figure (yours to give: nothing is looked up)."


def check_report_path(path: str, force: bool) -> None:
    """Checked before any work, so a bad -o costs nothing and overwrites nothing."""
    import os

    if os.path.exists(path) and not force:
        raise InputError(f"{path}: already exists; choose another -o or pass --force to overwrite")
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise InputError(f"{path}: directory {d} does not exist")
    try:
        import plotly  # noqa: F401
    except ImportError as e:
        raise InputError("the HTML report needs plotly: pip install 'bottleneckd[report]'") from e


def html_recorder(path: str | None):  # noqa: ANN201
    """A Recorder for ``run --report-html PATH`` (None without one); the path is checked first."""
    if not path:
        return None
    check_report_path(path, False)
    from bottleneckd.outputs.html_report import Recorder

    return Recorder()


@click.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The HTML file to write.")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@click.option("--window", type=click.IntRange(1, 3600), default=5, show_default=True, help="Samples per diagnosis window.")
@click.option("--grid-intensity", type=click.FloatRange(0, 5000), default=None, help=GRID_INTENSITY_HELP)
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="Also write the JSON report (with energy) here.")
@click.pass_obj
def report(obj: Context, traces: tuple[str, ...], output: str, force: bool, window: int, grid_intensity: float | None,
           json_path: str | None) -> None:
    """Draw recorded traces (one run, possibly in several pieces) as one HTML report."""
    from bottleneckd.compare.runs import totals
    from bottleneckd.diagnosis.pipeline import Pipeline
    from bottleneckd.model.errors import TraceError
    from bottleneckd.outputs import html_report
    from bottleneckd.outputs.report import build_report, render_text
    from bottleneckd.outputs.trace import read_events, read_trace
    from bottleneckd.runtime.job import write_json

    check_report_path(output, force)
    if json_path:
        check_report_path(json_path, force)
    opened = [(path, *read_trace(path)) for path in traces]
    hosts = {h.machine.hostname for _, h, _ in opened}
    if len(hosts) > 1:
        raise InputError(f"the traces come from {len(hosts)} machines ({', '.join(sorted(hosts))}): one report covers one machine's run; "
                         "report each machine's traces separately")
    header = opened[0][1]
    pipeline = Pipeline(header.peaks, window=window)
    rec = html_report.Recorder().attach(pipeline)
    error: TraceError | None = None
    items = []
    for path, _, samples in opened:
        try:
            items += list(samples)
        except TraceError as e:  # the good part is kept; the error is raised after the report is written
            error = error or e
    if not items:
        raise InputError(f"{', '.join(traces)}: no samples to report")
    for s in sorted(items, key=lambda s: s.t):
        pipeline(s)
        rec(s)
    events = sorted((e for path in traces for e in read_events(path)), key=lambda e: e.get("t", 0.0))
    doc = build_report(pipeline)
    doc["traces"] = list(traces)
    steps, examples, wall, start = totals(items)
    doc["throughput"] = {"steps": steps, "examples": examples, "wall_seconds": wall, "start": start}
    doc["events"] = events
    rec.finish(doc, output, header.peaks, events, grid_intensity, f"bottleneckd report: {', '.join(traces)}", overwrite=force)
    if json_path:
        write_json(json_path, doc)
    click.echo(render_text(doc) + "\n" + html_report.energy_summary(rec.energy.account()), err=True)
    click.echo(f"bottleneckd: wrote {output}", err=True)
    if error is not None:
        raise error
