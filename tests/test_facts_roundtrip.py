"""Set and unset through the real hook, the real socket and the real pipeline: a mitigation
applied is in effect (not advised again); reverted, it is gone at the next report and advised
again (issue 10 item 1: autocast_dtype used to stay forever)."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from bottleneckd.advice.knowledge import load_knowledge  # noqa: E402
from bottleneckd.advice.recommend import recommend  # noqa: E402
from bottleneckd.channel.link import PhaseReceiver  # noqa: E402
from bottleneckd.diagnosis.pipeline import Pipeline  # noqa: E402
from bottleneckd.diagnosis.verdict import Verdict  # noqa: E402
from bottleneckd.model.sample import Sample  # noqa: E402
from bottleneckd.peaks.resolve import PeakTable  # noqa: E402
from bottleneckd.torch import watch  # noqa: E402


def steps(w, model, opt, n: int) -> None:
    for _ in range(n):
        x = torch.randn(2, 3, 8, 8)
        w.mark("step_start")
        w.mark("data_ready")
        opt.zero_grad()
        model(x).float().sum().backward()
        opt.step()
    w.flush()


def report_facts(rx: PhaseReceiver, pipeline: Pipeline):
    end = time.monotonic() + 5
    while time.monotonic() < end:
        job, ranks = rx.drain_ranks()
        if job is not None:
            return pipeline(Sample(time.time(), 1.0, (), job, ranks=ranks)).facts
        time.sleep(0.02)
    raise AssertionError("no report arrived")


def test_apply_then_revert_reaches_the_recommendations(tmp_path) -> None:
    rx = PhaseReceiver(str(tmp_path / "s" / "b.sock")).start()
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.Linear(144, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = watch(model, opt, None, socket_path=rx.path, report_every=1e9, print_epoch=False, roofline_step=None)
    pipeline, kb = Pipeline(PeakTable(())), load_knowledge()
    v = Verdict(resource="gpu_compute", stage="compute", confidence=0.9, evidence=())
    try:
        steps(w, model, opt, 4)
        facts = report_facts(rx, pipeline)
        assert facts.get("input_rank") == 4 and facts.get("has_conv") is True and "autocast_dtype" not in facts
        assert "mixed_precision" in [r.mitigation.id for r in recommend(v, kb, facts, limit=50)]

        w.apply("mixed_precision", dtype="bfloat16")
        steps(w, model, opt, 3)
        facts = report_facts(rx, pipeline)
        assert facts.get("autocast_dtype") == "bfloat16" and facts.get("mitigations") == ("mixed_precision",)
        assert "mixed_precision" not in [r.mitigation.id for r in recommend(v, kb, facts, limit=50)]

        w.revert("mixed_precision")
        steps(w, model, opt, 3)
        facts = report_facts(rx, pipeline)
        assert "autocast_dtype" not in facts and "mitigations" not in facts
        assert "mixed_precision" in [r.mitigation.id for r in recommend(v, kb, facts, limit=50)]
        kinds = [(e.kind, e.name) for e in rx.events_since(0)[0]]
        assert kinds == [("mitigation_applied", "mixed_precision"), ("mitigation_reverted", "mixed_precision")]
    finally:
        w.close()
        rx.close()
