"""Which frame of a stack is the user's own code, and the tally of stack samples by (phase, role,
site) that both stack samplers (py-spy, and the process's own frames) drain once per interval.

A frame is the user's when its file is none of: the standard library, an installed package
(site-packages, dist-packages: torch, numpy, ...), bottleneckd itself, or code with no file
(``<frozen ...>``, ``<string>``). The innermost such frame is the site: the function the user
would change (the tokenizer in a collate_fn, the FFT in ``__getitem__``, the metric computed every
step), with the line that was running (for a read, the read call).
"""

from __future__ import annotations

import functools
import linecache
import os
import threading
from collections import Counter

from bottleneckd.model.code import MAX_NAME, MAX_TEXT, CodeSite, Key, StackCounts, fold
from bottleneckd.samplers.random_draws import Reading, library_draws, stack_draws
from bottleneckd.samplers.stack_frames import LOADER_PATH

#: path fragments of code that is not the user's: installed packages and the standard library
#: (``lib/python3.X/``; a virtual environment's packages sit under it too)
LIBRARY_PARTS = ("/site-packages/", "/dist-packages/", "/lib/python3", "/lib64/python3", "/lib/pypy3", "/Lib/")
#: the bottleneckd package, links resolved: ``bottleneckd run`` hands the job this package through a
#: link in its run directory (runtime/job_env.py), so the job's frames name files under the link
_OURS = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep


@functools.lru_cache(maxsize=4096)
def _resolved(path: str) -> str:
    return os.path.realpath(path)


def user_file(path: str) -> bool:
    """The file is the user's own code (see the module docstring)."""
    if not path or path.startswith("<"):
        return False
    p = path.replace("\\", "/")
    if any(part in p for part in LIBRARY_PARTS):
        return False
    return not _resolved(path).startswith(_OURS)


def user_site(frames: list[dict], read_text: bool = True) -> CodeSite | None:
    """The innermost frame of the user's code (frames innermost first, as py-spy gives them), with
    its source line when ``read_text`` and the file is readable here; None when there is none."""
    for f in frames:
        path = f.get("filename") or ""
        if user_file(path):
            line = int(f.get("line") or 0)
            text = linecache.getline(path, line).strip()[:MAX_TEXT] if read_text and line > 0 else ""
            return CodeSite(str(f.get("name") or "?")[:MAX_NAME], path[:MAX_NAME], line, text)
    return None


def data_draws(frames: list[dict], site: CodeSite | None) -> Reading:
    """Whether a data-stage stack draws random numbers for the sample, and whether they are seeded
    by the sample (``random_draws.stack_draws``): the
    frames inside the user's innermost one, and that function's source when the loader called it.
    With no user frame, or only the loop that asked for the batch (a library dataset loading in
    the training process), the library frames are all there is to read
    (``random_draws.library_draws``: unknown unless the batch was being built there): the loop's
    own draws (a diffusion model's noise, a seed) are not the data's."""
    if site is None:
        return library_draws(frames), False
    k = next((k for k, f in enumerate(frames) if (f.get("filename") or "")[:MAX_NAME] == site.file), len(frames))
    # a user frame the loader called is the data's code (a dataset's ``__getitem__``, a ``collate_fn``,
    # a transform); one outside it asked for the batch
    loader = next(
        (j for j in range(k + 1, len(frames)) if LOADER_PATH in (frames[j].get("filename") or "").replace("\\", "/")),
        None,
    )
    if loader is None:
        return library_draws(frames[:k]), False
    # the user's functions between the loader and the site called it (the seed they pass it counts)
    outer = [f for f in frames[k + 1 : loader] if user_file(f.get("filename") or "")]
    callers = tuple((str(f.get("filename")), int(f.get("line") or 0)) for f in outer)
    return stack_draws(frames[:k], site.file, site.line, callers)


class StackTally:
    """Counts of stack samples by (phase, role, site) since the last drain (thread-safe: the
    sampling thread adds, the sidecar's loop drains)."""

    def __init__(self, source: str, rate_hz: float) -> None:
        self.source = source
        self.rate_hz = rate_hz
        self._counts: Counter[Key] = Counter()
        self._lock = threading.Lock()

    def add(self, phase: str, role: str, site: CodeSite | None, draws: Reading = (None, False)) -> None:
        with self._lock:
            self._counts[(phase, role, site, draws[0], bool(draws[0]) and draws[1])] += 1

    def drain(self) -> StackCounts | None:
        """The counts since the last drain (None when nothing was sampled), within MAX_ROWS rows
        (``model.code.fold``)."""
        with self._lock:
            counts, self._counts = self._counts, Counter()
        return StackCounts(self.source, self.rate_hz, fold(counts)) if counts else None
