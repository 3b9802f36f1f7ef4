"""The verdict of a verification trial: blocks of steps with and without a mitigation, taken in
turns (so a drift in the machine's load falls on both), compared with the same statistics as
``bottleneckd compare`` (compare/stats.py): the mitigation is kept only when it is faster at the
stated alpha, and its throughput ratio is reported with a confidence interval."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bottleneckd.compare.stats import Comparison, compare_durations

Block = Sequence[tuple[float, int]]  # (wall seconds, examples) of each step in the block


def seconds_per_item(block: Block) -> float | None:
    """Wall seconds per example over the block (per step when batch sizes are unknown)."""
    wall = sum(w for w, _ in block)
    ex = sum(e for _, e in block)
    n = ex if ex else len(block)
    return wall / n if n and wall > 0 else None


@dataclass(frozen=True)
class BlockVerdict:
    keep: bool
    comparison: Comparison | None
    why: str

    @property
    def ratio(self) -> float | None:
        """Throughput with the mitigation over throughput without it."""
        return None if self.comparison is None else self.comparison.speedup

    @property
    def message(self) -> str:
        c = self.comparison
        if c is None:
            return self.why
        ci = f" ({1 - c.alpha:.0%} CI x{c.ci[0]:.3f} to x{c.ci[1]:.3f})" if c.ci else ""
        blocks = f"{c.a.n + c.a.dropped} blocks without and {c.b.n + c.b.dropped} with"
        return f"throughput x{c.speedup:.3f}{ci} over {blocks}: {self.why}"


def decide(
    without: Sequence[Block], with_: Sequence[Block], alpha: float = 0.05, min_gain: float = 0.0
) -> BlockVerdict:
    """Keep the mitigation only when the blocks with it are faster (one-sided test at ``alpha``)
    and the point estimate of the gain is above ``min_gain``."""
    off = [x for b in without if (x := seconds_per_item(b)) is not None]
    on = [x for b in with_ if (x := seconds_per_item(b)) is not None]
    if len(off) < 2 or len(on) < 2:
        return BlockVerdict(
            False, None, f"too few timed blocks ({len(off)} without, {len(on)} with; 2 each needed): reverted"
        )
    c = compare_durations(off, on, alpha)
    p = "untested" if c.p_value is None else f"one-sided Welch t-test p = {c.p_value:.3g}"
    if c.verdict == "faster" and c.speedup < 1.0 + min_gain:
        return BlockVerdict(
            False, c, f"faster ({p} < alpha {alpha}) but by less than the {min_gain:.0%} minimum gain: reverted"
        )
    if c.verdict == "faster":
        return BlockVerdict(True, c, f"faster with it ({p} < alpha {alpha}): kept")
    if c.verdict == "slower":
        return BlockVerdict(False, c, "slower with it: reverted")
    return BlockVerdict(False, c, f"within noise ({p} >= alpha {alpha}): reverted")
