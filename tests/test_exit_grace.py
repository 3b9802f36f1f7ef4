"""The pause at interpreter exit in a process that used torch.distributed while we were installed
(torch/collectives.py, EXIT_GRACE_SECONDS): registered once with atexit by the first watcher,
and acting only where a collective ran or a DDP model was made (pytorch/pytorch#190489: a
communication thread dropping Python-owned tensors while the interpreter finalizes aborts the
process)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from bottleneckd.torch import collectives  # noqa: E402


class _Watcher:
    """What wrap_collectives reads of a watcher (weakly referenced, as a real one)."""

    def __init__(self) -> None:
        self.facts: dict = {}
        self.model = None
        self.enabled = True


def test_the_first_watcher_registers_the_pause_once(monkeypatch: pytest.MonkeyPatch):
    registered: list = []
    monkeypatch.setattr(collectives, "_exit_grace_registered", False)
    monkeypatch.setattr(collectives.atexit, "register", registered.append)
    regs = [collectives.wrap_collectives(w) for w in (_Watcher(), _Watcher())]
    try:
        assert registered == [collectives._exit_grace]
    finally:
        for r in regs:
            r.remove()


@pytest.mark.parametrize("used", [False, True])
def test_the_pause_acts_only_where_distributed_was_used(monkeypatch: pytest.MonkeyPatch, used: bool):
    slept: list[float] = []
    monkeypatch.setattr(collectives.time, "sleep", slept.append)
    monkeypatch.setattr(collectives, "_used", used)
    collectives._exit_grace()  # no process group in this test process
    assert slept == ([collectives.EXIT_GRACE_SECONDS] if used else [])


def test_a_collective_called_through_our_wrapper_marks_the_process(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(collectives, "_used", False)
    assert collectives._wrap(lambda x: x + 1)(1) == 2  # no watcher: the original runs untimed
    assert collectives._used
