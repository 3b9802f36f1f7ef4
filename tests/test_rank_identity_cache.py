"""The rank identity each report carries (torch/collectives.py): read from the launcher's
environment once, not at every report (issue 23: a copy of the environment cost ~190 us a report
on the training thread), and read again after IDENTITY_REREAD_S, for another device, and for a
new watcher."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from bottleneckd.torch import collectives  # noqa: E402
from bottleneckd.torch.collectives import RankIdentityCache  # noqa: E402

CPU = torch.device("cpu")


def test_the_identity_is_reused_until_it_is_due_to_be_read_again(monkeypatch: pytest.MonkeyPatch):
    clock = [1000.0]
    monkeypatch.setattr(collectives.time, "monotonic", lambda: clock[0])
    monkeypatch.setenv("RANK", "2")
    cache = RankIdentityCache()
    first = cache.get(CPU)
    assert first.rank == 2
    monkeypatch.setenv("RANK", "3")
    clock[0] += collectives.IDENTITY_REREAD_S - 0.5
    assert cache.get(CPU) is first  # within the time: not read again
    clock[0] += 1.0
    assert cache.get(CPU).rank == 3  # past it: the launcher's new value


def test_forget_and_another_device_read_it_again(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RANK", "1")
    cache = RankIdentityCache()
    assert cache.get(CPU).rank == 1
    monkeypatch.setenv("RANK", "4")
    assert cache.get(None).rank == 4  # another device
    monkeypatch.setenv("RANK", "5")
    cache.forget()
    assert cache.get(None).rank == 5


def test_a_new_watcher_reports_the_environment_it_starts_in(monkeypatch: pytest.MonkeyPatch):
    from bottleneckd.torch import watch

    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    idents = []
    for rank in ("6", "7"):
        monkeypatch.setenv("RANK", rank)
        monkeypatch.setenv("WORLD_SIZE", "8")
        w = watch(model, opt, local_sampling=False, socket_path="/nonexistent/x.sock", print_epoch=False)
        sent: list = []
        w.transport.send = sent.append
        try:
            for _ in range(3):
                opt.zero_grad()
                model(torch.randn(8, 4)).sum().backward()
                opt.step()
            w.flush()
        finally:
            w.close()
        idents.append(sent[-1].identity.rank)
    assert idents == [6, 7]
