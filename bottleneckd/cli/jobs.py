"""Job commands: run, attach, demo."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from bottleneckd.cli.common import Context, build, event_copier, retarget
from bottleneckd.cli.report import html_recorder
from bottleneckd.model.errors import InputError


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--no-inject", is_flag=True, help="Do not install the step-phase instrumentation in the job.")
@click.option("--live", is_flag=True, help="One screen redrawn each interval (plain lines when not a terminal).")
@click.option("--quiet", is_flag=True, help="No live output; only the final report.")
@click.option("--report-json", type=click.Path(dir_okay=False), default=None, help="Write the JSON report here.")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False), default=None, help="Also record a trace.")
@click.option("--report-html", type=click.Path(dir_okay=False), default=None, help="Write the HTML report (plots, energy) here.")
@click.option("--grid-intensity", type=click.FloatRange(0, 5000), default=None, help="gCO2/kWh for the HTML report's carbon figure.")
@click.option("--interval", type=click.FloatRange(0.1, 60), default=1.0, show_default=True)
@click.option("--bind", default=None, help="Also export Prometheus metrics on HOST:PORT.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_obj
def run(obj: Context, no_inject: bool, live: bool, quiet: bool, report_json: str | None, trace_path: str | None,
        report_html: str | None, grid_intensity: float | None, interval: float, bind: str | None, command: tuple[str, ...]) -> None:
    """Run CMD under the sidecar: bottleneckd run [options] -- python train.py ..."""
    from bottleneckd.runtime import job as jobrun
    from bottleneckd.runtime.sidecar import build_sidecar, job_paths
    from bottleneckd.hardware.detect import detect_machine
    from bottleneckd.outputs.live import LiveView
    from bottleneckd.outputs.report import build_report, render_text
    from bottleneckd.outputs.trace import TraceWriter

    catalog, profile = obj.catalog(), obj.profile()
    if trace_path and Path(trace_path).exists():
        raise InputError(f"{trace_path}: already exists; choose another --trace")
    recorder = html_recorder(report_html)
    machine = detect_machine()
    sock = jobrun.temp_socket()
    side = build_sidecar(machine, catalog, profile, interval, None, job_paths(), socket_path=sock)
    job = jobrun.start_job(command, jobrun.job_env(sock, not no_inject and jobrun.is_python_torch_job(command)))
    retarget(side, job.pid)
    writer = TraceWriter(trace_path, machine, side.peaks, interval, {"command": list(command)}) if trace_path else None
    if writer:
        side.loop.sinks.insert(0, writer)
        side.loop.sinks.insert(1, event_copier(side, writer))
    if recorder:
        side.loop.sinks.append(recorder.attach(side.pipeline))  # after the pipeline: it reads each sample's snapshot
    server = None
    if bind:
        from bottleneckd.outputs.exporter import SnapshotCollector
        from bottleneckd.outputs.exporter import serve as start

        from bottleneckd.outputs.energy import EnergyCollector

        server = start(SnapshotCollector(lambda: side.pipeline.latest, lambda: side.steps_total), bind, None, (EnergyCollector(side.energy),))
    view = LiveView(live, quiet, peaks=side.peaks)
    try:
        code = jobrun.supervise(side, job, view)
    finally:
        if writer:
            writer.close()
        if server:
            server.shutdown()
    doc = build_report(side.pipeline)
    doc["command"] = list(command)
    doc["exit_code"] = code
    if recorder:
        recorder.finish(doc, report_html, side.peaks, list(side.receiver.events) if side.receiver else [], grid_intensity)
    click.echo("\n=== bottleneckd report ===\n" + render_text(doc), err=True)
    if report_json:
        jobrun.write_json(report_json, doc)
    sys.exit(code)


@click.command()
@click.option("--pid", type=int, required=True, help="The training job's main process.")
@click.option("--duration", type=click.FloatRange(0, None, min_open=True), default=None, help="Stop after this many seconds (default: until the job exits).")
@click.option("--report-json", type=click.Path(dir_okay=False), default=None)
@click.option("--rate", type=click.FloatRange(0.1, 20), default=2.0, show_default=True, help="py-spy stack samples per second.")
@click.option("--no-stacks", is_flag=True, help="Do not sample stacks (no ptrace needed).")
@click.option("--live", is_flag=True)
@click.option("--quiet", is_flag=True)
@click.option("--interval", type=click.FloatRange(0.1, 60), default=1.0, show_default=True)
@click.pass_obj
def attach(obj: Context, pid: int, duration: float | None, report_json: str | None, rate: float, no_stacks: bool, live: bool,
           quiet: bool, interval: float) -> None:
    """Diagnose a job that is already running (py-spy stacks, non-blocking)."""
    import psutil

    from bottleneckd.outputs.live import LiveView
    from bottleneckd.outputs.report import build_report, render_text
    from bottleneckd.runtime.foreground import run_foreground
    from bottleneckd.samplers.stacks import StackSampler

    side = build(obj, interval, pid, (), None)
    stacks = None
    if not no_stacks:
        stacks = StackSampler(pid, rate)
        why = stacks.check()
        if why:
            click.echo(f"bottleneckd: {why}", err=True)
            stacks = None
        else:
            side.phase_sources.append(stacks.drain)
            stacks.start()
    via = " with py-spy stacks" + (f" of pid {stacks.target} (the process that trains)" if stacks and stacks.target != pid else "") if stacks else ""
    click.echo(f"bottleneckd: attached to pid {pid}{via}", err=True)
    try:
        run_foreground(side, duration, LiveView(live, quiet, peaks=side.peaks), stop_when=lambda: not psutil.pid_exists(pid) or
                       psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    finally:
        if stacks:
            stacks.stop()
    doc = build_report(side.pipeline)
    doc["pid"] = pid
    doc["stack_samples"] = stacks.samples_total if stacks else 0
    click.echo("\n=== bottleneckd report ===\n" + render_text(doc), err=True)
    if report_json:
        from bottleneckd.runtime.job import write_json

        write_json(report_json, doc)


@click.command()
@click.option("--epochs", type=click.IntRange(1, 100), default=2, show_default=True)
@click.option("--workers", type=click.IntRange(0, 64), default=1, show_default=True)
@click.option("--interval", type=click.FloatRange(0.1, 10), default=1.0, show_default=True)
@click.option("--report-json", type=click.Path(dir_okay=False), default=None, help="Write the JSON report here.")
@click.pass_obj
def demo(obj: Context, epochs: int, workers: int, interval: float, report_json: str | None) -> None:
    """Run the built-in CPU training job under the sidecar and diagnose it live (no GPU needed)."""
    import importlib.util

    from bottleneckd.runtime import job as jobrun
    from bottleneckd.outputs.report import build_report, render_text
    from bottleneckd.runtime.foreground import live_line

    if importlib.util.find_spec("torch") is None:
        raise InputError("the demo job needs torch: pip install 'bottleneckd[torch]' (CPU build: pip install torch==2.13.0)")
    sock = jobrun.temp_socket()
    side = build(obj, interval, None, (), sock)
    # the demo calls bottleneckd.torch.watch itself: nothing to inject
    job = jobrun.start_job((sys.executable, "-m", "bottleneckd.torch.demo", "--epochs", str(epochs), "--workers", str(workers)),
                           jobrun.job_env(sock, inject=False))
    retarget(side, job.pid)
    click.echo(f"bottleneckd: diagnosing the demo job (pid {job.pid}) live; Ctrl-C stops both", err=True)
    code = jobrun.supervise(side, job, lambda snap: click.echo(live_line(snap), err=True))
    doc = build_report(side.pipeline)
    click.echo("\n=== bottleneckd report (whole run) ===")
    click.echo(render_text(doc))
    if report_json:
        jobrun.write_json(report_json, doc)
    if code:
        sys.exit(code)


