"""``bottleneckd run --tune``: the hook applies the mitigations the sidecar recommends, one at a
time, inside the running job, each verified by the interleaved A/B of ``apply(verify=True)``
(``trials.py``: blocks with and without it, a one-sided Welch test), keeps those that win
significantly and reverts the rest; it ends with what to change in the code and the measured gain
of each beside the predicted one (``advice/tune.py``, ``advice/code_change.py``).

Driven by the sidecar: when no trial runs, the tuner reads the sidecar's latest report (at most
every PLAN_POLL_SECONDS, at a flush: never per step) and takes the first recommendation with a hook
it has not tried. Semantics-changing ones are refused unless ``allow_semantics`` (the
``--allow-semantics-change`` flag); so are those the ranks of a multi-rank job would have to switch
at the same step (a comm hook or no_sync on one rank alone would hang the all-reduce).

In a multi-rank job (torch.distributed initialised by the first control tick, at step
FIRST_TICK_STEP) rank 0's tuner plans and decides, and every rank starts each trial, turns its
blocks and settles it at the same step count (``tune_ranks.py``): a DataLoader setting on one rank
alone would gain nothing while the others wait at the all-reduce. The other ranks measure nothing
of their own and report nothing; rank 0's report is the job's.

Never slower than it started: a mitigation stays only when its blocks were significantly faster
(``min_gain``, ``alpha``); a trial the job ends in the middle of is reverted and reported as
unfinished (too short to measure); with steps so slow that one trial would take longer than
MAX_TRIAL_SECONDS it stops trying and says so.
"""

from __future__ import annotations

import atexit
import inspect
import math
import os
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bottleneckd.advice.predict import LATENCY_WORKERS_FACTOR
from bottleneckd.advice.tune import RESULT, STOPPED, SUMMARY, TuneOutcome, change_line, changes, summary_note
from bottleneckd.model.hooks import HOOKS
from bottleneckd.model.protocol import Event
from bottleneckd.torch.mitigations.dataloader_settings import in_flight
from bottleneckd.torch.trials import Trial, settle_steps
from bottleneckd.torch.tune_ranks import FIRST_TICK_STEP, RankLink, Tick, link_of_job, tick_steps

if TYPE_CHECKING:
    from bottleneckd.torch.watch import Watcher

#: a block of a trial lasts at least this long: on a 2-core machine at a load of 6-20 the step time
#: of a steady job varies by 20-40% from second to second (tests/test_tune.py's jobs), and 3 blocks
#: a side of a second or more kept a 2x loader gain significant there (p < 0.01)
BLOCK_SECONDS = float(os.environ.get("BOTTLENECKD_TUNE_BLOCK_SECONDS", "1.5"))
#: steps skipped after each turn: a DataLoader switch forks its workers and fills their prefetch
#: queue (0.1-0.4 s for 2-4 workers measured here at load 6), so half a second at least
WARMUP_SECONDS = 0.5
MIN_BLOCK_STEPS, MAX_BLOCK_STEPS = 4, 256
BLOCKS = 3  # a side: apply(verify=True)'s default
MIN_GAIN, ALPHA = 0.02, 0.05  # apply(verify=True)'s defaults (README)
#: timed steps before the first plan: the sidecar's window needs them to name a bottleneck
SETTLE_STEPS = 8
PLAN_POLL_SECONDS = 2.0
#: one trial may take at most this long (2 x BLOCKS blocks and their warm-ups); slower steps: stop
MAX_TRIAL_SECONDS = float(os.environ.get("BOTTLENECKD_TUNE_MAX_TRIAL_SECONDS", "300"))
#: a loader that won with more workers is tried again with twice as many, this often
MAX_ESCALATIONS = 2
#: after a trial is decided the next one waits until the sidecar's window holds only steps run with
#: what was kept: the window's span (the report's period, WINDOW_SAMPLES ticks: 5 s at 1 Hz) plus
#: this. Planned at once, the 2 -> 4 worker trial was predicted from a window of the 0/2-worker A/B
#: blocks and its loader_workers fact of 0: x5.00 predicted, x1.90 measured (README, 2026-12-01)
FRESH_WINDOW_SLACK_SECONDS = 1.0
#: the window's span when the report does not say it (the sidecar's default: 5 samples at 1 Hz)
DEFAULT_WINDOW_SECONDS = 5.0
#: hooks the ranks of a multi-rank job must switch together (one rank alone would hang a collective)
COLLECTIVE_HOOKS = frozenset({"ddp_comm_hook", "less_frequent_sync", "gradient_accumulation"})


@dataclass(frozen=True)
class Candidate:
    hook: str
    recommendation: str
    params: dict[str, Any]
    changes_semantics: bool


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def loader_params(rec: str, loader: Any, device: str) -> dict[str, Any] | str:
    """The DataLoader settings to try for a recommendation, or why none fit."""
    if loader is None or not hasattr(loader, "num_workers"):
        return "no torch DataLoader is being iterated"
    cur = int(loader.num_workers)
    if rec == "pinned_memory":
        return {"pin_memory": True} if device == "cuda" else "pinned memory pays off only with copies to a GPU"
    if rec == "hide_loader_latency":
        n = max(2, cur * LATENCY_WORKERS_FACTOR)
    else:  # more_loader_workers: one more worker per idle core, a core left for the training loop
        n = max(cur + 1, cores() - 1)
    return {"num_workers": n, "persistent_workers": True, "prefetch_factor": 4}


class Tuner:
    def __init__(self, w: Watcher, allow_semantics: bool = False) -> None:
        self._w = w
        self.allow_semantics = allow_semantics
        self.outcomes: list[TuneOutcome] = []
        self.current: tuple[Candidate, Trial] | None = None
        self.tried: set[tuple[str, str]] = set()
        self.escalations = 0
        self.stopped: str | None = None
        self.finished = False
        self._next_poll = 0.0
        self._started_steps = 0
        self._shown = 0  # outcomes already in an epoch block
        self._settled = 0  # the watcher's step count when the last trial was decided
        #: monotonic time the last trial was decided (before the first: the steps' start)
        self._decided_at: float | None = None
        self._escalation: Candidate | None = None  # the next trial of a kept loader setting, when fresh
        #: mean step time before the first trial, and over the last steps at the end (ms)
        self.before_ms: float | None = None
        self.after_ms: float | None = None
        #: "pending" until the first control tick; then "single" (one rank: polled at flushes),
        #: "leader" or "follower" (a multi-rank job: driven by the ticks, tune_ranks.py)
        self.role = "pending"
        self._link: RankLink | None = None
        self._tick = 0  # the number of the next control tick
        self._published: Tick | None = None  # rank 0: what it wrote for the next tick
        self._seq = 0  # trials started, the same count on every rank
        w._cadence.tick_at(FIRST_TICK_STEP)
        atexit.register(self.finish)

    # --- driven at each flush of the watcher ---------------------------------------------------
    def poll(self) -> None:
        """Called at each flush of a job of one rank; a failure of ours reverts the trial in
        progress and stops tuning."""
        if self.finished or self.stopped is not None or self.role != "single":
            return
        try:
            self._poll()
        except Exception as e:  # noqa: BLE001 - never into training, never a mitigation left unproved
            self._failed(e)

    def _failed(self, e: Exception) -> None:
        self._revert_current()
        self._stop(f"internal error ({type(e).__name__}: {e}); what was in trial is reverted")

    def _revert_current(self) -> None:
        if self.current is not None:
            self._w._engine.revert_later(self.current[1].mitigation)
            self.current[1].kept = False
            if self._w.trials.current is self.current[1]:
                self._w.trials.current = None
            self.current = None

    # --- driven at each control tick (a step count: Cadence.tick_at) -----------------------------
    def tick(self, steps: int) -> None:
        """A control tick: the first says whether this is a multi-rank job; in one, rank 0 plans
        and every rank does at the same step what rank 0 wrote a tick earlier (tune_ranks.py)."""
        cad = self._w._cadence
        if self.finished or self.role in ("single", "done"):
            cad.tick_at(math.inf)
            return
        try:
            self._w.drain()  # the steps so far in the history (and the trial's blocks)
            if self.role == "pending":
                self._steps_began()
            if self.role == "pending" and not self._role():
                cad.tick_at(math.inf)
                self.poll()
                return
            nxt = self._lead(steps) if self.role == "leader" else self._follow()
            self._tick += 1
            cad.tick_at(math.inf if nxt is None else nxt)
        except Exception as e:  # noqa: BLE001 - never into training, never a mitigation left unproved
            cad.tick_at(math.inf)
            leader = self.role == "leader"
            self.role = "done"
            self._failed(e)
            if leader and self._link is not None:  # the other ranks stop at their next tick, not after a wait
                try:
                    self._link.publish(self._tick + 1, Tick(({"stop": self.stopped},), 0))
                except Exception:  # noqa: BLE001, S110 - they stop after their wait instead
                    pass

    def _steps_began(self) -> None:
        """The first trial waits, as one after a trial decided, for a window of nothing but steps:
        planned 1 s into the steps of the DDP latency-bound loader (scripts/jobs/ddp_latency_loader.py),
        its first trial was predicted x1.58 from a window holding the ranks' start-up, the training
        thread at 0.65 of a core (imports, process group); it measured x2.40, and the thread runs at
        0.06 of a core in its steps (/proc/PID/task/TID/stat)."""
        self._decided_at = time.monotonic() - sum(s for s, _ in self._w.trials.history)

    def _role(self) -> bool:
        """At the first tick: whether this is a multi-rank job whose tuners go in step (True)."""
        link = link_of_job()
        if link is None:
            self.role = "single"
            return False
        if isinstance(link, str):
            self.role = "done"
            self._stop(link)
            return False
        self._link, self.role = link, "leader" if link.leader else "follower"
        if link.leader:
            self._say(f"tune: rank 0 of {link.world} plans and measures the trials; all switch at the same step")
        return True

    def _lead(self, steps: int) -> int | None:
        """Rank 0's tick: do what it wrote for this tick, then write the next tick's commands and
        the step of the tick after. None: no more ticks (a stop was written and done)."""
        link = self._link
        assert link is not None
        now = self._published
        if now is None:  # tick 0: written now; the other ranks wait for it at most their skew
            now = Tick((), steps + self._tick_steps())
            link.publish(0, now)
        self._do(now.commands)
        if self.role == "done":
            return None
        cmds = self._plan()
        self._published = Tick(tuple(cmds), now.next_step + self._tick_steps())
        link.publish(self._tick + 1, self._published)
        return now.next_step

    def _follow(self) -> int | None:
        """Another rank's tick: wait for rank 0's commands (written a tick earlier) and do them."""
        link = self._link
        assert link is not None
        try:
            now = link.read(self._tick)
        except Exception as e:  # noqa: BLE001 - out of step with rank 0: stop, what is in trial reverted
            self.role = "done"
            self._revert_current()
            self._stop(
                f"rank {link.rank}: rank 0's commands for tick {self._tick} did not come within "
                f"{link.wait_seconds:.0f} s ({type(e).__name__}): the ranks do not run in step; "
                "what was in trial is reverted"
            )
            return None
        self._do(now.commands)
        return None if self.role == "done" else now.next_step

    def _tick_steps(self) -> int:
        return tick_steps(self._step_seconds())

    def _step_seconds(self) -> float:
        """The median wall time of the recent steps (0: none timed yet)."""
        walls = [s for s, _ in self._w.trials.history][-32:]
        return statistics.median(walls) if walls else 0.0

    def _plan(self) -> list[dict[str, Any]]:
        """Rank 0: the commands for the next tick: settle a trial it decided, stop, or start one."""
        if self.current is not None:
            t = self.current[1]
            if t.kept is not None or self._w.trials.current is t:
                return []  # its blocks go on
            return [{"settle": self._seq, "keep": bool(self._w.trials.measure(t).keep)}]
        if self.stopped is not None:
            return [{"stop": self.stopped}]
        nxt = self._next_candidate()
        if nxt is None:
            return []
        cand, blocks = nxt, self._blocks(nxt)
        if blocks is None:
            return [{"stop": self.stopped}] if self.stopped is not None else []
        steps, warmup = blocks
        return [
            {
                "start": self._seq + 1,
                "hook": cand.hook,
                "recommendation": cand.recommendation,
                "params": cand.params,
                "changes_semantics": cand.changes_semantics,
                "steps": steps,
                "warmup": warmup,
            }
        ]

    def _do(self, commands: tuple[dict[str, Any], ...]) -> None:
        for c in commands:
            if "start" in c:
                sem = bool(c["changes_semantics"])
                cand = Candidate(str(c["hook"]), str(c["recommendation"]), dict(c["params"]), sem)
                self._seq = int(c["start"])
                t = self._begin(cand, int(c["steps"]), int(c["warmup"]))
                if t is not None:
                    t.held = True  # its blocks turn at the same steps on every rank; settled at a tick
            elif "settle" in c and self.current is not None and self._seq == int(c["settle"]):
                cand, t = self.current
                self.current = None
                self._w._control.settle(t, bool(c["keep"]))
                if self.role == "leader":
                    self._decided(cand, t)
            elif "stop" in c:
                self.role = "done"
                if self._link is not None and not self._link.leader:
                    self._revert_current()
                    self.stopped = f"rank 0 stopped: {c['stop']}"

    def _poll(self) -> None:
        if self.current is not None:
            cand, t = self.current
            if t.kept is None:
                return
            self.current = None
            self._decided(cand, t)
        nxt = self._next_candidate()
        if nxt is not None:
            self._start(nxt)

    def _next_candidate(self) -> Candidate | None:
        """The next mitigation to try, at most every PLAN_POLL_SECONDS, once the sidecar's window
        shows the job as it now runs: a kept loader setting's next step, or the first
        recommendation with a hook not tried yet."""
        now = time.monotonic()
        if now < self._next_poll or self._w.model is None or len(self._w.trials.history) < SETTLE_STEPS:
            return None
        self._next_poll = now + PLAN_POLL_SECONDS
        doc = self._w.transport.report() or {}
        if not self._fresh(doc, now):
            return None
        if self._escalation is not None:
            cand, self._escalation = self._escalation, None
            return cand
        return self._plan_next(doc)

    def _fresh(self, doc: dict[str, Any], now: float) -> bool:
        """Whether the sidecar's window has only steps run since the last trial was decided, or
        since the steps began (its recommendations and what-if inputs then describe the job as it
        now runs)."""
        if self._decided_at is None:
            return True
        period = doc.get("period") or {}
        span = period.get("seconds") if period.get("covers") == "window" else None
        span = float(span) if isinstance(span, (int, float)) and span > 0 else DEFAULT_WINDOW_SECONDS
        return now - self._decided_at >= span + FRESH_WINDOW_SLACK_SECONDS

    def _plan_next(self, doc: dict[str, Any]) -> Candidate | None:
        for rec in doc.get("recommendations") or []:
            hook, rid = rec.get("hook"), str(rec.get("id", ""))
            if not hook or (hook, rid) in self.tried or hook not in HOOKS:
                continue
            self.tried.add((hook, rid))
            cand = self._candidate(hook, rid)
            if cand is not None:
                return cand
        return None

    def _candidate(self, hook: str, rid: str) -> Candidate | None:
        sem = HOOKS[hook].changes_semantics
        if sem and not self.allow_semantics:
            self._record(TuneOutcome(hook, rid, "refused", why="changes training semantics: --allow-semantics-change"))
            return None
        if hook in COLLECTIVE_HOOKS and int(self._w.facts.get("world_size") or 1) > 1:
            why = (
                "every rank would have to switch it at the same step, and a rank that counted its steps "
                "differently would hang the all-reduce: --tune leaves it to the code on a multi-rank job"
            )
            self._record(TuneOutcome(hook, rid, "refused", why=why))
            return None
        params: dict[str, Any] = {}
        if hook == "dataloader_settings":
            p = loader_params(rid, self._loader(), self._w.device.type)
            if isinstance(p, str):
                self._record(TuneOutcome(hook, rid, "failed", why=p))
                return None
            params = p
        needs = required_options(hook, params)
        if needs:
            why = (
                f"needs {', '.join(needs)}, which --tune cannot know: apply it in the code "
                f"(w.apply({hook!r}, {', '.join(f'{n}=...' for n in needs)}, verify=True))"
            )
            self._record(TuneOutcome(hook, rid, "refused", why=why))
            return None
        return Candidate(hook, rid, params, sem)

    def _settle_estimate(self, cand: Candidate) -> int:
        """The steps a loader trial skips after each turn, before it is applied: both settings'
        batches in flight (DataLoaderSettings.settle_steps); 0 for other hooks."""
        loader = self._loader()
        if cand.hook != "dataloader_settings" or loader is None or not hasattr(loader, "num_workers"):
            return 0
        new_pf = cand.params.get("prefetch_factor") or loader.prefetch_factor
        return in_flight(loader.num_workers, loader.prefetch_factor) + in_flight(cand.params.get("num_workers"), new_pf)

    def _loader(self) -> Any:
        return getattr(self._w._engine.loader, "loader", None)

    def _start(self, cand: Candidate) -> None:
        blocks = self._blocks(cand)
        if blocks is not None:
            self._begin(cand, *blocks)

    def _blocks(self, cand: Candidate) -> tuple[int, int] | None:
        """A trial's steps a block and warm-up steps after each turn, from the recent steps; None
        (and tuning stopped) where the trial would take longer than MAX_TRIAL_SECONDS."""
        step = self._step_seconds()
        steps = min(MAX_BLOCK_STEPS, max(MIN_BLOCK_STEPS, math.ceil(BLOCK_SECONDS / step) if step > 0 else 0))
        warmup = min(steps, max(2, math.ceil(WARMUP_SECONDS / step) if step > 0 else 2))
        skip = max(warmup, self._settle_estimate(cand))  # steps skipped after each turn (trials.py)
        need = 2 * BLOCKS * (steps + skip) * step
        if need > MAX_TRIAL_SECONDS:
            self._stop(
                f"steps of {step:.2f} s: one trial needs {2 * BLOCKS} blocks of {steps}+{skip} steps, "
                f"{need:.0f} s, more than the {MAX_TRIAL_SECONDS:.0f} s --tune allows a trial: too slow to measure"
            )
            return None
        return steps, warmup

    def _begin(self, cand: Candidate, steps: int, warmup: int) -> Trial | None:
        try:
            t = self._w.apply(
                cand.hook,
                verify=True,
                steps=steps,
                warmup=warmup,
                blocks=BLOCKS,
                alpha=ALPHA,
                min_gain=MIN_GAIN,
                **cand.params,
            )
        except Exception as e:  # noqa: BLE001 - a mitigation that cannot be applied is reported, never raised
            self._record(
                TuneOutcome(cand.hook, cand.recommendation, "failed", cand.params, why=f"{type(e).__name__}: {e}")
            )
            return None
        self.current = (cand, t)
        self._started_steps = self._w.steps
        if self.before_ms is None and t.before_step_seconds is not None:
            self.before_ms = 1000.0 * t.before_step_seconds
        return t

    def _decided(self, cand: Candidate, t: Trial) -> None:
        why = "" if t.kept else "not significantly faster: reverted"
        self._settled = self._w.steps
        self._decided_at = time.monotonic()
        self._record(outcome(cand, t, "kept" if t.kept else "reverted", why))
        workers = cand.params.get("num_workers") if cand.hook == "dataloader_settings" else None
        if t.kept and isinstance(workers, int) and self.escalations < MAX_ESCALATIONS:
            # more workers won: twice as many again, once the window shows the job with these (a
            # latency-bound loader kept 0 -> 1 at x1.03 and was left there: the recommendations skip
            # DataLoader settings once they are applied). A trial that does not win is reverted
            self.escalations += 1
            n = max(workers + 1, workers * LATENCY_WORKERS_FACTOR)
            self._escalation = Candidate(cand.hook, cand.recommendation, {**cand.params, "num_workers": n}, False)

    # --- the end --------------------------------------------------------------------------------
    def finish(self) -> None:
        """At the job's end (close, or the interpreter's exit): a trial in progress is reverted and
        reported unfinished; the summary is printed."""
        if self.finished:
            return
        self.finished = True
        atexit.unregister(self.finish)
        w = self._w
        if w.steps == 0 and not self.outcomes:
            return  # replaced before it timed a step (an explicit watch() under run): nothing to say
        if self._link is not None and not self._link.leader:
            self._finish_following()
            return
        if self.current is not None:
            cand, t = self.current
            self.current = None
            if t.held and t.kept is None and w.trials.current is not t:  # measured, not yet settled at a tick
                w._control.settle(t, bool(w.trials.measure(t).keep))
            if t.kept is None:
                self._revert_at_end(t)
                done = w.steps - self._started_steps
                need = 2 * t.blocks * (t.steps + max(t.warmup, settle_steps(t)))
                self._record(
                    outcome(
                        cand,
                        t,
                        "unfinished",
                        f"the job ended {done} steps into a trial that needs about {need}: "
                        "too short to measure; reverted",
                    )
                )
                self._stop(f"the job ended during the trial of {cand.hook}: too short to measure it")
            else:
                self._decided(cand, t)
        if not self.outcomes and self.stopped is None:
            self._stop(
                f"the job ended after {w.steps} steps, before the sidecar recommended a mitigation the hook "
                f"can apply (a trial needs {SETTLE_STEPS} steps to plan and {2 * BLOCKS} blocks of "
                f"{MIN_BLOCK_STEPS}+ steps): too short to measure, or nothing to try"
            )
        after = min(32, w.steps - self._settled, len(w.trials.history))
        if self.before_ms is not None and after >= SETTLE_STEPS:  # the steps since the last trial ended
            self.after_ms = 1000.0 * statistics.mean(s for s, _ in list(w.trials.history)[-after:])
            self._send(Event(SUMMARY, "tune", time.time(), False, summary_note(self.before_ms, self.after_ms)))
        for line in self.summary():
            self._say(line)

    def _finish_following(self) -> None:
        """Another rank's end: what it has in trial reverted; rank 0 reports the job's trials."""
        if self.current is not None and self.current[1].kept is None:
            self._revert_at_end(self.current[1])
        self.current = None
        for line in self.summary():
            self._say(line)

    def _revert_at_end(self, t: Trial) -> None:
        """A trial the job ended in: reverted now (no forward comes to do it later)."""
        try:
            self._w._engine.revert(t.mitigation)
        except Exception:  # noqa: BLE001, S110 - the job is ending: nothing to slow down any more
            pass
        t.kept = False

    def _stop(self, why: str) -> None:
        if self.stopped is None:
            self.stopped = why
            self._send(Event(STOPPED, "tune", time.time(), False, why[:256]))
            self._say(f"tune: stopped trying: {why}")

    def _say(self, text: str) -> None:
        self._w._control._say(text)

    # --- results --------------------------------------------------------------------------------
    def _record(self, o: TuneOutcome) -> None:
        if self.role == "follower":  # rank 0 reports the job's trials: this rank only says it
            self._say(f"tune: rank {self._link.rank if self._link else '?'}: {o.line()}")
            return
        self.outcomes.append(o)
        self._send(Event(RESULT, o.hook, time.time(), bool(HOOKS[o.hook].changes_semantics), o.to_note()))
        self._say(f"tune: {o.line()}")

    def _send(self, e: Event) -> None:
        try:
            self._w.transport.send(e)
        except Exception:  # noqa: BLE001, S110 - the report misses it; training goes on
            pass

    def lines(self) -> list[str]:
        """The epoch block's lines: the trial in progress and the outcomes so far."""
        out = [f"tune: {o.line()}" for o in self.outcomes[self._shown :]]
        self._shown = len(self.outcomes)
        if self.current is not None:
            cand, t = self.current
            done = len(t.with_blocks) + len(t.without_blocks)
            where = (
                f"block {done + 1} of {2 * t.blocks}"
                if done < 2 * t.blocks
                else "measured; every rank keeps or reverts it at the next tick, as rank 0 measured it"
            )
            out.append(f"tune: trying {cand.hook} ({cand.recommendation}): {where}")
        return out

    def summary(self) -> list[str]:
        """The closing lines: how many trials were kept, what to change in the code, why it stopped."""
        if self._link is not None and not self._link.leader:
            out = [f"tune: rank {self._link.rank} switched with rank 0 at the same steps; rank 0 measured and reports"]
            return out + ([f"tune: stopped trying: {self.stopped}"] if self.stopped else [])
        kept = [o for o in self.outcomes if o.status == "kept"]
        n = f"{len(kept)} of {len(self.outcomes)} trials kept" if self.outcomes else "nothing tried"
        out = [f"tune: {n}"]
        todo = changes(self.outcomes)
        if todo:
            out.append("tune: change in the code to keep the gains without the hook:")
            out += [f"tune:   {change_line(c)}" for c in todo]
        else:
            out.append("tune: nothing to change: the job runs as it started")
        if self.before_ms is not None and self.after_ms is not None:
            out.append(
                f"tune: step time {self.before_ms:.1f} ms before the first trial, {self.after_ms:.1f} ms at the end"
            )
        if self.stopped:
            out.append(f"tune: stopped trying: {self.stopped}")
        return out


def required_options(hook: str, given: dict[str, Any]) -> list[str]:
    """The options a hook's class must be given that the tuner does not give it (progressive
    freezing's total_steps: the run's length)."""
    from bottleneckd.torch.mitigations import REGISTRY

    sig = inspect.signature(REGISTRY[HOOKS[hook]].__init__)
    return [
        n
        for n, p in sig.parameters.items()
        if n != "self"
        and p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and n not in given
    ]


def outcome(cand: Candidate, t: Trial, status: str, why: str) -> TuneOutcome:
    v, p = t.verdict, t.predicted
    c = None if v is None else v.comparison
    ci = None if c is None else c.ci
    return TuneOutcome(
        hook=cand.hook,
        recommendation=cand.recommendation,
        status=status,
        params={k: v for k, v in cand.params.items() if isinstance(v, (bool, int, float, str))},
        ratio=None if v is None else v.ratio,
        low=None if ci is None else ci[0],
        high=None if ci is None else ci[1],
        p_value=None if c is None else c.p_value,
        predicted=None if p is None else p.speedup,
        predicted_low=None if p is None else p.low,
        predicted_high=None if p is None else p.high,
        model="" if p is None else p.model,
        why=why,
    )
