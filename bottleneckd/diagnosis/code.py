"""Name the code: the bottleneck's stage attributed to the user's own functions.

Stack samples (``model/code.py``) accumulate over the run in a ``CodeProfile`` (bounded: the
MAX_SITES most-seen sites per phase and role). ``attribute`` answers "where does this stage's
time go in my code": of the stack samples taken in the stage's phases, the share whose innermost
user frame is in each function, for the top few, each with its most-seen line. A stack with no
user frame (only torch or library code ran) counts in the stage's samples but names no function,
so shares are of the stage, not of the named code.

For the data stage the DataLoader workers' samples are used when there are any: with workers the
training process only waits on the loader's queue, and the code that makes the batches runs in
the workers. Shares of a stack sample count are proportions with an uncertainty: fewer than
MIN_STAGE_SAMPLES samples name only a function that holds most of them beyond doubt
(DOMINANT_SHARE_LOW).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from bottleneckd.model.code import MAIN, WORKER, CodeSite, StackCounts
from bottleneckd.model.resources import PHASES, Stage

#: stack samples in the stage before a share is stated: at 10 samples a share of 50% is known
#: within +-31 points at 95% (Wilson interval), enough to name the function that holds most of it
MIN_STAGE_SAMPLES = 10
#: below MIN_STAGE_SAMPLES a function is still named when it holds most of the stage beyond doubt:
#: the 95% Wilson interval of its share wholly above this (4 of 4 samples: low 0.51; 7 of 8: 0.53;
#: 3 of 3: 0.44, not named). A short job sampled at 1 Hz has few samples of any stage (python_heavy
#: under ``bottleneckd run``, ~20 s: 8 of its other stage, in one function, which named nothing)
DOMINANT_SHARE_LOW = 0.5
#: a function below this share of the stage is not named (sampling noise at ~1 Hz over a minute)
MIN_SITE_SHARE = 0.05
#: nor one seen in fewer stack samples: a single sample is where the thread happened to be once
MIN_SITE_SAMPLES = 2
#: functions named for a stage
TOP_SITES = 3
#: distinct sites kept per (phase, role) over the run; the least seen are folded into "no site"
MAX_SITES = 512
#: z for a two-sided 95% interval
Z95 = 1.96


@dataclass(frozen=True)
class CodeShare:
    """One function of the user's and its share of the stage's stack samples."""

    function: str
    file: str
    line: int  # the line seen most often in it
    text: str  # that line's source, when it was readable
    share: float
    samples: int
    #: 95% Wilson interval of the share (samples of a stage are a proportion)
    low: float
    high: float

    @property
    def where(self) -> str:
        return CodeSite(self.function, self.file, self.line).where


@dataclass(frozen=True)
class CodeAttribution:
    stage: Stage
    role: str  # MAIN or WORKER: which process's samples these are
    samples: int  # stack samples in the stage (the shares' denominator)
    source: str  # py-spy | self
    sites: tuple[CodeShare, ...]
    #: share of the stage's samples with no user frame at all (library code only)
    library_share: float

    def evidence(self) -> str:
        """One line for the verdict's evidence."""
        who = " in the DataLoader workers" if self.role == WORKER else ""
        of = f"the {self.stage} stage's {self.samples} stack samples ({self.source})"
        if not self.sites:
            lib = f"{self.library_share:.0%} of them ran library code only (torch, the standard library, packages)"
            return f"code{who}: no function of yours holds {MIN_SITE_SHARE:.0%} of {of}; {lib}"
        named = ", ".join(f"{s.where} {s.share:.0%}" + (f" [{s.text}]" if s.text else "") for s in self.sites)
        return f"code{who}: {named} of {of}"


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n (n > 0)."""
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


class CodeProfile:
    """Stack samples by (phase, role, site) over the run. Written by the pipeline's thread only."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], Counter[CodeSite | None]] = {}
        #: the data stage's stack samples by role and whether they drew random numbers (None: not read)
        self.draws: dict[str, Counter[bool | None]] = {}
        #: of those that drew, by role, how many drew from generators seeded by the sample
        self.seeded: Counter[str] = Counter()
        self.source = ""

    def add(self, c: StackCounts) -> None:
        self.source = c.source
        for r in c.rows:
            if PHASES.get(r.phase) == Stage.DATA:
                self.draws.setdefault(r.role, Counter())[r.draws_random] += r.count
                if r.draws_random and r.seeded:
                    self.seeded[r.role] += r.count
            bucket = self.counts.setdefault((r.phase, r.role), Counter())
            bucket[r.site] += r.count
            if len(bucket) > MAX_SITES:  # fold the least seen site into "no site" (bounded memory)
                (least, n), *_ = sorted(((s, k) for s, k in bucket.items() if s is not None), key=lambda x: x[1])
                del bucket[least]
                bucket[None] += n

    def stage_sites(self, stage: str, role: str = MAIN) -> Counter[CodeSite | None]:
        """The stage's stack samples by site (None: no user frame), of one role."""
        phases = {p for p, s in PHASES.items() if s == stage}
        merged: Counter[CodeSite | None] = Counter()
        for (phase, r), bucket in self.counts.items():
            if r == role and phase in phases:
                merged.update(bucket)
        return merged

    def attribute(self, stage: str, top: int = TOP_SITES) -> CodeAttribution | None:
        """The stage's samples by user function; None when too few were taken in that stage and
        no function holds most of them beyond doubt."""
        roles = (WORKER, MAIN) if stage == Stage.DATA else (MAIN,)
        for role in roles:
            merged = self.stage_sites(stage, role)
            n = sum(merged.values())
            if role == WORKER and not any(s is not None for s in merged):
                continue  # no worker ran user code: the main thread's samples say where the stage runs
            if not n:
                continue
            sites = _top(merged, n, top)
            if n < MIN_STAGE_SAMPLES:  # too few for shares: only a function that holds most of them
                sites = tuple(s for s in sites if s.low > DOMINANT_SHARE_LOW)
                if not sites:
                    continue
            source = "py-spy" if role == WORKER else self.source  # workers are other processes: py-spy's
            return CodeAttribution(Stage(stage), role, n, source, sites, merged.get(None, 0) / n)
        return None

    def data_random_share(self) -> float | None:
        """Of the data stage's stack samples read for random draws, the share that drew them (random
        augmentation): the DataLoader workers' when MIN_STAGE_SAMPLES of theirs were read, else the
        main thread's (a loader without workers); None with fewer read in both."""
        role = self._read_role()
        if role is None:
            return None
        c = self.draws[role]
        return c[True] / (c[True] + c[False])

    def data_seeded_share(self) -> float | None:
        """Of the data stage's stack samples that drew random numbers (those ``data_random_share``
        counts), the share whose draws were seeded by the sample (a cache of them is exact): known
        where ``data_random_share`` is (0 where none drew), None where it is not."""
        role = self._read_role()
        if role is None:
            return None
        drew = self.draws[role][True]
        return self.seeded[role] / drew if drew else 0.0

    def _read_role(self) -> str | None:
        """The role whose data-stage stacks were read for draws MIN_STAGE_SAMPLES times or more: the
        workers' before the main thread's."""
        for role in (WORKER, MAIN):
            c = self.draws.get(role, Counter())
            if c[True] + c[False] >= MIN_STAGE_SAMPLES:
                return role
        return None


def _top(merged: Counter[CodeSite | None], n: int, top: int) -> tuple[CodeShare, ...]:
    by_fn: dict[tuple[str, str], Counter[CodeSite]] = {}
    for site, k in merged.items():
        if site is not None:
            by_fn.setdefault((site.function, site.file), Counter())[site] += k
    out = []
    for (fn, file), lines in by_fn.items():
        k = sum(lines.values())
        if k / n < MIN_SITE_SHARE or k < MIN_SITE_SAMPLES:
            continue
        best = lines.most_common(1)[0][0]
        lo, hi = wilson(k, n)
        out.append(CodeShare(fn, file, best.line, best.text, k / n, k, lo, hi))
    out.sort(key=lambda s: -s.samples)
    return tuple(out[:top])
