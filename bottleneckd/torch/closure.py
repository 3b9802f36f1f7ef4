"""What the watcher's hot path keeps about the step in progress, and the timing of an optimizer
closure (LBFGS, SAM-style ``optimizer.step(closure)``).

On the host clock the forward and backward the closure runs are timed as forward and backward
(``HostClock.closure_begin``/``closure_end`` sum them and move them out of the optimizer phase);
on CUDA the closure's work stays in the optimizer phase (events are not summed per closure call),
and only its calls are counted so that the batch's examples are counted once.
"""

from __future__ import annotations

from array import array
from typing import Any

from bottleneckd.torch.timing import CudaClock, HostClock


class StepState:
    """What the hot path keeps about the step in progress."""

    __slots__ = (
        "step_examples",
        "tokens",
        "token_rows",
        "micro",
        "closure_calls",
        "closure_fact",
        "input_probed",
        "in_closure",
    )

    def __init__(self) -> None:
        self.step_examples = array("q")  # per ended step, until drained (no object kept per step)
        # token ids seen at forward starts (integer inputs of shape batch x sequence) and their rows,
        # both counted since the start: consumers take differences (tokens per example)
        self.tokens = 0
        self.token_rows = 0
        self.micro = False
        self.closure_calls = 0
        self.in_closure = False  # inside a closure whose forward the clock does not time apart (CUDA)
        self.closure_fact: bool | None = None
        self.input_probed = False

    def take_examples(self, n: int) -> list[int]:
        """The example counts of the ``n`` oldest ended steps (those the clock just drained)."""
        ex = self.step_examples
        out = ex[:n].tolist()
        del ex[:n]
        if len(ex) > 4096:  # CUDA times one step in `every`: keep the newest counts only
            del ex[:-256]
        return out


def closure_of(args: tuple, kwargs: dict) -> Any:
    """The closure passed to ``optimizer.step`` (positionally or by keyword), or None."""
    return kwargs.get("closure", args[1] if len(args) > 1 else None)


def with_timed_closure(
    args: tuple, kwargs: dict, closure: Any, clock: HostClock | CudaClock, st: StepState
) -> tuple[tuple, dict]:
    """``optimizer.step``'s (args, kwargs) with ``closure`` replaced by a timed one."""
    timed = timed_closure(closure, clock, st)
    return (args[:1] + (timed,) + args[2:], kwargs) if "closure" not in kwargs else (args, {**kwargs, "closure": timed})


def timed_closure(closure: Any, clock: HostClock | CudaClock, st: StepState) -> Any:
    if not isinstance(clock, HostClock):  # CUDA: the closure's work stays in the optimizer phase

        def untimed(*a: Any, **kw: Any) -> Any:
            st.closure_calls += 1
            st.in_closure = True
            try:
                return closure(*a, **kw)
            finally:
                st.in_closure = False

        return untimed

    def timed(*a: Any, **kw: Any) -> Any:
        st.closure_calls += 1
        clock.closure_begin()
        try:
            return closure(*a, **kw)
        finally:
            clock.closure_end()

    return timed


def closure_notes(closure_used: bool, host_clock: bool) -> list[str]:
    """The epoch block's line saying where a closure's forward and backward were counted."""
    if not closure_used:
        return []
    inside = "timed as forward and backward" if host_clock else "in the optimizer phase (CUDA)"
    return [
        f"the optimizer takes a closure: forward and backward inside step(closure) {inside}, one step per step() call"
    ]
