"""Throughput as the anchors report it (Lightning's ThroughputMonitor, the Hugging Face Trainer):
samples per second, tokens per second where the batch has a sequence dimension, and MFU, the
model FLOPs utilisation (PaLM, Chowdhery et al. 2022, appendix B: achieved model FLOP/s over the
peak), from the FLOPs the hook counted on one step and the peak of the job's own arithmetic path.

One formula for every consumer: the hook's epoch block and the callbacks' logs (one rank's steps),
the report and the exporter (the window or the run, ranks summed). Figures that cannot be
measured are ``None`` with the reason, never 0: an MFU on a CPU whose peak is unknown is unknown.

- samples/s: the examples the hook counted (rows of the model's first input) over the steps' wall.
- tokens/s: samples/s times ``tokens_per_example``, the sequence length of integer (token id)
  inputs of shape batch x sequence, counted by the hook; absent for other inputs.
- MFU: ``flops_per_step`` (``torch.utils.flop_counter`` over forward, backward and the optimizer
  step of one rank's step) times steps per second of one rank, over one device's peak on the
  job's path (``peaks/select.py``: bf16 tensor, tf32, fp32 ...). The step's wall time is the
  denominator, as in ThroughputMonitor: data waits and communication lower the MFU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bottleneckd.model.units import fmt_value

#: why the samples are unknown when the hook counted none
NO_EXAMPLES = "no examples counted (the model's first input is not a batch tensor)"
#: why nothing is rated under attach: its phases are counted from stack samples, whose wall time
#: is the samples times the sampling period, not a step's
ATTACH_NO_STEPS = "no step timed: attach counts stack samples, not steps (the torch hook times them)"
#: why tokens/s is unknown without token-id inputs
NO_TOKENS = "the model's input is not a batch x sequence tensor of token ids"


@dataclass(frozen=True, kw_only=True)
class Peak:
    """The compute peak MFU is taken against: its value (None: unknown), the path and why."""

    value: float | None
    path: str
    why: str


@dataclass(frozen=True, kw_only=True)
class Throughput:
    steps: int
    step_seconds: float | None  # mean wall-clock seconds of one rank's step
    samples_per_second: float | None  # the job's (all ranks)
    samples_unknown: str = ""
    tokens_per_second: float | None = None
    tokens_unknown: str = ""
    model_flops_per_second: float | None = None  # one device's model FLOP/s
    mfu: float | None = None
    mfu_unknown: str = ""
    peak_flops: float | None = None  # the peak MFU is against (one device)
    peak_path: str = ""
    peak_why: str = ""  # how the path's peak was chosen, or why it is unknown

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "step_seconds": self.step_seconds,
            "samples_per_second": self.samples_per_second,
            **({"samples_unknown": self.samples_unknown} if self.samples_per_second is None else {}),
            "tokens_per_second": self.tokens_per_second,
            **({"tokens_unknown": self.tokens_unknown} if self.tokens_per_second is None else {}),
            "model_flops_per_second": self.model_flops_per_second,
            "mfu": self.mfu,
            **({"mfu_unknown": self.mfu_unknown} if self.mfu is None else {}),
            "peak_flops": self.peak_flops,
            "peak_path": self.peak_path,
            "peak_why": self.peak_why,
        }

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Throughput:
        """From ``to_json`` (a report's ``throughput``; keys it does not know are ignored)."""

        def num(k: str) -> float | None:
            v = d.get(k)
            return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

        return Throughput(
            steps=int(d.get("steps") or 0),
            step_seconds=num("step_seconds"),
            samples_per_second=num("samples_per_second"),
            samples_unknown=str(d.get("samples_unknown") or ""),
            tokens_per_second=num("tokens_per_second"),
            tokens_unknown=str(d.get("tokens_unknown") or ""),
            model_flops_per_second=num("model_flops_per_second"),
            mfu=num("mfu"),
            mfu_unknown=str(d.get("mfu_unknown") or ""),
            peak_flops=num("peak_flops"),
            peak_path=str(d.get("peak_path") or ""),
            peak_why=str(d.get("peak_why") or ""),
        )

    def text(self) -> str:
        """One line: 'throughput: 812 samples/s, 104k tokens/s; MFU 41% of the bf16 tensor peak (989 TFLOP/s)'."""
        parts = [
            f"{_rate(self.samples_per_second)} samples/s"
            if self.samples_per_second is not None
            else f"samples/s unknown ({self.samples_unknown})"
        ]
        if self.tokens_per_second is not None:
            parts.append(f"{_rate(self.tokens_per_second)} tokens/s")
        mfu = (
            f"MFU {self.mfu:.1%} of the {self.peak_path} peak ({fmt_value(self.peak_flops, 'FLOP/s')})"
            if self.mfu is not None
            else f"MFU unknown ({self.mfu_unknown})"
        )
        if self.mfu is not None and self.mfu > 1:  # no job beats its peak: the figure is too low
            mfu += "; above 100%: the peak is below what this job reached, recalibrate ('bottleneckd calibrate')"
        return f"throughput: {', '.join(parts)}; {mfu}"


def _rate(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def measure(
    *,
    steps: int,
    wall_seconds: float,
    examples: int | None,
    facts: Mapping[str, Any],
    peak: Peak | None,
    ranks: int = 1,
) -> Throughput:
    """Throughput of ``steps`` steps whose wall times add up to ``wall_seconds`` over ``ranks``
    ranks (steps and wall summed over ranks, as the sidecar merges them; one rank's own figures
    with ``ranks=1``). ``facts``: the hook's (``flops_per_step``, ``flops_unknown``,
    ``tokens_per_example``); ``peak``: one device's peak on the job's path (None: not looked up)."""
    sampled = facts.get("phase_source") == "py-spy"  # attach: steps count stack samples, not steps
    if steps <= 0 or wall_seconds <= 0 or sampled:  # nothing to rate; the peak is still said
        why = ATTACH_NO_STEPS if sampled else "no training step timed"
        return Throughput(
            steps=0,
            step_seconds=None,
            samples_per_second=None,
            samples_unknown=why,
            tokens_unknown=why,
            mfu_unknown=why,
            peak_flops=peak.value if peak is not None else None,
            peak_path=peak.path if peak is not None else "",
            peak_why=peak.why if peak is not None else "",
        )
    step_s = wall_seconds / steps
    ranks = max(1, ranks)
    # the job's examples per second: each rank's rate (its examples over its own wall) summed
    samples = examples * ranks / wall_seconds if examples else None
    tpe = facts.get("tokens_per_example")
    tokens = samples * float(tpe) if samples is not None and tpe else None
    flops = facts.get("flops_per_step")
    model_flops = float(flops) / step_s if flops else None
    mfu, why = None, ""
    if model_flops is None:
        why = str(facts.get("flops_unknown") or "the hook counted no step's FLOPs")
    elif peak is None:
        why = "no compute peak looked up"
    elif peak.value is None or peak.value <= 0:
        why = peak.why
    else:
        mfu = model_flops / peak.value
    return Throughput(
        steps=steps,
        step_seconds=step_s,
        samples_per_second=samples,
        samples_unknown="" if samples is not None else NO_EXAMPLES,
        tokens_per_second=tokens,
        tokens_unknown="" if tokens is not None else (NO_TOKENS if samples is not None else NO_EXAMPLES),
        model_flops_per_second=model_flops,
        mfu=mfu,
        mfu_unknown=why,
        peak_flops=peak.value if peak is not None else None,
        peak_path=peak.path if peak is not None else "",
        peak_why=peak.why if peak is not None else "",
    )


def tokens_per_example(now: tuple[int, int], then: tuple[int, int]) -> float | None:
    """Token ids per example between two (tokens, rows) counts of the hook; None when no token
    ids were seen between them."""
    rows = now[1] - then[1]
    return (now[0] - then[0]) / rows if rows > 0 else None


def peak_of_report(doc: Mapping[str, Any] | None) -> Peak | None:
    """The peak a sidecar's report used for MFU (its ``throughput`` section), for the hook's own
    figures; None when the report has none."""
    t = (doc or {}).get("throughput") or {}
    if "peak_flops" not in t:
        return None
    return Peak(value=t.get("peak_flops"), path=str(t.get("peak_path") or ""), why=str(t.get("peak_why") or ""))
