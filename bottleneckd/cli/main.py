"""The ``bottleneckd`` command line. Bad input: one line on stderr, exit code 2."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from bottleneckd.cli.common import Context, emit_json
from bottleneckd.cli.logs import FORMATS, LEVELS
from bottleneckd.cli.logs import configure as configure_logging
from bottleneckd.model.errors import InputError

#: every option can also come from the environment: BOTTLENECKD_<OPTION> for the options before
#: the command (BOTTLENECKD_LOG_FORMAT=json), BOTTLENECKD_<COMMAND>_<OPTION> for a command's own
#: (BOTTLENECKD_SERVE_BIND=0.0.0.0:9612, BOTTLENECKD_SERVE_WEB_CONFIG=...); a flag given wins
ENV_PREFIX = "BOTTLENECKD"


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": ENV_PREFIX},
    epilog="Every option can be set from the environment: BOTTLENECKD_<OPTION> for these, "
    "BOTTLENECKD_<COMMAND>_<OPTION> for a command's (BOTTLENECKD_SERVE_BIND); '--help' of a command names each.",
)
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.option(
    "--log-level", type=click.Choice(LEVELS), default="warning", help="Least severe log record shown (--debug: debug)."
)
@click.option(
    "--log-format",
    type=click.Choice(FORMATS),
    default="text",
    help="json: one JSON object a line (time, level, logger, message), status lines included, for log collectors.",
)
@click.option(
    "--catalog", type=click.Path(dir_okay=False), default=None, help="Peak catalog JSON (default: the built-in one)."
)
@click.option(
    "--profile",
    type=click.Path(dir_okay=False),
    default=None,
    help="Calibration profile (default: ~/.config/bottleneckd/profile.json).",
)
@click.version_option(package_name="bottleneckd")
@click.pass_context
def cli(
    ctx: click.Context, debug: bool, log_level: str, log_format: str, catalog: str | None, profile: str | None
) -> None:
    """bottleneckd: find the resource that limits a training job, with numbers as evidence."""
    configure_logging(log_level, log_format, debug)
    ctx.obj = Context(debug, catalog, profile)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--table4", is_flag=True, help="Reproduce the paper's Table 4 and its worked example.")
@click.pass_obj
def peaks(obj: Context, as_json: bool, table4: bool) -> None:
    """Peak throughput of every resource of this machine (catalog, detected or calibrated)."""
    from bottleneckd.peaks import view as peaks_view

    if table4:
        catalog = obj.catalog()
        if as_json:
            emit_json(peaks_view.table4_json(catalog))
        else:
            click.echo(peaks_view.table4_text(catalog))
        return
    machine, table = obj.peak_table()
    if as_json:
        emit_json({"machine": machine.to_json(), "peaks": table.to_json()})
    else:
        click.echo(peaks_view.peaks_text(machine, table))


@cli.command()
@click.option("--seconds", type=click.FloatRange(0.1, 30), default=2.0, show_default=True, help="Time per benchmark.")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, exists=True),
    default=".",
    show_default=True,
    help="Directory on the storage to measure (a temporary file is written there and removed).",
)
@click.option("--no-gpu", is_flag=True, help="Skip the GPU benchmarks.")
@click.option("--json", "as_json", is_flag=True, help="Print the measurements as JSON.")
@click.option(
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Where to save the profile (default: --profile or ~/.config/bottleneckd/profile.json).",
)
@click.pass_obj
def calibrate(obj: Context, seconds: float, directory: str, no_gpu: bool, as_json: bool, output: str | None) -> None:
    """Measure this machine's real peaks and save them as the profile later runs use."""
    from dataclasses import asdict

    from bottleneckd.hardware.detect import detect_machine
    from bottleneckd.peaks import calibrate as cal
    from bottleneckd.peaks import view as peaks_view
    from bottleneckd.peaks.profile import default_profile_path, load_profile, save_profile
    from bottleneckd.peaks.resolve import resolve_peaks

    catalog = obj.catalog()  # validate inputs before spending a minute measuring
    path = Path(output or obj.profile_path or default_profile_path())
    if output or obj.profile_path:  # a profile is calibrate's to update: replacing it is the point
        from bottleneckd.model.files import check_output

        check_output(str(path), "--output" if output else "--profile", force=True)
    if path.exists():
        load_profile(path)  # an unreadable existing profile is an error, not something to overwrite silently
    measurements, skipped = cal.run_all(directory, seconds, lambda s: click.echo(s, err=True), with_gpu=not no_gpu)
    profile = save_profile(measurements, path)
    click.echo(f"saved {len(measurements)} measurements to {path}", err=True)
    machine = detect_machine()
    table = resolve_peaks(machine, catalog, profile)
    if as_json:
        emit_json(
            {
                "profile": str(path),
                "measurements": [asdict(m) for m in measurements],
                "skipped": [asdict(s) for s in skipped],
                "peaks": table.to_json(),
            }
        )
    else:
        click.echo(peaks_view.calibration_text(measurements, table, machine))


@cli.command()
@click.option("--resource", default=None, help="Only mitigations for this resource id.")
@click.option("--json", "as_json", is_flag=True)
def mitigations(resource: str | None, as_json: bool) -> None:
    """The knowledge base: section 6.1's mitigations, mapped to the paper's taxonomy."""
    from bottleneckd.advice.knowledge import load_knowledge
    from bottleneckd.model.resources import check_resource

    kb = load_knowledge()
    if resource is not None:
        check_resource(resource, "--resource")
        kb = tuple(m for m in kb if resource in m.resources)
    if as_json:
        emit_json([m.to_json() for m in kb])
        return
    for m in kb:
        cites = "; ".join(m.cites) or "-"
        flags = (
            (" [changes semantics]" if m.changes_semantics else "")
            + (f" [hook: {m.hook.id}]" if m.hook else "")
            + (" [baseline]" if m.baseline else "")
        )
        src = "".join(f"\n    source: {s}" for s in m.sources)
        click.echo(
            f"{m.id}: {m.name}{flags}\n    {m.taxonomy_path}; cuts {m.effect.replace('_', ' ')}; section {m.section}; "
            f"cites {cites}{src}\n    resources: {', '.join(m.resources) or 'none: it hides latency'}"
        )


def _register() -> None:
    from bottleneckd.cli import compare as cli_compare
    from bottleneckd.cli import jobs as cli_jobs
    from bottleneckd.cli import report as cli_report
    from bottleneckd.cli import sidecar as cli_sidecar

    for cmd in (
        cli_sidecar.record,
        cli_sidecar.analyze,
        cli_sidecar.serve,
        cli_jobs.run,
        cli_jobs.attach,
        cli_jobs.demo,
        cli_report.report,
        cli_compare.compare,
    ):
        cli.add_command(cmd)
    for name, cmd in (("", cli), *cli.commands.items()):  # BOTTLENECKD_[COMMAND_]OPTION, named in --help
        for param in cmd.params:
            if isinstance(param, click.Option) and param.name not in ("help", "version"):
                flag = max((o for o in param.opts if o.startswith("--")), key=len)
                param.envvar = "_".join(x for x in (ENV_PREFIX, name, flag[2:]) if x).upper().replace("-", "_")
                param.show_envvar = True


_register()


def main(argv: list[str] | None = None) -> None:
    """The ``bottleneckd`` entry point: runs the command in ``argv`` (else ``sys.argv``) and exits.
    Bad input (an InputError or a usage error) is one line on stderr and exit code 2, Ctrl-C exit
    code 130; with ``--debug`` (or ``BOTTLENECKD_DEBUG``) an InputError is raised with its traceback."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:]) or os.environ.get(
        f"{ENV_PREFIX}_DEBUG", ""
    ).lower() in ("1", "true", "yes", "on")
    try:
        cli.main(args=argv, prog_name="bottleneckd", standalone_mode=False, auto_envvar_prefix=ENV_PREFIX)
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
