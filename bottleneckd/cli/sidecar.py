"""Sidecar commands: record, analyze, serve."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from bottleneckd.cli.common import Context, build, check_outputs, emit_json, say, sidecar_options, start_trace
from bottleneckd.model.errors import InputError
from bottleneckd.model.protocol import Event
from bottleneckd.outputs.port import DEFAULT_PORT

if TYPE_CHECKING:
    from bottleneckd.diagnosis.pipeline import Snapshot
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

    check_outputs(force, output=output)
    side = build(obj, interval, pid, disabled, socket_path)
    try:
        writer = start_trace(side, output, {"pid": pid}, force, "-o", on_error=lambda _msg: side.loop.stop())
    except BaseException:
        side.close()
        raise
    try:
        run_foreground(side, duration, None if quiet else lambda snap: say(live_line(snap)))
    finally:
        writer.close()
    if writer.failed:
        raise InputError(writer.failed)
    say(f"wrote {side.pipeline.samples} samples to {output}")


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
    from bottleneckd.diagnosis.pipeline import Pipeline
    from bottleneckd.model.errors import TraceError
    from bottleneckd.outputs.report import build_report, render_markdown, render_text
    from bottleneckd.outputs.trace import read_trace
    from bottleneckd.outputs.trace_merge import merge_node_traces

    error: TraceError | None = None
    opened = [(path, *read_trace(path)) for path in traces]  # every file checked before any is analysed
    if len(opened) == 1:
        header, samples = opened[0][1], opened[0][2]
    else:
        loaded = []
        for path, h, it in opened:
            got = []
            try:
                for x in it:
                    got.append(x)
            except TraceError as e:
                error = error or e
            loaded.append((h, got))
        lowest = [min((r.identity.rank for x in got for r in x.ranks), default=1 << 30) for _, got in loaded]
        header = loaded[lowest.index(min(lowest))][0]  # the node of rank 0 gives the peaks and the machine
        samples = merge_node_traces([(h.machine.hostname, got) for h, got in loaded])
    trace = traces[0] if len(traces) == 1 else list(traces)
    pipeline = Pipeline(header.peaks, window=window, machine=header.machine)
    try:
        for s in samples:
            snap = pipeline(s)
            if timeline:
                say(f"{s.t:.1f} {snap.verdict.resource} {snap.verdict.confidence:.2f}")
    except TraceError as e:
        error = e
    doc = build_report(pipeline)
    doc["trace"] = trace
    if fmt == "json":
        emit_json(doc)
    elif fmt == "markdown":
        click.echo(render_markdown(doc))
    else:
        click.echo(render_text(doc))
    if error is not None:
        raise error


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

    parse_bind(bind)
    web = load_web_config(web_config) if web_config else None  # read once, before anything starts
    if trace_path:
        replay(trace_path, bind, web, duration, host_detail)
        return
    side = build(obj, interval, pid, disabled, socket_path)
    try:
        server = serve_metrics(side, bind, web, host_detail=host_detail)
    except BaseException:
        side.close()
        raise
    say(f"bottleneckd: serving metrics on {url_of(server, bind)}")
    try:
        run_foreground(side, duration, None if quiet else lambda snap: say(live_line(snap)))
    finally:
        stop_metrics(server)


class TraceReplay:
    """A recorded trace served as if live (outputs.metrics_server.MetricsSource): samples at the
    trace's pace, events shown once their time has come, with their times moved to now."""

    def __init__(self, trace_path: str) -> None:
        from bottleneckd.diagnosis.pipeline import Pipeline
        from bottleneckd.outputs.trace import read_events, read_trace

        header, samples = read_trace(trace_path)
        self.interval = header.interval
        self.items = list(samples)
        if not self.items:
            raise InputError(f"{trace_path}: the trace holds no samples")
        self.pending = read_events(trace_path)
        self.pipeline = Pipeline(header.peaks, machine=header.machine)
        self.machine = header.machine  # the exporter's bottleneckd_gpu_info
        self.steps_total = 0
        self.shown: list[Event] = []

    def latest(self) -> Snapshot | None:
        return self.pipeline.latest

    def steps(self) -> int:
        return self.steps_total

    def events(self) -> list[Event]:
        return list(self.shown)

    def advance(self, k: int) -> None:
        import time
        from dataclasses import replace

        from bottleneckd.outputs.energy import job_steps

        s = self.items[k % len(self.items)]
        self.pipeline(s)
        for e in self.pending:
            if self.items[0].t <= e.t <= s.t and not any(x.name == e.name for x in self.shown):
                self.shown.append(replace(e, t=time.time()))
        self.steps_total += job_steps(s) if s.phases else 0


def replay(
    trace_path: str,
    bind: str,
    web_config: WebConfig | str | None,
    duration: float | None,
    host_detail: bool = False,
) -> None:
    import time

    from bottleneckd.outputs.metrics_server import serve_metrics, stop_metrics, url_of

    source = TraceReplay(trace_path)
    server = serve_metrics(source, bind, web_config, host_detail=host_detail)
    say(f"bottleneckd: replaying {len(source.items)} samples of {trace_path} on {url_of(server, bind)}")
    t0 = time.monotonic()
    try:
        k = 0
        while duration is None or time.monotonic() - t0 < duration:
            source.advance(k)
            k += 1
            time.sleep(min(source.interval, 1.0))
            if duration is None and k >= len(source.items):
                break
    except KeyboardInterrupt:
        pass
    finally:
        stop_metrics(server)
