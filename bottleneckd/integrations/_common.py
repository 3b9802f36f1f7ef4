"""What the framework callbacks share: a watcher that installs no hooks of its own (the callback
marks the step's edges from the framework's events), fail-open calls, the metrics logged at an
epoch's end, and how each of our mitigations is applied in that framework.

A framework's callback sees: the batch handed to the step (data ready), the loss before backward
(forward end), the optimizer about to step (backward end), the step's end. The watcher turns those
marks into the same phases as in a plain loop: data_wait, forward, backward, optimizer, other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("bottleneckd.integrations")

#: phase shares logged as metrics (prefix ``bottleneck/``)
LOGGED_PHASES = ("data_wait", "transfer", "forward", "backward", "optimizer", "communication", "other")


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
        return rep

    def close(self) -> None:
        if self.watcher is not None:
            w, self.watcher = self.watcher, None
            try:
                w.close()
            except Exception:  # noqa: BLE001
                pass


def epoch_metrics(rep: Any) -> dict[str, float]:
    """Numbers for a framework's loggers: phase shares, the verdict as a one-hot, its confidence
    and headroom (strings cannot be logged as metrics; the resource's name is in the key)."""
    out: dict[str, float] = {}
    if rep is None:
        return out
    total = sum(rep.phases.values())
    if total > 0:
        for k in LOGGED_PHASES:
            out[f"bottleneck/share_{k}"] = rep.phases.get(k, 0.0) / total
    out["bottleneck/steps"] = float(rep.steps)
    v = (rep.report or {}).get("verdict") or {}
    if v.get("resource"):
        out[f"bottleneck/active_{v['resource']}"] = 1.0
        if v.get("confidence") is not None:  # unknown is not logged as 0
            out["bottleneck/confidence"] = float(v["confidence"])
        if v.get("headroom") is not None:
            out["bottleneck/headroom"] = float(v["headroom"])
    return out


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
                f"  in {framework}: {r['name']}: no {framework} setting applies it; use bottleneckd.torch.watch(...).apply({hook!r}) in a plain loop"
            )
    return lines


def epoch_text(rep: Any, how: dict[str, str], framework: str) -> str:
    return "\n".join([rep.text, *advice_lines(rep, how, framework)]) if rep is not None else ""
