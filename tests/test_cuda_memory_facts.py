"""The hook's CUDA allocator facts (torch/cuda_memory.py). No GPU here: torch.cuda's statistics calls
are replaced, at the hardware boundary, by what they answer on a GPU (the keys PyTorch documents in
``torch.cuda.memory_stats``); everything from there on is the production code."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from bottleneckd.model.facts import FactBoard  # noqa: E402
from bottleneckd.torch.cuda_memory import FACTS, CudaMemory  # noqa: E402

GIB = 2**30


def _stats(allocated_peak: int, reserved: int, retries: int, ooms: int = 0) -> dict[str, int]:
    return {
        "allocated_bytes.all.current": allocated_peak // 2,
        "allocated_bytes.all.peak": allocated_peak,
        "reserved_bytes.all.current": reserved,
        "num_alloc_retries": retries,
        "num_ooms": ooms,
        "num_sync_all_streams": 0,
    }


@pytest.fixture
def gpu(monkeypatch):
    """torch.cuda answering as on an 80 GiB GPU; a synchronisation would fail the test."""
    state = {"stats": _stats(30 * GIB, 75 * GIB, 0), "reads": 0}

    def memory_stats(device=None):
        state["reads"] += 1
        return dict(state["stats"])

    def no_sync(*a, **k):
        raise AssertionError("the hook must not synchronise")

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "memory_stats", memory_stats)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: SimpleNamespace(total_memory=80 * GIB))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "synchronize", no_sync)
    return state


def test_reserved_allocated_and_retries_per_step_since_the_last_report(gpu):
    m = CudaMemory(torch.device("cuda", 0))
    first = m.facts(steps=10)
    assert first["cuda_memory_total_bytes"] == 80 * GIB
    assert first["cuda_memory_reserved_bytes"] == 75 * GIB and first["cuda_memory_peak_allocated_bytes"] == 30 * GIB
    assert first["cuda_alloc_retries_per_step"] is None  # no previous report
    gpu["stats"] = _stats(78 * GIB, 79 * GIB, retries=12, ooms=1)
    second = m.facts(steps=30)
    assert second["cuda_alloc_retries"] == 12 and second["cuda_alloc_retries_per_step"] == pytest.approx(12 / 20)
    assert second["cuda_ooms"] == 1
    board = FactBoard()
    board.update(second)
    assert board.rejected == 0 and {k for k in FACTS if k in board} == set(FACTS)  # every fact is declared
    assert gpu["reads"] == 2  # once per report


def test_not_on_cuda_or_before_cuda_starts_every_fact_is_unset(gpu, monkeypatch):
    assert set(CudaMemory(torch.device("cpu")).facts(5).values()) == {None}
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    assert set(CudaMemory(torch.device("cuda", 0)).facts(5).values()) == {None}
    assert gpu["reads"] == 0


def test_the_watcher_reports_them_from_its_report_path(gpu):
    """The report path sends them with the step phases, read once per report, not per step."""
    from bottleneckd.torch.watch import Watcher

    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = Watcher(model, opt, print_epoch=False, local_sampling=False, report_every=3600.0)
    w._cuda_memory = CudaMemory(torch.device("cuda", 0))  # the model's device, as on a GPU
    try:
        for _ in range(6):
            model(torch.randn(8, 4)).sum().backward()
            opt.step()
            opt.zero_grad()
        assert gpu["reads"] == 0  # no report yet: nothing read per step
        w.flush()
        assert w.enabled and w.steps == 6 and w.facts.get("cuda_memory_reserved_bytes") == 75 * GIB
        assert gpu["reads"] == 1
    finally:
        w.close()


@pytest.mark.parametrize(
    ("env", "on"),
    [
        ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, True),
        ({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128, expandable_segments:True"}, True),
        ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:true"}, False),  # c10 accepts only True/False
        ({"PYTORCH_ALLOC_CONF": "max_split_size_mb:64", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, False),
        ({"PYTORCH_ALLOC_CONF": "expandable_segments:True"}, True),
        ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}, False),
        ({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128"}, False),
        ({}, False),
    ],
)
def test_expandable_segments_are_read_from_the_allocators_environment(env, on):
    from bottleneckd.torch.cuda_memory import expandable_segments

    assert expandable_segments(env) is on
