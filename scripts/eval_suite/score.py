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
    named = (v.get("straggler") or {}).get("rank")
    if w.straggler is not None and res != "undetermined" and named != w.straggler:
        outcome = "wrong"  # the right resource read on the wrong rank (or on none) is not the job's bottleneck
    elif res in w.labels and (w.stage is None or res == "undetermined" or stage == w.stage):
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
        "straggler": named,
        "secondary": v.get("secondary", []),
        "facts": doc.get("facts", {}),
        "step_phases": doc.get("step_phases"),
        "statistics": doc.get("statistics", {}),
        "recommendations": [r.get("id") for r in doc.get("recommendations", [])][:5],
        "code_sites": [s.get("function") for s in ((v.get("code") or {}).get("sites") or [])],
    }


#: stages whose time runs in the user's own Python (a Dataset, a collate_fn, per-step code); a
#: compute stage runs torch's operators, whose callers are the model's forward
USER_CODE_STAGES = ("data", "other")


def advice(w: Workload, judged: dict, also_proven: bool = False) -> dict:
    """Whether the top recommendation is one the workload's interventions prove (its own; the
    second one's, ``also_proves``, where that proof held), and whether the code of its stage was
    named (for the stages that run the user's own code)."""
    recs = judged.get("recommendations") or []
    user_code = w.stage in USER_CODE_STAGES
    proved = {w.proves} | ({w.also_proves} if also_proven and w.also_proves else set())
    return {
        "proves": w.proves,
        "also_proves": w.also_proves if also_proven else None,
        "top": recs[0] if recs else None,
        "top_proved": None if w.proves is None else bool(recs) and recs[0] in proved,
        "in_top3": None if w.proves is None else bool(proved & set(recs[:3])),
        "code_named": bool(judged.get("code_sites")) if user_code else None,
    }


def advice_summary(rows: list[dict], modes: tuple[str, ...]) -> dict:
    """Top recommendation proved and code named, per mode, over the scored workloads."""
    out: dict = {}
    for m in modes:
        a = [r[m]["advice"] for r in rows if r["scored"] and m in r and "advice" in r[m]]
        top = [x["top_proved"] for x in a if x["top_proved"] is not None]
        top3 = [x["in_top3"] for x in a if x["in_top3"] is not None]
        code = [x["code_named"] for x in a if x["code_named"] is not None]
        out[m] = {
            "top_proved": [sum(top), len(top)],
            "in_top3": [sum(top3), len(top3)],
            "code_named": [sum(code), len(code)],
        }
        print(
            f"{m} advice: top recommendation proved {sum(top)}/{len(top)} (in the top 3: {sum(top3)}/{len(top3)}); "
            f"code named for the data and other stages {sum(code)}/{len(code)}"
        )
    return out


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
        # a rank named on a job whose ranks do the same work: not scored wrong (the label is the
        # resource), but a claim the job's owner would act on, so counted apart
        even = [
            r["name"] for r in scored if m in r and r.get("straggler") is None and r[m].get("straggler") is not None
        ]
        summary[m]["straggler_on_even_job"] = even
        if even:
            print(f"{m}: a straggler named where the ranks do the same work: {', '.join(even)}")
    summary["advice"] = advice_summary(rows, modes)
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
