"""Whether a stack of the data stage is in random augmentation: code that draws random numbers for
each sample, whose output a cache would freeze.

Caching the data stage's output (the knowledge base's ``cache_preprocessing``) keeps training the
same only for deterministic preprocessing (decoding, tokenizing, resizing): a cached random crop is
the same crop every epoch, an augmentation no more. So a performance engineer reads the code the
loader spends its time in before choosing between caching it and making it cheaper. This module
does that reading for one stack (frames innermost first, as py-spy gives them), from two signs:

- a frame of a random transform, by its qualified name (``Class.method``, as py-spy and
  ``co_qualname`` give it from Python 3.11): torchvision's ``RandomResizedCrop.forward``,
  ``ColorJitter.forward``, ``RandAugment.forward``, transforms v2's ``_RandomApplyTransform`` and
  ``make_params``; kornia's and albumentations' ``Random*`` and their common flips and dropouts;
  Hugging Face's masking collators; the standard library's ``random.py``;
- the user's innermost function (the code site), read from its file here, calling a random number
  generator (``random.``, ``np.random.``, ``torch.rand*``, a ``Generator``'s or ``rng``'s draws) at
  or before the sampled line: the work before a function's first draw (decoding a file, then
  cropping it at random) is deterministic and a cache keeps it.

True when either sign is present; False when the user's function was read and neither is; None
when it cannot be read here (a trace replayed on another machine, a function longer than
MAX_FUNCTION_LINES above the line): unknown, not False. A generator seeded by the sample's index
(``np.random.default_rng(i)``) makes a function deterministic per sample although it draws random
numbers. It is read as drawing (its time is what cheaper augmentation would cut) and, where every
draw comes from a generator seeded by the function's own arguments (``seeded_draws``) and the user
code that called it from the loader draws no seed at random, as seeded: the same sample every
epoch, so a cache of it is exact. Not seen: a draw through a bare imported name (``from random
import choice``; ``choice(x)``).
"""

from __future__ import annotations

import functools
import inspect
import io
import linecache
import re
import textwrap
import tokenize

from bottleneckd.samplers.seeded_draws import seeded_by_arguments
from bottleneckd.samplers.stack_frames import FETCH_PATH

#: qualified names of random transforms (the class before the method): torchvision's transforms v1
#: and v2 (Random*, the automatic augmentation policies, jitter and blur with random parameters;
#: v2's ``_RandomApplyTransform`` base, ``make_params`` / ``_get_params`` / ``transform``), kornia's
#: and albumentations' Random* and the albumentations transforms applied with a probability that
#: do not say so in their name, mixing, spectrogram masking, and Hugging Face's masking collators
RANDOM_TRANSFORM = re.compile(
    r"(^|\.)(_?Random\w*|RandAugment|AutoAugment|TrivialAugmentWide|AugMix|ColorJitter|ColorJiggle|GaussianBlur|"
    r"ElasticTransform|Mixup|CutMix|SpecAugment|FrequencyMasking|TimeMasking|HorizontalFlip|VerticalFlip|"
    r"ShiftScaleRotate|Affine|GaussNoise|CoarseDropout|OneOf|SomeOf|HueSaturationValue|RGBShift|MotionBlur)"
    r"\.(forward|__call__|_transform|transform|get_params|_get_params|make_params|generate_parameters|apply)$"
    r"|(^|\.)DataCollatorFor(LanguageModeling|WholeWordMask|PermutationLanguageModeling)\.\w*mask_tokens$"
)
#: the standard library's random module (``random.random()``, ``random.choice`` run Python frames here)
STDLIB_RANDOM = re.compile(r"/lib(64)?/python3[^/]*/random\.py$")
#: a call that draws random numbers, in a line of the user's code (comments and strings removed first)
RANDOM_CALL = re.compile(
    r"\brandom\.\w+\s*\("  # the standard library's module, numpy's (np.random.x(...)), a Random instance
    r"|\bnp\.random\b|\bnumpy\.random\b|\bdefault_rng\s*\(|\bRandomState\s*\("
    r"|\btorch\.(rand|randn|randint|randperm|rand_like|randn_like|randint_like|bernoulli|multinomial|normal|"
    r"poisson)\s*\("
    r"|\.(uniform|normal|integers|choice|shuffle|permutation|standard_normal|randint|rand|randn|binomial|"
    r"poisson|beta|gamma|exponential|bernoulli_|uniform_|normal_|random_|exponential_)\s*\("
    r"|\b(Random\w*|RandAugment|AutoAugment|TrivialAugmentWide|AugMix|ColorJitter)\s*\("
)
#: lines read above a site for its ``def``: a function whose ``def`` is further up is not read (None)
MAX_FUNCTION_LINES = 400


def frame_draws(frame: dict) -> bool:
    """One frame is in a random transform of a known library or the standard library's random."""
    name = str(frame.get("name") or "")
    path = str(frame.get("filename") or "").replace("\\", "/")
    return bool(RANDOM_TRANSFORM.search(name)) or bool(STDLIB_RANDOM.search(path))


#: (draws random numbers for the sample, None: not read; every draw seeded by the function's arguments)
Reading = tuple[bool | None, bool]


def library_draws(frames: list[dict]) -> bool | None:
    """A stack with no user function to read: True when a random frame is on it; False only when
    the batch was being built in this thread (PyTorch's fetch on the stack) and the frames' names
    are qualified (``Class.method``: an unqualified ``forward`` cannot say which transform it is);
    else None (a training thread waiting on its workers' queue says nothing of their code)."""
    if any(frame_draws(f) for f in frames):
        return True
    building = any(FETCH_PATH in str(f.get("filename") or "").replace("\\", "/") for f in frames)
    qualified = any("." in str(f.get("name") or "") for f in frames)
    return False if building and qualified else None


def function_draws(path: str, line: int) -> bool | None:
    """The function around ``path:line`` calls a random number generator at or before ``line``;
    None when the file cannot be read here or its ``def`` is too far up."""
    return function_reading(path, line)[0]


@functools.lru_cache(maxsize=1024)
def function_reading(path: str, line: int) -> Reading:
    """Whether the function around ``path:line`` calls a random number generator at or before
    ``line`` (None: not readable here), and whether every such call draws from a generator seeded
    by its parameters (``seeded_draws``). Cached: a site is read once (the sampler sees the same
    few sites)."""
    lines = linecache.getlines(path)
    if not lines or not 0 < line <= len(lines):
        return None, False
    start = _def_line(lines, line - 1)
    if start is None:  # module-level code: the line alone
        return bool(RANDOM_CALL.search(_blank([lines[line - 1]])[0])), False
    if start < 0:
        return None, False
    try:
        block = inspect.getblock(lines[start:])
    except (IndentationError, SyntaxError, tokenize.TokenError):
        block = lines[start:line]
    if not any(RANDOM_CALL.search(s) for k, s in _own_lines(_blank(block)) if start + 1 + k <= line):
        return False, False
    return True, seeded_by_arguments(textwrap.dedent("".join(block)), line - start, RANDOM_CALL)


def stack_draws(
    frames: list[dict], site_path: str | None, site_line: int, callers: tuple[tuple[str, int], ...] = ()
) -> Reading:
    """Whether the stack (frames innermost first) draws random numbers for the sample: a random
    transform on it, or the user's innermost function (``site_path:site_line``) calling a
    generator; and whether those draws are seeded by that function's arguments, its ``callers``
    (the user's functions that called it from the loader, innermost first: path and line) drawing
    none (a seed one of them drew at random makes the sample random again; one not readable here
    leaves it unshown)."""
    if any(frame_draws(f) for f in frames):
        return True, False
    if not site_path or site_line <= 0:
        return None, False
    draws, seeded = function_reading(site_path, site_line)
    return draws, seeded and all(function_draws(p, n) is False for p, n in callers)


def _def_line(lines: list[str], k: int) -> int | None:
    """Index of the ``def`` line of the function holding line index ``k`` (the nearest less
    indented ``def`` above it); None at module level; -1 when none is found within
    MAX_FUNCTION_LINES and the top of the file is further up (not read)."""
    indent = _indent(lines[k])
    lowest = max(-1, k - MAX_FUNCTION_LINES)
    for j in range(k, lowest, -1):
        s = lines[j]
        if not s.strip() or s.lstrip().startswith("#"):
            continue
        ind = _indent(s)
        if re.match(r"\s*(async\s+)?def\s", s) and (ind < indent or j == k):
            return j
        if ind < indent:  # a less indented statement that is not a def (a class, an if): its block holds k
            indent = ind
        if indent == 0:
            return None  # at module level: no def holds the line
    return None if lowest < 0 else -1


def _own_lines(block: list[str]) -> list[tuple[int, str]]:
    """A function's lines (offset in the block, text) without those of the functions defined inside
    it (a nested helper's draw is the helper's; its own stack frame names it when it runs)."""
    out: list[tuple[int, str]] = []
    nested: int | None = None  # indentation of the nested def being skipped
    for k, s in enumerate(block):
        if not s.strip():
            continue
        ind = _indent(s)
        if nested is not None and ind > nested:
            continue
        nested = None
        if k and re.match(r"\s*(async\s+)?def\s", s):
            nested = ind
            continue
        out.append((k, s))
    return out


def _indent(s: str) -> int:
    return len(s) - len(s.lstrip())


def _blank(lines: list[str]) -> list[str]:
    """The lines with their comments and string literals blanked (a docstring naming
    ``random.shuffle()`` is no draw), by Python's tokenizer over the whole block; where it cannot
    tokenize (a fragment), comments are cut at ``#``."""
    text = textwrap.dedent("".join(lines))
    if not text.strip():
        return ["" for _ in lines]
    cut = len(lines[0]) - len(lines[0].lstrip()) - (len(text.splitlines()[0]) - len(text.splitlines()[0].lstrip()))
    rows = [list(r) for r in text.splitlines()]
    try:
        for t in tokenize.generate_tokens(io.StringIO(text).readline):
            if t.type in (tokenize.COMMENT, tokenize.STRING) or t.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                (r0, c0), (r1, c1) = t.start, t.end
                for r in range(r0, r1 + 1):
                    row = rows[r - 1]
                    a, b = (c0 if r == r0 else 0), (c1 if r == r1 else len(row))
                    row[a:b] = " " * (b - a)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [s.split("#", 1)[0] for s in lines]
    return [" " * cut + "".join(r) for r in rows]
