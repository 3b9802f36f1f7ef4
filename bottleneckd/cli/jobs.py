"""Job commands: run, attach, demo (options parsed here; the job and its run are runtime/'s).
Every output is checked before the job starts; the job's exit code is passed through, even when
the report cannot be written."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from bottleneckd.cli.common import Context, build, check_outputs, print_report, say
from bottleneckd.cli.report import PLOTLY_HELP
from bottleneckd.model.errors import InputError
from bottleneckd.runtime.job_env import STACK_RATE

if TYPE_CHECKING:
    from bottleneckd.outputs.metrics_server import WebConfig


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
@click.option(
    "--stack-rate",
    type=click.FloatRange(0.1, 20),
    default=STACK_RATE,
    show_default=True,
    help="py-spy stack samples per second after the job's first minute, which is sampled at 2 per second "
    "(names the code of the bottleneck's stage).",
)
@click.option("--no-stacks", is_flag=True, help="Do not sample the job's stacks (no py-spy, no ptrace).")
@click.option(
    "--tune",
    is_flag=True,
    help="Apply the recommended mitigations in the running job one at a time, each verified by an interleaved "
    "A/B; keep the significant winners, revert the rest; the report says what to change in the code.",
)
@click.option(
    "--allow-semantics-change",
    is_flag=True,
    help="With --tune: also try mitigations that change training semantics (mixed precision, data echoing ...).",
)
@click.option(
    "--no-calibrate",
    is_flag=True,
    help="Do not measure the CPU's compute and memory-bandwidth peaks before the job starts (done once a machine, "
    "on a quiet one, where no calibration profile gives them: about 1.5 s).",
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
    stack_rate: float,
    no_stacks: bool,
    tune: bool,
    allow_semantics_change: bool,
    no_calibrate: bool,
    command: tuple[str, ...],
) -> None:
    """Run CMD under the sidecar: bottleneckd run [options] -- python train.py ..."""
    from bottleneckd.cli.report import html_needs_plotly
    from bottleneckd.outputs.live import LiveView
    from bottleneckd.outputs.metrics_server import load_web_config, parse_bind
    from bottleneckd.runtime.job import check_program, linger_then_stop, run_job
    from bottleneckd.runtime.sinks import Outputs, TraceOut

    if allow_semantics_change and not tune:
        raise InputError("--allow-semantics-change: only used with --tune; add --tune")
    if tune and no_inject:
        raise InputError("--tune: the hook applies the mitigations, and --no-inject leaves it out; drop one of them")
    check_outputs(force, report_json=report_json, trace=trace_path, report_html=report_html)
    html_needs_plotly(report_html)
    if bind:
        parse_bind(bind)
    web: WebConfig | None = None
    if web_config:
        if not bind:
            raise InputError("--web-config: only used with --bind HOST:PORT; add --bind")
        web = load_web_config(web_config)  # read once, before the job starts
    obj.catalog()  # bad data files are found before the job starts
    obj.profile()
    check_program(command)  # before the peaks are measured: a typo costs no wait
    if not no_calibrate:
        obj.measure_peaks()
    trace = (
        TraceOut(
            trace_path, {"command": list(command)}, force, "--trace", lambda msg: say(f"bottleneckd: error: {msg}")
        )
        if trace_path
        else None
    )
    outputs = Outputs(trace=trace, timeline=bool(report_html), view=LiveView(live, quiet))
    job = run_job(
        lambda sock: build(obj, interval, None, (), sock),
        command,
        not no_inject,
        outputs,
        bind=bind,
        web_config=web,
        grace=grace,
        say=say,
        keep_serving=True,
        stack_rate=None if no_stacks else stack_rate,
        tune=("semantics" if allow_semantics_change else "preserving") if tune else None,
    )
    run = job.side.run
    extra = {"command": list(command), "exit_code": job.code, **job.extra}
    doc = run.report(extra=extra, energy=True, grid_intensity=grid_intensity, base=job.node_report)
    print_report(doc, report_json, force)
    if report_html:
        from bottleneckd.outputs.html_report import write_html

        assert job.timeline is not None
        events = [e.to_json() for e in run.events()]
        write_html(
            report_html,
            doc,
            job.timeline,
            run.energy.account(),
            run.peaks,
            events,
            grid_intensity,
            force,
            plotly=plotly,
        )
    linger_then_stop(job.server, linger, say)
    sys.exit(job.code)


@click.command()
@click.option("--pid", type=int, required=True, help="The training job's main process.")
@click.option(
    "--duration",
    type=click.FloatRange(0, None, min_open=True),
    default=None,
    help="Stop after this many seconds (default: until the job exits).",
)
@click.option("--report-json", type=click.Path(dir_okay=False), default=None)
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also record a trace (bottleneckd analyze replays it).",
)
@click.option("--force", is_flag=True, help="Replace an existing --report-json or --trace file.")
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
    trace_path: str | None,
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
    from bottleneckd.runtime.sinks import Outputs, TraceOut
    from bottleneckd.samplers.stacks import StackSampler

    check_outputs(force, report_json=report_json, trace=trace_path)
    side = build(obj, interval, pid, (), socket_path)
    trace = (
        TraceOut(trace_path, {"attach": pid}, force, "--trace", lambda msg: say(f"bottleneckd: error: {msg}"))
        if trace_path
        else None
    )
    stacks = None
    view = LiveView(live, quiet, peaks=side.peaks)
    try:
        if not no_stacks:
            stacks = StackSampler(pid, rate, ranks=True, copies=bool(side.machine.gpus))
            why = stacks.check()
            if why:
                say(f"bottleneckd: {why}")
                stacks = None
            else:
                side.phase_sources.append(stacks.drain)
                side.code_sources.append(stacks.drain_code)
                side.rank_sources.append(stacks.drain_ranks)
                stacks.start()
        via = (
            " with py-spy stacks"
            + (f" of pid {stacks.target} (the process that trains)" if stacks and stacks.target != pid else "")
            if stacks
            else ""
        )
        say(f"bottleneckd: attached to pid {pid}{via}")

        def gone() -> bool:
            return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE

        side.wire(Outputs(trace=trace, view=view, stop_when=gone))
        run_foreground(side, duration)
    finally:
        view.close()  # leave the live screen before the report is printed
        if stacks:
            stacks.stop()
        side.close()
    doc = side.run.report(extra={"pid": pid, "stack_samples": stacks.samples_total if stacks else 0})
    if not print_report(doc, report_json, force):
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
    from bottleneckd.runtime.job import run_job
    from bottleneckd.runtime.sinks import Outputs

    if importlib.util.find_spec("torch") is None:
        raise InputError(
            "the demo job needs torch: pip install 'bottleneckd[torch]' (CPU build: pip install torch==2.13.0)"
        )
    check_outputs(force, report_json=report_json)
    obj.measure_peaks()
    say("bottleneckd: diagnosing the demo job live; Ctrl-C stops both")
    # the demo calls bottleneckd.torch.watch itself: nothing to inject
    command = (sys.executable, "-m", "bottleneckd.torch.demo", "--epochs", str(epochs), "--workers", str(workers))
    outputs = Outputs(view=lambda snap: say(live_line(snap)))
    job = run_job(lambda sock: build(obj, interval, None, (), sock), command, False, outputs, say=say)
    print_report(job.side.run.report(), report_json, force, title="bottleneckd report (whole run)", to_stdout=True)
    if job.code:
        sys.exit(job.code)
