"""Verdicts against labels: right when the verdict's resource is one of the label's and its stage
is the label's (STAGE None: any stage); ``undetermined`` is not wrong but not right (except where
the label is ``undetermined``); anything else is wrong; no report is an error. Only workloads
whose proof holds are scored."""

from __future__ import annotations

from eval_suite.workloads import Workload

OUTCOMES = ("right", "undetermined", "wrong", "error")


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
        "headroom": v.get("headroom"),
        "evidence": v.get("evidence", []),
        "reason": v.get("reason"),
        "secondary": v.get("secondary", []),
        "facts": doc.get("facts", {}),
        "step_phases": doc.get("step_phases"),
        "statistics": doc.get("statistics", {}),
    }


def confusion(rows: list[dict], mode: str) -> str:
    """Label (rows) against verdict (columns), scored workloads only."""
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


def proof_line(r: dict) -> str:
    p = r.get("proof")
    if not p:
        return "unchecked"
    return f"{p.get('status', 'proven' if p.get('proven') else 'unproven')}: {p.get('why', '')}"


def summarize(rows: list[dict], modes: tuple[str, ...]) -> dict:
    """Print right/total per mode, the confusion matrices, the proofs that did not hold (with every
    failed run) and the wrong verdicts; return the summary."""
    scored = [r for r in rows if r["scored"]]
    summary: dict = {
        "workloads": len(rows),
        "scored": len(scored),
        "unproven": [r["name"] for r in rows if not r["scored"]],
        "failed_runs": {r["name"]: r["proof"]["failures"] for r in rows if (r.get("proof") or {}).get("failures")},
    }
    print()
    for m in modes:
        outcomes = [r[m]["outcome"] for r in scored if m in r]
        summary[m] = {k: outcomes.count(k) for k in OUTCOMES}
        print(
            f"{m}: right {outcomes.count('right')}/{len(scored)}, undetermined {outcomes.count('undetermined')}, "
            f"wrong {outcomes.count('wrong')}, no report {outcomes.count('error')}"
        )
    for m in modes:
        print("\n" + confusion(rows, m))
    if summary["unproven"]:
        print("\nnot scored (the proof did not hold):")
        for r in rows:
            if not r["scored"]:
                print(f"  {r['name']}: {proof_line(r)}")
    if summary["failed_runs"]:
        print("\nfailed proof runs (reported, not dropped):")
        for name, fails in summary["failed_runs"].items():
            for f in fails:
                print(f"  {name}: {f}")
    bad = [(r, m) for r in scored for m in modes if m in r and r[m]["outcome"] in ("wrong", "error")]
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
