"""Whether a stack of the data stage is in random augmentation: code that draws random numbers for
each sample, whose output a cache would freeze.

Caching the data stage's output (the knowledge base's ``cache_preprocessing``) keeps training the
same only for deterministic preprocessing (decoding, tokenizing, resizing): a cached random crop is
the same crop every epoch, an augmentation no more. So a performance engineer reads the code the
loader spends its time in before choosing between caching it and making it cheaper. This module
does that reading for one stack (frames innermost first, as py-spy gives them), from two signs:

- a frame of a random transform of a known augmentation library, by its qualified name
  (torchvision's ``RandomResizedCrop.forward``, ``ColorJitter.forward``, ``RandAugment.forward``;
  any frame of albumentations' or kornia's augmentation modules), or of the standard library's
  ``random.py``;
- the user's innermost function (the code site), read from its file here, calling a random number
  generator (``random.``, ``np.random.``, ``torch.rand*``, a ``Generator``'s or ``rng``'s draws).

True when either sign is present; False when the user's function was read and neither is; None
when the function cannot be read here (a trace replayed on another machine: unknown, not False).
A generator seeded by the sample's index (``np.random.default_rng(i)``) makes a function
deterministic per sample although it draws random numbers: it is read as random, and the advice
says that caching stays exact for such code.
"""

from __future__ import annotations

import functools
import inspect
import linecache
import re
from tokenize import TokenError

#: qualified names of random transforms (the class before ``.forward`` / ``.__call__``): torchvision's
#: transforms v1 and v2 (Random*, the automatic augmentation policies, jitter and blur with random
#: parameters), timm's and the common ones of other libraries
RANDOM_TRANSFORM = re.compile(
    r"(^|\.)(Random\w*|RandAugment|AutoAugment|TrivialAugmentWide|AugMix|ColorJitter|GaussianBlur|"
    r"ElasticTransform|RandomErasing|Mixup|CutMix|RandomMixup|RandomCutmix|SpecAugment|FrequencyMasking|"
    r"TimeMasking)\.(forward|__call__|_transform|get_params|make_params)$"
)
#: file path fragments of modules that are random augmentation as a whole
RANDOM_MODULES = ("/albumentations/", "/kornia/augmentation/", "/audiomentations/", "/nlpaug/")
#: the standard library's random module (``random.random()``, ``random.choice`` run Python frames here)
STDLIB_RANDOM = re.compile(r"/lib(64)?/python3[^/]*/random\.py$")
#: a call that draws random numbers, in a line of the user's code (comments removed first)
RANDOM_CALL = re.compile(
    r"\brandom\.\w+\s*\("  # the standard library's module, numpy's (np.random.x(...)), a Random instance
    r"|\bnp\.random\b|\bnumpy\.random\b|\bdefault_rng\s*\(|\bRandomState\s*\("
    r"|\btorch\.(rand|randn|randint|randperm|rand_like|randn_like|randint_like|bernoulli|multinomial|normal|"
    r"poisson)\s*\("
    r"|\.(uniform|normal|integers|choice|shuffle|permutation|standard_normal|randint|rand|randn|binomial|"
    r"poisson|beta|gamma|exponential|bernoulli_|uniform_|normal_|random_|exponential_)\s*\("
    r"|\b(Random\w*|RandAugment|AutoAugment|TrivialAugmentWide|AugMix|ColorJitter|GaussianBlur)\s*\("
)
#: lines read above a site for its ``def`` (a function longer than this is read from this far up)
MAX_FUNCTION_LINES = 400


def frame_draws(frame: dict) -> bool:
    """One frame is in a random transform of a known library or the standard library's random."""
    name = str(frame.get("name") or "")
    path = str(frame.get("filename") or "").replace("\\", "/")
    return (
        bool(RANDOM_TRANSFORM.search(name))
        or any(m in path for m in RANDOM_MODULES)
        or bool(STDLIB_RANDOM.search(path))
    )


@functools.lru_cache(maxsize=1024)
def function_draws(path: str, line: int) -> bool | None:
    """The function around ``path:line`` calls a random number generator; None when the file
    cannot be read here. Cached: a site is read once (the sampler sees the same few sites)."""
    lines = linecache.getlines(path)
    if not lines or not 0 < line <= len(lines):
        return None
    start = _def_line(lines, line - 1)
    if start is None:  # module-level code: the line alone
        return bool(RANDOM_CALL.search(_code(lines[line - 1])))
    try:
        block = inspect.getblock(lines[start:])
    except (IndentationError, SyntaxError, TokenError):
        block = lines[start:line]
    return any(RANDOM_CALL.search(_code(s)) for s in _own_lines(block))


def stack_draws(frames: list[dict], site_path: str | None, site_line: int) -> bool | None:
    """The stack (frames innermost first) draws random numbers for the sample: a random transform
    on it, or the user's innermost function (``site_path:site_line``) calling a generator."""
    if any(frame_draws(f) for f in frames):
        return True
    if not site_path or site_line <= 0:
        return None
    return function_draws(site_path, site_line)


def _def_line(lines: list[str], k: int) -> int | None:
    """Index of the ``def`` line of the function holding line index ``k`` (the nearest less
    indented ``def`` above it), or None at module level."""
    indent = _indent(lines[k])
    for j in range(k, max(-1, k - MAX_FUNCTION_LINES), -1):
        s = lines[j]
        if not s.strip() or s.lstrip().startswith("#"):
            continue
        ind = _indent(s)
        if re.match(r"\s*(async\s+)?def\s", s) and (ind < indent or j == k):
            return j
        if ind < indent:  # a less indented statement that is not a def (a class, an if): its block holds k
            indent = ind
    return None


def _own_lines(block: list[str]) -> list[str]:
    """A function's lines without those of the functions defined inside it (a nested helper's draw
    is the helper's; its own stack frame names it when it runs)."""
    out: list[str] = []
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
        out.append(s)
    return out


def _indent(s: str) -> int:
    return len(s) - len(s.lstrip())


def _code(s: str) -> str:
    """The line without its comment (a ``#`` inside a string is rare enough in a draw's line)."""
    return s.split("#", 1)[0]
