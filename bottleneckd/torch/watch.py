"""``bottleneckd.torch.watch``: sync-free step-phase timing for a PyTorch training loop.

    w = watch(model, optimizer, loader)      # then train as before: `for x, y in loader: ...`
    w.apply("mixed_precision", verify=True)  # optional: a mitigation, kept only if it helped
    w.close()

The phases of a step, the marks framework callbacks call (``Watcher(..., hooks=False)``,
``mark``/``unmark``, ``skip_gap``, ``forward_start``/``forward_end``, ``end_step``,
``epoch_end``) and the closure optimizers are described in the README ("In a training script").
No synchronize and no ``.item()``; any exception inside our instrumentation disables it (logged
once); training goes on.

The watcher is a thin front over: the clock (``timing``), the step state and closure timing
(``closure``), the phase accumulator (``phases``), the transport to a sidecar (``transport``), the
loader instrumentation (``loader``), the roofline count (``counting``) and the mitigation control
(``control``: trials and the mitigation engine). Calling ``watch()`` again replaces the previous
watcher (one warning line).
"""

from __future__ import annotations

import logging
import math
import os
import random
import sys
import threading
import time
import traceback
from array import array
from collections.abc import Callable, Iterable, Mapping
from types import FrameType
from typing import Any

import torch
from torch.autograd import profiler as _profiler
from torch.utils.hooks import RemovableHandle

from bottleneckd.model.facts import FactBoard
from bottleneckd.model.protocol import StepReport
from bottleneckd.model.throughput import measure, peak_of_report, tokens_per_example
from bottleneckd.torch import cuda_graphs, hot_path, probe, sampling
from bottleneckd.torch.cadence import Cadence
from bottleneckd.torch.closure import StepState, closure_notes, closure_of, with_timed_closure
from bottleneckd.torch.collectives import forget_rank_identity, rank_identity
from bottleneckd.torch.control import MitigationControl
from bottleneckd.torch.counting import RooflineCounting, weight_shapes
from bottleneckd.torch.cuda_memory import CudaMemory
from bottleneckd.torch.epoch import EpochReport, render_epoch
from bottleneckd.torch.hooks import ForwardWrap, StepHook, install_hooks, remove_all
from bottleneckd.torch.hot_path import (
    AUTOCAST,
    CALLS,
    DEPTH,
    DUE_AT,
    DUE_STEP,
    EXAMPLES,
    FED,
    NESTED,
    ORPHAN,
    PLAIN,
    REST,
    REST_FROM,
    REST_IT,
    REST_LEFT,
    REST_STEP,
    RESTED,
    STEPS,
    TIMED_LEFT,
)
from bottleneckd.torch.loader import InstrumentedLoader
from bottleneckd.torch.mitigations.base import LoopEvent
from bottleneckd.torch.phases import PhaseAccumulator, PhaseTotals
from bottleneckd.torch.ranges import PhaseRanges
from bottleneckd.torch.registry import forget, replace_current
from bottleneckd.torch.timing import CudaClock, HostClock
from bottleneckd.torch.transport import make_transport
from bottleneckd.torch.trials import Trial
from bottleneckd.torch.tune import Tuner

log = logging.getLogger("bottleneckd.torch")
#: the dtypes of token ids (a model's integer input of shape batch x sequence): tokens/s counts them
TOKEN_DTYPES = frozenset({torch.int64, torch.int32})
_BEFORE_OPT, _STEP_END = LoopEvent.BEFORE_OPTIMIZER_STEP, LoopEvent.STEP_END
_GRAPHS = cuda_graphs.STATE  # .capturing: the CUDA graph being captured (nothing is timed meanwhile)
_Tensor = torch.Tensor


class Watcher:
    def __init__(
        self,
        model: torch.nn.Module | None = None,
        optimizer: torch.optim.Optimizer | None = None,
        dataloader: Iterable | None = None,
        *,
        hooks: bool = True,
        socket_path: str | None = None,
        report_every: float = 0.5,
        report_every_steps: int | None = None,
        report_every_seconds: float | None = None,
        print_epoch: bool = True,
        local_sampling: bool | None = None,
        interval: float = 1.0,
        roofline_step: int | None = 3,
        cuda_sample_every: int = 8,
        tune: bool | None = None,
        allow_semantics_change: bool | None = None,
        profiler_ranges: bool = True,
        overhead_budget: float | None | str = "env",
    ) -> None:
        #: the hook's cost allowed, a share of the step (sampling.py; None: every step timed); a bad
        #: value raises here, before anything of ours is installed
        self.overhead_budget = sampling.budget_from_env(overhead_budget)
        replace_current(self)
        forget_rank_identity()  # the launcher's environment read again at this watcher's first report
        #: the hot path's state (hot_path.py): steps, optimizer calls, examples, nesting, when due, rests
        self.hot: list[Any] = hot_path.new_state(sampling.WINDOW_STEPS)
        self._window_from, self._window_step0 = 0.0, 0  # where the window of timed steps began
        self._jitter = random.Random(sampling.JITTER_SEED)  # the rests' lengths (sampling.jittered)
        self.model, self.optimizer = model, optimizer
        self.enabled, self.closed = True, False
        self.epoch = 0
        self.echo = 1  # data echoing: each batch handed out this many times
        self.print_epoch = print_epoch
        self.print_to = sys.stderr if os.environ.get("BOTTLENECKD_EPOCH_PRINT") == "stderr" else sys.stdout
        self.epoch_reports: list[EpochReport] = []
        self.device = (
            next((p.device for p in model.parameters()), torch.device("cpu"))
            if model is not None
            else torch.device("cpu")
        )
        self.cuda_sample_every = cuda_sample_every
        self.clock: HostClock | CudaClock = (
            CudaClock(sample_every=cuda_sample_every) if self.device.type == "cuda" else HostClock()
        )
        self.facts = FactBoard({"device": self.device.type, "pid": os.getpid()})
        self._tid = threading.get_native_id()  # the training thread: its run-queue wait goes in each report
        self._counting = RooflineCounting(roofline_step, weight_shapes(model))
        self._counting.prepare(0, model)
        self._cuda_memory = CudaMemory(self.device)  # the caching allocator's statistics, read per report
        self.transport = make_transport(socket_path, local_sampling, interval)
        self._step = StepState()
        self._cadence = Cadence(report_every, report_every_steps, report_every_seconds, self._mirror_due)
        cur = self.clock.cur if isinstance(self.clock, HostClock) else [0.0] * 9  # CUDA: never on the fast path
        self.hot_cur = cur  # the clock's marks of the step in progress, as the hot path writes them
        self.fetch_batch = hot_path.loader_marks(self, cur)
        self.fast_optimizer = hot_path.optimizer_marks(
            self, cur, self.clock.buf if isinstance(self.clock, HostClock) else array("d"), self._step.step_examples
        )
        self._loader = InstrumentedLoader(dataloader, self) if dataloader is not None and hooks else None
        self.dataloader = self._loader.iterable if self._loader is not None else dataloader
        self._control = MitigationControl(self, self._loader)
        self.trials = self._control.trials
        self._engine = self._control.engine
        self._engine.changed = self.unplain
        # the engine's subscriber lists (kept, never replaced): an empty one costs one truth test per step
        self._before_opt_subs = self._engine.listening[_BEFORE_OPT]
        self._step_end_subs = self._engine.listening[_STEP_END]
        self._phases = PhaseAccumulator(on_steps=self.trials.record_steps)
        self._tok_sent = self._tok_epoch = (0, 0)  # token counts at the last report and epoch start
        self._handles: list[Any] = []
        #: facts kept up to date by others and read when reporting (DDP's communication averages,
        #: ddp_comm.py): computed once a report, not at every step
        self.fact_sources: dict[Any, Callable[[], Mapping[str, Any]]] = {}
        # the phases as ranges in the user's profiler traces, only while one records (ranges.py)
        self._ranges: PhaseRanges | None = (
            PhaseRanges(self.device.type == "cuda", optimizer if hooks else None) if profiler_ranges else None
        )
        self.graphs_kind: str | None = None  # CUDA graphs seen replayed: cuda_graphs.WHOLE / WITHIN
        if self.device.type == "cuda":
            cuda_graphs.register(self)
        self.facts.update(probe.startup_facts(model, dataloader, warn_no_model=hooks, optimizer=optimizer))
        self.precision = probe.Precision(model, self.device.type)  # autocast_dtype, read at each step's first forward
        self._precision_step = -1
        self.facts.update(self.precision.facts())
        if hooks:
            self._handles.extend(install_hooks(self))
        # run --tune (torch/tune.py): the environment `bottleneckd run --tune` sets, unless told here
        if tune if tune is not None else os.environ.get("BOTTLENECKD_TUNE") == "1":
            allow = allow_semantics_change
            if allow is None:
                allow = os.environ.get("BOTTLENECKD_TUNE_SEMANTICS") == "1"
            self.tuner: Tuner | None = Tuner(self, allow_semantics=allow)
        else:
            self.tuner = None

    # --- the public marks (also what the installed hooks call) -------------------------------
    # --- the hot path's state (hot_path.py) -----------------------------------------------------
    @property
    def steps(self) -> int:
        """Optimizer steps ended (micro-steps of accumulation not counted; during a rest, the
        untimed steps before the one under way, sampling.py)."""
        hot = self.hot
        return int(hot[STEPS]) + (max(0, hot[RESTED] - 1) if hot[REST] else 0)

    @steps.setter
    def steps(self, n: int) -> None:
        self.hot[STEPS] = n

    @property
    def optimizer_calls(self) -> int:
        return int(self.hot[CALLS])

    @optimizer_calls.setter
    def optimizer_calls(self, n: int) -> None:
        self.hot[CALLS] = n

    def _mirror_due(self, at: float, step: float) -> None:
        self.hot[DUE_AT], self.hot[DUE_STEP] = at, step

    def unplain(self) -> None:
        """The next step takes the full path (something the fast path does not handle changed); a
        rest of untimed steps ends here."""
        self.hot[PLAIN] = 0
        if self.hot[REST]:
            self.wake()

    # --- sampled steps (sampling.py) --------------------------------------------------------------
    def window_over(self, end: float) -> None:
        """A window of timed fast steps ended at ``end`` (hot_path.py): a rest of as many untimed
        steps as the overhead budget asks for the window's step time follows, if any, from the
        next batch the timed iterator fetches. Only a loop fed by it, one batch a step, rests: its
        fetches count the untimed steps. The rest is cut into parts that end where a report is
        due, by steps or by time at the window's step time (``rest_goes_on``); its length is
        drawn around the budget's (``sampling.jittered``), so that windows do not keep meeting
        the same steps of a periodic loop."""
        hot = self.hot
        hot[TIMED_LEFT] = sampling.WINDOW_STEPS
        fed, hot[FED] = hot[FED], 0
        try:
            n, since = hot[STEPS] - self._window_step0, self._window_from
            self._window_from, self._window_step0 = end, hot[STEPS]
            if n <= 0 or not since or fed != n or not hot[PLAIN] or hot[NESTED] or hot[DEPTH] or self.echo != 1:
                return
            step = (end - since) / n
            rest = sampling.rest_steps(step, self.overhead_budget)
            if rest >= 1:
                hot[REST_FROM], hot[REST_STEP] = end, step
                hot[RESTED] = 0
                if not self._rest_part(sampling.jittered(rest, self._jitter), end):
                    hot[REST] = hot[REST_LEFT] = 0  # an epoch's last step next: timed
        except Exception as e:  # noqa: BLE001 - our failure never breaks the step
            self.disable(f"{type(e).__name__}: {e}")

    def _rest_part(self, left: int, now: float) -> bool:
        """The rest's next part of ``left`` steps to come from ``now``: up to where the next report
        is due by time at the window's step time, and to the step before an epoch's last by steps
        (that step is timed and ends the epoch, hot_path.py); False, and no part, where that is
        under one step."""
        hot = self.hot
        by_time = math.ceil(min(left, (hot[DUE_AT] - now) / hot[REST_STEP]))  # finite: left is
        part = min(by_time, hot[DUE_STEP] - hot[STEPS] - 1)
        if part < 1:
            return False
        hot[REST], hot[REST_LEFT] = int(part), left - int(part)
        return True

    def rest_goes_on(self, now: float, n: int) -> bool:
        """A part of the rest ended at ``now`` (a fetch of the rest's iterator) with ``n`` untimed
        steps, and steps of the rest are left: the part's steps go into the interval, the report
        due is sent, and the rest goes on from this fetch's batch with our hooks still off (True).
        False, the rest ended, where more than a report is due (an epoch end; the tuner's poll,
        which may switch the loader this fetch is reading) or no part is left before an epoch's
        last step: this batch's step is timed, and what is due is taken at its end, as without a
        rest."""
        hot = self.hot
        try:
            left = hot[REST_LEFT]
            self._fold_untimed(n, now - hot[REST_FROM])
            hot[REST_FROM], hot[RESTED], hot[REST], hot[REST_LEFT] = now, 0, 1, 0  # nothing of the part left
            cad = self._cadence
            send = cad.send_due(now)
            if (send and self.tuner is not None) or cad.epoch_due(now, hot[STEPS]) or cad.tick_due(hot[STEPS]):
                self.rest_over(now, 0)
                return False
            if send:
                self._send()
            if hot[REST] and self._rest_part(left, now):
                return True
            self.rest_over(now, 0)
            return False
        except Exception as e:  # noqa: BLE001 - our failure never breaks the step
            self.disable(f"{type(e).__name__}: {e}")
            return False

    def _fold_untimed(self, n: int, wall: float) -> None:
        """``n`` untimed steps of a rest that took ``wall`` seconds go into the interval, after the
        window's timed steps (drained first: the untimed ones take their phases' proportions)."""
        self.drain()
        if n:
            hot = self.hot
            hot[STEPS] += n
            hot[CALLS] += n
            self._phases.add_untimed(n, wall)

    def rest_begins(self, nxt: Any) -> bool:
        """The rest's first batch is being fetched through ``nxt`` (the rest counts that iterator's
        batches only): the forward wrapper and the step hooks come off. False, and no rest, where
        our forward wrapper cannot come off (another wrapper was set over it)."""
        hot = self.hot
        try:
            hooks = self._switched_hooks()
            if not all(h.off() for h in hooks):
                for h in hooks:
                    h.on()
                hot[REST] = hot[RESTED] = 0
                return False
            hot[REST_IT] = nxt
            return True
        except Exception as e:  # noqa: BLE001 - our failure never breaks the step
            self.disable(f"{type(e).__name__}: {e}")
            return False

    def rest_over(self, now: float, n: int) -> None:
        """End the rest: ``n`` untimed steps ended at ``now`` (a fetch's start); they go into the
        phases with their count and wall, the hooks go back on, the next step is timed from ``now``."""
        hot = self.hot
        if not hot[REST]:
            return
        begun = hot[REST_FROM]
        hot[REST] = hot[RESTED] = hot[EXAMPLES] = hot[REST_LEFT] = 0
        hot[REST_IT] = None
        hot[TIMED_LEFT] = sampling.WINDOW_STEPS
        try:
            for h in self._switched_hooks():
                h.on()
            self._fold_untimed(n, now - begun)
            if isinstance(self.clock, HostClock):
                self.clock.resume_after(now)
            self._window_from, self._window_step0 = now, hot[STEPS]
        except Exception as e:  # noqa: BLE001 - our failure never breaks the step
            self.disable(f"{type(e).__name__}: {e}")

    def _switched_hooks(self) -> list[ForwardWrap | StepHook]:
        """The hooks a rest takes off: the forward wrapper and the optimizer step hooks."""
        return [h for h in self._handles if isinstance(h, (ForwardWrap, StepHook))]

    def wake(self) -> None:
        """End the rest from outside the loop's fetches (a mark, a mitigation applied, a report):
        the steps before the last batch's are folded in with the wall up to now. Whether the last
        batch's step has ended is not known here: if the forward or the step hooks, back on, see
        it, it is timed from now; if the next fetch comes first, it had ended and is counted
        then (``orphan_step``). The wall is kept whole either way."""
        hot = self.hot
        if not hot[REST]:
            return
        n = hot[RESTED]
        self.rest_over(time.perf_counter() if n else hot[REST_FROM], max(0, n - 1))
        if n:
            hot[ORPHAN] = hot[STEPS] + 1

    def orphan_step(self) -> None:
        """The fetch after a rest ended by ``wake``: the batch fetched before it ended its step with
        no forward and no step end seen since (its wall is in the rest's): counted now."""
        hot, cur = self.hot, self.hot_cur
        at, hot[ORPHAN] = hot[ORPHAN], 0
        if hot[STEPS] + 1 == at and not cur[2] and not cur[3] and not cur[4]:
            try:
                hot[STEPS] += 1
                hot[CALLS] += 1
                self._phases.add_untimed(1, 0.0)
            except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                self.disable(f"{type(e).__name__}: {e}")

    def _plain_now(self) -> bool:
        """Nothing but the step's marks, examples and count is needed at the next step (hot_path.py)."""
        st, counting, clock = self._step, self._counting, self.clock
        return (
            self.enabled
            and _GRAPHS.capturing is None
            and isinstance(clock, HostClock)
            and clock.plain()
            and not self._engine.pending
            and not self._before_opt_subs
            and not self._step_end_subs
            and self.trials.current is None
            and not counting.active
            and (counting.at_step is None or counting.at_step < self.hot[STEPS])
            and st.input_probed
            and not st.token_rows  # token inputs are counted by the full path
            and not st.closure_fact
            and not st.micro
            and not st.in_closure
            and not st.closure_calls
            and not self.hot[DEPTH]
            and (self._ranges is None or not self._ranges.phase)
        )

    def mark(self, label: str) -> None:
        """Mark a point of the step (README, "In a training script"); never raises into training."""
        self.unplain()
        if self.enabled and _GRAPHS.capturing is None:
            try:
                if label == "forward_start":
                    self.forward_start(())
                else:
                    if self._ranges is not None and (_profiler._is_profiler_enabled or self._ranges.phase):
                        self._ranges.at(label)
                    self.clock.mark(label)
            except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                self.disable(f"{type(e).__name__}: {e}")

    def unmark(self, label: str) -> None:
        self.unplain()
        if self.enabled and _GRAPHS.capturing is None:
            try:
                self.clock.unmark(label)
            except Exception as e:  # noqa: BLE001
                self.disable(f"{type(e).__name__}: {e}")

    def full_batch_requested(self) -> None:
        """The loader was asked for a batch (``mark("step_start")``); hot_path.py's ``fetch_batch``
        calls this off the fast path."""
        if self.enabled and _GRAPHS.capturing is None:
            try:
                self.clock.step_start()
                if self._ranges is not None and (_profiler._is_profiler_enabled or self._ranges.phase):
                    self._ranges.at("step_start")
            except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                self.disable(f"{type(e).__name__}: {e}")

    def full_batch_ready(self) -> None:
        """The loader handed the batch out (``mark("data_ready")``; hot_path.py's ``fetch_batch`` off the fast path)."""
        if self.enabled and _GRAPHS.capturing is None:
            try:
                self.clock.data_ready()
                if self._ranges is not None and (_profiler._is_profiler_enabled or self._ranges.phase):
                    self._ranges.at("data_ready")
            except Exception as e:  # noqa: BLE001
                self.disable(f"{type(e).__name__}: {e}")

    def skip_gap(self) -> None:
        """The time since the last step was not training (evaluation, a checkpoint): the next step
        is timed from now, not from the last step's end (for framework callbacks)."""
        self.unplain()
        if self.enabled:
            try:
                self.clock.unmark("step_start")
                self.clock.reset()
                self.clock.mark("step_start")
                if self._ranges is not None and (_profiler._is_profiler_enabled or self._ranges.phase):
                    self._ranges.at("step_start")
            except Exception as e:  # noqa: BLE001
                self.disable(f"{type(e).__name__}: {e}")

    def forward_start(self, args: tuple) -> None:
        """The root forward starts with ``args`` (examples counted from the first tensor's rows)."""
        if _GRAPHS.capturing is not None:
            return  # inside a CUDA-graph capture: nothing recorded on the GPU, the step not counted
        st, hot = self._step, self.hot
        if hot[DEPTH] and not st.closure_calls:
            if _inside_optimizer_step():
                return  # an optimizer's own forward inside its step (no closure): the optimizer's phase
            hot[DEPTH] = 0  # a forward outside any optimizer step: the last step raised before its end
        if self._engine.pending:
            self._engine.revert_pending()  # a trial's revert, never inside an optimizer step
        first = not self.hot_cur[2]  # the step's first forward (the host clock's mark; CUDA: always)
        if not st.in_closure:
            self.clock.forward_start()
            if self._ranges is not None and (_profiler._is_profiler_enabled or self._ranges.phase):
                self._ranges.at("forward_start")
        if st.closure_calls > 1:
            return  # the optimizer's closure again: same batch, counted once
        steps = self.steps
        if self._precision_step != steps and first:  # once per step: is autocast on around its first forward?
            self._precision_step = steps
            self.precision.at_forward(self.facts)
            hot[AUTOCAST] = int(hot_path.any_autocast())  # the fast path's check (hot_path.py)
        if args:
            first = args[0]
            if isinstance(first, _Tensor) and (dim := first.dim()) > 0:
                rows = first.size(0)  # not shape[0]: faster, but it makes a torch.Size (a tuple) each step
                hot[EXAMPLES] += rows
                if dim == 2 and first.dtype in TOKEN_DTYPES:  # token ids: batch x sequence
                    st.tokens += first.numel()
                    st.token_rows += rows
                if not st.input_probed:
                    st.input_probed = True
                    self.facts.update(probe.input_facts(args))
        if self._counting.at_step == steps:
            self._counting.maybe_start(steps)  # this one step runs under counting modes; its timing is dropped

    def before_optimizer_step(self, args: tuple, kwargs: dict) -> Any:
        """Inside ``optimizer.step()``, before it updates anything; returns new (args, kwargs)
        when the step takes a closure (the closure is then timed)."""
        if _GRAPHS.capturing is not None:
            cuda_graphs.captured_a_step()  # the graph being captured holds a whole training step
            return None
        st, hot = self._step, self.hot
        hot[DEPTH] += 1
        if hot[DEPTH] != 1:
            return None  # a step inside an optimizer step: the outer one is timed and counted
        hot[CALLS] += 1
        self.clock.optimizer_start()
        if self._ranges is not None and (_profiler._is_profiler_enabled or self._ranges.phase):
            self._ranges.at("optimizer_start")
        if self._before_opt_subs:
            ctx = self._engine.run(_BEFORE_OPT, self.steps, self.epoch, self.optimizer_calls)
            if ctx.micro_step:
                self.clock.unmark("optimizer_start")
                st.micro = True
        closure = closure_of(args, kwargs) if kwargs or len(args) > 1 else None  # step() alone: no closure
        if st.closure_fact != (closure is not None):
            st.closure_fact = closure is not None
            self.facts["optimizer_closure"] = closure is not None
        return None if closure is None else with_timed_closure(args, kwargs, closure, self.clock, st)

    def forward_end(self) -> None:
        if self.hot[DEPTH] and not self._step.closure_calls:
            return  # the end of a forward inside an optimizer step (forward_start: not the step's forward)
        if not self._step.in_closure and _GRAPHS.capturing is None:
            self.clock.forward_end()
            if self._ranges is not None and (_profiler._is_profiler_enabled or self._ranges.phase):
                self._ranges.at("forward_end")

    def after_optimizer_step(self) -> None:
        """``optimizer.step()`` returned (the step hooks' counterpart of ``before_optimizer_step``)."""
        if _GRAPHS.capturing is not None:
            return
        hot = self.hot
        if hot[DEPTH] > 1:  # a step inside another returned
            hot[DEPTH] -= 1
            return
        hot[DEPTH] = 0
        if self.enabled:
            try:
                self._end_step()
            except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                self.disable(f"{type(e).__name__}: {e}")

    def full_before_optimizer_step(self, _opt: Any, args: tuple, kwargs: dict) -> Any:
        """The optimizer step pre-hook off the fast path (hot_path.py); ``_opt``: the optimizer stepping."""
        if self.enabled:
            try:
                return self.before_optimizer_step(args, kwargs)
            except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                self.disable(f"{type(e).__name__}: {e}")
        return None

    def full_after_optimizer_step(self) -> None:
        try:
            self.after_optimizer_step()
        except Exception as e:  # noqa: BLE001
            self.disable(f"{type(e).__name__}: {e}")

    def end_step(self) -> None:
        """The optimizer step is done: the step's wall ends here."""
        if self.enabled and _GRAPHS.capturing is None:
            try:
                self._end_step()
            except Exception as e:  # noqa: BLE001
                self.disable(f"{type(e).__name__}: {e}")

    def _end_step(self) -> None:
        st = self._step
        if st.micro:  # accumulation: one micro-batch of a step, folded in by the clock
            st.micro = False
            return
        self.steps = steps = self.steps + 1
        if self._ranges is not None and (_profiler._is_profiler_enabled or self._ranges.phase):
            self._ranges.at("step_end")
        examples, self.hot[EXAMPLES], st.closure_calls = self.hot[EXAMPLES], 0, 0
        counting = self._counting
        if counting.active:
            self.facts.update(counting.finish())
            self.clock.discard_step()  # a counted step runs slowly: its timing is dropped
        else:
            self.clock.end_step()
            st.step_examples.append(examples)
            if counting.at_step == steps:
                counting.prepare(steps, self.model)  # the next step is the counted one
        if self._step_end_subs:
            self._engine.run(_STEP_END, steps, self.epoch, self.optimizer_calls)
        now = time.perf_counter()
        cad = self._cadence
        if now < cad.due_at and steps < cad.due_step:  # cad.due(now, steps), inline: nothing due at this step
            if self.trials.current is not None:
                self.drain()  # a verification in progress decides at the step it completes
            self.hot[PLAIN] = int(self._plain_now())
            return
        self._report_due(now)
        self.hot[PLAIN] = int(self._plain_now())

    def step_due(self, now: float) -> None:
        """A report or an epoch end is due at the end of a fast-path step (hot_path.py); the next
        step takes the full path, which refreshes what the fast one does not look at."""
        self.hot[PLAIN] = 0
        try:
            self._report_due(now)
        except Exception as e:  # noqa: BLE001 - our failure never breaks the step
            self.disable(f"{type(e).__name__}: {e}")

    def _report_due(self, now: float) -> None:
        cad = self._cadence
        if cad.send_due(now):
            self.flush()
            if self.tuner is not None:
                self.tuner.poll()
        elif self.trials.current is not None:
            self.drain()
        if cad.epoch_due(now, self.steps):
            self.epoch_end()
        if cad.tick_due(self.steps) and self.tuner is not None:
            self.tuner.tick(self.steps)  # a multi-rank job's tuners, in step (torch/tune_ranks.py)

    # --- reports ------------------------------------------------------------------------------
    def drain(self) -> None:
        steps = self.clock.drain()
        self._phases.add(steps, self._step.take_examples(len(steps)))

    def flush(self) -> None:
        """Send the steps timed since the last report (also done every ``report_every`` seconds)."""
        self.wake()  # a rest in progress: its steps go in this report
        self._send()

    def _send(self) -> None:
        """The report of the interval's steps (the steps of a rest under way already folded in)."""
        self.drain()
        self.hot[PLAIN] = 0  # one full step a report (hot_path.py)
        self._cadence.sent()
        if not self._phases.interval_steps:
            return
        untimed = self._phases.interval_untimed
        totals = self._phases.take_interval()
        self.facts["timed_step_share"] = 1.0 - untimed / totals.steps
        self.facts.update(probe.runtime_facts(self.model, self._tid))
        tok = self.token_counts()
        self.facts["tokens_per_example"] = tokens_per_example(tok, self._tok_sent)
        self._tok_sent = tok
        self.facts.update(self._counting.achieved(totals.compute_seconds / totals.steps))
        for source in list(self.fact_sources.values()):
            self.facts.update(source())
        if isinstance(self.clock, CudaClock):
            self.facts.update(self.clock.comm_facts())  # side-stream collectives (FSDP): in flight vs waited for
        self.facts.update(self._cuda_memory.facts(self.steps))
        self.transport.send(
            StepReport(
                rank_identity(self.device),
                totals.steps,
                totals.wall_seconds,
                totals.phases,
                self.facts.freeze(epoch=self.epoch, mitigations=self._engine.names()),
                examples=totals.examples or None,
            )
        )  # for joules per example

    def epoch_end(self) -> EpochReport | None:
        """Print the epoch's step phases, verdict and top recommendations as one block; return it."""
        try:
            if self._counting.active:
                self._counting.abort()  # a counted step that never ended
            self.flush()
            self._cadence.epoch_started(self.steps)
            totals = self._phases.take_epoch()
            if self.model is not None and totals.steps:
                self.facts.update(probe.model_facts(self.model, self.optimizer))
                self.precision.refresh(self.model)
                self.facts.update(self.precision.facts())
            report = self.transport.report() if totals.steps else None
            tok = self.token_counts()
            rate = measure(
                steps=totals.steps,
                wall_seconds=totals.wall_seconds,
                examples=totals.examples,
                facts=self.throughput_facts(tokens_per_example(tok, self._tok_epoch)),
                peak=peak_of_report(report),
            )
            self._tok_epoch = tok
            rep = render_epoch(
                self.epoch,
                totals,
                report,
                closure_notes(bool(self.facts.get("optimizer_closure")), isinstance(self.clock, HostClock))
                + cuda_graphs.note(self.graphs_kind)
                + self._counting.notes(bool(self.facts.get("compiled")))
                + (self.tuner.lines() if self.tuner is not None else self._control.measuring()),
                previous=next((r for r in reversed(self.epoch_reports) if r.step_ms is not None), None),
                in_effect=self._control.in_effect(),
                throughput=rate,
            )
            if self.print_epoch:
                print(rep.text, file=self.print_to, flush=True)
            self.epoch_reports.append(rep)
            if totals.steps:
                self.epoch += 1
                if self._engine.listening[LoopEvent.EPOCH_END]:
                    self._engine.run(LoopEvent.EPOCH_END, self.steps, self.epoch, self.optimizer_calls)
            self.clock.reset()  # the next epoch's first step starts at its own data request
            return rep
        except Exception as e:  # noqa: BLE001
            self.disable(f"epoch report: {type(e).__name__}: {e}")
            return None

    def loader_finished(self, exhausted: bool) -> None:
        """The loader's iteration ended (exhausted, or dropped after some steps): an epoch end."""
        if self.enabled:
            self.epoch_end()

    def steps_done(self) -> int:
        return self.steps

    # --- what framework callbacks read (integrations/_common.py) ------------------------------
    def totals_so_far(self) -> PhaseTotals:
        """Every step timed since the start (drained first): a callback logs differences."""
        self.drain()
        return self._phases.so_far()

    def token_counts(self) -> tuple[int, int]:
        """Token ids and their rows counted at forward starts since the start."""
        return self._step.tokens, self._step.token_rows

    def throughput_facts(self, tokens_per_ex: float | None) -> dict[str, Any]:
        """The facts ``model.throughput.measure`` reads, from this rank's own counts."""
        return {
            "flops_per_step": self._counting.flops,
            "flops_unknown": self._counting.why_no_flops(),
            "tokens_per_example": tokens_per_ex,
        }

    # --- mitigations (control.py) -------------------------------------------------------------
    def apply(
        self,
        mitigation: Any,
        *,
        verify: bool = False,
        steps: int = 20,
        warmup: int = 2,
        min_gain: float = 0.02,
        blocks: int = 3,
        alpha: float = 0.05,
        **kwargs: Any,
    ) -> Trial:
        """A mitigation by hook id (``"mixed_precision"``) or object, kept if faster (MitigationControl.apply)."""
        return self._control.apply(
            mitigation,
            verify=verify,
            steps=steps,
            warmup=warmup,
            min_gain=min_gain,
            blocks=blocks,
            alpha=alpha,
            **kwargs,
        )

    def revert(self, name: str) -> None:
        self._control.revert(name)

    # --- collectives (collectives.py) ---------------------------------------------------------
    def comm_begin(self) -> None:
        """Around a blocking collective the user's code calls (collectives.py): never raises into it."""
        if self.enabled and cuda_graphs.STATE.capturing is None:
            try:
                self.clock.comm_begin()
            except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                self.disable(f"{type(e).__name__}: {e}")

    def comm_end(self) -> None:
        if self.enabled and cuda_graphs.STATE.capturing is None:
            try:
                self.clock.comm_end()
            except Exception as e:  # noqa: BLE001 - the collective ran: its result is the user's
                self.disable(f"{type(e).__name__}: {e}")

    def comm_exposed(self, span: Any) -> None:
        """Communication the step waited for inside backward (DDP's buckets, ddp_comm.py): seconds
        on the host clock, a (start, end) pair of CUDA events on the CUDA clock."""
        if self.enabled and cuda_graphs.STATE.capturing is None:
            try:
                self.clock.add_comm(span)
            except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                self.disable(f"{type(e).__name__}: {e}")

    # --- CUDA graphs (cuda_graphs.py) -----------------------------------------------------------
    def graph_replay(self, graph: Any, begin: bool) -> None:
        """Around ``CUDAGraph.replay()``: a graph holding a whole training step is one step."""
        if self.enabled:
            try:
                cuda_graphs.replayed(self, graph, begin)
            except Exception as e:  # noqa: BLE001
                self.disable(f"{type(e).__name__}: {e}")

    # --- teardown -----------------------------------------------------------------------------
    def disable(self, why: str) -> None:
        """Our failure: every hook of ours comes off (and a half-done count is undone); training goes on."""
        if not self.enabled:
            return
        log.warning(
            "bottleneckd instrumentation disabled after an internal error (%s%s); training is unaffected",
            why,
            _where(),
            exc_info=bool(os.environ.get("BOTTLENECKD_DEBUG")) and sys.exc_info()[0] is not None,
        )
        self._teardown(keep_torch_hooks=True)

    def _teardown(self, keep_torch_hooks: bool = False) -> None:
        """Everything of ours off. ``keep_torch_hooks`` (a failure, which may happen inside one of
        torch's hook loops): the handles in torch's hook dicts stay, inert once ``enabled`` is
        False, until ``close()``; removing one while torch iterates its dict raises "dictionary
        changed size during iteration" into the user's ``optimizer.step()`` or forward."""
        if self.enabled:
            self.enabled = False
            self.hot[PLAIN] = self.hot[REST] = self.hot[REST_LEFT] = self.hot[ORPHAN] = 0
            cuda_graphs.unregister(self)
            self._counting.abort()
            if self._ranges is not None:
                remove_all([self._ranges])
            if self._loader is not None:
                self._loader.restore()
        kept = [h for h in self._handles if keep_torch_hooks and isinstance(h, (RemovableHandle, StepHook))]
        remove_all([h for h in self._handles if not any(h is k for k in kept)])
        self._handles = kept

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.tuner is not None:
            self.tuner.finish()  # a trial in progress reverted, the summary sent (needs the transport)
        self._teardown()
        self.transport.close()
        forget(self)


def watch(
    model: torch.nn.Module | None,
    optimizer: torch.optim.Optimizer | None = None,
    dataloader: Iterable | None = None,
    **kw: Any,
) -> Watcher:
    """Time every step of a training loop as written (README, "In a training script")."""
    return Watcher(model, optimizer, dataloader, **kw)


def _inside_optimizer_step() -> bool:
    """An optimizer's ``step`` is on this thread's stack (walked only where a forward meets a step
    that has not ended: a forward the optimizer runs itself, or the last step raised)."""
    f: FrameType | None = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name in ("step", "wrapper") and isinstance(f.f_locals.get("self"), torch.optim.Optimizer):
            return True
        f = f.f_back
    return False


def _where() -> str:
    """Where the exception being handled was raised, as ' at file.py:line in function' (the innermost
    frame of ours, else the innermost): what a bug report needs, without a traceback in the job's log."""
    tb = sys.exc_info()[2]
    if tb is None:
        return ""
    frames = traceback.extract_tb(tb)
    ours = [f for f in frames if f"{os.sep}bottleneckd{os.sep}" in f.filename] or frames
    f = ours[-1]
    return f" at {os.path.basename(f.filename)}:{f.lineno} in {f.name}"
