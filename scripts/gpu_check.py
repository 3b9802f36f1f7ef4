"""The GPU check: one command, labelled GPU workloads under `bottleneckd run` and `bottleneckd attach`.

    python scripts/gpu_check.py [--out DIR]      # on a GPU machine: at most ~8 minutes on one H200
    python scripts/gpu_check.py --fake           # anywhere: CPU dry run against tests/fake_nvml.py

For each workload of scripts/gpu_check_workloads.py: (1) its intervention, timed in one process
(base then intervention), proves the label (the ratio the physics predicts, stated per workload);
(2) `bottleneckd run -- python ...` (the injected hook: CUDA-event phases, facts) and (3)
`bottleneckd attach --pid` (no hook: NVML and py-spy) each give a verdict, compared with the label;
(4) beside each `run`, an NVML/GPM probe from this process: NVML's busy figure next to GPM's SM,
tensor, FP32 and DRAM activity. Then the watcher's hot path under
``torch.cuda.set_sync_debug_mode("error")`` (it must never synchronise). Writes ``DIR/gpu_check.json``
and ``DIR/gpu_check.md``; exit code 0 when every judged check passed, 1 otherwise.

``--fake``: sizes shrunk, device cpu, the sidecar's NVML replaced by tests/fake_nvml.py (an H200
with GPM) through ``--as-cli``, so every code path here runs on a machine without a GPU; labels,
ratios and verdicts are reported but not judged (a CPU run proves nothing about a GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from gpu_check_workloads import WORKLOADS  # noqa: E402

#: how the intervention must change steps/s for the label to hold: (direction, bound)
#: "faster >= x": intervention/base >= x; "slower >= x": base/intervention >= x; "within x": base/intervention <= x;
#: "at most x": intervention/base <= x (removing the stage the label says does not limit the step barely helps)
PROOF = {
    "bf16_matmul": (
        "slower",
        4.0,
    ),  # fp32 moves 2x the bytes; a memory-bound step would slow ~2x, a tensor-bound one ~10x
    "fp32_mlp": ("faster", 1.5),  # TF32 saves no byte
    "elementwise_2gib": ("faster", 1.5),  # half the bytes: up to 2x
    "launch_bound": ("within", 1.3),  # 16x the FLOPs
    "pageable_h2d": ("faster", 1.5),
    "input_bound": ("faster", 1.5),
    # the batches from a plain iterator instead of the DataLoader: at most 10% faster, so the
    # loader costs under ~9% of the step (the hook's data wait must be under 5%)
    "grad_accum": ("at most", 1.1),
}
BUDGET_S = 480.0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _cli(fake: bool) -> list[str]:
    return (
        [sys.executable, str(Path(__file__).resolve()), "--as-cli"] if fake else [sys.executable, "-m", "bottleneckd"]
    )


def _workload(name: str, a: argparse.Namespace, seconds: float, variant: str = "base") -> list[str]:
    cmd = [
        sys.executable,
        str(ROOT / "scripts/gpu_check_workloads.py"),
        name,
        "--variant",
        variant,
        "--seconds",
        f"{seconds:g}",
    ]
    return cmd + (["--small", "--device", "cpu"] if a.fake else [])


def _json_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def _report(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _trace_shares(path: Path) -> dict[str, float] | None:
    """Phase shares over the whole run, from the trace's hook phases (the report's are its last window)."""
    tot: dict[str, float] = {}
    wall = 0.0
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            continue
        ph = d.get("phases") if d.get("type") == "sample" else None
        if ph:
            wall += ph.get("wall_seconds", 0.0)
            for k, v in ph.get("phases", {}).items():
                tot[k] = tot.get(k, 0.0) + v
    return {k: round(v / wall, 4) for k, v in tot.items()} if wall > 0 else None


def _verdict(doc: dict[str, Any] | None) -> dict[str, Any]:
    if doc is None:
        return {"resource": None, "why": "no report written"}
    v = doc.get("verdict", {})
    share = (doc.get("step_phases") or {}).get("share", {})
    return {
        "resource": v.get("resource"),
        "stage": v.get("stage"),
        "confidence": v.get("confidence"),
        "evidence": v.get("evidence", [])[:4],
        "data_wait_share": share.get("data_wait"),
        "reason": v.get("reason"),
    }


class Probe:
    """NVML's busy figure beside GPM's activities, read from this process while a workload runs."""

    def __init__(self, fake: bool) -> None:
        self.nv, self.why = None, ""
        try:
            if fake:
                from tests.fake_nvml import FakeNvml

                self.nv = FakeNvml([_fake_gpu()])
            else:
                from bottleneckd.hardware.pynvml_backend import open_backend

                self.nv = open_backend()
        except Exception as e:  # noqa: BLE001 - the probe is reported, never fatal
            self.why = f"{type(e).__name__}: {e}"

    def gpus(self) -> list[dict[str, Any]]:
        if self.nv is None:
            return []
        return [
            {
                "device": self.nv.label(i),
                "name": self.nv.name(i),
                "uuid": self.nv.uuid(i),
                "gpm": self.nv.gpm_supported(i),
                "mig": self.nv.mig_fractions(i),
            }
            for i in range(self.nv.device_count())
        ]

    def read(self, seconds: float) -> dict[str, Any]:
        """Over ``seconds``: NVML utilization (busy fraction) and one GPM interval, GPU 0."""
        if self.nv is None or self.nv.device_count() == 0:
            return {"why": self.why or "no GPU"}
        from bottleneckd.hardware import nvml as nv

        self.nv.gpm_metrics(0)
        busy = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            u = self.nv.utilization(0)
            if u is not None:
                busy.append(u[0] / 100)
            time.sleep(0.2)
        g = self.nv.gpm_metrics(0) or {}
        pick = {
            "sm": nv.GPM_SM_UTIL,
            "tensor": nv.GPM_ANY_TENSOR_UTIL,
            "fp32": nv.GPM_FP32_UTIL,
            "dram": nv.GPM_DRAM_BW_UTIL,
        }
        out: dict[str, Any] = {"nvml_busy": round(sum(busy) / len(busy), 3) if busy else None}
        out.update({f"gpm_{k}": (None if g.get(m) is None else round(g[m] / 100, 3)) for k, m in pick.items()})
        return out


def _fake_gpu() -> Any:
    """The --fake GPU: an H200 with GPM, pipes included; no process of ours (another PID namespace)."""
    from tests.fake_nvml import FakeGpu

    g = FakeGpu(name="NVIDIA H200", uuid="GPU-fake-h200", processes={})
    g.gpm = {**(g.gpm or {}), 12: 20.0, 13: 0.0, 11: 0.0, 4: 5.0}
    return g


def _judge(name: str, ratio: float | None, run_v: dict, attach_v: dict, fake: bool) -> dict[str, Any]:
    label = WORKLOADS[name][0]
    how, bound = PROOF[name]
    if fake:
        return {"judged": False, "why": "fake dry run: labels are only judged on a GPU"}
    proved = ratio is not None and (ratio >= bound if how in ("faster", "slower") else ratio <= bound)
    if not label:  # no resource named (grad_accum): the claim is the hook's data wait, proved by the intervention
        dw = run_v.get("data_wait_share")
        ok = dw is not None and dw < 0.05
        return {
            "judged": True,
            "label_proved": proved,
            "run_ok": ok,
            "attach_ok": None,
            "pass": proved and ok,
            "why": f"data wait {dw} of the step over the whole run (hook phases in the trace; must be under 0.05); "
            f"intervention ratio {ratio} ({how} {bound})",
        }
    run_ok, attach_ok = run_v.get("resource") == label, attach_v.get("resource") == label
    return {
        "judged": True,
        "label_proved": proved,
        "run_ok": run_ok,
        "attach_ok": attach_ok,
        "pass": proved and run_ok and attach_ok,
    }


def check(name: str, a: argparse.Namespace, out: Path, probe: Probe) -> dict[str, Any]:
    env, res = (
        _env(),
        {
            "workload": name,
            "label": WORKLOADS[name][0],
            "intervention": WORKLOADS[name][1],
            "proves": WORKLOADS[name][2],
        },
    )
    # (1) the intervention, base and intervention in one process: no label is proved without one
    how, _ = PROOF[name]
    p = subprocess.run(
        _workload(name, a, a.timing, "both"), env=env, capture_output=True, text=True, timeout=a.timing * 2 + 120
    )
    rates = {d["variant"]: d["steps_per_second"] for d in _json_lines(p.stdout)}
    ratio = None
    if "base" in rates and "intervention" in rates and rates["base"] and rates["intervention"]:
        ratio = (
            rates["base"] / rates["intervention"]
            if how in ("slower", "within")
            else rates["intervention"] / rates["base"]
        )
    res["timing"] = {
        "steps_per_second": rates,
        "ratio": None if ratio is None else round(ratio, 3),
        "rule": f"{how} {PROOF[name][1]}",
        "stderr": p.stderr.strip().splitlines()[-1:] if p.returncode else [],
    }
    # (2) under `bottleneckd run`, with the probe beside it
    rep, trace = out / f"{name}.run.json", out / f"{name}.run.trace.jsonl"
    rep.unlink(missing_ok=True)
    trace.unlink(missing_ok=True)
    run = subprocess.Popen(
        _cli(a.fake)
        + ["run", "--quiet", "--interval", "0.5", "--report-json", str(rep), "--trace", str(trace), "--"]
        + _workload(name, a, a.seconds),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(min(a.seconds / 3, 5.0))
    res["probe"] = probe.read(min(2.0, a.seconds / 3))
    so, se = run.communicate(timeout=a.seconds + 120)
    shares = _trace_shares(trace)
    res["run"] = {
        **_verdict(_report(rep)),
        "phase_shares": shares,
        "data_wait_share": (shares or {}).get("data_wait"),
        "rc": run.returncode,
        "stderr": se.strip().splitlines()[-2:] if run.returncode else [],
    }
    # (3) under `bottleneckd attach`, on the same workload started on its own
    job = subprocess.Popen(
        _workload(name, a, a.seconds), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    rep = out / f"{name}.attach.json"
    rep.unlink(missing_ok=True)
    time.sleep(min(3.0, a.seconds / 4))  # past imports and CUDA start-up
    att = subprocess.run(
        _cli(a.fake)
        + [
            "attach",
            "--pid",
            str(job.pid),
            "--quiet",
            "--interval",
            "0.5",
            "--duration",
            f"{max(1.0, a.seconds - 4):g}",
            "--report-json",
            str(rep),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=a.seconds + 120,
    )
    try:
        job.wait(timeout=a.seconds + 60)
    except subprocess.TimeoutExpired:
        job.kill()
    res["attach"] = {
        **_verdict(_report(rep)),
        "rc": att.returncode,
        "stderr": att.stderr.strip().splitlines()[-2:] if att.returncode else [],
    }
    res["judgement"] = _judge(name, ratio, res["run"], res["attach"], a.fake)
    return res


def markdown(doc: dict[str, Any]) -> str:
    head = [
        "workload",
        "label",
        "intervention",
        "ratio (rule)",
        "label proved",
        "run verdict",
        "attach verdict",
        "data wait (run)",
        "NVML busy",
        "GPM SM",
        "GPM tensor",
        "GPM FP32",
        "GPM DRAM",
        "pass",
    ]
    rows = []
    f = lambda x: "-" if x is None else (f"{x:.0%}" if isinstance(x, float) and x <= 1.5 else str(x))
    for r in doc["workloads"]:
        j, pr = r["judgement"], r.get("probe", {})
        rows.append(
            [
                r["workload"],
                r["label"] or "(data wait < 5%)",
                r["intervention"],
                f"{r['timing']['ratio']} ({r['timing']['rule']})",
                f(j.get("label_proved")) if j["judged"] else "not judged",
                str(r["run"].get("resource")),
                str(r["attach"].get("resource")),
                f(r["run"].get("data_wait_share")),
                f(pr.get("nvml_busy")),
                f(pr.get("gpm_sm")),
                f(pr.get("gpm_tensor")),
                f(pr.get("gpm_fp32")),
                f(pr.get("gpm_dram")),
                f(j.get("pass")) if j["judged"] else "not judged",
            ]
        )
    lines = [
        f"GPU check, {doc['mode']} ({doc['when']}, {doc['seconds_total']:.0f} s): {', '.join(g['name'] for g in doc['gpus']) or 'no GPU'}",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ] + ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    s = doc["sync_check"]
    lines += [
        "",
        "Hook under torch.cuda.set_sync_debug_mode('error'): "
        + (
            "not run: " + s.get("why", "")
            if s.get("ok") is None
            else ("no synchronisation in " if s["ok"] else "FAILED: ")
            + f"{s.get('steps')} steps"
            + (f" ({s.get('error')})" if s.get("error") else "")
        ),
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    if sys.argv[1:2] == ["--as-cli"]:  # the bottleneckd CLI with tests/fake_nvml.py as this process's NVML
        from bottleneckd.hardware import pynvml_backend
        from tests.fake_nvml import FakeNvml

        pynvml_backend._shared = FakeNvml([_fake_gpu()])
        from bottleneckd.cli.main import main as cli_main

        cli_main(sys.argv[2:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fake", action="store_true", help="CPU dry run against the fake NVML (no GPU needed)")
    ap.add_argument("--out", default="gpu_check_out", help="directory for gpu_check.json, gpu_check.md and the reports")
    ap.add_argument(
        "--seconds", type=float, default=None, help="each `run` and `attach` (default 11 on a GPU, 5 with --fake)"
    )
    ap.add_argument(
        "--timing", type=float, default=None, help="each side of an intervention (default 5 on a GPU, 1 with --fake)"
    )
    ap.add_argument("--only", nargs="*", default=None, help=f"some of: {', '.join(WORKLOADS)}")
    a = ap.parse_args()
    a.seconds = a.seconds or (5.0 if a.fake else 11.0)
    a.timing = a.timing or (1.0 if a.fake else 5.0)
    names = a.only or list(WORKLOADS)
    bad = [n for n in names if n not in WORKLOADS]
    if bad:
        print(f"gpu_check: unknown workload {bad[0]!r}; use some of: {', '.join(WORKLOADS)}", file=sys.stderr)
        return 2
    if not a.fake:
        import torch

        if not torch.cuda.is_available():
            print(
                "gpu_check: torch sees no CUDA device; run it on a GPU machine, or pass --fake for a CPU dry run",
                file=sys.stderr,
            )
            return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    probe = Probe(a.fake)
    doc: dict[str, Any] = {
        "mode": "fake dry run (CPU, tests/fake_nvml.py)" if a.fake else "GPU",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "gpus": probe.gpus(),
        "workloads": [],
        "not_run": [],
    }
    for name in names:
        if not a.fake and time.monotonic() - t0 > BUDGET_S - (2 * a.seconds + 2 * a.timing + 20):
            doc["not_run"].append({"workload": name, "why": f"time budget of {BUDGET_S:.0f} s"})
            continue
        print(f"gpu_check: {name} ...", file=sys.stderr, flush=True)
        doc["workloads"].append(check(name, a, out, probe))
    p = subprocess.run(_workload("sync_check", a, 2.0), env=_env(), capture_output=True, text=True, timeout=300)
    sync = _json_lines(p.stdout)
    doc["sync_check"] = (
        sync[0] if sync else {"ok": False, "error": (p.stderr.strip().splitlines() or ["no output"])[-1]}
    )
    doc["seconds_total"] = time.monotonic() - t0
    judged = [w["judgement"]["pass"] for w in doc["workloads"] if w["judgement"]["judged"]]
    doc["pass"] = (
        None
        if a.fake
        else (all(judged) and bool(judged) and doc["sync_check"].get("ok") is True and not doc["not_run"])
    )
    (out / "gpu_check.json").write_text(json.dumps(doc, indent=1))
    (out / "gpu_check.md").write_text(markdown(doc))
    print(markdown(doc))
    return 0 if a.fake or doc["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
