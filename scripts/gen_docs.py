#!/usr/bin/env python3
"""Regenerate the parts of the docs that the code and the recorded results determine: the
labelled workloads and their thresholds (docs/eval.md, from the workloads' literals), the suite's
results (docs/eval.md, from the latest recorded full run in docs/eval-results/ and the latest run
with PyTorch's default threads), eval.py's defaults, the scenario count (docs/measurements.md) and
the straggler rule (README.md, from diagnosis/straggler.py's constants).

    python scripts/gen_docs.py           # rewrite the generated blocks in place
    python scripts/gen_docs.py --check   # exit 1 naming each stale block (tests/test_docs_generated.py)

A block sits between ``<!-- gen:NAME -->`` and ``<!-- /gen:NAME -->``; text outside is left alone.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [p for p in (str(HERE), str(ROOT)) if p not in sys.path]

from eval_suite.record import RESULTS  # noqa: E402
from eval_suite.score import confusion  # noqa: E402
from eval_suite.workloads import discover  # noqa: E402


def workloads_table() -> str:
    rows = [
        "| workload | pattern | label (resource/stage) | intervention (`--intervene`) | threshold "
        "| control (`--control`): must stay below |",
        "|---|---|---|---|---|---|",
    ]
    for w in discover():
        name = w.name + (" (`--gpu`)" if w.needs == "gpu" else "")
        control = f"{w.control}: x{w.control_max}" if w.control else "-"
        rows.append(
            f"| {name} | {w.pattern} | {w.label} | {w.intervention or 'none yet (unproven)'} "
            f"| {w.min_speedup or '-'} | {control} |"
        )
    return "\n".join(rows)


def thresholds() -> str:
    cpu = [w.min_speedup for w in discover() if w.needs == "cpu" and w.min_speedup]
    return f"{min(cpu):g}x-{max(cpu):g}x"


def counts() -> str:
    ws = discover()
    cpu, gpu = sum(w.needs == "cpu" for w in ws), sum(w.needs == "gpu" for w in ws)
    return f"{cpu} CPU training patterns under `scripts/workloads/` (and {gpu} GPU ones, with `--gpu`)"


def options() -> str:
    import eval as ev

    d = {a.dest: a.default for a in ev.parser()._actions}
    return (
        f"`--seconds` (job length under run and attach, {d['seconds']:g}), `--warmup` (seconds the job runs "
        f"before attach, {d['warmup']:g}), `--proof-runs` (runs of each side of a proof, {d['proof_runs']}; "
        f"fewer are refused), `--proof-seconds` ({d['proof_seconds']:g}), `--threads` ({d['threads']}: "
        "as labelled; `default`: PyTorch's own, one intra-op thread per core; or a number)"
    )


def scenarios() -> str:
    n = len(list((ROOT / "tests" / "data").glob("*/expected.json")))
    return f"{n} traces"


def straggler_rule() -> str:
    from bottleneckd.diagnosis import straggler as s

    return s.RULE_SUMMARY


# --- the suite's recorded results ------------------------------------------------------------


def records(folder: Path = RESULTS) -> list[dict]:
    out = []
    for p in sorted(folder.glob("*.json")):
        doc = json.loads(p.read_text())
        doc["_path"] = p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else str(p)
        out.append(doc)
    return sorted(out, key=lambda d: d["meta"]["date"])


def _f(x: float | None, fmt: str = "{:.3g}") -> str:
    return "-" if x is None else fmt.format(x)


def _medians(runs: list[dict]) -> float | None:
    import statistics

    good = [r["throughput"] for r in runs if isinstance(r, dict) and r.get("failure") is None]
    return statistics.median(good) if good else None


def results_of(doc: dict) -> str:
    m, rows = doc["meta"], doc["workloads"]
    modes = tuple(x for x in ("run", "attach") if any(x in r for r in rows))
    loads = [x for r in rows for x in (r.get("load_before", [None])[0], r.get("load_after", [None])[0]) if x]
    head = (
        f"Recorded in `{doc['_path']}`: commit `{(m.get('commit') or '?')[:10]}`"
        + (" (with uncommitted changes)" if m.get("dirty") else "")
        + f", {m['date']}, {m.get('cores')} cores ({m.get('cpu')}), `--threads {m.get('threads', '1')}`; "
        + f"load average {m['load_start'][0]:g} at the start, {(m.get('load_end') or ['?'])[0]} at the end"
        + (f", {min(loads):g}-{max(loads):g} over the workloads" if loads else "")
        + ". Command: `python scripts/eval.py "
        + " ".join(_args(doc.get("args", {})))
        + "`."
    )
    table = [
        "| workload | label | bare -> intervention (steps/s, medians) | ratio (95% CI) | p | control | proof "
        + "".join(f"| {x} verdict " for x in modes)
        + "|",
        "|---" * (7 + len(modes)) + "|",
    ]
    for r in rows:
        p = r.get("proof") or {}
        b, i = _medians(p.get("bare", [])), _medians(p.get("intervention", []))
        ci = p.get("ci")
        ratio = _f(p.get("ratio"), "x{:.2f}") + (f" (x{ci[0]:.2f}-x{ci[1]:.2f})" if ci else "")
        ctrl = _f(p.get("control_ratio"), "x{:.2f}") if p.get("control") else "-"
        verdicts = "".join(
            f"| {r[x]['resource']}/{r[x]['stage']} ({r[x]['outcome']}) " if x in r else "| - " for x in modes
        )
        table.append(
            f"| {r['name']} | {r['label']} | {_f(b)} -> {_f(i)} | {ratio} | {_f(p.get('p_value'), '{:.2g}')} "
            f"| {ctrl} | {p.get('status', 'unchecked')} {verdicts}|"
        )
    s = doc.get("summary") or {}
    lines = [
        f"{x}: right {s[x]['right']}/{s['scored']}, undetermined {s[x]['undetermined']}, wrong {s[x]['wrong']}, "
        f"no report {s[x]['error']}"
        for x in modes
        if x in s
    ]
    matrices = [confusion(rows, x) for x in modes]
    fails = [f"- {n}: {f}" for n, fs in (s.get("failed_runs") or {}).items() for f in fs]
    unscored = [f"- {r['name']}: {r['proof']['status']}: {r['proof'].get('why', '')}" for r in rows if not r["scored"]]
    out = [head, "", *table, "", "```", *lines, "", *("\n\n".join(matrices).splitlines()), "```"]
    if unscored:
        out += ["", "Not scored (the proof did not hold):", "", *unscored]
    if fails:
        out += ["", "Failed proof runs:", "", *fails]
    return "\n".join(out)


def _args(a: dict) -> list[str]:
    out = []
    for k in ("only", "mode", "seconds", "warmup", "proof_runs", "proof_seconds", "threads"):
        v = a.get(k)
        if v in (None, False, [], ()):
            continue
        out.append(
            f"--{k.replace('_', '-')} "
            + (" ".join(v) if isinstance(v, list) else f"{v:g}" if isinstance(v, float) else str(v))
        )
    return out


def latest_full() -> str:
    full = [d for d in records() if d["meta"].get("full")]
    if not full:
        return (
            "No full run of the suite is recorded yet in `docs/eval-results/` (a full run, `python "
            "scripts/eval.py`, records itself; then `python scripts/gen_docs.py`)."
        )
    return results_of(full[-1])


def latest_default_threads() -> str:
    runs = [d for d in records() if d["meta"].get("threads") == "default"]
    if not runs:
        return "No run with `--threads default` is recorded yet in `docs/eval-results/`."
    return results_of(runs[-1])


BLOCKS: dict[tuple[str, str], Callable[[], str]] = {
    ("docs/eval.md", "counts"): counts,
    ("docs/eval.md", "options"): options,
    ("docs/eval.md", "thresholds"): thresholds,
    ("docs/eval.md", "workloads"): workloads_table,
    ("docs/eval.md", "results"): latest_full,
    ("docs/eval.md", "results-default-threads"): latest_default_threads,
    ("docs/measurements.md", "scenarios"): scenarios,
    ("README.md", "straggler"): straggler_rule,
}


def fill(text: str, name: str, body: str) -> str | None:
    """``text`` with the block ``name`` holding ``body``; None when the markers are not there."""
    pat = re.compile(rf"(<!-- gen:{re.escape(name)} -->)(.*?)(<!-- /gen:{re.escape(name)} -->)", re.S)
    m = pat.search(text)
    if m is None:
        return None
    multi = "\n" in m.group(2)
    inner = f"\n{body}\n" if multi else body
    return text[: m.start(2)] + inner + text[m.end(2) :]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a block is stale")
    a = ap.parse_args()
    stale = []
    files: dict[str, str] = {}
    for (doc, name), make in BLOCKS.items():
        text = files.setdefault(doc, (ROOT / doc).read_text())
        new = fill(text, name, make())
        if new is None:
            print(f"gen_docs.py: {doc} has no <!-- gen:{name} --> block", file=sys.stderr)
            return 2
        if new != text:
            stale.append(f"{doc}: {name}")
        files[doc] = new
    if a.check:
        for s in stale:
            print(f"stale: {s} (run python scripts/gen_docs.py)")
        return 1 if stale else 0
    for doc, text in files.items():
        if (ROOT / doc).read_text() != text:
            (ROOT / doc).write_text(text)
            print(f"rewrote {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
