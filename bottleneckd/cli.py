"""The ``bottleneckd`` command line. Bad input: one line on stderr, exit code 2."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import click

from bottleneckd.errors import InputError


class Context:
    def __init__(self, debug: bool, catalog: str | None, profile: str | None) -> None:
        self.debug = debug
        self.catalog_path = catalog
        self.profile_path = profile

    def catalog(self):  # noqa: ANN201
        from bottleneckd.catalog import load_catalog

        return load_catalog(self.catalog_path)

    def profile(self):  # noqa: ANN201
        from bottleneckd.profile import load_profile

        return load_profile(self.profile_path)

    def peak_table(self, machine=None):  # noqa: ANN001, ANN201
        from bottleneckd.detect import detect_machine
        from bottleneckd.peaks import resolve_peaks

        catalog, profile = self.catalog(), self.profile()
        machine = machine or detect_machine()
        return machine, resolve_peaks(machine, catalog, profile)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.option("--catalog", type=click.Path(dir_okay=False), default=None, help="Peak catalog JSON (default: the built-in one).")
@click.option("--profile", type=click.Path(dir_okay=False), default=None, help="Calibration profile (default: ~/.config/bottleneckd/profile.json).")
@click.version_option(package_name="bottleneckd")
@click.pass_context
def cli(ctx: click.Context, debug: bool, catalog: str | None, profile: str | None) -> None:
    """bottleneckd: find the resource that limits a training job, with numbers as evidence."""
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="bottleneckd: %(levelname)s: %(message)s")
    ctx.obj = Context(debug, catalog, profile)


def _emit_json(doc: Any) -> None:
    click.echo(json.dumps(doc, indent=1))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--table4", is_flag=True, help="Reproduce the paper's Table 4 and its worked example.")
@click.pass_obj
def peaks(obj: Context, as_json: bool, table4: bool) -> None:
    """Peak throughput of every resource of this machine (catalog, detected or calibrated)."""
    from bottleneckd import peaks_view

    if table4:
        catalog = obj.catalog()
        if as_json:
            _emit_json(peaks_view.table4_json(catalog))
        else:
            click.echo(peaks_view.table4_text(catalog))
        return
    machine, table = obj.peak_table()
    if as_json:
        _emit_json({"machine": machine.to_json(), "peaks": table.to_json()})
    else:
        click.echo(peaks_view.peaks_text(machine, table))


@cli.command()
@click.option("--seconds", type=click.FloatRange(0.1, 30), default=2.0, show_default=True, help="Time per benchmark.")
@click.option("--dir", "directory", type=click.Path(file_okay=False, exists=True), default=".", show_default=True,
              help="Directory on the storage to measure (a temporary file is written there and removed).")
@click.option("--no-gpu", is_flag=True, help="Skip the GPU benchmarks.")
@click.option("--json", "as_json", is_flag=True, help="Print the measurements as JSON.")
@click.option("--output", type=click.Path(dir_okay=False), default=None, help="Where to save the profile (default: --profile or ~/.config/bottleneckd/profile.json).")
@click.pass_obj
def calibrate(obj: Context, seconds: float, directory: str, no_gpu: bool, as_json: bool, output: str | None) -> None:
    """Measure this machine's real peaks and save them as the profile later runs use."""
    from dataclasses import asdict

    from bottleneckd import calibrate as cal
    from bottleneckd import peaks_view
    from bottleneckd.detect import detect_machine
    from bottleneckd.peaks import resolve_peaks
    from bottleneckd.profile import default_profile_path, load_profile, save_profile

    catalog = obj.catalog()  # validate inputs before spending a minute measuring
    path = Path(output or obj.profile_path or default_profile_path())
    if path.exists():
        load_profile(path)  # an unreadable existing profile is an error, not something to overwrite silently
    measurements, skipped = cal.run_all(directory, seconds, lambda s: click.echo(s, err=True), with_gpu=not no_gpu)
    profile = save_profile(measurements, path)
    click.echo(f"saved {len(measurements)} measurements to {path}", err=True)
    machine = detect_machine()
    table = resolve_peaks(machine, catalog, profile)
    if as_json:
        _emit_json({"profile": str(path), "measurements": [asdict(m) for m in measurements],
                    "skipped": [asdict(s) for s in skipped], "peaks": table.to_json()})
    else:
        click.echo(peaks_view.calibration_text(measurements, table))


def _sidecar_options(f):  # noqa: ANN001, ANN201
    from bottleneckd.daemon import SAMPLER_NAMES

    f = click.option("--interval", type=click.FloatRange(0.1, 60), default=1.0, show_default=True, help="Seconds between samples (0.1 = 10 Hz).")(f)
    f = click.option("--pid", type=int, default=None, help="The training job's main process (its tree is sampled too).")(f)
    f = click.option("--disable", "disabled", multiple=True, type=click.Choice(SAMPLER_NAMES), help="Turn a sampler off (repeatable).")(f)
    f = click.option("--duration", type=click.FloatRange(0, None, min_open=True), default=None, help="Stop after this many seconds.")(f)
    f = click.option("--socket", "socket_path", default=None, help="Channel the torch hook sends step phases to.")(f)
    return f


def _build(obj: Context, interval: float, pid: int | None, disabled: tuple[str, ...], socket_path: str | None):  # noqa: ANN202
    from bottleneckd.daemon import build_sidecar, job_paths
    from bottleneckd.detect import detect_machine

    if pid is not None:
        import psutil

        if not psutil.pid_exists(pid):
            raise InputError(f"--pid {pid}: no such process; pass the PID of the running training job")
    catalog, profile = obj.catalog(), obj.profile()
    return build_sidecar(detect_machine(), catalog, profile, interval, pid, job_paths(), frozenset(disabled), socket_path=socket_path)


@cli.command()
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Trace file to write (JSON lines).")
@click.option("--force", is_flag=True, help="Overwrite an existing trace.")
@click.option("--quiet", is_flag=True, help="No live line.")
@_sidecar_options
@click.pass_obj
def record(obj: Context, output: str, force: bool, quiet: bool, interval: float, pid: int | None, disabled: tuple[str, ...],
           duration: float | None, socket_path: str | None) -> None:
    """Sample this machine (and the hook's step phases) into a trace until Ctrl-C or --duration."""
    from bottleneckd.sidecar_run import live_line, run_foreground
    from bottleneckd.trace import TraceWriter

    side = _build(obj, interval, pid, disabled, socket_path)
    writer = TraceWriter(output, side.machine, side.peaks, interval, {"pid": pid}, overwrite=force)
    side.loop.sinks.insert(0, writer)
    side.loop.sinks.insert(1, _event_copier(side, writer))
    try:
        run_foreground(side, duration, None if quiet else lambda snap: click.echo(live_line(snap), err=True))
    finally:
        writer.close()
    click.echo(f"wrote {side.pipeline.samples} samples to {output}", err=True)


@cli.command()
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--window", type=click.IntRange(1, 3600), default=5, show_default=True, help="Samples per diagnosis window.")
@click.option("--timeline", is_flag=True, help="Also print the verdict at every sample.")
@click.pass_obj
def analyze(obj: Context, trace: str, fmt: str, window: int, timeline: bool) -> None:
    """Run a recorded trace through the same pipeline that live samples take."""
    from bottleneckd.errors import TraceError
    from bottleneckd.pipeline import Pipeline
    from bottleneckd.report import build_report, render_markdown, render_text
    from bottleneckd.trace import read_trace

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
        _emit_json(doc)
    elif fmt == "markdown":
        click.echo(render_markdown(doc))
    else:
        click.echo(render_text(doc))
    if error is not None:
        raise error


@cli.command()
@click.option("--bind", default="127.0.0.1:9400", show_default=True, help="HOST:PORT for the exporter.")
@click.option("--web-config", type=click.Path(dir_okay=False), default=None, help="TLS and basic auth (Prometheus web config format).")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False), default=None, help="Serve a recorded trace, replayed at its own pace, instead of live samples.")
@click.option("--quiet", is_flag=True)
@_sidecar_options
@click.pass_obj
def serve(obj: Context, bind: str, web_config: str | None, trace_path: str | None, quiet: bool, interval: float, pid: int | None,
          disabled: tuple[str, ...], duration: float | None, socket_path: str | None) -> None:
    """Prometheus exporter: the latest sample and diagnosis on HOST:PORT/metrics."""
    from bottleneckd.exporter import SnapshotCollector, serve as start
    from bottleneckd.sidecar_run import live_line, run_foreground

    if trace_path:
        _replay(trace_path, bind, web_config, duration, quiet)
        return
    side = _build(obj, interval, pid, disabled, socket_path)
    server = start(SnapshotCollector(lambda: side.pipeline.latest, lambda: side.steps_total,
                                     lambda: list(side.receiver.events) if side.receiver else []), bind, web_config)
    click.echo(f"bottleneckd: serving metrics on http://{bind}/metrics", err=True)
    try:
        run_foreground(side, duration, None if quiet else lambda snap: click.echo(live_line(snap), err=True))
    finally:
        server.shutdown()


def _replay(trace_path: str, bind: str, web_config: str | None, duration: float | None, quiet: bool) -> None:
    import time as _time

    from bottleneckd.exporter import SnapshotCollector, serve as start
    from bottleneckd.pipeline import Pipeline
    from bottleneckd.trace import read_events, read_trace

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


@cli.command()
@click.option("--resource", default=None, help="Only mitigations for this resource id.")
@click.option("--json", "as_json", is_flag=True)
def mitigations(resource: str | None, as_json: bool) -> None:
    """The knowledge base: section 6.1's mitigations, mapped to the paper's taxonomy."""
    from bottleneckd.knowledge import load_knowledge
    from bottleneckd.resources import check_resource

    kb = load_knowledge()
    if resource is not None:
        check_resource(resource, "--resource")
        kb = tuple(m for m in kb if resource in m.resources)
    if as_json:
        _emit_json([m.to_json() for m in kb])
        return
    for m in kb:
        cites = "; ".join(m.cites) or "-"
        flags = (" [changes semantics]" if m.changes_semantics else "") + (f" [hook: {m.hook}]" if m.hook else "") + (" [baseline]" if m.baseline else "")
        click.echo(f"{m.id}: {m.name}{flags}\n    {m.taxonomy_path}; cuts {m.effect.replace('_', ' ')}; section {m.section}; cites {cites}\n    resources: {', '.join(m.resources)}")


@cli.command()
@click.option("--epochs", type=click.IntRange(1, 100), default=2, show_default=True)
@click.option("--workers", type=click.IntRange(0, 64), default=1, show_default=True)
@click.option("--interval", type=click.FloatRange(0.1, 10), default=1.0, show_default=True)
@click.option("--report-json", type=click.Path(dir_okay=False), default=None, help="Write the JSON report here.")
@click.pass_obj
def demo(obj: Context, epochs: int, workers: int, interval: float, report_json: str | None) -> None:
    """Run the built-in CPU training job under the sidecar and diagnose it live (no GPU needed)."""
    import importlib.util
    import os
    import subprocess
    import tempfile

    from bottleneckd.report import build_report, render_text
    from bottleneckd.sidecar_run import live_line, run_foreground

    if importlib.util.find_spec("torch") is None:
        raise InputError("the demo job needs torch: pip install 'bottleneckd[torch]' (CPU build: pip install torch==2.13.0)")
    sock = os.path.join(tempfile.mkdtemp(prefix="bottleneckd-demo-"), "bottleneckd.sock")
    side = _build(obj, interval, None, (), sock)
    env = {**os.environ, "BOTTLENECKD_SOCKET": sock}
    import sys as _sys

    job = subprocess.Popen([_sys.executable, "-m", "bottleneckd.torch.demo", "--epochs", str(epochs), "--workers", str(workers)], env=env)
    from bottleneckd.samplers.process_tree import ProcessTree
    from bottleneckd.samplers.cpu_compute import CpuComputeSampler
    from bottleneckd.samplers.cpu_memory import CpuMemorySampler

    tree = ProcessTree(job.pid)
    side.loop.samplers = [CpuComputeSampler(side.peaks, tree) if s.name == "cpu_compute" else CpuMemorySampler(side.peaks, tree) if s.name == "cpu_memory" else s
                          for s in side.loop.samplers]
    click.echo(f"bottleneckd: diagnosing the demo job (pid {job.pid}) live; Ctrl-C stops both", err=True)
    try:
        run_foreground(side, None, lambda snap: click.echo(live_line(snap), err=True), stop_when=lambda: job.poll() is not None)
    finally:
        if job.poll() is None:
            job.terminate()
        job.wait()
    doc = build_report(side.pipeline)
    click.echo("\n=== bottleneckd report (whole run) ===")
    click.echo(render_text(doc))
    if report_json:
        Path(report_json).write_text(json.dumps(doc, indent=1))
    if job.returncode:
        sys.exit(job.returncode)


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--no-inject", is_flag=True, help="Do not install the step-phase instrumentation in the job.")
@click.option("--live", is_flag=True, help="One screen redrawn each interval (plain lines when not a terminal).")
@click.option("--quiet", is_flag=True, help="No live output; only the final report.")
@click.option("--report-json", type=click.Path(dir_okay=False), default=None, help="Write the JSON report here.")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False), default=None, help="Also record a trace.")
@click.option("--interval", type=click.FloatRange(0.1, 60), default=1.0, show_default=True)
@click.option("--bind", default=None, help="Also export Prometheus metrics on HOST:PORT.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_obj
def run(obj: Context, no_inject: bool, live: bool, quiet: bool, report_json: str | None, trace_path: str | None,
        interval: float, bind: str | None, command: tuple[str, ...]) -> None:
    """Run CMD under the sidecar: bottleneckd run [options] -- python train.py ..."""
    from bottleneckd import jobrun
    from bottleneckd.daemon import build_sidecar, job_paths
    from bottleneckd.detect import detect_machine
    from bottleneckd.live import LiveView
    from bottleneckd.report import build_report, render_text
    from bottleneckd.trace import TraceWriter

    catalog, profile = obj.catalog(), obj.profile()
    if trace_path and Path(trace_path).exists():
        raise InputError(f"{trace_path}: already exists; choose another --trace")
    machine = detect_machine()
    sock = jobrun.temp_socket()
    side = build_sidecar(machine, catalog, profile, interval, None, job_paths(), socket_path=sock)
    job = jobrun.start_job(command, jobrun.job_env(sock, not no_inject and jobrun.is_python_torch_job(command)))
    _retarget(side, job.pid)
    writer = TraceWriter(trace_path, machine, side.peaks, interval, {"command": list(command)}) if trace_path else None
    if writer:
        side.loop.sinks.insert(0, writer)
        side.loop.sinks.insert(1, _event_copier(side, writer))
    server = None
    if bind:
        from bottleneckd.exporter import SnapshotCollector, serve as start

        server = start(SnapshotCollector(lambda: side.pipeline.latest, lambda: side.steps_total), bind)
    view = LiveView(live, quiet)
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
    click.echo("\n=== bottleneckd report ===\n" + render_text(doc), err=True)
    if report_json:
        jobrun.write_json(report_json, doc)
    sys.exit(code)


def _event_copier(side, writer):  # noqa: ANN001, ANN202
    """A sink that copies the hook's events (mitigations applied) into the trace."""
    seen = [0]

    def copy(_sample):  # noqa: ANN001, ANN202
        if side.receiver is None:
            return
        events = list(side.receiver.events)
        for e in events[seen[0]:] if len(events) >= seen[0] else events:
            writer.event(e["event"], **{k: v for k, v in e.items() if k != "event"})
        seen[0] = len(events)

    return copy


def _retarget(side, pid: int) -> None:  # noqa: ANN001
    """Point the CPU samplers at the job's process tree."""
    from bottleneckd.samplers.cpu_compute import CpuComputeSampler
    from bottleneckd.samplers.cpu_memory import CpuMemorySampler
    from bottleneckd.samplers.process_tree import ProcessTree

    tree = ProcessTree(pid)
    side.loop.samplers = [CpuComputeSampler(side.peaks, tree) if s.name == "cpu_compute" else
                          CpuMemorySampler(side.peaks, tree) if s.name == "cpu_memory" else s for s in side.loop.samplers]


@cli.command()
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

    from bottleneckd.live import LiveView
    from bottleneckd.report import build_report, render_text
    from bottleneckd.sidecar_run import run_foreground
    from bottleneckd.stacks import StackSampler

    side = _build(obj, interval, pid, (), None)
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
        run_foreground(side, duration, LiveView(live, quiet), stop_when=lambda: not psutil.pid_exists(pid) or
                       psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    finally:
        if stacks:
            stacks.stop()
    doc = build_report(side.pipeline)
    doc["pid"] = pid
    doc["stack_samples"] = stacks.samples_total if stacks else 0
    click.echo("\n=== bottleneckd report ===\n" + render_text(doc), err=True)
    if report_json:
        Path(report_json).write_text(json.dumps(doc, indent=1))


def main(argv: list[str] | None = None) -> None:
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        cli.main(args=argv, prog_name="bottleneckd", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("bottleneckd: aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(2 if isinstance(e, click.UsageError) else e.exit_code)
    except InputError as e:
        if debug:
            raise
        click.echo(f"bottleneckd: error: {e}", err=True)
        sys.exit(2)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)


if __name__ == "__main__":
    main()
