#!/usr/bin/env python3
"""The labelled suite: prove each workload's label by its interventions, then check the verdict of
`bottleneckd run` and `bottleneckd attach --pid` against it.

    python scripts/eval.py [--only NAME ...] [--mode run|attach|both] [--seconds 15]
                           [--proof-runs 3] [--proof-seconds 6] [--threads 1|default|N]
                           [--json out.json] [--record] [--gpu]

1. Proof (never the rules, eval_suite/proof.py): each workload runs bare, with --intervene and,
   where it declares one, with --control, interleaved, at least 3 runs a side; the intervention
   must be faster by the workload's MIN_SPEEDUP (ratio of medians) and significantly (one-sided
   Welch t-test), the control must not reach CONTROL_MAX_SPEEDUP. A failed or empty run is
   reported; a workload whose proof does not hold is reported, not scored.
2. Verdicts, as a new user gets them on a fresh machine: BOTTLENECKD_HOME is an empty temporary
   folder (no calibration profile); `bottleneckd run -- python job.py` and, for a job started
   separately, `bottleneckd attach --pid PID` until the job exits.
3. Scoring (eval_suite/score.py): right = the label's resource and stage (STAGE None: any stage);
   `undetermined` is not wrong but not right (except where the label is `undetermined`); anything
   else is wrong. Printed: right/total per mode, a confusion matrix, every wrong verdict with its
   evidence. Exit code 1 on any wrong verdict or a run that gave no report, else 0.

A full run (every CPU workload, both modes, proofs made) is recorded under docs/eval-results/
with its commit, machine load and date (--record records any run); scripts/gen_docs.py makes
docs/eval.md's tables from the latest full record.

Labels live in the workloads (module-level LABEL, STAGE, INTERVENTION, MIN_SPEEDUP, NEEDS,
CONTROL, CONTROL_MAX_SPEEDUP), read here with ast, never by importing the workload.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [p for p in (str(HERE), str(HERE.parent)) if p not in sys.path]

from eval_suite.proof import MIN_RUNS, call, changed_since, prove, prove_also, reusable, script, throughput  # noqa: E402
from eval_suite.record import DuplicateRows, load, merge_rows, meta, write_record  # noqa: E402
from eval_suite.score import advice, confusion, judge, proof_line, summarize  # noqa: E402
from eval_suite.workloads import LAST, ROOT, W, Workload, discover  # noqa: E402

__all__ = ["LAST", "W", "Workload", "confusion", "discover", "judge", "throughput"]
PY = sys.executable
BN = [PY, "-m", "bottleneckd"]


def job_env(home: str) -> dict[str, str]:
    pp = os.pathsep.join([str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    # BOTTLENECKD_HOME empty: no calibration profile. XDG_RUNTIME_DIR: the default channel socket
    # lives there, so a sidecar of another user of a shared host is not "already listening".
    return {**os.environ, "PYTHONPATH": pp, "BOTTLENECKD_HOME": home, "XDG_RUNTIME_DIR": home, "PYTHONUNBUFFERED": "1"}


def read_report(path: Path, log: Path) -> dict:
    if path.exists():
        try:
            return json.loads(path.read_text())
        except ValueError:
            pass
    return {"error": log.read_text()[-600:] if log.exists() else "no report"}


def traces_supported(command: str) -> bool:
    """Whether `bottleneckd COMMAND` records a trace (--trace): the thresholds' statistics come from it."""
    try:
        out = subprocess.run(BN + [command, "--help"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--trace" in out


def trace_statistics(path: Path) -> dict:
    """Each threshold's statistic over the run's training windows (diagnosis/sensitivity.py), from
    the run's trace replayed through the pipeline; {"error": ...} when it cannot be read."""
    if not path.exists():
        return {"error": "no trace recorded"}
    try:
        from bottleneckd.diagnosis.sensitivity import replay_statistics
        from bottleneckd.outputs.trace import read_trace

        header, samples = read_trace(str(path))
        return replay_statistics(header.peaks, samples)
    except Exception as e:  # noqa: BLE001 - a bad trace costs its statistics, never the suite
        return {"error": f"{type(e).__name__}: {e}"[:300]}


def under_run(w: Workload, seconds: float, threads: str, env: dict[str, str], out: Path) -> dict:
    rep, log, trace = out / f"{w.name}.run.json", out / f"{w.name}.run.log", out / f"{w.name}.run.trace.jsonl"
    cmd = BN + ["run", "--quiet", "--force", "--report-json", str(rep), "--trace", str(trace), "--"]
    call(cmd + script(w, seconds, threads=threads), env, seconds * 6 + 240, log)
    return {**read_report(rep, log), "statistics": trace_statistics(trace)}


def under_attach(w: Workload, seconds: float, warmup: float, threads: str, env: dict[str, str], out: Path) -> dict:
    """Start the job, let it get going, attach until it exits (as a user of attach would)."""
    rep, log, trace = out / f"{w.name}.attach.json", out / f"{w.name}.attach.log", out / f"{w.name}.attach.trace.jsonl"
    record = ["--trace", str(trace)] if traces_supported("attach") else []
    with open(out / f"{w.name}.attach.job.log", "w") as jf:
        job = subprocess.Popen(
            script(w, seconds + warmup, threads=threads),
            env=env,
            stdout=jf,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        time.sleep(warmup)
        call(
            BN + ["attach", "--pid", str(job.pid), "--quiet", "--force", "--report-json", str(rep)] + record,
            env,
            (seconds + warmup) * 6 + 240,
            log,
        )
        try:
            job.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    stats = trace_statistics(trace) if record else {"error": "attach records no trace (no --trace option)"}
    return {**read_report(rep, log), "statistics": stats}


def merged(paths: list[str], later_wins: bool) -> int:
    """Summarise the rows of several --json files (e.g. runs split with --only) as one suite."""
    try:
        rows, said = merge_rows(paths, later_wins)
    except DuplicateRows as e:
        print(f"eval.py: {e}", file=sys.stderr)
        return 2
    for line in said:
        print(line)
    modes = tuple(m for m in ("run", "attach") if all(m in r for r in rows.values()))
    for r in rows.values():
        ratio = r["proof"]["ratio"] if r.get("proof") else None
        print(
            f"{r['name']:28} {r['label']:40} {f'x{ratio:.2f}' if ratio else '-':>6} "
            f"{'scored' if r['scored'] else 'NOT SCORED'}  "
            + "  ".join(f"{m}: {r[m]['resource']}/{r[m]['stage']} {r[m]['outcome']}" for m in modes)
        )
    return 1 if summarize(list(rows.values()), modes)["bad"] else 0


def threads_arg(s: str) -> str:
    if s == "default" or (s.isdigit() and int(s) >= 1):
        return s
    raise argparse.ArgumentTypeError("--threads takes 'default' (PyTorch's own) or a number of threads >= 1")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these workloads")
    ap.add_argument("--mode", choices=("run", "attach", "both"), default="both")
    ap.add_argument("--seconds", type=float, default=15, help="job length under run and attach")
    ap.add_argument("--warmup", type=float, default=5, help="seconds the job runs before attach")
    ap.add_argument(
        "--proof-runs", type=int, default=MIN_RUNS, help=f"runs of each side of a proof (at least {MIN_RUNS})"
    )
    ap.add_argument("--proof-seconds", type=float, default=6)
    ap.add_argument(
        "--threads",
        type=threads_arg,
        default="1",
        help="intra-op threads of every workload: 1 (as labelled), 'default' (PyTorch's default) or N",
    )
    ap.add_argument("--no-proof", action="store_true", help="skip the interventions (verdicts scored as unchecked)")
    ap.add_argument(
        "--proofs-from",
        nargs="+",
        metavar="JSON",
        default=(),
        help="reuse earlier --json outputs' proofs where the workload's source (hashed) and --threads are unchanged",
    )
    ap.add_argument(
        "--also-from",
        nargs="+",
        metavar="JSON",
        default=(),
        help="with --no-proof: the second interventions' proofs from earlier --also-proofs outputs (a later file "
        "wins), for the advice score",
    )
    ap.add_argument("--gpu", action="store_true", help="include the GPU workloads")
    ap.add_argument("--json", dest="json_path", default=None, help="write every result here")
    ap.add_argument(
        "--record", action="store_true", help="record this run under docs/eval-results/ (full runs always are)"
    )
    ap.add_argument("--out", default=None, help="folder for logs and reports (default: a temp dir)")
    ap.add_argument("--list", action="store_true", help="list the workloads and their labels, run nothing")
    ap.add_argument(
        "--tune-suite",
        action="store_true",
        help="run `bottleneckd run --tune` once on the demo and a loader-bound, a latency-bound and a DDP job",
    )
    ap.add_argument(
        "--also-proofs",
        action="store_true",
        help="run only the second interventions' proofs (ALSO_PROVES: --also against bare), no verdicts",
    )
    ap.add_argument(
        "--merge", nargs="+", metavar="JSON", help="summarise earlier --json outputs as one suite, run nothing"
    )
    ap.add_argument(
        "--later-wins", action="store_true", help="with --merge: a later file's row replaces an earlier one (said)"
    )
    return ap


def main() -> int:
    args = parser().parse_args()
    if args.merge:
        return merged(args.merge, args.later_wins)
    if args.proof_runs < MIN_RUNS and not args.no_proof:
        print(f"eval.py: --proof-runs {args.proof_runs}: a proof needs {MIN_RUNS} runs a side or more", file=sys.stderr)
        return 2
    workloads = discover()
    if args.only:
        unknown = set(args.only) - {w.name for w in workloads}
        if unknown:
            print(f"eval.py: unknown workload(s) {', '.join(sorted(unknown))}; see --list", file=sys.stderr)
            return 2
        workloads = [w for w in workloads if w.name in args.only]
    elif not args.gpu:
        workloads = [w for w in workloads if w.needs != "gpu"]
    if args.list:
        for w in workloads:
            control = f"; control: {w.control} (< x{w.control_max})" if w.control else ""
            also = (
                f"; also proves {w.also_proves}: {w.also_intervention} (x{w.also_min_speedup})" if w.also_proves else ""
            )
            print(f"{w.name:28} {w.label:44} x{w.min_speedup}  proves {w.proves}  {w.intervention}{control}{also}")
        return 0
    out = Path(args.out or tempfile.mkdtemp(prefix="bottleneckd-eval-"))
    out.mkdir(parents=True, exist_ok=True)
    home = tempfile.mkdtemp(prefix="bottleneckd-home-")  # empty: no calibration profile, as on a fresh machine
    if args.also_from and not args.no_proof:
        print("eval.py: --also-from is for --no-proof runs; this run proves the second labels itself", flush=True)
    if args.also_proofs:
        return also_proofs(args, [w for w in workloads if w.also_proves], out, home)
    if args.tune_suite:
        from eval_suite.tune import tune_suite

        try:
            res = tune_suite(workloads, args.seconds, args.threads, job_env(home), out)
            if args.json_path:
                Path(args.json_path).write_text(json.dumps({"meta": meta(), "tune": res}, indent=1, default=str))
            return 0
        finally:
            shutil.rmtree(home, ignore_errors=True)
    try:
        return evaluate(args, workloads, out, job_env(home))
    finally:
        shutil.rmtree(home, ignore_errors=True)


def also_proofs(args: argparse.Namespace, workloads: list[Workload], out: Path, home: str) -> int:
    """The second interventions' proofs alone (``--also-proofs``), printed and written to --json."""
    res: dict[str, dict] = {}
    try:
        for w in workloads:
            p = res[w.name] = prove_also(w, args.proof_runs, proof_seconds(args, w), job_env(home), out, args.threads)
            print(f"{w.name:28} {w.also_proves:18} {p['status']:10} {p['why']}", flush=True)
            if args.json_path:
                Path(args.json_path).write_text(json.dumps({"meta": meta(), "also": res}, indent=1, default=str))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


def earlier_proofs(paths: list[str]) -> dict[str, dict]:
    rows = [r for p in paths for r in json.loads(Path(p).read_text())["workloads"]]
    return {r["name"]: r["proof"] for r in rows if r.get("proof")}


def proof_for(w: Workload, args: argparse.Namespace, earlier: dict, env: dict[str, str], out: Path) -> dict | None:
    if args.no_proof:
        return None
    if w.name in earlier:
        p, why = reusable(w, earlier[w.name], args.threads)
        if p is not None:
            return p
        print(f"{w.name}: earlier proof not reused ({why}); proving again", flush=True)
    return prove(w, args.proof_runs, proof_seconds(args, w), env, out, args.threads)


def proof_seconds(args: argparse.Namespace, w: Workload) -> float:
    """Seconds each proof run trains: --proof-seconds, or the workload's own PROOF_SECONDS if longer."""
    return max(args.proof_seconds, w.proof_seconds or 0)


def earlier_also(paths: list[str]) -> dict[str, dict]:
    """The --also-proofs outputs' proofs by workload (a later file's replaces an earlier one's)."""
    out: dict[str, dict] = {}
    for p in paths:
        doc = json.loads(Path(p).read_text())
        if not isinstance(doc, dict) or not isinstance(doc.get("also"), dict):
            why = "no 'also' section; give an eval.py --also-proofs --json output"
            print(f"eval.py: --also-from {p}: {why}", file=sys.stderr)
            sys.exit(2)
        out.update(doc["also"])
    return out


def also_unusable(w: Workload, earlier: dict, threads: str) -> str | None:
    """Why an earlier second proof does not stand for ``w`` now (None: it does): another
    recommendation, another workload source, or another thread setting."""
    if earlier.get("proves") != w.also_proves:
        return f"it proves {earlier.get('proves')}, the workload's second label is {w.also_proves}"
    return changed_since(w, earlier, threads)


def evaluate(args: argparse.Namespace, workloads: list[Workload], out: Path, env: dict[str, str]) -> int:
    """Proofs and verdicts for each workload, then the summary; the exit code."""
    modes = ("run", "attach") if args.mode == "both" else (args.mode,)
    earlier = earlier_proofs(list(args.proofs_from))
    earlier_second = earlier_also(list(args.also_from))
    full = not args.only and args.mode == "both" and not args.no_proof
    m = {**meta(), "full": full, "threads": args.threads}
    rows: list[dict] = []
    t_start = time.time()
    for w in workloads:
        t0 = time.time()
        row: dict = {"name": w.name, **asdict(w), "label": w.label, "threads": args.threads, "load_before": load()}
        row["proof"] = proof_for(w, args, earlier, env, out)
        row["scored"] = row["proof"] is None or row["proof"]["proven"]
        also = None
        if w.also_proves and not args.no_proof:
            also = row["also_proof"] = prove_also(w, args.proof_runs, proof_seconds(args, w), env, out, args.threads)
        elif w.also_proves and w.name in earlier_second:
            why = also_unusable(w, earlier_second[w.name], args.threads)
            if why:
                print(f"{w.name}: earlier second proof not used ({why})", flush=True)
            else:
                also = row["also_proof"] = {**earlier_second[w.name], "reused": True}
        also_proven = bool(also and also["proven"])
        if "run" in modes:
            row["run"] = judge(w, under_run(w, args.seconds, args.threads, env, out))
            row["run"]["advice"] = advice(w, row["run"], also_proven)
        if "attach" in modes:
            row["attach"] = judge(w, under_attach(w, args.seconds, args.warmup, args.threads, env, out))
            row["attach"]["advice"] = advice(w, row["attach"], also_proven)
        row["wall_seconds"] = round(time.time() - t0, 1)
        row["load_after"] = load()
        rows.append(row)
        verdicts = "  ".join(
            f"{md}: {row[md]['resource']}/{row[md]['stage']} "
            + (row[md]["outcome"].upper() if row[md]["outcome"] != "right" else "right")
            for md in modes
        )
        print(f"{w.name:28} {w.label:40} {proof_line(row)[:60]:60} {verdicts}", flush=True)
        if args.json_path:  # after every workload: a run cut short keeps what it measured
            Path(args.json_path).write_text(
                json.dumps({"meta": m, "args": vars(args), "workloads": rows}, indent=1, default=str)
            )

    summary = summarize(rows, modes)
    summary["wall_seconds"] = round(time.time() - t_start, 1)
    m["load_end"] = load()
    print(f"\nreports and logs in {out}")
    doc = {"meta": m, "summary": summary, "args": vars(args), "workloads": rows}
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(doc, indent=1, default=str))
    if full or args.record:
        print(f"recorded in {write_record(doc)}")
    return 1 if summary["bad"] else 0


if __name__ == "__main__":
    sys.exit(main())
