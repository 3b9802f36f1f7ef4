"""Sidecar commands: record, analyze, serve."""

from __future__ import annotations

import click

from bottleneckd.cli.common import (
    Context,
    build,
    emit_json,
    event_copier,
    sidecar_options,
)
from bottleneckd.model.errors import InputError


@click.command()
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Trace file to write (JSON lines).")
@click.option("--force", is_flag=True, help="Overwrite an existing trace.")
@click.option("--quiet", is_flag=True, help="No live line.")
@sidecar_options
@click.pass_obj
def record(obj: Context, output: str, force: bool, quiet: bool, interval: float, pid: int | None, disabled: tuple[str, ...],
           duration: float | None, socket_path: str | None) -> None:
    """Sample this machine (and the hook's step phases) into a trace until Ctrl-C or --duration."""
    from bottleneckd.runtime.foreground import live_line, run_foreground
    from bottleneckd.outputs.trace import TraceWriter

    side = build(obj, interval, pid, disabled, socket_path)
    writer = TraceWriter(output, side.machine, side.peaks, interval, {"pid": pid}, overwrite=force)
    side.loop.sinks.insert(0, writer)
    side.loop.sinks.insert(1, event_copier(side, writer))
    try:
        run_foreground(side, duration, None if quiet else lambda snap: click.echo(live_line(snap), err=True))
    finally:
        writer.close()
    click.echo(f"wrote {side.pipeline.samples} samples to {output}", err=True)


@click.command()
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--window", type=click.IntRange(1, 3600), default=5, show_default=True, help="Samples per diagnosis window.")
@click.option("--timeline", is_flag=True, help="Also print the verdict at every sample.")
@click.pass_obj
def analyze(obj: Context, trace: str, fmt: str, window: int, timeline: bool) -> None:
    """Run a recorded trace through the same pipeline that live samples take."""
    from bottleneckd.model.errors import TraceError
    from bottleneckd.diagnosis.pipeline import Pipeline
    from bottleneckd.outputs.report import build_report, render_markdown, render_text
    from bottleneckd.outputs.trace import read_trace

    header, samples = read_trace(trace)
    pipeline = Pipeline(header.peaks, window=window)
    error: TraceError | None = None
    try:
        for s in samples:
            snap = pipeline(s)
            if timeline:
                click.echo(f"{s.t:.1f} {snap.verdict.resource} {snap.verdict.confidence:.2f}", err=True)
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
@click.option("--bind", default="127.0.0.1:9400", show_default=True, help="HOST:PORT for the exporter.")
@click.option("--web-config", type=click.Path(dir_okay=False), default=None, help="TLS and basic auth (Prometheus web config format).")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False), default=None, help="Serve a recorded trace, replayed at its own pace, instead of live samples.")
@click.option("--quiet", is_flag=True)
@sidecar_options
@click.pass_obj
def serve(obj: Context, bind: str, web_config: str | None, trace_path: str | None, quiet: bool, interval: float, pid: int | None,
          disabled: tuple[str, ...], duration: float | None, socket_path: str | None) -> None:
    """Prometheus exporter: the latest sample and diagnosis on HOST:PORT/metrics."""
    from bottleneckd.outputs.energy import EnergyCollector
    from bottleneckd.outputs.exporter import SnapshotCollector
    from bottleneckd.outputs.exporter import serve as start
    from bottleneckd.runtime.foreground import live_line, run_foreground

    if trace_path:
        replay(trace_path, bind, web_config, duration, quiet)
        return
    side = build(obj, interval, pid, disabled, socket_path)
    server = start(SnapshotCollector(lambda: side.pipeline.latest, lambda: side.steps_total,
                                     lambda: list(side.receiver.events) if side.receiver else []), bind, web_config,
                   (EnergyCollector(side.energy),))
    click.echo(f"bottleneckd: serving metrics on http://{bind}/metrics", err=True)
    try:
        run_foreground(side, duration, None if quiet else lambda snap: click.echo(live_line(snap), err=True))
    finally:
        server.shutdown()


def replay(trace_path: str, bind: str, web_config: str | None, duration: float | None, quiet: bool) -> None:
    import time as _time

    from bottleneckd.outputs.exporter import SnapshotCollector
    from bottleneckd.outputs.exporter import serve as start
    from bottleneckd.diagnosis.pipeline import Pipeline
    from bottleneckd.outputs.trace import read_events, read_trace

    header, samples = read_trace(trace_path)
    items = list(samples)
    if not items:
        raise InputError(f"{trace_path}: the trace holds no samples")
    events = read_events(trace_path)
    pipeline = Pipeline(header.peaks)
    steps = [0]
    shown: list[dict] = []  # events up to the sample being served, with their times moved to now
    server = start(SnapshotCollector(lambda: pipeline.latest, lambda: steps[0], lambda: shown), bind, web_config)
    click.echo(f"bottleneckd: replaying {len(items)} samples of {trace_path} on http://{bind}/metrics", err=True)
    t0 = _time.monotonic()
    try:
        k = 0
        while duration is None or _time.monotonic() - t0 < duration:
            s = items[k % len(items)]
            pipeline(s)
            for e in events:
                if items[0].t <= e["t"] <= s.t and not any(x["name"] == e.get("name") for x in shown):
                    shown.append({"event": e.get("kind", ""), "name": e.get("name", ""), "t": _time.time(),
                                  "changes_semantics": e.get("changes_semantics", False)})
            steps[0] += s.phases.steps if s.phases else 0
            k += 1
            _time.sleep(min(header.interval, 1.0))
            if duration is None and k >= len(items):
                break
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()


