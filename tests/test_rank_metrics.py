"""Per-rank metric families: bounded labels (the rank's identity, the phase), values per step."""

from __future__ import annotations

from prometheus_client.core import CollectorRegistry
from prometheus_client.exposition import generate_latest

from bottleneckd.diagnosis.pipeline import Pipeline
from bottleneckd.outputs.exporter import SnapshotCollector
from bottleneckd.peaks.resolve import PeakTable
from tests.test_straggler import window


def _scrape(snap) -> str:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(SnapshotCollector(lambda: snap))
    return generate_latest(reg).decode()


def test_every_rank_has_its_series_labelled_by_identity_and_the_straggler_its_loss():
    p = Pipeline(PeakTable(()))
    for s in window({0: 0.10, 1: 0.10, 2: 0.10, 3: 0.13}, n=12):
        snap = p(s)
    text = _scrape(snap)
    lab = 'UUID="GPU-3",host="n1",rank="3",restart="0",run="r",train_job="j"'
    assert f"bottleneckd_rank_compute_seconds{{{lab}}}" in text
    line = next(x for x in text.splitlines() if x.startswith(f"bottleneckd_rank_compute_seconds{{{lab}}}"))
    assert 0.12 < float(line.split()[-1]) < 0.14  # forward + backward per step
    assert f"bottleneckd_rank_index{{{lab}}} 3.0" in text
    assert (
        'bottleneckd_rank_phase_seconds{UUID="GPU-3",host="n1",phase="communication",rank="3",restart="0",run="r",'
        'train_job="j"}' in text
    )
    assert 'bottleneckd_straggler_step_time_lost_seconds{UUID="GPU-3",host="n1",kind="rank",rank="3"}' in text
    # the identity, for joins with kube-state-metrics: one info series per rank
    info = [x for x in text.splitlines() if x.startswith("bottleneckd_job_info{") and 'rank="3"' in x]
    assert len(info) == 1 and 'UUID="GPU-3"' in info[0] and 'world_size="4"' in info[0] and info[0].endswith(" 1.0")
    # bounded cardinality: only identity and phase labels on the rank families, never a step
    for x in text.splitlines():
        if x.startswith("bottleneckd_rank_"):
            names = {kv.split("=")[0] for kv in x[x.index("{") + 1 : x.index("}")].split(",")}
            assert names <= {"train_job", "run", "restart", "rank", "host", "UUID", "phase"}, x


def test_no_rank_series_for_a_single_process_job():
    from bottleneckd.model.sample import Sample

    p = Pipeline(PeakTable(()))
    snap = p(Sample(1.0, 1.0, ()))
    assert "bottleneckd_rank_" not in _scrape(snap) and "bottleneckd_straggler" not in _scrape(snap)
