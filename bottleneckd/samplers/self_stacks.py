"""The training process's own stacks, sampled from a thread inside it (``sys._current_frames``):
what ``watch()`` uses when no sidecar runs, so the in-process diagnosis names the code too.

At a low rate (SELF_RATE_HZ) a daemon thread reads the training thread's frames, turns them into
the frame records py-spy gives (innermost first: function, file, line), classifies the stack with
``stack_frames.classify_frames`` and counts it by the user's innermost frame (``code_sites``).
Reading frames takes the GIL for a few microseconds per sample; ``scripts/bench_self_stacks.py``
measures the cost on a training step. DataLoader workers are other processes: with py-spy
installed they are dumped in turn (``stacks.StackSampler`` does it), otherwise the data stage's
code in workers is not named (said in the report as no attribution).
"""

from __future__ import annotations

import sys
import threading
from types import FrameType

from bottleneckd.model.code import MAIN, StackCounts
from bottleneckd.model.resources import Phase
from bottleneckd.samplers.code_sites import StackTally, data_draws, user_site
from bottleneckd.samplers.stack_frames import STARTUP, classify_frames

#: stack samples per second: 5 Hz gives 300 samples in a minute (a share of 20% is then known
#: within +-5 points at 95%) and its cost on the step is below what scripts/bench_self_stacks.py
#: can resolve
SELF_RATE_HZ = 5.0
#: frames read per sample (a deeper stack is cut at its outermost end: the site is the innermost)
MAX_DEPTH = 128


def frame_records(frame: FrameType | None, depth: int = MAX_DEPTH) -> list[dict]:
    """The stack from ``frame`` outwards as py-spy's JSON frames (name, filename, line)."""
    out: list[dict] = []
    while frame is not None and len(out) < depth:
        code = frame.f_code
        out.append(
            {
                "name": getattr(code, "co_qualname", code.co_name),  # Class.method as py-spy names it (3.11+)
                "filename": code.co_filename,
                "line": frame.f_lineno or 0,
            }
        )
        frame = frame.f_back
    return out


class SelfStackSampler:
    """Samples one thread of this process (the training thread: by default the one constructing
    it) at ``rate_hz``."""

    def __init__(self, thread_id: int | None = None, rate_hz: float = SELF_RATE_HZ) -> None:
        self.thread_id: int = threading.get_ident() if thread_id is None else thread_id
        self.interval = 1.0 / rate_hz
        self.tally = StackTally("self", rate_hz)
        self.samples_total = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample_once(self) -> None:
        frame = sys._current_frames().get(self.thread_id)  # noqa: SLF001 - the documented way to read another thread's stack
        if frame is None:
            return
        frames = frame_records(frame)
        del frame  # no reference to the training thread's frames is kept
        phase = classify_frames(frames)
        if phase == STARTUP:
            return
        site = user_site(frames)
        self.tally.add(phase, MAIN, site, data_draws(frames, site) if phase == Phase.DATA_WAIT else (None, False))
        self.samples_total += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sample_once()
            except Exception:  # noqa: BLE001 - a sampling failure loses one sample, never the job
                continue

    def start(self) -> SelfStackSampler:
        self._thread = threading.Thread(target=self._run, name="bottleneckd-self-stacks", daemon=True)
        self._thread.start()
        return self

    def drain(self) -> StackCounts | None:
        return self.tally.drain()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
