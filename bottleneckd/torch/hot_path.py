"""The watcher's per-step fast path (issue 23): the step's marks written into two lists, nothing else.

A step of a plain loop (the host clock, no closure, no accumulation, no mitigation listening to the
step, no trial or FLOP count under way, no profiler recording, inputs already probed) needs no more
than its six timestamps, its example count and its step count. Measured in situ
(``scripts/bench_hook_insitu.py``), the watcher's full entry points cost 42-44 us a step between
the model's kernels against 8 us in a null step: each touched many separate objects (the watcher,
the step state, the clock, the cadence, the facts, the engine, the trials, module globals) that the
kernels had evicted from the caches. Here the hooks are closures that touch two lists: the clock's
``cur`` (timestamps, HostClock) and ``hot`` (the slots below), plus, at the step's end, the clock's
buffer and the array of examples per step.

``hot[PLAIN]`` says the next step may take this path. It is set at the end of every full step when
nothing the full path handles is in play (``Watcher._plain_now``), and cleared by anything that
changes that (a mitigation applied or reverted, a trial, a public mark, a CUDA graph capture, the
watcher disabled) and by a report taken at the end of a fast step, so that the step after it takes
the full path (which reads the input's kind again). Autocast switched on or off is seen at the
step's first forward (one argument-free C call against what the full path last saw). A fast hook
that meets what it does not handle (a second batch before the optimizer step, a closure, the
profiler turned on) clears it and calls the full entry point, so the rest of that step takes the
full path; an optimizer step inside a fast one's (a subclass's ``super().step()``) only nests.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch.autograd import profiler as _profiler

from bottleneckd.torch import timing

if TYPE_CHECKING:
    from bottleneckd.torch.watch import Watcher

#: slots of the hot list: may the step take the fast path (0/1); optimizer steps ended; calls of
#: optimizer.step() (micro-steps included); examples counted at this step's forward; optimizer steps
#: in progress (one inside another: SAM, Lookahead); when the next report or epoch end is due (the
#: cadence's due time and step count, mirrored); autocast on at the full path's last check (0/1);
#: the steps of the part of a rest of untimed steps coming or under way (0: none; sampling.py), the
#: batches fetched in it so far, where it began (the end of the last timed step, or of the part
#: before), the ``next`` of the iterator it counts (None: none yet); timed fast steps left in the
#: window; batches fetched through the timed iterator since the window began; an optimizer step
#: inside another was seen (0/1); after a rest ended in the middle of a step, 1 + the steps counted
#: then (0: none: ``Watcher.wake``); the rest's steps after this part (a report is taken between
#: two parts); the window's step time before the rest (it sizes the parts)
PLAIN, STEPS, CALLS, EXAMPLES, DEPTH, DUE_AT, DUE_STEP, AUTOCAST = range(8)
REST, RESTED, REST_FROM, REST_IT, TIMED_LEFT, FED, NESTED, ORPHAN = range(8, 16)
REST_LEFT, REST_STEP = range(16, 18)

_FRESH = (0.0,) * 9  # the clock's cur after a step (timing._FRESH; its prev_end slot, 8, set apart)
_PREV = 8
_Tensor = torch.Tensor


def _never() -> bool:
    return False


#: True only while dynamo traces (it reads this call as a constant); eagerly, one cheap call. A
#: function wrapped by ``torch.compiler.disable`` costs ~1.5 us a call eagerly (it switches the
#: frame evaluator off and on: 8 C calls and 3 Python frames), so the wrapped edges are taken only
#: when tracing (issue 23: measured with scripts/bench_hook_counts.py).
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", _never)


def new_state(window: int) -> list[Any]:
    """The hot list; ``window``: timed steps before the first rest may start (sampling.py)."""
    return [0, 0, 0, 0, 0, math.inf, math.inf, 0, 0, 0, 0.0, None, window, 0, 0, 0, 0, 0.0]


def clock_now() -> Callable[[], float]:
    """The host clock's time source (timing.py's ``time.perf_counter``, read when the hooks are made)."""
    return timing.time.perf_counter  # type: ignore[no-any-return]


#: autocast on for any device (one argument-free C call); compared with ``hot[AUTOCAST]``, what the
#: full path saw at its last check, so that switching autocast on or off sends the step to the full
#: path, which records the change (probe.Precision)
any_autocast: Callable[[], bool] = getattr(torch._C, "_is_any_autocast_enabled", None) or (lambda: False)


def loader_marks(w: Watcher, cur: list[float]) -> Callable[[Callable[[], Any]], Any]:
    """``fetch_batch``: the timed iterator's two marks (batch requested, batch ready) around the
    loader's own ``next`` in one call. A rest of untimed steps (sampling.py) begins and ends here,
    between steps: its first fetch takes our hooks off (``rest_begins``), the fetch after its last
    step, one from another iterator or one while the profiler records puts them back
    (``rest_over``) and is timed; the fetches between are counted (the timed iterator takes those
    itself: loader.py). ``Watcher.window_over`` cuts a rest into parts that end where a report is
    due; at the fetch after a part that is not the last the report is taken, our hooks still off,
    and the rest goes on from that fetch's batch (``rest_goes_on``)."""
    hot, pc, prof = w.hot, clock_now(), _profiler
    slow_requested, slow_ready = w.full_batch_requested, w.full_batch_ready
    rest_begins, rest_over, orphan, goes_on = w.rest_begins, w.rest_over, w.orphan_step, w.rest_goes_on

    def fetch_batch(nxt: Callable[[], Any]) -> Any:
        rest = hot[REST]
        if rest:
            n = hot[RESTED]
            if (
                n >= rest
                and hot[REST_LEFT]
                and hot[REST_IT] is nxt
                and not prof._is_profiler_enabled
                and goes_on(pc(), n)
            ):
                try:  # a part ended (its n steps reported if due): the next part's first batch, our hooks still off
                    batch = nxt()
                except StopIteration:
                    rest_over(pc(), 0)  # the loader is exhausted: no step since the part ended
                    raise
                hot[RESTED] = 1
                return batch
            elif n < rest and not prof._is_profiler_enabled and (n or rest_begins(nxt)) and hot[REST_IT] is nxt:
                try:
                    batch = nxt()
                except StopIteration:
                    rest_over(pc(), n)  # the loader is exhausted: the rest's n steps ended now
                    raise
                hot[RESTED] = n + 1
                return batch
            rest_over(pc(), n)  # n untimed steps ended now (none left if goes_on ended it): this batch's step is timed
        if hot[ORPHAN]:
            orphan()  # a step under way when a rest ended early: ended by now if no forward ran since
        hot[FED] += 1
        if hot[PLAIN] and not cur[3] and not prof._is_profiler_enabled:
            if not cur[0]:
                cur[0] = pc()
            batch = nxt()  # StopIteration goes to the timed iterator, which unmarks the request
            if hot[PLAIN]:
                cur[1] = pc()
            else:
                slow_ready()
            return batch
        hot[PLAIN] = 0
        slow_requested()
        batch = nxt()
        slow_ready()
        return batch

    return fetch_batch


def forward_wrapper(
    w: Watcher, cur: list[float], original: Callable[..., Any], traced: Callable[..., Any]
) -> Callable[..., Any]:
    """The root module's forward: the step's forward marks and its examples (rows of the first
    tensor argument) around ``original``; ``traced`` under torch.compile; the watcher's full entry
    points (``forward_start``, ``forward_end``) off the fast path."""
    hot, pc, prof, tensor = w.hot, clock_now(), _profiler, _Tensor
    is_compiling, autocast = _is_compiling, any_autocast

    def forward(*args: Any, **kwargs: Any) -> Any:
        if is_compiling():
            return traced(*args, **kwargs)
        # DEPTH: the last step raised inside step(); autocast switched on or off since the last check
        # (autocast is compared at the step's first forward only, as the full path reads it once a step)
        if hot[PLAIN] and not hot[DEPTH] and not prof._is_profiler_enabled and (cur[2] or autocast() == hot[AUTOCAST]):
            if not cur[2]:  # the first start and the last end of the phase
                cur[2] = pc()
            if args:
                try:
                    first = args[0]
                    if isinstance(first, tensor) and first.dim() > 0:
                        hot[EXAMPLES] += first.size(0)  # size(0), not shape[0]: no torch.Size made
                except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                    w.disable(f"{type(e).__name__}: {e}")
        else:
            hot[PLAIN] = 0
            if w.enabled:
                try:
                    w.forward_start(args)
                except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                    w.disable(f"{type(e).__name__}: {e}")
        out = original(*args, **kwargs)
        if hot[PLAIN]:
            cur[3] = pc()
        elif w.enabled:
            try:
                w.forward_end()
            except Exception as e:  # noqa: BLE001
                w.disable(f"{type(e).__name__}: {e}")
        return out

    return forward


def optimizer_marks(
    w: Watcher, cur: list[float], buf: array, examples: array
) -> tuple[Callable[[Any, tuple, dict], Any], Callable[[Any, tuple, dict], None]]:
    """torch's optimizer step pre- and post-hooks; the post-hook ends the step, and ends a window
    of timed steps (``window_over``: a rest may follow, sampling.py)."""
    hot, pc, prof, fresh = w.hot, clock_now(), _profiler, _FRESH
    slow_pre, slow_post, due = w.full_before_optimizer_step, w.full_after_optimizer_step, w.step_due
    window_over = w.window_over
    disable = w.disable
    extend, count = buf.extend, examples.append

    def pre(_opt: Any, args: tuple, kwargs: dict) -> Any:
        if hot[PLAIN]:
            depth = hot[DEPTH]
            if depth:  # a step inside this fast step's (a subclass's super().step()): the outer one counts
                hot[DEPTH] = depth + 1
                hot[NESTED] = 1
                return None
            if not kwargs and len(args) <= 1:  # step() alone: no closure
                hot[DEPTH] = 1
                hot[CALLS] += 1
                if not cur[4]:
                    cur[4] = pc()
                return None
        hot[PLAIN] = 0
        return slow_pre(_opt, args, kwargs)

    def post(_opt: Any, _args: tuple, _kwargs: dict) -> None:
        if hot[PLAIN] and hot[DEPTH] > 1:  # the inner step returned
            hot[DEPTH] -= 1
            return
        if hot[PLAIN] and hot[DEPTH] == 1 and not prof._is_profiler_enabled:
            hot[DEPTH] = 0
            hot[STEPS] = steps = hot[STEPS] + 1
            cur[5] = end = pc()
            try:
                extend(cur)  # the clock's buffer: HostClock.end_step with no micro-batch and no closure
                count(hot[EXAMPLES])
            except Exception as e:  # noqa: BLE001 - our failure never breaks the step (a count past int64)
                disable(f"{type(e).__name__}: {e}")
                return
            cur[:] = fresh
            cur[_PREV] = end
            hot[EXAMPLES] = 0
            if end >= hot[DUE_AT] or steps >= hot[DUE_STEP]:
                due(end)  # catches its own failures
            hot[TIMED_LEFT] = left = hot[TIMED_LEFT] - 1
            if left <= 0:
                window_over(end)  # catches its own failures
            return
        hot[PLAIN] = 0
        slow_post()

    return pre, post
