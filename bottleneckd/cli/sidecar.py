"""Sidecar commands: record, analyze, serve (options parsed here; the run is runtime/'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from bottleneckd.cli.common import Context, build, check_outputs, emit_json, say, sidecar_options
from bottleneckd.model.errors import InputError
from bottleneckd.outputs.port import DEFAULT_PORT

if TYPE_CHECKING:
    from bottleneckd.outputs.metrics_server import WebConfig


@click.command()
@click.option(
    "-o", "--output", required=True, type=click.Path(dir_okay=False), help="Trace file to write (JSON lines)."
)
@click.option("--force", is_flag=True, help="Replace an existing trace (it is replaced when recording ends).")
@click.option("--quiet", is_flag=True, help="No live line.")
@sidecar_options
@click.pass_obj
def record(
    obj: Context,
    output: str,
    force: bool,
    quiet: bool,
    interval: float,
    pid: int | None,
    disabled: tuple[str, ...],
    duration: float | None,
    socket_path: str | None,
) -> None:
    """Sample this machine (and the hook's step phases) into a trace until Ctrl-C or --duration."""
    from bottleneckd.outputs.live import live_line
    from bottleneckd.runtime.foreground import run_foreground
    from bottleneckd.runtime.sinks import Outputs, TraceOut

    check_outputs(force, output=output)
    side = build(obj, interval, pid, disabled, socket_path)
    trace = TraceOut(output, {"pid": pid}, force, "-o", on_error=lambda _msg: side.loop.stop())
    try:
        wired = side.wire(Outputs(trace=trace, view=None if quiet else lambda snap: say(live_line(snap))))
    except BaseException:
        side.close()
        raise
    run_foreground(side, duration)  # closes the trace
    assert wired.trace is not None
    if wired.trace.failed:
        raise InputError(wired.trace.failed)
    say(f"wrote {side.run.pipeline.samples} samples to {output}")


@click.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option(
    "--window", type=click.IntRange(1, 3600), default=5, show_default=True, help="Samples per diagnosis window."
)
@click.option("--timeline", is_flag=True, help="Also print the verdict at every sample.")
@click.pass_obj
def analyze(obj: Context, traces: tuple[str, ...], fmt: str, window: int, timeline: bool) -> None:
    """Run a recorded trace through the same pipeline that live samples take. Several traces (one
    per node of one job) give the job's verdict, with the straggler judged across all its ranks."""
    from bottleneckd.outputs.report import render_markdown, render_text
    from bottleneckd.runtime.replay import load
    from bottleneckd.runtime.sinks import Outputs

    rep = load(traces, window=window)
    view = (
        (lambda snap: say(f"{snap.sample.t:.1f} {snap.verdict.resource} {snap.verdict.confidence:.2f}"))
        if timeline
        else None
    )
    rep.feed(Outputs(view=view))
    doc = rep.run.report(extra={"trace": traces[0] if len(traces) == 1 else list(traces)})
    if fmt == "json":
        emit_json(doc)
    elif fmt == "markdown":
        click.echo(render_markdown(doc))
    else:
        click.echo(render_text(doc))
    if rep.error is not None:
        raise rep.error


@click.command()
@click.option(
    "--bind",
    default=f"127.0.0.1:{DEFAULT_PORT}",
    show_default=True,
    help="HOST:PORT for the exporter (9612: free in Prometheus's port list; 9400 is dcgm-exporter's).",
)
@click.option(
    "--host-detail",
    is_flag=True,
    help="Also export what node_exporter already does: each core's busy share, every virtual NIC.",
)
@click.option(
    "--web-config",
    type=click.Path(dir_okay=False),
    default=None,
    help="TLS, client certificates and basic auth (Prometheus web config format).",
)
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Serve a recorded trace, replayed at its own pace, instead of live samples.",
)
@click.option("--quiet", is_flag=True)
@sidecar_options
@click.pass_obj
def serve(
    obj: Context,
    bind: str,
    web_config: str | None,
    trace_path: str | None,
    host_detail: bool,
    quiet: bool,
    interval: float,
    pid: int | None,
    disabled: tuple[str, ...],
    duration: float | None,
    socket_path: str | None,
) -> None:
    """Prometheus exporter: the latest sample and diagnosis on HOST:PORT/metrics."""
    from bottleneckd.outputs.live import live_line
    from bottleneckd.outputs.metrics_server import load_web_config, parse_bind, serve_metrics, stop_metrics, url_of
    from bottleneckd.runtime.foreground import run_foreground
    from bottleneckd.runtime.sinks import Outputs

    parse_bind(bind)
    web = load_web_config(web_config) if web_config else None  # read once, before anything starts
    if trace_path:
        serve_trace(trace_path, bind, web, duration, host_detail)
        return
    side = build(obj, interval, pid, disabled, socket_path)
    try:
        side.wire(Outputs(view=None if quiet else lambda snap: say(live_line(snap))))
        server = serve_metrics(side.run, bind, web, host_detail=host_detail)
    except BaseException:
        side.close()
        raise
    say(f"bottleneckd: serving metrics on {url_of(server, bind)}")
    try:
        run_foreground(side, duration)
    finally:
        stop_metrics(server)


def serve_trace(
    trace_path: str, bind: str, web: WebConfig | None, duration: float | None, host_detail: bool = False
) -> None:
    """A recorded trace served as if live, at its own pace."""
    from bottleneckd.outputs.metrics_server import serve_metrics, stop_metrics, url_of
    from bottleneckd.runtime.replay import load

    rep = load((trace_path,))
    n = len(rep.read_all())
    server = serve_metrics(rep.run, bind, web, host_detail=host_detail)
    say(f"bottleneckd: replaying {n} samples of {trace_path} on {url_of(server, bind)}")
    try:
        rep.pace(duration)
    except KeyboardInterrupt:
        pass
    finally:
        stop_metrics(server)
