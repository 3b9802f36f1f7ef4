"""Job commands: run, attach, demo. Every output is checked before the job starts; the job's exit
code is passed through, even when the report cannot be written."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from bottleneckd.cli.common import Context, build, check_outputs, report_epilogue, retarget, say, start_trace
from bottleneckd.cli.report import PLOTLY_HELP
from bottleneckd.model.errors import InputError

if TYPE_CHECKING:
    from bottleneckd.outputs.metrics_server import WebConfig


def node_sidecar_socket() -> str | None:
    """A ``bottleneckd serve`` already receiving on this node (bound to the default socket, in a
    directory only this user can write): the job's ranks report to it, not to a second sidecar."""
    import stat

    from bottleneckd.channel.socket_path import default_socket_path, is_live, untrusted_dir

    path = default_socket_path()
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if (
        not stat.S_ISSOCK(st.st_mode)
        or st.st_uid != os.geteuid()
        or untrusted_dir(os.path.dirname(os.path.abspath(path)))
    ):
        return None
    return path if is_live(path) else None


def run_job(
    obj: Context,
    command: tuple[str, ...],
    inject: bool,
    interval: float,
    view: Callable[[Any], None] | None,
    trace_path: str | None = None,
    bind: str | None = None,
    web_config: WebConfig | str | None = None,
    force: bool = False,
    grace: float = 30.0,
    meta: dict[str, Any] | None = None,
    sinks: dict[str, Callable[[Any], Any]] | None = None,
    serving: list[Any] | None = None,
) -> tuple[Any, int, dict[str, Any]]:
    """Start ``command`` under a sidecar and supervise it to the end: returns the sidecar, the
    job's exit code and what the report adds about the run. Nothing is left in /tmp. With
    ``serving`` (a list) the metrics server is left running and appended to it, for the caller to
    stop (``linger``)."""
    from bottleneckd.outputs.live import LiveView, unknown_reasons
    from bottleneckd.outputs.metrics_server import serve_metrics, stop_metrics, url_of
    from bottleneckd.runtime import job as jobrun
    from bottleneckd.runtime.job_env import SOCKET_NAME, job_env, no_phases_note, run_directory, uninstrumented_reason

    joined = None
    with run_directory() as run_dir:
        sock = os.path.join(run_dir, SOCKET_NAME)
        side = build(obj, interval, None, (), sock)
        for name, make in (sinks or {}).items():  # more sinks, made from the sidecar (the HTML report's recorder)
            side.loop.add_sink(name, make(side))
        if isinstance(view, LiveView):  # the live screen says why each unsampled resource is unknown
            view.reasons = unknown_reasons(side.peaks)
        writer = server = None
        try:
            if trace_path:
                writer = start_trace(
                    side,
                    trace_path,
                    {"command": list(command), **(meta or {})},
                    force,
                    "--trace",
                    on_error=lambda msg: say(f"bottleneckd: error: {msg}"),
                )
            if bind:
                server = serve_metrics(side, bind, web_config)
                say(f"bottleneckd: serving metrics on {url_of(server, bind)}")
            blind = uninstrumented_reason(command) if inject else None
            if blind:
                say(f"bottleneckd: {blind}; the job runs without step phases")
            joined = node_sidecar_socket() if inject else None
            if joined:
                say(f"bottleneckd: joined the sidecar serving this node ({joined}): the job's ranks report there")
            job = jobrun.start_job(command, job_env(run_dir, joined or sock, inject))
            retarget(side, job.pid)
            code = jobrun.supervise(side, job, view, grace, say)
        finally:
            if isinstance(view, LiveView):
                view.close()  # leave the live screen before the report is printed
            if writer:
                writer.close()
            if serving is not None and server is not None:
                serving.append(server)
            else:
                stop_metrics(server)
            side.close()
    extra: dict[str, Any] = {
        "instrumentation": {
            "injected": inject,
            "phase_messages": side.receiver.received,
            "note": None if side.steps_total or joined else no_phases_note(command, inject),
        }
    }
    if joined:
        extra["node_sidecar"] = joined
    return side, code, extra


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--no-inject", is_flag=True, help="Do not install the step-phase instrumentation in the job.")
@click.option("--live", is_flag=True, help="One screen redrawn each interval (plain lines when not a terminal).")
@click.option("--quiet", is_flag=True, help="No live output; only the final report.")
@click.option("--report-json", type=click.Path(dir_okay=False), default=None, help="Write the JSON report here.")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False), default=None, help="Also record a trace.")
@click.option(
    "--report-html", type=click.Path(dir_okay=False), default=None, help="Write the HTML report (plots, energy) here."
)
@click.option(
    "--grid-intensity", type=click.FloatRange(0, 5000), default=None, help="gCO2/kWh for the report's carbon figure."
)
@click.option("--plotly", type=click.Choice(["inline", "cdn"]), default="inline", help=PLOTLY_HELP)
@click.option("--force", is_flag=True, help="Replace an existing --trace, --report-json or --report-html file.")
@click.option("--interval", type=click.FloatRange(0.1, 60), default=1.0, show_default=True)
@click.option("--bind", default=None, help="Also export Prometheus metrics on HOST:PORT.")
@click.option(
    "--web-config",
    type=click.Path(dir_okay=False),
    default=None,
    help="TLS, client certificates and basic auth for --bind.",
)
@click.option(
    "--grace",
    type=click.FloatRange(0, 3600),
    default=30.0,
    show_default=True,
    help="Seconds a job asked to stop may take before SIGTERM, then SIGKILL.",
)
@click.option(
    "--linger",
    type=click.FloatRange(0, 3600),
    default=30.0,
    show_default=True,
    help="With --bind: seconds /metrics stays up after the job ends, so the final state is scraped "
    "(0: stop at once; Ctrl-C ends the wait).",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_obj
def run(
    obj: Context,
    no_inject: bool,
    live: bool,
    quiet: bool,
    report_json: str | None,
    trace_path: str | None,
    report_html: str | None,
    grid_intensity: float | None,
    plotly: str,
    force: bool,
    interval: float,
    bind: str | None,
    web_config: str | None,
    grace: float,
    linger: float,
    command: tuple[str, ...],
) -> None:
    """Run CMD under the sidecar: bottleneckd run [options] -- python train.py ..."""
    from bottleneckd.cli.report import html_recorder
    from bottleneckd.outputs.live import LiveView
    from bottleneckd.outputs.metrics_server import load_web_config, parse_bind

    check_outputs(force, report_json=report_json, trace=trace_path, report_html=report_html)
    recorder = html_recorder(report_html, plotly)
    if bind:
        parse_bind(bind)
    web: WebConfig | None = None
    if web_config:
        if not bind:
            raise InputError("--web-config: only used with --bind HOST:PORT; add --bind")
        web = load_web_config(web_config)  # read once, before the job starts
    obj.catalog()  # bad data files are found before the job starts
    obj.profile()
    view = LiveView(live, quiet)
    serving: list[Any] = []
    side, code, extra = run_job(
        obj,
        command,
        not no_inject,
        interval,
        view,
        trace_path,
        bind,
        web,
        force,
        grace,
        sinks={"html_report": lambda side: recorder.attach(side.pipeline, side.energy)} if recorder else None,
        serving=serving,
    )
    from bottleneckd.channel.report_file import read_report_file
    from bottleneckd.diagnosis.throughput import run_throughput_json

    node = (
        read_report_file(extra["node_sidecar"]) if extra.get("node_sidecar") else None
    )  # the node sidecar's view of every rank
    extra["energy"] = side.energy.account().to_json(grid_intensity)
    rt = side.run_totals  # what 'bottleneckd compare' reads of a run
    extra["throughput"] = run_throughput_json(rt.steps, rt.examples, rt.wall_seconds, None, side.pipeline.latest)
    report_epilogue(
        side.pipeline,
        {"command": list(command), "exit_code": code, **extra},
        report_json,
        force,
        run_totals=side.run_totals,
        doc=node,
    )
    if recorder:
        recorder.write_report(
            report_html,
            extra,
            side.peaks,
            [e.to_json() for e in side.events()],
            grid_intensity,
            force,
            run_totals=side.run_totals,
        )
    linger_then_stop(serving, linger)
    sys.exit(code)


def linger_then_stop(serving: list[Any], seconds: float) -> None:
    """Keep the final state on /metrics for a last scrape, then stop the server."""
    import time

    from bottleneckd.outputs.metrics_server import stop_metrics

    for server in serving:
        if seconds > 0:
            say(f"bottleneckd: the job ended; /metrics stays up {seconds:g} s for a last scrape (--linger, Ctrl-C)")
            try:
                time.sleep(seconds)
            except KeyboardInterrupt:
                pass
        stop_metrics(server)


@click.command()
@click.option("--pid", type=int, required=True, help="The training job's main process.")
@click.option(
    "--duration",
    type=click.FloatRange(0, None, min_open=True),
    default=None,
    help="Stop after this many seconds (default: until the job exits).",
)
@click.option("--report-json", type=click.Path(dir_okay=False), default=None)
@click.option("--force", is_flag=True, help="Replace an existing --report-json file.")
@click.option(
    "--rate", type=click.FloatRange(0.1, 20), default=2.0, show_default=True, help="py-spy stack samples per second."
)
@click.option("--no-stacks", is_flag=True, help="Do not sample stacks (no ptrace needed).")
@click.option("--live", is_flag=True)
@click.option("--quiet", is_flag=True)
@click.option("--interval", type=click.FloatRange(0.1, 60), default=1.0, show_default=True)
@click.option("--socket", "socket_path", default=None, help="Channel a hooked job sends step phases to.")
@click.pass_obj
def attach(
    obj: Context,
    pid: int,
    duration: float | None,
    report_json: str | None,
    force: bool,
    rate: float,
    no_stacks: bool,
    live: bool,
    quiet: bool,
    interval: float,
    socket_path: str | None,
) -> None:
    """Diagnose a job that is already running (py-spy stacks, non-blocking)."""
    import psutil

    from bottleneckd.outputs.live import LiveView
    from bottleneckd.runtime.foreground import run_foreground
    from bottleneckd.samplers.stacks import StackSampler

    check_outputs(force, report_json=report_json)
    side = build(obj, interval, pid, (), socket_path)
    stacks = None
    view = LiveView(live, quiet, peaks=side.peaks)
    try:
        if not no_stacks:
            stacks = StackSampler(pid, rate)
            why = stacks.check()
            if why:
                say(f"bottleneckd: {why}")
                stacks = None
            else:
                side.phase_sources.append(stacks.drain)
                stacks.start()
        via = (
            " with py-spy stacks"
            + (f" of pid {stacks.target} (the process that trains)" if stacks and stacks.target != pid else "")
            if stacks
            else ""
        )
        say(f"bottleneckd: attached to pid {pid}{via}")
        run_foreground(
            side,
            duration,
            view,
            stop_when=lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
        )
    finally:
        view.close()  # leave the live screen before the report is printed
        if stacks:
            stacks.stop()
        side.close()
    if not report_epilogue(
        side.pipeline,
        {"pid": pid, "stack_samples": stacks.samples_total if stacks else 0},
        report_json,
        force,
        run_totals=side.run_totals,
    ):
        sys.exit(2)


@click.command()
@click.option("--epochs", type=click.IntRange(1, 100), default=2, show_default=True)
@click.option("--workers", type=click.IntRange(0, 64), default=1, show_default=True)
@click.option("--interval", type=click.FloatRange(0.1, 10), default=1.0, show_default=True)
@click.option("--report-json", type=click.Path(dir_okay=False), default=None, help="Write the JSON report here.")
@click.option("--force", is_flag=True, help="Replace an existing --report-json file.")
@click.pass_obj
def demo(obj: Context, epochs: int, workers: int, interval: float, report_json: str | None, force: bool) -> None:
    """Run the built-in CPU training job under the sidecar and diagnose it live (no GPU needed)."""
    import importlib.util

    from bottleneckd.outputs.live import live_line

    if importlib.util.find_spec("torch") is None:
        raise InputError(
            "the demo job needs torch: pip install 'bottleneckd[torch]' (CPU build: pip install torch==2.13.0)"
        )
    check_outputs(force, report_json=report_json)
    say("bottleneckd: diagnosing the demo job live; Ctrl-C stops both")
    # the demo calls bottleneckd.torch.watch itself: nothing to inject
    command = (sys.executable, "-m", "bottleneckd.torch.demo", "--epochs", str(epochs), "--workers", str(workers))
    side, code, _extra = run_job(obj, command, False, interval, lambda snap: say(live_line(snap)))
    report_epilogue(
        side.pipeline,
        {},
        report_json,
        force,
        title="bottleneckd report (whole run)",
        to_stdout=True,
        run_totals=side.run_totals,
    )
    if code:
        sys.exit(code)
