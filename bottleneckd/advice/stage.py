"""The advice stage: each verdict advised once, on the tick's one fact state; what it publishes
(``Snapshot``: the diagnosis and its advice) is what every output reads. Outputs only format it.

A verdict is advised again only when what the advice depends on changes: its resource, stage and
secondary pressures, the fact state (a new report), or the measured inputs the predictions are
made from (diagnosis/step_inputs.py). The run's dominant verdict is most often the current one,
advised once for both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bottleneckd.advice.knowledge import Mitigation, load_knowledge
from bottleneckd.advice.recommend import Recommendation, elsewhere, not_fitting, recommend, skipped
from bottleneckd.diagnosis.pipeline import Diagnosis
from bottleneckd.diagnosis.step_inputs import StepInputs
from bottleneckd.diagnosis.verdict import RegimeChange, Verdict
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.facts import Facts
from bottleneckd.model.sample import Sample
from bottleneckd.model.throughput import Throughput


@dataclass(frozen=True)
class Advice:
    """What to do about one verdict, on one fact state."""

    recommendations: tuple[Recommendation, ...]
    #: mitigations for the active bottleneck left out, with the reason: already in effect, not
    #: fitting the job (a condition on its facts), or relieving it in another stage than this step's
    in_effect: tuple[tuple[Mitigation, str], ...] = ()
    not_fitting: tuple[tuple[Mitigation, str], ...] = ()
    elsewhere: tuple[tuple[Mitigation, str], ...] = ()


NO_ADVICE = Advice(recommendations=())


@dataclass(frozen=True)
class Snapshot:
    """One tick's diagnosis and its advice: the one current-state type every consumer reads."""

    diagnosis: Diagnosis
    advice: Advice
    #: the advice on the run's dominant verdict (the end report's)
    dominant_advice: Advice = NO_ADVICE

    @property
    def sample(self) -> Sample:
        return self.diagnosis.sample

    @property
    def stats(self) -> WindowStats:
        return self.diagnosis.stats

    @property
    def verdict(self) -> Verdict:
        return self.diagnosis.verdict

    @property
    def recommendations(self) -> tuple[Recommendation, ...]:
        return self.advice.recommendations

    @property
    def changes(self) -> tuple[RegimeChange, ...]:
        return self.diagnosis.changes

    @property
    def facts(self) -> Facts:
        return self.diagnosis.facts

    @property
    def samples(self) -> int:
        return self.diagnosis.samples

    @property
    def held(self) -> tuple[tuple[str, float], ...]:
        return self.diagnosis.held

    @property
    def dominant(self) -> Verdict | None:
        return self.diagnosis.dominant

    @property
    def throughput(self) -> Throughput | None:
        return self.diagnosis.throughput

    @property
    def inputs(self) -> StepInputs | None:
        return self.diagnosis.inputs

    @property
    def dominant_inputs(self) -> StepInputs | None:
        return self.diagnosis.dominant_inputs


def advise(
    verdict: Verdict, kb: tuple[Mitigation, ...], facts: Mapping[str, Any], inputs: StepInputs | None = None
) -> Advice:
    """The ranked recommendations for ``verdict`` (each with its predicted speed-up from ``inputs``),
    and what was left out and why."""
    return Advice(
        recommendations=tuple(recommend(verdict, kb, facts, inputs=inputs)),
        in_effect=tuple(skipped(verdict, kb, facts)),
        not_fitting=tuple(not_fitting(verdict, kb, facts)),
        elsewhere=tuple(elsewhere(verdict, kb, facts)),
    )


class Advisor:
    """Advises each diagnosis (its verdict and the run's dominant one), each verdict once."""

    def __init__(self, kb: tuple[Mitigation, ...] | None = None) -> None:
        self.kb = kb if kb is not None else load_knowledge()
        # the last two verdicts advised: (resource, stage, secondary), facts, inputs, advice
        self._memo: list[tuple[tuple[Any, ...], Facts, StepInputs | None, Advice]] = []
        self.advised = 0  # times the knowledge base was consulted (each verdict once)

    def _advice(self, v: Verdict, facts: Facts, inputs: StepInputs | None) -> Advice:
        key = (v.resource, v.stage, v.secondary)
        for k, f, i, a in self._memo:
            if k == key and f is facts and i == inputs:
                return a
        a = advise(v, self.kb, facts, inputs)
        self.advised += 1
        self._memo = [*self._memo[-1:], (key, facts, inputs, a)]
        return a

    def __call__(self, d: Diagnosis) -> Snapshot:
        dominant = self._advice(d.dominant, d.facts, d.dominant_inputs) if d.dominant else NO_ADVICE
        return Snapshot(diagnosis=d, advice=self._advice(d.verdict, d.facts, d.inputs), dominant_advice=dominant)
