"""Every rank: DDP's communication timed inside backward (real gloo ranks, spawned)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import torch.multiprocessing as mp  # noqa: E402

from bottleneckd.diagnosis.rules.common import COMM_HIGH  # noqa: E402
from bottleneckd.torch.clock_phases import PHASE_KEYS  # noqa: E402
from tests import ddp_workers  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(tmp_path: Path, fn, *args) -> list[dict]:
    mp.spawn(fn, args=(2, _port(), str(tmp_path), *args), nprocs=2, join=True)
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]


@pytest.mark.slow
def test_ddp_all_reduce_inside_backward_is_timed_as_exposed_communication(tmp_path):
    # 2 x 1024-wide layers: 3.2M parameters, 13 MB of gradients per step on gloo, batch 4: the
    # all-reduce dominates the step (the case issue 11 found called cpu_compute)
    ranks = _spawn(tmp_path, ddp_workers.ddp_steps, 1024, 12, False, False)
    for r in ranks:
        f = r["facts"]
        assert f["ddp"] is True and f["world_size"] == 2 and f["comm_backend"] == "gloo"
        assert f["ddp_comm_timing"] == "comm hook"
        assert r["grads_equal"] is True
        share = r["phases"]["communication"] / r["wall"]
        assert share >= COMM_HIGH, r  # enough for the communication rule to weigh it (measured 0.22-0.47 here)
        assert f["comm_seconds_per_step"] >= f["comm_exposed_seconds_per_step"] > 0
        # the phases still add up to the wall time
        assert sum(r["phases"].values()) == pytest.approx(r["wall"], rel=1e-6)


@pytest.mark.slow
def test_no_sync_steps_have_no_communication(tmp_path):
    ranks = _spawn(tmp_path, ddp_workers.ddp_steps, 1024, 8, True, False)
    for r in ranks:
        assert r["facts"]["ddp"] is True
        assert r["phases"]["communication"] == 0.0
        assert "comm_seconds_per_step" not in r["facts"]


@pytest.mark.slow
def test_a_user_comm_hook_registered_later_runs_inside_the_timing_wrapper(tmp_path):
    ranks = _spawn(tmp_path, ddp_workers.ddp_steps, 512, 6, False, True)
    for r in ranks:
        assert r["user_calls"] >= 6  # the user's hook ran every step (one call per bucket)
        assert "only be called once" in r["second_registration"]  # as DDP itself says
        assert r["grads_equal"] is True
        assert r["phases"]["communication"] > 0


@pytest.mark.slow
def test_fsdp_all_gathers_and_reduce_scatters_are_timed_as_communication(tmp_path):
    ranks = _spawn(tmp_path, ddp_workers.fsdp_steps, 512, 6)
    for r in ranks:
        assert r["phases"] is not None, r
        assert r["phases"]["communication"] > 0, r
        assert sum(r["phases"].values()) == pytest.approx(r["wall"], rel=1e-6)


def test_the_cuda_clock_takes_ddp_exposed_communication_as_event_pairs_it_never_reuses():
    """DDP's exposed all-reduce (ddp_comm.py) handed to the CUDA clock as (last bucket ready, last
    bucket done) events: it becomes the communication phase, carved out of backward; the clock
    waits for the done event (another stream) and never pools events it did not make."""
    from bottleneckd.torch.cuda_clock import CudaClock
    from tests.test_gpu_timing import FakeTimeline

    tl = FakeTimeline()
    clock = CudaClock(sample_every=1, event_factory=tl.event)
    clock.mark("step_start")
    clock.mark("data_ready")
    clock.mark("forward_start")
    tl.now += 0.010
    clock.mark("forward_end")
    tl.now += 0.020
    ready = tl.event()
    ready.record()  # the last bucket's gradients are ready here
    done = tl.event()  # its all-reduce completes 15 ms later, on the communication stream
    tl.now += 0.015
    done.record()
    clock.add_comm((ready, done))
    clock.mark("optimizer_start")
    tl.now += 0.005
    clock.end_step()
    done.t = None  # not completed yet on its stream: the step is not read
    assert clock.drain() == []
    done.t = 0.045
    [(ph, wall)] = clock.drain()
    got = dict(zip(PHASE_KEYS, ph, strict=True))
    assert got["communication"] == pytest.approx(0.015) and got["backward"] == pytest.approx(0.020)
    assert wall == pytest.approx(0.050)
    assert ready not in clock._pool and done not in clock._pool
