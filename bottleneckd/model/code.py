"""Stack samples counted by where the user's own code was: the data behind "name the code".

A stack sampler (py-spy under ``run``/``attach``, or the process's own frames under ``watch()``)
classifies each stack into a step phase and keeps the innermost frame of the *user's* code on it
(not torch, not the standard library, not an installed package, not bottleneckd): a
``CodeSite``. One interval's samples are a ``StackCounts``: how many stacks were seen in each
(phase, role, site), where the role is the process that ran it (the training process's main
thread, or a DataLoader worker). The diagnosis attributes the bottleneck's stage to sites from
these counts (``diagnosis/code.py``).

``from_json`` reads traces and is strict: every field is type-checked and bounded, so a hostile
or damaged trace raises ``ValueError`` and changes nothing.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from bottleneckd.model.resources import PHASES, Phase

MAIN = "main"  # the training process's training thread
WORKER = "worker"  # a DataLoader worker process of it (busy: waiting for work is not counted)
ROLES = (MAIN, WORKER)
SOURCES = ("py-spy", "self")  # py-spy from outside, or the process's own frames (sys._current_frames)

#: rows in one interval's counts: each is a distinct (phase, role, site); a training loop has a
#: few dozen at most, so 256 bounds a trace line without losing a real job's sites
MAX_ROWS = 256
MAX_NAME = 200  # characters of a function name or file path kept
MAX_TEXT = 120  # characters of a source line kept
MAX_COUNT = 10**9


@dataclass(frozen=True)
class CodeSite:
    """One line of the user's code: the innermost user frame of a stack."""

    function: str  # qualified name as the sampler gives it ("RandomRecords.__getitem__", "<module>")
    file: str  # the path as the process sees it
    line: int
    text: str = ""  # that source line, stripped, when it was readable where the stack was sampled

    @property
    def where(self) -> str:
        """``function (file.py:line)`` with the file's base name."""
        base = self.file.replace("\\", "/").rsplit("/", 1)[-1]
        fn = "module level" if self.function == "<module>" else self.function
        return f"{fn} ({base}:{self.line})"


@dataclass(frozen=True)
class StackCount:
    phase: Phase
    role: str  # MAIN | WORKER
    site: CodeSite | None  # None: no user frame on the stack (only library code ran)
    count: int
    #: data stage only: the stacks draw random numbers for the sample (random augmentation, which a
    #: cache would freeze: samplers/random_draws.py); None when not read (another stage, no source)
    draws_random: bool | None = None
    #: and those draws come from generators seeded by the sample (samplers/seeded_draws.py): the same
    #: sample every epoch, a cache of it exact
    seeded: bool = False


@dataclass(frozen=True)
class StackCounts:
    """Stack samples of one interval by (phase, role, user site)."""

    source: str  # one of SOURCES, of the main thread's rows (a worker's rows always come from py-spy)
    rate_hz: float  # stack samples per second per process sampled
    rows: tuple[StackCount, ...]

    @property
    def total(self) -> int:
        return sum(r.count for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "rate_hz": self.rate_hz,
            "rows": [
                [r.phase, r.role, None, None, 0, "", r.count, r.draws_random, r.seeded]
                if r.site is None
                else [
                    r.phase,
                    r.role,
                    r.site.function,
                    r.site.file,
                    r.site.line,
                    r.site.text,
                    r.count,
                    r.draws_random,
                    r.seeded,
                ]
                for r in self.rows
            ],
        }

    @staticmethod
    def from_json(d: Any) -> StackCounts:
        """Strict: ValueError naming the field for anything that is not what ``to_json`` writes."""
        if not isinstance(d, dict):
            raise ValueError("stacks: expected an object")
        source, rate, rows = d.get("source"), d.get("rate_hz"), d.get("rows")
        if source not in SOURCES:
            raise ValueError(f"stacks.source: expected one of {', '.join(SOURCES)}")
        if (
            not isinstance(rate, (int, float))
            or isinstance(rate, bool)
            or not (math.isfinite(rate) and 0 < rate <= 1000)
        ):
            raise ValueError("stacks.rate_hz: expected a number in (0, 1000]")
        if not isinstance(rows, list) or len(rows) > MAX_ROWS:
            raise ValueError(f"stacks.rows: expected a list of at most {MAX_ROWS} rows")
        return StackCounts(source, float(rate), tuple(_row(r, k) for k, r in enumerate(rows)))


def _row(r: Any, k: int) -> StackCount:
    where = f"stacks.rows[{k}]"
    if not isinstance(r, list) or len(r) not in (7, 8, 9):  # 7: a trace written before draws_random; 8: before seeded
        raise ValueError(f"{where}: expected [phase, role, function, file, line, text, count, draws_random, seeded]")
    phase, role, fn, file, line, text, count = r[:7]
    draws = r[7] if len(r) >= 8 else None
    if draws is not None and type(draws) is not bool:
        raise ValueError(f"{where}: draws_random must be true, false or null")
    seeded = r[8] if len(r) == 9 else False
    if type(seeded) is not bool or (seeded and draws is not True):
        raise ValueError(f"{where}: seeded must be true (only where draws_random is) or false")
    if phase not in PHASES:
        raise ValueError(f"{where}: unknown phase")
    phase = Phase(phase)
    if role not in ROLES:
        raise ValueError(f"{where}: role must be one of {', '.join(ROLES)}")
    if type(count) is not int or not 0 < count <= MAX_COUNT:
        raise ValueError(f"{where}: count must be a positive integer")
    if fn is None and file is None:
        return StackCount(phase, role, None, count, draws, seeded)
    ok = (
        isinstance(fn, str)
        and isinstance(file, str)
        and 0 < len(fn) <= MAX_NAME
        and 0 < len(file) <= MAX_NAME
        and type(line) is int
        and 0 <= line <= MAX_COUNT
        and isinstance(text, str)
        and len(text) <= MAX_TEXT
    )
    if not ok:
        raise ValueError(f"{where}: expected a function name, a file path, a line number and the line's text")
    return StackCount(phase, role, CodeSite(fn, file, line, text), count, draws, seeded)


#: a row's key: (phase, role, site, draws_random, seeded)
Key = tuple[str, str, CodeSite | None, bool | None, bool]


def fold(counts: Counter[Key]) -> tuple[StackCount, ...]:
    """Rows of (phase, role, site, draws_random, seeded) counts within MAX_ROWS: the most seen half
    kept as they are, the rest folded into their (phase, role, draws_random, seeded) with no site
    (at most len(PHASES) * 2 * 4 more rows)."""
    ranked = counts.most_common()
    kept: Counter[Key] = Counter(dict(ranked[: MAX_ROWS // 2]))
    for (phase, role, _, draws, seeded), n in ranked[MAX_ROWS // 2 :]:
        kept[(phase, role, None, draws, seeded)] += n
    return tuple(
        StackCount(Phase(ph), role, site, n, draws, seeded) for (ph, role, site, draws, seeded), n in kept.items()
    )


def merge_counts(items: list[StackCounts | None]) -> StackCounts | None:
    """Several samplers' counts of one interval as one (the first one's source and rate)."""
    got = [c for c in items if c is not None]
    if len(got) <= 1:
        return got[0] if got else None
    merged: Counter[Key] = Counter()
    for c in got:
        for r in c.rows:
            merged[(r.phase, r.role, r.site, r.draws_random, r.seeded)] += r.count
    return StackCounts(got[0].source, got[0].rate_hz, fold(merged))
