"""``bottleneckd compare A... --vs B... [--metric NAME --target VALUE]``: is B faster than A at equal quality?"""

from __future__ import annotations

import importlib.util

import click

from bottleneckd.cli.common import Context, emit_json
from bottleneckd.model.errors import InputError


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("runs", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--metric", default=None, help="Quality column in each run's log (e.g. accuracy).")
@click.option("--target", type=float, default=None, help="The metric value that counts as reached (time to target).")
@click.option("--minimize", is_flag=True, help="Lower metric values are better (a loss).")
@click.option(
    "--alpha",
    type=click.FloatRange(0.001, 0.25),
    default=0.05,
    show_default=True,
    help="Significance level of the one-sided t-test.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def compare(
    obj: Context,
    runs: tuple[str, ...],
    metric: str | None,
    target: float | None,
    minimize: bool,
    alpha: float,
    as_json: bool,
) -> None:
    """Compare two groups of runs: time-to-target (or seconds per step) speed-up with its uncertainty,
    MLPerf's way (olympic mean, one-sided t-test), and the (epsilon, delta) it measured.

    bottleneckd compare a1.jsonl,a1.csv a2.jsonl,a2.csv --vs b1.jsonl,b1.csv b2.jsonl,b2.csv --metric acc --target 0.9

    A run is PATH or PATH,LOG: a trace or a JSON report from 'bottleneckd report --json', and a CSV
    or JSON-lines log with a time column and the metric."""
    from bottleneckd.compare.groups import compare_groups, render_text
    from bottleneckd.compare.runs import load_run

    if list(runs).count("--vs") != 1:
        raise InputError("name the runs as: compare A1 [A2 ...] --vs B1 [B2 ...] (one --vs between the two groups)")
    k = runs.index("--vs")
    baseline, candidate = runs[:k], runs[k + 1 :]
    if not baseline or not candidate:
        raise InputError("each group needs at least one run: compare A1 [A2 ...] --vs B1 [B2 ...]")
    bad = [x for x in runs if x.startswith("-") and x != "--vs"]
    if bad:
        raise InputError(f"{bad[0]}: unknown option (see bottleneckd compare --help)")
    if importlib.util.find_spec("scipy") is None:
        raise InputError("compare needs scipy: pip install 'bottleneckd[compare]'")
    a = [load_run(x, metric) for x in baseline]
    b = [load_run(x, metric) for x in candidate]
    doc = compare_groups(a, b, metric, target, minimize, alpha)
    if as_json:
        emit_json(doc)
    else:
        click.echo(render_text(doc))
