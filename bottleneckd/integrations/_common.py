"""What the framework callbacks share: a watcher that installs no hooks of its own (the callback
marks the step's edges from the framework's events), fail-open calls, the metrics logged at the
framework's own logging cadence, and how each of our mitigations is applied in that framework.

A framework's callback sees: the batch handed to the step (data ready), the loss before backward
(forward end), the optimizer about to step (backward end), the step's end. The watcher turns those
marks into the same phases as in a plain loop: data_wait, forward, backward, optimizer, other.

Each log (Lightning's ``log_every_n_steps``, the Trainer's ``logging_steps``) carries the metrics of
the steps since the previous log: phase shares, step time, samples/s, tokens/s, MFU (the anchors'
throughput: model/throughput.py) and the latest verdict. Keys are ``bottleneck<sep>name`` with the
logger's group separator (``/`` by default).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from bottleneckd.model.resources import UNDETERMINED, Phase
from bottleneckd.model.throughput import Throughput, measure, peak_of_report, tokens_per_example

log = logging.getLogger("bottleneckd.integrations")

#: phase shares logged as metrics (prefix ``bottleneck/``)
LOGGED_PHASES: tuple[str, ...] = (
    Phase.DATA_WAIT,
    Phase.TRANSFER,
    Phase.FORWARD,
    Phase.BACKWARD,
    Phase.OPTIMIZER,
    Phase.COMMUNICATION,
    Phase.OTHER,
)
#: seconds a log reuses the last sidecar report for its verdict and peak: asking an in-process
#: sidecar samples the machine (tens of ms on this VM), too much for every log of a fast loop;
#: every epoch end asks afresh
REPORT_REFRESH_SECONDS = 30.0
#: ... and how soon it asks again while the report has no throughput yet (the sidecar had no step
#: phases when asked, at the start of training: the peak MFU is taken against comes with it) or
#: no verdict yet (undetermined: a CI run's first log, ~1 s into training, got one, and a report
#: kept for 30 s logged it to the end of a 6 s run) ...
REPORT_RETRY_SECONDS = 2.0
#: ... for this many unsettled answers in a row (the first ~10 s: a sidecar's verdict needs a few
#: 1 s samples with steps in them), then doubled at each, up to the refresh, so that a job that
#: stays undetermined is not sampled every 2 s for its whole run
REPORT_RETRIES_BEFORE_BACK_OFF = 5
#: the group every metric of ours is logged under
GROUP = "bottleneck"


class Marks:
    """A watcher driven by framework events; every call is fail-open: the first error of ours
    turns the instrumentation off (logged once) and training goes on."""

    def __init__(self, framework: str, print_epoch: bool, **watch_kwargs: Any) -> None:
        self.framework = framework
        self.print_epoch = print_epoch
        self.watch_kwargs = watch_kwargs
        self.watcher: Any = None
        self.enabled = True
        self.last_report: Any = None
        self._logged: Any = None  # the watcher's totals at the last log
        self._logged_tokens = (0, 0)
        self._doc: dict[str, Any] | None = None  # the last sidecar report, and when to ask again
        self._doc_next = float("-inf")
        self._unsettled = 0  # unsettled reports in a row

    def start(self, model: Any, optimizer: Any = None) -> None:
        def make() -> None:
            from bottleneckd.torch.watch import Watcher

            self.watcher = Watcher(model, optimizer, None, hooks=False, print_epoch=False, **self.watch_kwargs)
            self.watcher.facts["framework"] = self.framework

        self.call(make)

    def precision(self, dtype: str | None) -> None:
        """The framework's mixed-precision setting (its autocast is entered where our marks do not
        see it): the dtype judged against, until the counted step measures the one run."""

        def declare() -> None:
            self.watcher.precision.declare(dtype)
            self.watcher.facts.update(self.watcher.precision.facts())

        if self.watcher is not None:
            self.call(declare)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        if not self.enabled:
            return None
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - our failure never breaks the user's training
            self.enabled = False
            log.warning(
                "bottleneckd %s callback disabled after an internal error (%s: %s); training is unaffected",
                self.framework,
                type(e).__name__,
                e,
            )
            return None

    def mark(self, label: str) -> None:
        if self.watcher is not None:
            self.call(self.watcher.mark, label)

    def forward_start(self, first: Any) -> None:
        """The step's forward starts on a batch whose first tensor is ``first`` (its rows are the
        step's examples; token ids also count tokens); None: not known."""
        if self.watcher is not None and self.watcher.enabled:
            self.call(self.watcher.forward_start, () if first is None else (first,))

    def end_step(self) -> None:
        if self.watcher is not None:
            self.call(self.watcher.end_step)

    def gap(self) -> None:
        """Time since the last step (evaluation, a checkpoint) is not the next step's data wait."""
        if self.watcher is not None:
            self.call(self.watcher.skip_gap)

    def epoch_end(self) -> Any:
        """The epoch's report (``EpochReport``), or None when ours failed."""
        if self.watcher is None:
            return None
        rep = self.call(self.watcher.epoch_end)
        self.last_report = rep
        if rep is not None and rep.report is not None:
            self._keep(rep.report)
        return rep

    def log_metrics(self) -> dict[str, float]:
        """The metrics of the steps ended since the last call (unprefixed names; {} when none
        ended, or ours is off)."""
        if self.watcher is None or not self.watcher.enabled:
            return {}
        return self.call(self._log_metrics) or {}

    def _log_metrics(self) -> dict[str, float]:
        from bottleneckd.torch.phases import minus

        w = self.watcher
        now, tok = w.totals_so_far(), w.token_counts()
        since = minus(now, self._logged)
        tpe = tokens_per_example(tok, self._logged_tokens)
        self._logged, self._logged_tokens = now, tok
        if since.steps <= 0:
            return {}
        doc = self._report()
        rate = measure(
            steps=since.steps,
            wall_seconds=since.wall_seconds,
            examples=since.examples,
            facts=w.throughput_facts(tpe),
            peak=peak_of_report(doc),
        )
        return step_metrics(since.phases, rate, doc)

    def _report(self) -> dict[str, Any] | None:
        if time.monotonic() >= self._doc_next:
            self._doc_next = time.monotonic() + retry_wait(self._unsettled)  # answered or not
            self.watcher.flush()  # the steps so far reach the sidecar before it reports
            doc = self.watcher.transport.report()
            if doc is not None:
                self._keep(doc)
        return self._doc

    def _keep(self, doc: dict[str, Any]) -> None:
        self._doc = doc
        self._unsettled = 0 if settled(doc) else self._unsettled + 1
        wait = retry_wait(self._unsettled) if self._unsettled else REPORT_REFRESH_SECONDS
        self._doc_next = time.monotonic() + wait

    def close(self) -> None:
        if self.watcher is not None:
            w, self.watcher = self.watcher, None
            try:
                w.close()
            except Exception:  # noqa: BLE001
                pass


def settled(doc: dict[str, Any]) -> bool:
    """A report worth keeping for a while: it has the steps' throughput and a verdict."""
    resource = (doc.get("verdict") or {}).get("resource")
    return bool((doc.get("throughput") or {}).get("steps")) and resource not in (None, UNDETERMINED.value)


def retry_wait(unsettled: int) -> float:
    """Seconds until the next ask after ``unsettled`` unsettled reports in a row."""
    doublings = max(0, unsettled - REPORT_RETRIES_BEFORE_BACK_OFF)
    return min(REPORT_RETRY_SECONDS * 2.0 ** min(doublings, 16), REPORT_REFRESH_SECONDS)


def step_metrics(phases: dict[str, float], rate: Throughput, doc: dict[str, Any] | None) -> dict[str, float]:
    """Numbers for a framework's loggers (names without the group): phase shares, step time,
    steps, samples/s, tokens/s and MFU where known (unknown is left out, never logged as 0), and
    the verdict as a one-hot with its confidence and headroom (strings cannot be logged as
    metrics; the resource's name is in the key)."""
    out: dict[str, float] = {}
    total = sum(phases.values())
    if total > 0:
        for k in LOGGED_PHASES:
            out[f"share_{k}"] = phases.get(k, 0.0) / total
    out["steps"] = float(rate.steps)
    known = {
        "step_seconds": rate.step_seconds,
        "samples_per_second": rate.samples_per_second,
        "tokens_per_second": rate.tokens_per_second,
        "model_flops_per_second": rate.model_flops_per_second,
        "mfu": rate.mfu,
    }
    out.update({k: float(v) for k, v in known.items() if v is not None})
    v = (doc or {}).get("verdict") or {}
    if v.get("resource"):
        out[f"active_{v['resource']}"] = 1.0
        if v.get("confidence") is not None:
            out["confidence"] = float(v["confidence"])
        if v.get("headroom") is not None:
            out["headroom"] = float(v["headroom"])
    return out


def grouped(metrics: dict[str, float], separator: str = "/") -> dict[str, float]:
    """``{"bottleneck/share_data_wait": ...}`` with the logger's group separator."""
    return {f"{GROUP}{separator}{k}": v for k, v in metrics.items()}


def first_tensor(batch: Any) -> Any:
    """The tensor a batch's examples are counted from: the batch itself, the first item of a
    tuple or list, or a dict's ``input_ids`` (else its first tensor value); None when none."""
    for _ in range(4):  # nested at most this deep
        if hasattr(batch, "shape") and hasattr(batch, "dim"):
            return batch
        if isinstance(batch, dict):
            if "input_ids" in batch:
                batch = batch["input_ids"]
                continue
            batch = next((v for v in batch.values() if hasattr(v, "shape") and hasattr(v, "dim")), None)
        elif isinstance(batch, (tuple, list)) and batch:
            batch = batch[0]
        else:
            return None
    return batch if hasattr(batch, "shape") else None


def advice_lines(rep: Any, how: dict[str, str], framework: str) -> list[str]:
    """For each recommendation we can name a setting for: where it is set in this framework; the
    others said plainly."""
    lines: list[str] = []
    for r in ((rep.report or {}).get("recommendations") or [])[:3] if rep is not None else []:
        hook = r.get("hook")
        if hook and hook in how:
            lines.append(f"  in {framework}: {r['name']}: {how[hook]}")
        elif hook:
            lines.append(
                f"  in {framework}: {r['name']}: no {framework} setting applies it; "
                f"use bottleneckd.torch.watch(...).apply({hook!r}) in a plain loop"
            )
    return lines


def epoch_text(rep: Any, how: dict[str, str], framework: str) -> str:
    return "\n".join([rep.text, *advice_lines(rep, how, framework)]) if rep is not None else ""
