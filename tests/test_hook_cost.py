"""The hook's per-step cost in counts, not timings (issue 23): what the step path keeps in memory
between two reports and how many functions it calls, through the real entry points (the timed
iterator, the forward wrapper, torch's optimizer step hooks) on a null step, so that nothing but
our work is counted. Figures and the command behind the limits: docs/measurements.md
(``python scripts/bench_hook_counts.py``)."""

from __future__ import annotations

import gc
import sys

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from bottleneckd.torch import watch  # noqa: E402

#: memory blocks the watched step path may keep per step between two reports, beyond the bare
#: loop's. Measured 0.00-0.03 after issue 23 (each finished step is 9 doubles in one array); the
#: step records before it kept 6.8 blocks per step (a frozen dataclass, a tuple and a list of
#: floats per step until the report). The tolerance covers the array's and the dicts' growth.
MAX_BLOCKS_PER_STEP = 0.25
#: gen-0 collections per step with the collector's threshold at 1, watched minus bare, with a
#: report every REPORT_STEPS steps: a collection starts whenever two container objects (tuples,
#: lists, dicts...) made since the last one are alive at once, so this counts the container
#: objects the step path and its share of the report make, exactly and repeatably (not a timing).
#: Measured with ``python scripts/bench_hook_counts.py`` (its ``gen-0 at threshold 1`` column) on
#: the null loop: 2.91 before issue 23, 1.91 with the unboxed step buffer, 1.28 with the report's
#: phase sums taken column by column and the trial history filled a batch at a time. The steps
#: themselves make none (0.00); what remains is the drain's (phases, wall) pair per step. The
#: tolerance is under one container per step.
MAX_GEN0_AT_THRESHOLD_1_PER_STEP = 1.5
REPORT_STEPS = 300  # about the default half second at the overhead benchmark's ~1.5 ms step
#: Python-level calls our step path adds per step (loader, forward wrapper, optimizer hooks and
#: the report's per-step share). Measured 9.3 with the hot path (hot_path.py: the timed iterator,
#: its fetch, the forward wrapper with torch.compiler.is_compiling's two frames, the two step hooks
#: and the report's share), 24 before it (40 before issue 23, 27 with torch.compiler's disable
#: wrappers eagerly in the forward, 25 with the trial history fed one step at a time).
MAX_PY_CALLS_PER_STEP = 11
#: the same on the null step with the default overhead budget (sampling.py: the least share of the
#: steps timed, 2.5%; an untimed step runs the timed iterator's ``__next__`` alone). Measured 1.7
#: with 5% timed (3.6 when an untimed step also ran the fetch closure and a counting post-hook).
MAX_PY_CALLS_PER_SAMPLED_STEP = 2.5


class _Null(nn.Module):
    def forward(self, x):  # noqa: ANN001, ANN201
        return x


class _NullOptimizer(torch.optim.Optimizer):
    """A step that does nothing, through torch's step-hook machinery."""

    def __init__(self, params) -> None:  # noqa: ANN001
        super().__init__(params, {})

    def step(self, closure=None):  # noqa: ANN001, ANN201
        return None


def _loop(n: int):
    model, opt = _Null(), _NullOptimizer([nn.Parameter(torch.zeros(1))])
    data = [(torch.zeros(4, 1), None)] * (4 * n + 100)

    def steps(it, k: int) -> None:
        for _ in range(k):
            xb, _ = next(it)
            model(xb)
            opt.step()

    return model, opt, data, steps


def _watched(model, opt, data, budget: float | None | str = None):  # noqa: ANN001, ANN202
    """``budget=None``: every step timed (the hot path's cost); the default budget samples the
    null step's steps (sampling.py: MIN_TIMED_SHARE of them timed)."""
    return watch(
        model,
        opt,
        data,
        local_sampling=False,  # no sampling thread allocating beside the loop
        socket_path="/nonexistent/hookcost.sock",
        print_epoch=False,
        roofline_step=None,
        report_every=1e12,  # no report inside the measured steps
        overhead_budget=budget,
    )


def _blocks_per_step(steps, it, n: int, settle: int = 50) -> float:
    steps(it, settle)  # settle: inline caches, first-step facts
    gc.collect()
    gc.disable()  # a collection inside the window would free blocks that are not ours
    try:
        b0 = sys.getallocatedblocks()
        steps(it, n)
        b1 = sys.getallocatedblocks()
    finally:
        gc.enable()
    return (b1 - b0) / n


def test_the_step_path_keeps_no_object_per_step_between_reports():
    n = 2000
    model, opt, data, steps = _loop(n)
    bare = _blocks_per_step(steps, iter(data), n)
    w = _watched(model, opt, data)
    try:
        it = iter(w.dataloader)
        watched = _blocks_per_step(steps, it, n)
        assert w.steps >= n and len(w.clock.buf) == 9 * (n + 50)  # every step timed, none reported yet
        w.flush()
    finally:
        w.close()
    assert watched - bare <= MAX_BLOCKS_PER_STEP, f"{watched - bare:.3f} blocks kept per step (bare {bare:.3f})"


def test_sampled_steps_keep_no_object_per_step_and_count_every_step():
    """The default budget on the null step: a window of timed steps, then rests of untimed ones
    (sampling.py); settled until the trial history (256 timed steps) is full."""
    n = 2000
    model, opt, data, steps = _loop(3 * n)
    bare = _blocks_per_step(steps, iter(data), n)
    w = _watched(model, opt, data, budget="env")
    try:
        it = iter(w.dataloader)
        sampled = _blocks_per_step(steps, it, n, settle=2 * n)
        assert w.steps == 3 * n - 1  # every step counted, timed or not, but the one under way (no fetch has ended it)
        w.flush()
        assert w.facts["timed_step_share"] < 0.2  # most were not timed
    finally:
        w.close()
    assert sampled - bare <= MAX_BLOCKS_PER_STEP, f"{sampled - bare:.3f} blocks kept per step (bare {bare:.3f})"


@pytest.mark.parametrize(
    ("budget", "limit"),
    [(None, MAX_PY_CALLS_PER_STEP), ("env", MAX_PY_CALLS_PER_SAMPLED_STEP)],
    ids=["timed", "sampled"],
)
def test_the_step_path_calls_few_functions(budget: float | None | str, limit: float):
    n = 2000  # several windows and rests of the sampled path
    model, opt, data, steps = _loop(n)

    def calls_per_step(it, flush=None) -> float:  # noqa: ANN001
        steps(it, 20)
        count = [0]

        def prof(frame, event, arg) -> None:  # noqa: ANN001
            if event == "call":
                count[0] += 1

        sys.setprofile(prof)
        try:
            steps(it, n)
            if flush is not None:
                flush()  # the report's share: its work per step drained
        finally:
            sys.setprofile(None)
        return count[0] / n

    bare = calls_per_step(iter(data))
    w = _watched(model, opt, data, budget)
    try:
        it = iter(w.dataloader)
        w.flush()
        watched = calls_per_step(it, w.flush)
        assert w.steps >= n
    finally:
        w.close()
    assert watched - bare <= limit, f"{watched - bare:.1f} Python calls per step added"


def _gen0_at_threshold_1(steps, it, n: int, flush=None) -> float:  # noqa: ANN001
    """Gen-0 collections per step with the threshold at 1 (see MAX_GEN0_AT_THRESHOLD_1_PER_STEP)."""
    steps(it, 50)
    if flush is not None:
        flush()
    count = [0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 0:
            count[0] += 1

    old = gc.get_threshold()
    gc.collect()
    gc.callbacks.append(on_gc)
    gc.set_threshold(1, 1 << 30, 1 << 30)  # older generations never: only gen-0 starts are counted
    try:
        for _ in range(n // REPORT_STEPS):
            steps(it, REPORT_STEPS)
            if flush is not None:
                flush()
    finally:
        gc.set_threshold(*old)
        gc.callbacks.remove(on_gc)
    return count[0] / n


def test_the_step_path_and_its_report_make_few_container_objects():
    n = 2 * REPORT_STEPS
    model, opt, data, steps = _loop(n)
    bare = _gen0_at_threshold_1(steps, iter(data), n)
    w = _watched(model, opt, data)
    try:
        watched = _gen0_at_threshold_1(steps, iter(w.dataloader), n, w.flush)
        assert w.steps >= n and len(w.trials.history) == w.trials.history.maxlen  # every step reported
    finally:
        w.close()
    added = watched - bare
    assert added <= MAX_GEN0_AT_THRESHOLD_1_PER_STEP, f"{added:.2f} gen-0 collections per step added (bare {bare:.2f})"


# --- the A/B benchmark's rules (scripts/ab_stats.py, scripts/bench_watcher.py --only overhead) ---------
def _script(name: str):  # noqa: ANN202
    import importlib.util
    from pathlib import Path

    scripts = Path(__file__).resolve().parents[1] / "scripts"
    if str(scripts) not in sys.path:
        sys.path.insert(0, str(scripts))
    spec = importlib.util.spec_from_file_location(name, scripts / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_a_wall_clock_figure_is_refused_when_the_load_moved_and_the_median_has_a_bootstrap_interval():
    ab = _script("ab_stats")
    assert ab.LoadCheck(0.2, 0.2 + ab.LOAD_CHANGE_REFUSE).refused is None
    assert "went from 0.20 to 0.80" in ab.LoadCheck(0.2, 0.8).refused
    assert ab.LoadCheck(None, 3.0).refused is None  # no load average: nothing to compare
    # the benchmark's own thread for 150 s raises the load by 1 - exp(-2.5) = 0.92 by itself
    ran = ab.LoadCheck(0.3, 1.2, own=1.0, seconds=150.0)
    assert ran.refused is None and "0.92 of the rise the benchmark's own" in ran.lines()[0]
    assert "other processes' part" in ab.LoadCheck(0.3, 1.9, own=1.0, seconds=150.0).refused
    # a start that was the residue of an earlier load decays away: not other processes leaving
    residue = ab.LoadCheck(0.64, 0.98, own=1.0, seconds=181.0)
    assert residue.refused is None and abs(residue.others) < 0.05
    assert ab.LoadCheck(1.5, 0.3, own=0.0, seconds=120.0).refused is None  # a quiet run after a busy start
    # a fall faster than the decay allows, or a run too short to tell: refused as before
    assert ab.LoadCheck(1.0, 0.4, own=1.0, seconds=3.0).refused is not None
    # two other runnable threads for the first 60 s of a 120 s run, then none: 2.0 -> 1.6
    assert ab.LoadCheck(2.0, 1.6, own=1.0, seconds=120.0).refused is not None
    assert any("not quiet" in line for line in ab.LoadCheck(3.0, 3.1).lines())
    diffs = [float(k) for k in range(1, 12)] + [1000.0]
    lo, hi = ab.bootstrap_median_ci(diffs)
    assert lo <= 6.5 <= hi and hi < 1000.0  # the median's interval, not the mean's: the outlier does not drag it
    lines = ab.PairedAB([1.0, 1.0, 1.0, 1.0], [1.1, 1.2, 1.1, 1.3]).lines()
    assert "95% CI" in lines[1] and "low tails" in lines[3]


def test_the_overhead_benchmark_reports_no_figure_when_the_load_changed(monkeypatch, capsys):
    bw = _script("bench_watcher")
    loads = iter([0.2, 1.9])  # at start, at end
    monkeypatch.setattr(bw, "load1", lambda: next(loads))
    monkeypatch.setattr(bw, "own_work", lambda device="cpu": 1e-6)
    assert bw.overhead(blocks=2, steps=3, settle=1) == 3
    out = capsys.readouterr().out
    assert "load average (1 min): 0.20 at start, 1.90 at end" in out and "A/B NOT REPORTED" in out
    assert "per pair: median" not in out
    loads = iter([0.2, 0.3])
    monkeypatch.setattr(bw, "load1", lambda: next(loads))
    assert bw.overhead(blocks=2, steps=3, settle=1) == 0
    out = capsys.readouterr().out
    assert "watched minus bare, per pair: median" in out and "95% CI" in out and "low tails" in out


def test_a_plain_loop_takes_the_hot_path_and_leaves_it_when_something_needs_the_full_one():
    """hot_path.py: after the first steps a plain loop's steps take the fast path (its marks and
    counts match the full path's: the rest of this suite runs on it); a mitigation applied, a
    public mark, autocast switched on and a second batch before the optimizer step each send the
    next step to the full path, which takes it back when nothing is left that needs it."""
    from bottleneckd.torch.hot_path import PLAIN

    n = 40
    model, opt, data, steps = _loop(n)
    w = _watched(model, opt, data)
    try:
        it = iter(w.dataloader)
        steps(it, 5)
        assert w.hot[PLAIN] == 1 and w.steps == 5
        w.mark("forward_end")  # a framework's own mark
        assert w.hot[PLAIN] == 0
        steps(it, 2)
        assert w.hot[PLAIN] == 1
        with torch.autocast("cpu", dtype=torch.bfloat16):
            steps(it, 1)
        assert w.facts["autocast_dtype"] == "bfloat16"  # seen: the step took the full path
        steps(it, 1)
        assert "autocast_dtype" not in w.facts or w.facts["autocast_dtype"] is None
        xb, _ = next(it)
        model(xb)
        xb, _ = next(it)  # accumulation by hand: a second batch before the optimizer step
        assert w.hot[PLAIN] == 0
        model(xb)
        opt.step()
        assert w.steps == 10
        w.apply("channels_last")  # a mitigation applied: the engine changed
        assert w.hot[PLAIN] == 0
    finally:
        w.close()


def test_an_optimizer_whose_step_calls_its_parents_stays_on_the_hot_path(monkeypatch):
    """A subclass whose step() calls super().step() (a custom optimizer, a wrapper), once its parent
    class's step is also hooked (torch hooks each class whose instance was made): the inner step's
    hooks fire inside the outer one's; the outer step is the one counted, and the steps stay fast."""
    from bottleneckd.torch.hot_path import PLAIN

    class Inner(_NullOptimizer):
        pass

    class Outer(Inner):
        def step(self, closure=None):  # noqa: ANN001, ANN201
            return super().step(closure)

    from bottleneckd.torch.watch import Watcher

    full = []  # the full path's optimizer entry point, counted (the hot path's closures bind it when made)
    original = Watcher.full_before_optimizer_step
    monkeypatch.setattr(Watcher, "full_before_optimizer_step", lambda *a: full.append(1) or original(*a))
    Inner([nn.Parameter(torch.zeros(1))])  # its class's step is hooked from now on
    model, data = _Null(), [(torch.zeros(4, 1), None)] * 200
    opt = Outer([nn.Parameter(torch.zeros(1))])
    w = _watched(model, opt, data)
    try:
        it = iter(w.dataloader)
        plain = []
        for _ in range(20):
            xb, _ = next(it)
            model(xb)
            opt.step()
            plain.append(w.hot[PLAIN])
        assert w.steps == 20 and w.optimizer_calls == 20
        assert all(plain[3:]), plain
        assert len(full) <= 4, len(full)  # the first steps' (probing the input), not one a step
    finally:
        w.close()
