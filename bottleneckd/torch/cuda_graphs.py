"""CUDA graphs: work the hooks cannot see one operator at a time.

A replayed graph launches its kernels with no Python and no hook: a training step captured whole
(``with torch.cuda.graph(g): loss = model(x); loss.backward(); opt.step()`` then ``g.replay()``, the
"whole network capture" of PyTorch's CUDA-graph notes) fires neither our forward wrapper nor the
optimizer's step hooks, and was timed as nothing. While a CUDA watcher is installed,
``CUDAGraph.capture_begin``, ``capture_end`` and ``replay`` are wrapped (restored when the last one
goes):

- during a capture our instrumentation records nothing on the GPU (an event recorded inside the
  capture would become part of the graph, and an event query during a global-mode capture would
  invalidate the user's capture) and the step the capture runs is not counted; an optimizer step
  seen during the capture marks the graph as a whole step;
- each replay of a whole-step graph is one step, timed with the clock's marks around the replay:
  the data wait and the copy into the graph's static inputs before it are timed as usual, the
  replay itself as ``forward`` (forward, backward and the optimizer cannot be told apart inside a
  graph: said in the epoch block);
- graphs replayed inside a step (``torch.compile(mode="reduce-overhead")``,
  ``make_graphed_callables``) run between our marks, which time the step as usual.

The fact ``cuda_graphs`` ("whole step" | "within step") tells the diagnosis that the kernels are
launched from a graph: no per-kernel launch cost on the host (the launch-bound reasoning).
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import Any

_STEP = "_bottleneckd_whole_step"
WHOLE, WITHIN = "whole step", "within step"


class _State:
    capturing: Any = None  # the graph being captured, None when none is


STATE = _State()
_watchers: weakref.WeakSet[Any] = weakref.WeakSet()
_saved: dict[str, Any] = {}
_cls: Any = None
_lock = threading.Lock()


def capturing() -> bool:
    return STATE.capturing is not None


def captured_a_step() -> None:
    """An optimizer step ran inside the capture: the graph is a whole training step."""
    g = STATE.capturing
    if g is not None:
        try:
            setattr(g, _STEP, True)
        except Exception:  # noqa: BLE001
            pass


def is_step_graph(graph: Any) -> bool:
    return bool(getattr(graph, _STEP, False))


def register(watcher: Any, graph_cls: Any = None) -> None:
    """Watch CUDA graphs for ``watcher`` (a CUDA job's); ``graph_cls``: tests pass a fake class."""
    global _cls
    with _lock:
        if not _saved:
            cls = graph_cls
            if cls is None:
                import torch

                cls = torch.cuda.CUDAGraph
            _install(cls)
            _cls = cls
        _watchers.add(watcher)


def unregister(watcher: Any) -> None:
    global _cls
    with _lock:
        _watchers.discard(watcher)
        if not _watchers and _saved:
            for name, fn in _saved.items():
                setattr(_cls, name, fn)
            _saved.clear()
            _cls = None
            STATE.capturing = None


def _install(cls: Any) -> None:
    begin, end, replay = cls.capture_begin, cls.capture_end, cls.replay
    _saved.update({"capture_begin": begin, "capture_end": end, "replay": replay})

    @functools.wraps(begin)
    def capture_begin(self: Any, *args: Any, **kwargs: Any) -> Any:
        STATE.capturing = self
        for w in list(_watchers):
            w.unplain()  # nothing is timed while capturing: the watchers' full path knows (hot_path.py)
        try:
            return begin(self, *args, **kwargs)
        except BaseException:
            STATE.capturing = None
            raise

    @functools.wraps(end)
    def capture_end(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return end(self, *args, **kwargs)
        finally:
            STATE.capturing = None

    @functools.wraps(replay)
    def timed_replay(self: Any, *args: Any, **kwargs: Any) -> Any:
        ws = [w for w in list(_watchers) if w.enabled]
        for w in ws:
            w.graph_replay(self, begin=True)
        out = replay(self, *args, **kwargs)
        for w in ws:
            w.graph_replay(self, begin=False)
        return out

    cls.capture_begin, cls.capture_end, cls.replay = capture_begin, capture_end, timed_replay


def replayed(w: Any, graph: Any, begin: bool) -> None:
    """The watcher's side of a replay: a whole-step graph's replay is timed as one step (forward
    from its start to its end), and the fact says which kind of graph the job replays."""
    whole = is_step_graph(graph)
    if begin:
        if whole:
            w.clock.mark("forward_start")
        return
    kind = WHOLE if whole or w.graphs_kind == WHOLE else WITHIN
    if kind != w.graphs_kind:
        w.graphs_kind = w.facts["cuda_graphs"] = kind
    if whole:
        w.clock.mark("forward_end")
        w.clock.mark("optimizer_start")
        w.end_step()


def note(kind: str | None) -> list[str]:
    """The epoch block's line on what cannot be timed."""
    if kind == WHOLE:
        return [
            "CUDA graphs: each replay of the captured step is one step; its time is reported as forward "
            "(forward, backward and optimizer cannot be told apart inside a graph); no kernel launch cost"
        ]
    if kind == WITHIN:
        return ["CUDA graphs replayed inside the step (torch.compile reduce-overhead or graphed callables)"]
    return []
