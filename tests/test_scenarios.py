"""The labelled scenario suite: tests/data/<scenario>/trace.jsonl with its expected verdict.

Recorded traces come from real runs (the provenance says where); constructed ones from
tests/data/construct.py. Every trace goes through the same pipeline as live samples."""

import json
from pathlib import Path

import pytest

from bottleneckd.advice.knowledge import load_knowledge
from bottleneckd.model.resources import RESOURCES

DATA = Path(__file__).resolve().parent / "data"
SCENARIOS = sorted(p.parent.name for p in DATA.glob("*/expected.json"))


def test_the_suite_covers_all_twelve_plus_balanced_idle_and_a_regime_change():
    expected = {json.loads((DATA / s / "expected.json").read_text())["resource"] for s in SCENARIOS}
    assert set(RESOURCES) <= expected, set(RESOURCES) - expected
    assert {"balanced", "idle", "regime_change"} <= set(SCENARIOS)


@pytest.mark.parametrize("name", SCENARIOS)
def test_verdict_matches_the_label(name, scenario_report):
    exp = json.loads((DATA / name / "expected.json").read_text())
    assert exp["provenance"].startswith(("recorded", "constructed"))
    _, doc = scenario_report(name)  # what `analyze` does
    v = doc["verdict"]
    assert v["resource"] == exp["resource"], (name, v)
    if exp["stage"] != "*":
        assert v["stage"] == exp["stage"], (name, v)
    assert v["evidence"], "a verdict comes with numbers"
    if exp.get("regime_change"):
        changes = [c for c in doc["regime_changes"] if c["after"] == exp["regime_change"]["to"]]
        assert changes, doc["regime_changes"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_no_recommendation_contradicts_the_verdict(name, scenario_report):
    _, doc = scenario_report(name)
    v = doc["verdict"]
    recs = doc["recommendations"]
    if v["resource"] == "undetermined":  # advice only to hide a wait no resource explains (latency)
        assert all(r["latency"] and v["stage"] in r["stages"] for r in recs)
        assert not recs or doc["facts"].get("idle_wait_stage") == v["stage"]
        return
    assert recs, "an active bottleneck gets recommendations"
    allowed = {v["resource"]} | {s["resource"] for s in v["secondary"]}
    for r in recs:
        assert r["addresses"] in allowed and r["addresses"] in r["resources"]
    top = recs[0]
    assert top["addresses"] == v["resource"] and v["stage"] in top["stages"]
    facts = doc["facts"]
    if facts.get("autocast_dtype") in ("bfloat16", "float16"):
        assert all(r["id"] != "mixed_precision" for r in recs)
    if facts.get("loader_workers_saturate_cores"):
        assert all(r["id"] != "more_loader_workers" for r in recs)


def test_knowledge_base_covers_every_resource_with_taxonomy_and_citations():
    kb = load_knowledge()
    for r in RESOURCES:
        assert any(r in m.resources for m in kb), r
    assert {m.action for m in kb} == {"remove", "restrict", "reorder", "replace", "retrofit"}
    assert any(m.baseline and m.id == "fewer_epochs" for m in kb)
    assert any(m.cites == ("Choi et al., 2019",) and m.id == "data_echoing" for m in kb)
    for m in kb:
        assert m.section and m.stages and m.effect in ("time_per_iteration", "iterations", "both")
