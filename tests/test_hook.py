import os
import time

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from bottleneckd.channel.link import PhaseReceiver  # noqa: E402
from bottleneckd.runtime.job import rejected_note  # noqa: E402
from bottleneckd.torch import watch  # noqa: E402
from bottleneckd.torch.transport import SocketTransport  # noqa: E402


class SlowDataset(torch.utils.data.Dataset):
    def __init__(self, n, delay):
        self.n, self.delay = n, delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.delay)
        return torch.randn(32), torch.tensor(i % 4)


def train(w, model, opt, epochs=1):
    """Returns the time of the last optimizer step."""
    loss_fn = nn.CrossEntropyLoss()
    last = None
    for _ in range(epochs):
        for x, y in w.dataloader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            last = time.perf_counter()
    return last


class Sleepy(nn.Module):
    """A model whose forward and backward take known times."""

    def __init__(self, fwd, bwd):
        super().__init__()
        self.lin = nn.Linear(32, 4)
        self.fwd, self.bwd = fwd, bwd

    def forward(self, x):
        time.sleep(self.fwd)
        return _SleepGrad.apply(self.lin(x), self.bwd)


class _SleepGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, s):
        ctx.s = s
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        time.sleep(ctx.s)
        return g, None


def test_phases_match_known_sleeps_and_add_up_to_the_step(tmp_path):
    """Each phase holds its own sleep: data 20 ms, transfer 5, forward 10, backward 15, optimizer 8,
    other 6 (between the step's end and the next batch request); together they are the wall."""
    sleeps = {
        "data_wait": 0.020,
        "transfer": 0.005,
        "forward": 0.010,
        "backward": 0.015,
        "optimizer": 0.008,
        "other": 0.006,
    }
    model = Sleepy(sleeps["forward"], sleeps["backward"])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(SlowDataset(12, sleeps["data_wait"] / 2), batch_size=2)  # 2 items of 10 ms per batch
    w = watch(
        model,
        opt,
        loader,
        socket_path=str(tmp_path / "none.sock"),
        local_sampling=False,
        print_epoch=False,
        roofline_step=None,
    )
    opt.register_step_pre_hook(lambda *a: time.sleep(sleeps["optimizer"]))  # after ours: inside the optimizer phase
    t0 = time.perf_counter()
    for x, y in loader:
        time.sleep(sleeps["transfer"])
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        last = time.perf_counter()
        time.sleep(sleeps["other"])
    wall = last - t0
    rep = w.epoch_reports[-1]
    assert rep.steps == 6
    total = sum(rep.phases.values())
    # the first step starts at its data request; the last "other" sleep is after the last step
    assert total == pytest.approx(wall, abs=0.002)
    # every phase holds at least its own sleeps; as they add up to the wall, no phase took another's
    for k, s in sleeps.items():
        n = 5 if k == "other" else 6  # the first step has nothing before its data request
        assert rep.phases[k] >= 0.98 * n * s, (k, rep.phases)
    assert rep.phases["communication"] == 0.0
    w.close()


def test_the_watcher_sends_json_to_a_listening_sidecar(tmp_path):
    path = str(tmp_path / "s" / "bottleneckd.sock")
    rx = PhaseReceiver(path).start()
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    model = nn.Linear(32, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(64, 32), torch.randint(0, 4, (64,))), batch_size=8, num_workers=0)
    w = watch(model, opt, loader, socket_path=path, report_every=0.0, print_epoch=False)
    assert isinstance(w.transport, SocketTransport)  # a sidecar listens: no sampler thread of our own
    train(w, model, opt)
    deadline = time.monotonic() + 10  # every datagram sent is read by the receiver's thread
    while rx.received + rx.rejected < w.transport.sent and time.monotonic() < deadline:
        time.sleep(0.05)
    got = rx.drain()
    rx.close()
    assert got is not None and got.steps == 7  # the roofline step (index 3) is counted, not timed
    assert got.facts["loader_workers"] == 0 and got.facts["device"] == "cpu" and got.facts["has_conv"] is False
    assert set(got.phases) >= {"data_wait", "forward", "backward", "optimizer"}
    w.close()


def test_sender_is_lossy_without_a_sidecar(tmp_path):
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = watch(
        model,
        opt,
        [(torch.randn(2, 4), torch.tensor([0, 1]))] * 20,
        socket_path=str(tmp_path / "absent.sock"),
        local_sampling=False,
        report_every=0.0,
        print_epoch=False,
    )
    train(w, model, opt)
    assert w.transport.dropped > 0 and w.enabled


def test_receiver_rejects_non_json_and_never_unpickles(tmp_path):
    rx = PhaseReceiver(str(tmp_path / "r.sock"))
    rx.ingest(b"\x80\x04K\x01.")  # a pickle
    rx.ingest(b'{"steps": "x"}')
    assert rx.rejected == 1 and rx.unknown_version == 1 and rx.drain() is None  # a dict with no version: not ours
    # the run's report says so, with why (a refused report's phases are missing: never silent)
    note = rejected_note(rx.rejected + rx.unknown_version, rx.last_error)
    assert note is not None and note.startswith("2 of the hook's messages were refused") and "(last: version" in note
    assert rejected_note(0, "") is None
    rx.close()


def test_the_disable_warning_names_where_our_code_failed(tmp_path, caplog):
    """A bug report needs the place: 'ValueError: x' alone did not say which of our hooks raised."""
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = watch(model, opt, [torch.randn(4, 8)] * 3, socket_path=str(tmp_path / "x.sock"), local_sampling=False)
    try:
        raise ValueError("boom")
    except ValueError as e:
        w.disable(f"{type(e).__name__}: {e}")
    (msg,) = [r.getMessage() for r in caplog.records if "instrumentation disabled" in r.getMessage()]
    assert "ValueError: boom at test_hook.py:" in msg and "in test_the_disable_warning_names" in msg
    w.close()


def test_a_failure_inside_our_hooks_disables_them_and_training_goes_on(tmp_path, caplog):
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(4, 8), torch.tensor([0, 1, 0, 1]))] * 10
    w = watch(model, opt, data, socket_path=str(tmp_path / "x.sock"), local_sampling=False, print_epoch=False)

    class Broken:  # every method of the clock raises, whichever the hot path calls
        def __getattr__(self, name):
            raise RuntimeError("bug in bottleneckd")

    w.clock = Broken()
    before = model.weight.detach().clone()
    train(w, model, opt)
    assert not w.enabled
    assert not torch.equal(before, model.weight)  # the steps ran
    assert sum("instrumentation disabled" in r.message for r in caplog.records) == 1
    assert not model._forward_pre_hooks and not model._forward_hooks  # our hooks are gone


def test_a_failure_inside_our_optimizer_hook_never_raises_from_torchs_hook_loop(tmp_path, caplog):
    """A hook registered after ours on the same optimizer: our failure inside the step hooks must not
    remove our handle from the dict torch is iterating ("dictionary changed size during iteration"
    raised from opt.step()); our hooks stay, inert, until close()."""
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(4, 8), torch.tensor([0, 1, 0, 1]))] * 10
    w = watch(model, opt, data, socket_path=str(tmp_path / "x.sock"), local_sampling=False, print_epoch=False)
    theirs = []
    opt.register_step_pre_hook(lambda *_: theirs.append("pre"))
    opt.register_step_post_hook(lambda *_: theirs.append("post"))

    def broken(*_):  # noqa: ANN002, ANN202
        raise RuntimeError("bug in bottleneckd")

    w.before_optimizer_step = broken  # our step pre-hook's full path fails, inside torch's loop over the hooks
    w.hot[0] = 0  # hot_path.PLAIN: the next step takes the full path
    before = model.weight.detach().clone()
    train(w, model, opt)  # raises if a handle came off mid-loop
    assert not w.enabled and not torch.equal(before, model.weight)
    assert theirs.count("pre") == 10 and theirs.count("post") == 10  # the user's hooks ran every step
    n = len(opt._optimizer_step_pre_hooks)
    w.close()
    assert len(opt._optimizer_step_pre_hooks) == n - 1  # ours came off at close


def test_epoch_end_prints_one_block_and_returns_it(tmp_path, capsys):
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(4, 8), torch.tensor([0, 1, 0, 1]))] * 6
    w = watch(model, opt, data, socket_path=str(tmp_path / "x.sock"), local_sampling=True, interval=0.2)
    train(w, model, opt, epochs=2)
    out = capsys.readouterr().out
    assert out.count("[bottleneckd] epoch 0") == 1 and out.count("[bottleneckd] epoch 1") == 1
    rep = w.epoch_reports[0]
    assert rep.steps == 5 and rep.report is not None  # 6 steps, the roofline one not timed and "verdict" in rep.report
    assert "bottleneck:" in rep.text
    w.close()


def test_roofline_counts_flops_and_operand_bytes_of_one_step(tmp_path):
    model = nn.Sequential(nn.Linear(32, 512), nn.ReLU(), nn.Linear(512, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(8, 32), torch.randint(0, 4, (8,)))] * 12
    w = watch(
        model,
        opt,
        data,
        socket_path=str(tmp_path / "n.sock"),
        local_sampling=False,
        print_epoch=False,
        roofline_step=2,
        report_every=0.0,
    )
    train(w, model, opt)
    # forward 2*8*32*512 + 2*8*512*4; backward: weight grads of both layers, input grad of the second only
    expected = (2 * 8 * 32 * 512 + 2 * 8 * 512 * 4) + 2 * 8 * 32 * 512 + 2 * (2 * 8 * 512 * 4)
    assert w.facts["flops_per_step"] == expected
    assert w.facts["operand_bytes_per_step"] > 4 * (8 * 32 + 32 * 512 + 512 * 4)  # at least inputs and weights once
    assert w.facts["achieved_flops"] > 0 and w.facts["achieved_bytes_per_second"] > 0
    assert w.epoch_reports[-1].steps == 11  # the counted step's timing is dropped


def test_blocking_collectives_are_timed_as_communication(tmp_path):
    import torch.distributed as dist

    store = dist.HashStore()
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        model = nn.Linear(256, 256)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        data = [(torch.randn(4, 256), torch.randint(0, 4, (4,)))] * 8
        w = watch(
            model,
            opt,
            data,
            socket_path=str(tmp_path / "n.sock"),
            local_sampling=False,
            print_epoch=False,
            roofline_step=None,
        )
        for x, _ in w.dataloader:
            opt.zero_grad()
            model(x).sum().backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
            opt.step()
        rep = w.epoch_reports[-1]
        assert rep.phases["communication"] > 0
        assert rep.phases["communication"] < rep.phases["backward"] + rep.phases["communication"]
        w.close()
        from bottleneckd.torch import collectives

        assert w not in collectives._watchers  # unregistered; originals come back with the last watcher
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("where", ["comm_begin", "comm_end"])
def test_a_fault_of_ours_around_a_collective_disables_us_and_the_collective_returns(tmp_path, where):
    """Our clock failing as a blocking collective starts or ends: the user's all_reduce returns its
    result and our instrumentation comes off (the standard: a failure of ours never breaks the step;
    before, the exception reached the user's code)."""
    import torch.distributed as dist

    store = dist.HashStore()
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        model = nn.Linear(8, 8)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        w = watch(
            model,
            opt,
            socket_path=str(tmp_path / "n.sock"),
            local_sampling=False,
            print_epoch=False,
            roofline_step=None,
        )

        def broken() -> None:
            raise RuntimeError("our clock broke")

        setattr(w.clock, where, broken)
        t = torch.ones(3)
        dist.all_reduce(t)  # no exception reaches the user's code
        assert torch.equal(t, torch.ones(3))  # world size 1: the sum is the tensor
        assert not w.enabled
        w.close()
    finally:
        dist.destroy_process_group()


def test_facts_the_advice_needs_follow_the_model_and_settings(tmp_path):
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(4, 8), torch.tensor([0, 1, 0, 1]))] * 3
    w = watch(
        model,
        opt,
        data,
        socket_path=str(tmp_path / "n.sock"),
        local_sampling=False,
        print_epoch=False,
        roofline_step=None,
    )
    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        for x, y in w.dataloader:
            step_once(model, opt, x, y)
        f = w.facts
        assert f["param_dtype"] == "float32" and f["has_conv"] is False and f["input_rank"] == 2
        assert f["allow_tf32"] is True and f["compiled"] is False and f["optimizer_closure"] is False
        assert "autocast_dtype" not in f
        torch.backends.cuda.matmul.allow_tf32 = False
        model.to(torch.bfloat16)  # changed after watch(): the facts follow at the next epoch end
        for x, y in w.dataloader:
            step_once(model, opt, x.to(torch.bfloat16), y)
        assert f["param_dtype"] == "bfloat16" and f["autocast_dtype"] == "bfloat16" and f["allow_tf32"] is False
        model.to(torch.float32)
        for x, y in w.dataloader:
            step_once(model, opt, x, y)
        assert f["param_dtype"] == "float32" and "autocast_dtype" not in f  # unset when no longer true
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32
        w.close()


def test_a_compiled_model_is_said_to_be_compiled(tmp_path):
    model = nn.Conv2d(3, 4, 3)
    w = watch(torch.compile(model), None, socket_path=str(tmp_path / "n.sock"), local_sampling=False, print_epoch=False)
    w.flush()
    assert w.facts["has_conv"] is True
    from bottleneckd.torch.probe import runtime_facts

    assert runtime_facts(w.model)["compiled"] is True and runtime_facts(model)["compiled"] is False
    w.close()


def step_once(model, opt, x, y):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x).float(), y).backward()
    opt.step()
