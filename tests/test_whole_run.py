"""The run's verdict where the whole run's step goes between the phases though the regime held
longest reads another stage (diagnosis/whole_run.py): a recorded attach trace whose label an
intervention proved, and the cases where the regime held longest stands."""

from __future__ import annotations

import json
from pathlib import Path

from bottleneckd.diagnosis.held import HeldAccounts
from bottleneckd.diagnosis.pipeline import Pipeline
from bottleneckd.diagnosis.thresholds import OTHER_LARGEST
from bottleneckd.diagnosis.verdict import Verdict
from bottleneckd.diagnosis.whole_run import WHOLE_RUN, between_the_phases
from bottleneckd.model.facts import Facts
from bottleneckd.model.resources import Resource, Stage
from tests.conftest import run_cli
from tests.windows import NO_PEAKS, job, sample

DATA = Path(__file__).resolve().parent / "data" / "metric_every_step_attach"


def test_a_metric_every_step_under_attach_is_the_other_stage_over_the_whole_run(cli_env) -> None:
    """The windows between the metric's read the serial loader beside it (cpu_compute/data held
    longest); the whole run's stack samples are 53% between the phases, the largest stage: the
    metric, as its intervention proved (every 50 steps: x2.30)."""
    exp = json.loads((DATA / "expected.json").read_text())
    r = run_cli(["analyze", "--format", "json", str(DATA / "trace.jsonl")], cli_env)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    v = doc["verdict"]
    assert (v["resource"], v["stage"]) == (exp["resource"], exp["stage"])
    assert v["evidence"][0].startswith(WHOLE_RUN) and "cpu_compute/data" in v["evidence"][0]
    assert v["held"]["whole_run"] is True
    assert doc["recommendations"][0]["id"] == "per_step_python_work"


def _accounts(other: float, n: int = 10) -> HeldAccounts:
    """A CPU job's training samples: its main thread at a full core, ``other`` of each step between
    the phases and the rest waiting for its serial loader."""
    a = HeldAccounts()
    figures = job(busy=1.0, main=1.0, hottest=1.0)
    for t in range(n):
        a.add(("cpu_compute", "data"), sample(figures, {"data_wait": 1.0 - other, "other": other}, t=float(t)))
    return a


LOADER = Verdict(resource=Resource.CPU_COMPUTE, stage=Stage.DATA, confidence=0.9, evidence=())


def test_the_whole_run_s_other_stage_is_the_run_s_verdict_from_its_threshold() -> None:
    whole = _accounts(0.6).whole(Facts(), 0)
    v = between_the_phases(LOADER, whole, NO_PEAKS)
    assert v is not None and (v.resource, v.stage) == (Resource.CPU_COMPUTE, Stage.OTHER)
    assert v.evidence[0].startswith(WHOLE_RUN)


def test_below_the_threshold_or_for_a_straggler_the_regime_held_longest_stands() -> None:
    assert between_the_phases(LOADER, _accounts(OTHER_LARGEST - 0.05).whole(Facts(), 0), NO_PEAKS) is None
    straggler = Verdict(
        resource=Resource.CPU_COMPUTE, stage=Stage.DATA, confidence=0.9, evidence=(), straggler={"rank": 1}
    )
    assert between_the_phases(straggler, _accounts(0.6).whole(Facts(), 0), NO_PEAKS) is None
    other = Verdict(resource=Resource.CPU_COMPUTE, stage=Stage.OTHER, confidence=0.9, evidence=())
    assert between_the_phases(other, _accounts(0.6).whole(Facts(), 0), NO_PEAKS) is None


def test_a_regime_in_the_other_stage_speaks_where_the_whole_run_names_no_resource() -> None:
    """The whole run averages the other stage's work with the training's (no rule names its resource
    over both), but the other stage is its largest: the regime that held in the other stage is the
    run's. Not where another stage is as large."""
    a = HeldAccounts()
    idle = job(busy=0.1, main=0.1, hottest=0.1)  # nothing busy: no rule names the other stage's resource
    for t in range(10):
        a.add(("gpu_compute", "compute"), sample(idle, {"forward": 0.45, "other": 0.55}, t=float(t)))
    held = Verdict(resource=Resource.GPU_COMPUTE, stage=Stage.OTHER, confidence=0.9, evidence=())
    compute = Verdict(resource=Resource.GPU_COMPUTE, stage=Stage.COMPUTE, confidence=0.9, evidence=())
    whole = a.whole(Facts(), 0)
    v = between_the_phases(compute, whole, NO_PEAKS, [(held, 7.0)])
    assert v is not None and (v.resource, v.stage) == (Resource.GPU_COMPUTE, Stage.OTHER)
    assert "(7 s)" in v.evidence[0]
    alone = between_the_phases(compute, whole, NO_PEAKS, [])  # no window named it: honest, not the compute's
    assert alone is not None and (alone.resource, alone.stage) == ("undetermined", Stage.OTHER)
    even = HeldAccounts()
    for t in range(10):
        even.add(("gpu_compute", "compute"), sample(idle, {"forward": 0.55, "other": 0.45}, t=float(t)))
    # the compute stage as large: no regime of the other's, and the rules name nothing in it either
    assert between_the_phases(compute, even.whole(Facts(), 0), NO_PEAKS, [(held, 7.0)]) is None
    short = between_the_phases(compute, whole, NO_PEAKS, [(held, 2.0)], min_seconds=2.7)  # held too briefly
    assert short is not None and short.resource == "undetermined"


def test_a_short_checkpoint_regime_does_not_override_what_the_whole_run_names() -> None:
    """Through the pipeline: 193 s of windows read a serial loader at a full core (data 37%, per-step
    work between the phases 38%), one 8 s checkpoint reads storage/other for 7 s. The whole run's
    rules name the data stage (its finding beats the other stage's): the regime held longest stands,
    not the checkpoint's 7 s (a review's probe: it read storage_bandwidth/other)."""
    p = Pipeline(NO_PEAKS)
    base = job(busy=1.0, main=1.0, hottest=1.0)
    for t in range(200):
        ckpt = 100 <= t < 108
        fig = dict(base, **{"storage_bandwidth/job/write_bytes_per_second": 4e8 if ckpt else 0.0})
        shares = (
            {"data_wait": 0.1, "forward": 0.1, "other": 0.8}
            if ckpt
            else {"data_wait": 0.37, "forward": 0.25, "other": 0.38}
        )
        d = p(sample(fig, shares, t=float(t)))
    assert d.dominant is not None and (d.dominant.resource, d.dominant.stage) == (Resource.CPU_COMPUTE, Stage.DATA)
    assert not d.dominant.evidence[0].startswith(WHOLE_RUN)
    s = p.summary(d.dominant)
    assert s is not None and not s.whole_run
