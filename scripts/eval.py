#!/usr/bin/env python3
"""The labelled suite: prove each workload's label by its intervention, then check the verdict of
`bottleneckd run` and `bottleneckd attach --pid` against it.

    python scripts/eval.py [--only NAME ...] [--mode run|attach|both] [--seconds 15]
                           [--proof-runs 2] [--proof-seconds 6] [--json out.json] [--gpu]

1. Proof (never the rules): each workload runs bare and with --intervene, interleaved, a few
   short runs each; the median throughput with the intervention over the bare median must reach
   the workload's MIN_SPEEDUP. A workload that misses it is "unproven": reported, not scored.
2. Verdicts, as a new user gets them on a fresh machine: BOTTLENECKD_HOME is an empty temporary
   folder (no calibration profile); `bottleneckd run -- python job.py` and, for a job started
   separately, `bottleneckd attach --pid PID` until the job exits.
3. Scoring: right = the label's resource and stage (STAGE None: any stage); `undetermined` is not
   wrong but not right (except where the label is `undetermined`); anything else is wrong.
   Printed: right/total per mode, a confusion matrix, every wrong verdict with its evidence.
   Exit code 1 on any wrong verdict or a run that gave no report, else 0.

Labels live in the workloads (module-level LABEL, STAGE, INTERVENTION, MIN_SPEEDUP, NEEDS), read
here with ast, never by importing the workload.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
W = ROOT / "scripts" / "workloads"
PY = sys.executable
BN = [PY, "-m", "bottleneckd"]
LAST = ("memory_capacity",)  # the one that squeezes the host's memory runs last


@dataclass(frozen=True)
class Workload:
    name: str
    labels: tuple[str, ...]  # accepted resource ids (or "undetermined")
    stage: str | None  # None: any stage
    intervention: str | None
    min_speedup: float | None
    needs: str  # "cpu" or "gpu"
    proof_seconds: float | None = None  # a floor on --proof-seconds for slow steps (a few steps a second)

    @property
    def label(self) -> str:
        return f"{'|'.join(self.labels)}/{self.stage or '*'}"


def discover() -> list[Workload]:
    """Every scripts/workloads/*.py that declares a LABEL, in name order (LAST at the end)."""
    found = []
    for path in sorted(W.glob("*.py")):
        consts = {}
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                if node.targets[0].id in ("LABEL", "STAGE", "INTERVENTION", "MIN_SPEEDUP", "NEEDS", "PROOF_SECONDS"):
                    consts[node.targets[0].id] = ast.literal_eval(node.value)
        if "LABEL" not in consts:
            continue
        label = consts["LABEL"]
        found.append(
            Workload(
                path.stem,
                tuple(label) if isinstance(label, (tuple, list)) else (label,),
                consts.get("STAGE"),
                consts.get("INTERVENTION"),
                consts.get("MIN_SPEEDUP"),
                consts.get("NEEDS", "cpu"),
                consts.get("PROOF_SECONDS"),
            )
        )
    return sorted(found, key=lambda w: (w.name in LAST, w.name))


def job_env(home: str) -> dict[str, str]:
    pp = os.pathsep.join([str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    # BOTTLENECKD_HOME empty: no calibration profile. XDG_RUNTIME_DIR: the default channel socket
    # lives there, so a sidecar of another user of a shared host is not "already listening".
    return {**os.environ, "PYTHONPATH": pp, "BOTTLENECKD_HOME": home, "XDG_RUNTIME_DIR": home, "PYTHONUNBUFFERED": "1"}


def throughput(text: str) -> float | None:
    """The workload's last throughput line."""
    found = re.findall(r"throughput: ([\d.]+) \w+/s", text)
    return float(found[-1]) if found else None


def call(cmd: list[str], env: dict[str, str], timeout: float, log: Path) -> int | None:
    """Run ``cmd`` in its own process group, output to ``log``; None if it timed out (group killed)."""
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            return None


def script(w: Workload, seconds: float, intervene: bool = False) -> list[str]:
    return [PY, str(W / f"{w.name}.py"), "--seconds", f"{seconds:g}"] + (["--intervene"] if intervene else [])


def prove(w: Workload, runs: int, seconds: float, env: dict[str, str], out: Path) -> dict:
    """Bare and intervention runs interleaved (the order alternates); the ratio of medians."""
    bare: list[float | None] = []
    fixed: list[float | None] = []
    for i in range(runs):
        for intervene in (False, True) if i % 2 == 0 else (True, False):
            log = out / f"{w.name}.{'intervene' if intervene else 'bare'}.{i}.log"
            call(script(w, seconds, intervene), env, seconds * 6 + 240, log)
            (fixed if intervene else bare).append(throughput(log.read_text()))
    ok_b, ok_f = [t for t in bare if t], [t for t in fixed if t]
    ratio = statistics.median(ok_f) / statistics.median(ok_b) if ok_b and ok_f else None
    proven = ratio is not None and w.min_speedup is not None and ratio >= w.min_speedup
    return {"bare": bare, "intervention": fixed, "ratio": ratio, "proven": proven}


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
    sys.path.insert(0, str(ROOT))
    try:
        from bottleneckd.diagnosis.sensitivity import replay_statistics
        from bottleneckd.outputs.trace import read_trace

        header, samples = read_trace(str(path))
        return replay_statistics(header.peaks, samples)
    except Exception as e:  # noqa: BLE001 - a bad trace costs its statistics, never the suite
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    finally:
        sys.path.remove(str(ROOT))


def under_run(w: Workload, seconds: float, env: dict[str, str], out: Path) -> dict:
    rep, log, trace = out / f"{w.name}.run.json", out / f"{w.name}.run.log", out / f"{w.name}.run.trace.jsonl"
    call(
        BN + ["run", "--quiet", "--force", "--report-json", str(rep), "--trace", str(trace), "--"] + script(w, seconds),
        env,
        seconds * 6 + 240,
        log,
    )
    return {**read_report(rep, log), "statistics": trace_statistics(trace)}


def under_attach(w: Workload, seconds: float, warmup: float, env: dict[str, str], out: Path) -> dict:
    """Start the job, let it get going, attach until it exits (as a user of attach would)."""
    rep, log, trace = out / f"{w.name}.attach.json", out / f"{w.name}.attach.log", out / f"{w.name}.attach.trace.jsonl"
    record = ["--trace", str(trace)] if traces_supported("attach") else []
    with open(out / f"{w.name}.attach.job.log", "w") as jf:
        job = subprocess.Popen(
            script(w, seconds + warmup), env=env, stdout=jf, stderr=subprocess.STDOUT, start_new_session=True
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


def judge(w: Workload, doc: dict) -> dict:
    """Outcome of one verdict against the label: right, undetermined, wrong or error."""
    v = doc.get("verdict")
    if not isinstance(v, dict) or "resource" not in v:
        return {"outcome": "error", "resource": "error", "stage": "-", "evidence": [str(doc.get("error", ""))[-600:]]}
    res, stage = v.get("resource"), v.get("stage") or "-"
    if res in w.labels and (w.stage is None or res == "undetermined" or stage == w.stage):
        outcome = "right"
    elif res == "undetermined":
        outcome = "undetermined"
    else:
        outcome = "wrong"
    return {
        "outcome": outcome,
        "resource": res,
        "stage": stage,
        "confidence": v.get("confidence"),
        "evidence": v.get("evidence", []),
        "reason": v.get("reason"),
        "secondary": v.get("secondary", []),
        "facts": doc.get("facts", {}),
        "step_phases": doc.get("step_phases"),
        "statistics": doc.get("statistics", {}),
    }


def confusion(rows: list[dict], mode: str) -> str:
    """Label (rows) against verdict (columns), proven workloads only."""
    pairs = [(r["label"], f"{r[mode]['resource']}/{r[mode]['stage']}") for r in rows if mode in r and r["scored"]]
    if not pairs:
        return f"{mode}: nothing scored"
    labels = sorted({p[0] for p in pairs})
    verdicts = sorted({p[1] for p in pairs})
    lw = max(len(x) for x in labels + ["label \\ verdict"])
    lines = [
        f"{mode}: label (rows) against verdict (columns)",
        "label \\ verdict".ljust(lw) + "  " + "  ".join(f"[{i}]" for i in range(len(verdicts))),
    ]
    for lab in labels:
        cells = [sum(1 for p in pairs if p == (lab, v)) for v in verdicts]
        lines.append(lab.ljust(lw) + "  " + "  ".join(f"{c or '.':>{len(str(i)) + 2}}" for i, c in enumerate(cells)))
    lines += [f"  [{i}] {v}" for i, v in enumerate(verdicts)]
    return "\n".join(lines)


def summarize(rows: list[dict], modes: tuple[str, ...]) -> dict:
    """Print right/total per mode, the confusion matrices, the unproven and the wrong verdicts."""
    scored = [r for r in rows if r["scored"]]
    summary: dict = {
        "workloads": len(rows),
        "scored": len(scored),
        "unproven": [r["name"] for r in rows if not r["scored"]],
    }
    print()
    for m in modes:
        outcomes = [r[m]["outcome"] for r in scored]
        summary[m] = {k: outcomes.count(k) for k in ("right", "undetermined", "wrong", "error")}
        print(
            f"{m}: right {outcomes.count('right')}/{len(scored)}, undetermined {outcomes.count('undetermined')}, "
            f"wrong {outcomes.count('wrong')}, no report {outcomes.count('error')}"
        )
    for m in modes:
        print("\n" + confusion(rows, m))
    if summary["unproven"]:
        print("\nunproven (intervention below its threshold; not scored):")
        for r in rows:
            if not r["scored"]:
                p = r["proof"]
                print(
                    f"  {r['name']}: x{p['ratio']:.2f} < x{r['min_speedup']}"
                    if p and p["ratio"]
                    else f"  {r['name']}: no throughput ({p})"
                )
    bad = [(r, m) for r in scored for m in modes if r[m]["outcome"] in ("wrong", "error")]
    summary["bad"] = [f"{r['name']}:{m}" for r, m in bad]
    if bad:
        print("\nwrong verdicts (label, verdict, evidence):")
        for r, m in bad:
            v = r[m]
            print(
                f"  {r['name']} [{m}] label {r['label']}, said {v['resource']}/{v['stage']}"
                + (f" (reason: {v['reason']})" if v.get("reason") and v["resource"] == "undetermined" else "")
            )
            for e in v["evidence"]:
                print(f"      {e}")
    return summary


def merged(paths: list[str]) -> int:
    """Summarise the rows of several --json files (e.g. runs split with --only) as one suite."""
    rows: dict[str, dict] = {}
    for p in paths:
        for r in json.loads(Path(p).read_text())["workloads"]:
            rows[r["name"]] = r  # a later file's row replaces an earlier one
    modes = tuple(m for m in ("run", "attach") if all(m in r for r in rows.values()))
    for r in rows.values():
        ratio = r["proof"]["ratio"] if r.get("proof") else None
        print(
            f"{r['name']:28} {r['label']:40} {('x%.2f' % ratio) if ratio else '-':>6} {'proven' if r['scored'] else 'UNPROVEN'}  "
            + "  ".join(f"{m}: {r[m]['resource']}/{r[m]['stage']} {r[m]['outcome']}" for m in modes)
        )
    return 1 if summarize(list(rows.values()), modes)["bad"] else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these workloads")
    ap.add_argument("--mode", choices=("run", "attach", "both"), default="both")
    ap.add_argument("--seconds", type=float, default=15, help="job length under run and attach")
    ap.add_argument("--warmup", type=float, default=5, help="seconds the job runs before attach")
    ap.add_argument("--proof-runs", type=int, default=2, help="runs of each of bare and intervention")
    ap.add_argument("--proof-seconds", type=float, default=6)
    ap.add_argument("--no-proof", action="store_true", help="skip the interventions (verdicts scored as unchecked)")
    ap.add_argument(
        "--proofs-from",
        nargs="+",
        metavar="JSON",
        default=(),
        help="reuse the proofs of earlier --json outputs (valid while the workloads are unchanged: the proofs never involve bottleneckd)",
    )
    ap.add_argument("--gpu", action="store_true", help="include the GPU workloads")
    ap.add_argument("--json", dest="json_path", default=None, help="write every result here")
    ap.add_argument("--out", default=None, help="folder for logs and reports (default: a temp dir)")
    ap.add_argument("--list", action="store_true", help="list the workloads and their labels, run nothing")
    ap.add_argument(
        "--merge", nargs="+", metavar="JSON", help="summarise earlier --json outputs as one suite, run nothing"
    )
    args = ap.parse_args()
    if args.merge:
        return merged(args.merge)
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
            print(f"{w.name:28} {w.label:44} x{w.min_speedup}  {w.intervention}")
        return 0
    out = Path(args.out or tempfile.mkdtemp(prefix="bottleneckd-eval-"))
    out.mkdir(parents=True, exist_ok=True)
    home = tempfile.mkdtemp(prefix="bottleneckd-home-")  # empty: no calibration profile, as on a fresh machine
    try:
        return evaluate(args, workloads, out, job_env(home))
    finally:
        shutil.rmtree(home, ignore_errors=True)


def evaluate(args: argparse.Namespace, workloads: list[Workload], out: Path, env: dict[str, str]) -> int:
    """Proofs and verdicts for each workload, then the summary; the exit code."""
    modes = ("run", "attach") if args.mode == "both" else (args.mode,)
    earlier = {
        r["name"]: r["proof"]
        for p in args.proofs_from
        for r in json.loads(Path(p).read_text())["workloads"]
        if r.get("proof")
    }
    rows: list[dict] = []
    t_start = time.time()
    for w in workloads:
        t0 = time.time()
        row: dict = {"name": w.name, **asdict(w), "label": w.label}
        if args.no_proof:
            row["proof"], row["scored"] = None, True
        elif w.name in earlier:
            row["proof"] = {
                **earlier[w.name],
                "proven": earlier[w.name]["ratio"] is not None
                and w.min_speedup is not None
                and earlier[w.name]["ratio"] >= w.min_speedup,
                "reused": True,
            }
            row["scored"] = row["proof"]["proven"]
        else:
            row["proof"] = prove(w, args.proof_runs, max(args.proof_seconds, w.proof_seconds or 0), env, out)
            row["scored"] = row["proof"]["proven"]
        if "run" in modes:
            row["run"] = judge(w, under_run(w, args.seconds, env, out))
        if "attach" in modes:
            row["attach"] = judge(w, under_attach(w, args.seconds, args.warmup, env, out))
        row["wall_seconds"] = round(time.time() - t0, 1)
        rows.append(row)
        ratio = row["proof"]["ratio"] if row["proof"] else None
        proof = (
            "unchecked"
            if row["proof"] is None
            else f"x{ratio:.2f} {'proven' if row['scored'] else 'UNPROVEN'}"
            if ratio
            else "UNPROVEN (no throughput)"
        )
        verdicts = "  ".join(
            f"{m}: {row[m]['resource']}/{row[m]['stage']} {row[m]['outcome'].upper() if row[m]['outcome'] != 'right' else 'right'}"
            for m in modes
        )
        print(f"{w.name:28} {w.label:40} {proof:22} {verdicts}", flush=True)
        if args.json_path:  # after every workload: a run cut short keeps what it measured
            Path(args.json_path).write_text(json.dumps({"args": vars(args), "workloads": rows}, indent=1, default=str))

    summary = summarize(rows, modes)
    summary["wall_seconds"] = round(time.time() - t_start, 1)
    print(f"\nreports and logs in {out}")
    if args.json_path:
        Path(args.json_path).write_text(
            json.dumps({"summary": summary, "args": vars(args), "workloads": rows}, indent=1, default=str)
        )
    return 1 if summary["bad"] else 0


if __name__ == "__main__":
    sys.exit(main())
