"""The proof of a label, never by the rules: the workload runs bare, with ``--intervene`` (the
change that removes only the suspected bottleneck) and, where it declares one, with ``--control``
(a change that would help if another resource limited it), interleaved, at least MIN_RUNS runs a
side. The label holds when the intervention is faster by MIN_SPEEDUP (ratio of medians) and
significantly so (one-sided Welch t-test on seconds per step, ``bottleneckd compare``'s
statistics), and the control is not (ratio of medians below CONTROL_MAX_SPEEDUP). Every run is
kept with its exit code; a run that failed or measured nothing is reported, never dropped in
silence, and a side with fewer than MIN_RUNS good runs proves nothing."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bottleneckd.compare.stats import compare_durations
from eval_suite.workloads import W, Workload

PY = sys.executable
#: runs a side below which a proof rests on too little: the spread of 2 runs is one difference
MIN_RUNS = 3
#: one-sided significance of "faster with the intervention"
ALPHA = 0.05
SIDES = ("bare", "intervention", "control")


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


def script(w: Workload, seconds: float, side: str = "bare", threads: str = "1") -> list[str]:
    """The workload's command line for one side of its proof (and, bare, for the verdicts)."""
    flag = {"bare": [], "intervention": ["--intervene"], "control": ["--control"], "also": ["--also"]}[side]
    return [PY, str(W / f"{w.name}.py"), "--seconds", f"{seconds:g}", "--threads", threads, *flag]


def one_run(cmd: list[str], env: dict[str, str], seconds: float, log: Path) -> dict:
    """One run: its throughput, exit code and wall time, and why it failed (None when it did not)."""
    t0 = time.monotonic()
    code = call(cmd, env, seconds * 6 + 240, log)
    wall = round(time.monotonic() - t0, 1)
    text = log.read_text(errors="replace") if log.exists() else ""
    t = throughput(text)
    tail = next((ln for ln in reversed(text.strip().splitlines()) if ln.strip()), "no output")
    if code is None:
        why = f"timed out after {wall:g} s"
    elif code != 0:
        why = f"exit code {code}: {tail[-200:]}"
    elif t is None:
        why = f"no throughput line: {tail[-200:]}"
    elif t <= 0:
        why = "zero throughput (no step completed)"
    else:
        why = None
    return {"throughput": t, "exit_code": code, "wall_seconds": wall, "failure": why, "log": log.name}


def ratio_of(base: list[float], other: list[float]) -> dict:
    """Median ratio, and the one-sided test and interval of ``other`` faster than ``base``."""
    out: dict = {"ratio": statistics.median(other) / statistics.median(base) if base and other else None}
    if len(base) >= 2 and len(other) >= 2:
        c = compare_durations([1 / t for t in base], [1 / t for t in other], ALPHA)
        out.update(p_value=c.p_value, ci=list(c.ci) if c.ci else None, test=c.why)
    else:
        out.update(p_value=None, ci=None, test="fewer than 2 good runs a side: untested")
    return out


def prove(w: Workload, runs: int, seconds: float, env: dict[str, str], out: Path, threads: str = "1") -> dict:
    """Bare, intervention (and control) runs interleaved, the order turning each round so that a
    drift in the machine's load falls on every side; the proof with its statistics."""
    sides = [s for s in SIDES if s != "control" or w.control]
    done: dict[str, list[dict]] = {s: [] for s in sides}
    for i in range(runs):
        for side in sides[i % len(sides) :] + sides[: i % len(sides)]:
            log = out / f"{w.name}.{side}.{i}.log"
            done[side].append(one_run(script(w, seconds, side, threads), env, seconds, log))
    return judge_proof(w, done, threads)


def prove_also(w: Workload, runs: int, seconds: float, env: dict[str, str], out: Path, threads: str = "1") -> dict:
    """The second intervention (``--also``, ALSO_INTERVENTION) against bare, interleaved, judged as
    a proof with ALSO_MIN_SPEEDUP and no control: does it prove ALSO_PROVES on this machine."""
    done: dict[str, list[dict]] = {"bare": [], "intervention": []}
    for i in range(runs):
        for side in ("bare", "also") if i % 2 == 0 else ("also", "bare"):
            log = out / f"{w.name}.{side}.{i}.log"
            done["bare" if side == "bare" else "intervention"].append(
                one_run(script(w, seconds, side, threads), env, seconds, log)
            )
    also = dataclasses.replace(w, min_speedup=w.also_min_speedup, control=None, control_max=None)
    return {**judge_proof(also, done, threads), "proves": w.also_proves, "intervention_is": w.also_intervention}


def judge_proof(w: Workload, done: dict[str, list[dict]], threads: str = "1") -> dict:
    """The proof's status from its runs: proven, unproven (the intervention not enough faster),
    disproved (the control helped, significantly: another resource limits the job), inconclusive
    (the control's median reached its threshold within noise) or failed (too few good runs)."""
    good = {s: [r["throughput"] for r in rs if r["failure"] is None] for s, rs in done.items()}
    failures = [f"{s} run {i}: {r['failure']}" for s, rs in done.items() for i, r in enumerate(rs) if r["failure"]]
    main = ratio_of(good["bare"], good["intervention"])
    control = ratio_of(good["bare"], good["control"]) if "control" in done else None
    short = [s for s in done if len(good[s]) < MIN_RUNS]
    ratio = main["ratio"]
    if short:
        status = "failed"
        why = f"fewer than {MIN_RUNS} good runs on the {', '.join(short)} side(s)"
    elif control and control["ratio"] is not None and w.control_max and control["ratio"] >= w.control_max:
        significant = control["p_value"] is not None and control["p_value"] < ALPHA
        status = "disproved" if significant else "inconclusive"
        why = f"the control ({w.control}) gave x{control['ratio']:.2f} >= x{w.control_max}" + (
            ": another resource limits it" if significant else f", not significantly ({control['test']})"
        )
    elif ratio is None or w.min_speedup is None or ratio < w.min_speedup:
        status = "unproven"
        why = f"x{ratio:.2f} < x{w.min_speedup}" if ratio is not None else "no ratio"
    elif main["p_value"] is None or main["p_value"] >= ALPHA:
        status = "unproven"
        why = f"x{ratio:.2f} but not significant ({main['test']})"
    else:
        status = "proven"
        why = f"x{ratio:.2f} >= x{w.min_speedup}, {main['test']}" + (
            f"; control x{control['ratio']:.2f} < x{w.control_max}" if control else ""
        )
    return {
        **{s: done[s] for s in done},
        "ratio": ratio,
        "p_value": main["p_value"],
        "ci": main["ci"],
        "control_ratio": control["ratio"] if control else None,
        "control_ci": control["ci"] if control else None,
        "status": status,
        "proven": status == "proven",
        "why": why,
        "failures": failures,
        "workload_sha256": w.sha256,
        "threads": threads,
    }


def changed_since(w: Workload, earlier: dict, threads: str) -> str | None:
    """Why an earlier proof of ``w`` was made on something else (None: the same workload source and
    thread setting)."""
    if earlier.get("workload_sha256") != w.sha256:
        return "the workload's source changed since (or the proof carries no hash)"
    if str(earlier.get("threads", "1")) != threads:
        return f"proved with --threads {earlier.get('threads', '1')}, not {threads}"
    return None


def reusable(w: Workload, earlier: dict | None, threads: str) -> tuple[dict | None, str]:
    """An earlier proof of ``w`` if it was made on the same workload source and thread setting,
    re-judged against the current thresholds; else None and why not."""
    if earlier is None:
        return None, "no earlier proof"
    why = changed_since(w, earlier, threads)
    if why:
        return None, why
    done = {s: earlier[s] for s in SIDES if isinstance(earlier.get(s), list)}
    if any(not isinstance(r, dict) for rs in done.values() for r in rs):
        return None, "an earlier format (runs without exit codes)"
    return {**judge_proof(w, done, threads), "reused": True}, ""
