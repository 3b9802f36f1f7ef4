"""``scripts/eval.py --tune-suite``: ``bottleneckd run --tune`` on the demo and three jobs
(loader-bound, latency-bound, and a DDP job whose ranks' loaders wait on latency), each once;
prints what the hook kept and reverted, the measured speed-up beside the predicted one (within
TOLERANCE or not), and what to change in the code.
Nothing here is a proof: the machine's load moves the figures, and the report says the load."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from eval_suite.proof import call, script
from eval_suite.record import load
from eval_suite.workloads import Workload

PY = sys.executable
#: the issue's goal for predicted against measured speed-ups of the mitigations --tune applies
TOLERANCE = 0.25
#: a Dataset that waits 4 ms per sample on a slow store (a sleep: nothing busy), no workers
LATENCY_JOB = Path(__file__).resolve().parents[1] / "jobs" / "latency_loader.py"
#: the same loader on both ranks of a DDP job (torchrun in the process): the ranks tune in step
DDP_LATENCY_JOB = LATENCY_JOB.with_name("ddp_latency_loader.py")


def jobs(workloads: dict[str, Workload], seconds: float, threads: str, out: Path) -> dict[str, list[str]]:
    found = {
        "demo": [PY, "-m", "bottleneckd.torch.demo", "--epochs", "10"],
        "latency-bound loader": [PY, str(LATENCY_JOB), f"{seconds:g}"],
    }
    if "data_cpu_bound" in workloads:
        found["loader-bound (data_cpu_bound)"] = script(workloads["data_cpu_bound"], seconds, threads=threads)
    found["DDP (2 ranks, latency-bound loaders)"] = [PY, str(DDP_LATENCY_JOB), f"{seconds:g}"]
    return found


def fmt(x: float | None) -> str:
    return "none" if x is None else f"x{x:.2f}"


def within(o: dict) -> bool | None:
    m, p = (o.get("measured") or {}).get("speedup"), (o.get("predicted") or {}).get("speedup")
    return None if m is None or p is None else abs(p / m - 1) <= TOLERANCE


def tune_suite(workloads: list[Workload], seconds: float, threads: str, env: dict[str, str], out: Path) -> dict:
    results: dict = {}
    for kind, cmd in jobs({w.name: w for w in workloads}, seconds, threads, out).items():
        slug = kind.split(" ")[0]
        rep, log = out / f"tune.{slug}.json", out / f"tune.{slug}.log"
        load_before = load()
        bn = [PY, "-m", "bottleneckd", "run", "--tune", "--quiet", "--force", "--report-json", str(rep), "--"]
        code = call(bn + cmd, {**env, "PYTHONUNBUFFERED": "1"}, seconds * 6 + 300, log)
        doc = json.loads(rep.read_text()) if rep.exists() else {}
        t = doc.get("tune") or {}
        v = doc.get("verdict") or {}
        res = {
            "exit_code": code,
            "load_before": load_before,
            "load_after": load(),
            "verdict": f"{v.get('resource')}/{v.get('stage')}",
            "top": [r.get("id") for r in doc.get("recommendations", [])][:3],
            "outcomes": t.get("outcomes", []),
            "change_in_code": t.get("change_in_code", []),
            "stopped": t.get("stopped"),
            "step_ms": t.get("step_ms"),
        }
        results[kind] = res
        print(
            f"\n{kind}: exit {code}, load {load_before[0]:.1f} -> {res['load_after'][0]:.1f}, verdict {res['verdict']}"
        )
        for o in res["outcomes"]:
            m, p = o.get("measured") or {}, o.get("predicted") or {}
            ok = within(o)
            print(
                f"  {o['status']}: {o['hook']} ({o['recommendation']}) {o.get('params') or ''}: "
                f"measured {fmt(m.get('speedup'))}, predicted {fmt(p.get('speedup'))}"
                + ("" if ok is None else f" ({'within' if ok else 'outside'} {TOLERANCE:.0%})")
                + (f"; {o['why']}" if o.get("why") else "")
            )
        for c in res["change_in_code"]:
            print(f"  change: {c['code']}")
        if res["stopped"]:
            print(f"  stopped: {res['stopped']}")
        if not rep.exists():
            print(f"  no report: see {log}")
    print(f"\nlogs in {out} (cpu count {os.cpu_count()})")
    return results
