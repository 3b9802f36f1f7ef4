"""Optimizers that take a closure (LBFGS, SAM-style): pytorch/examples' time_sequence_prediction
shape (an LSTM trained with optim.LBFGS) under watch() and under `bottleneckd run`."""

import json
import sys
import textwrap
import time

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from bottleneckd.torch import watch  # noqa: E402
from tests.conftest import run_cli  # noqa: E402

SEQUENCE = textwrap.dedent("""
    import math, sys, time, torch
    from torch import nn

    class Sequence(nn.Module):  # pytorch/examples time_sequence_prediction/train.py, smaller
        def __init__(self, hidden=51, delay=0.0):
            super().__init__()
            self.hidden, self.delay = hidden, delay
            self.lstm1 = nn.LSTMCell(1, hidden)
            self.lstm2 = nn.LSTMCell(hidden, hidden)
            self.linear = nn.Linear(hidden, 1)

        def forward(self, input):
            time.sleep(self.delay)
            outputs = []
            h_t = torch.zeros(input.size(0), self.hidden, dtype=input.dtype)
            c_t = torch.zeros(input.size(0), self.hidden, dtype=input.dtype)
            h_t2 = torch.zeros(input.size(0), self.hidden, dtype=input.dtype)
            c_t2 = torch.zeros(input.size(0), self.hidden, dtype=input.dtype)
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                outputs += [self.linear(h_t2)]
            return torch.cat(outputs, dim=1)

    def data(n=16, length=60):
        x = torch.arange(length).float().unsqueeze(0) + torch.randint(-20, 20, (n, 1)).float()
        y = torch.sin(x / 4.0)
        return y[:, :-1], y[:, 1:]
""")
exec(SEQUENCE)  # noqa: S102 - the same model in the test process and in the job

JOB = SEQUENCE + textwrap.dedent("""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    seq = Sequence(hidden=16)
    inp, target = data(8, 30)
    opt = torch.optim.LBFGS(seq.parameters(), lr=0.8, max_iter=3)
    crit = nn.MSELoss()
    for i in range(int(sys.argv[1])):
        def closure():
            opt.zero_grad()
            loss = crit(seq(inp), target)
            loss.backward()
            return loss
        opt.step(closure)
    print("steps done")
""")


def test_lbfgs_closure_is_timed_as_forward_and_backward_one_step_per_call(tmp_path, capsys):
    torch.manual_seed(0)
    seq = Sequence(hidden=16, delay=0.004)  # noqa: F821 - from SEQUENCE
    inp, target = data()  # noqa: F821
    opt = torch.optim.LBFGS(seq.parameters(), lr=0.8, max_iter=4)
    crit = nn.MSELoss()
    calls = [0]
    w = watch(seq, opt, socket_path=str(tmp_path / "n.sock"), local_sampling=False, roofline_step=None)

    def closure():
        calls[0] += 1
        opt.zero_grad()
        loss = crit(seq(inp), target)
        time.sleep(0.003)  # a known share of the backward
        loss.backward()
        return loss

    losses = []
    t0 = time.perf_counter()
    for _ in range(5):
        losses.append(float(opt.step(closure)))
    wall = time.perf_counter() - t0
    rep = w.epoch_end()
    assert rep.steps == 5 and w.steps == 5  # one step per step() call, whatever the closure calls (here 5 x up to 4)
    assert calls[0] > 5
    assert rep.phases["forward"] >= 0.98 * calls[0] * 0.004 and rep.phases["backward"] >= 0.98 * calls[0] * 0.003
    assert rep.phases["forward"] + rep.phases["backward"] > 0.8 * rep.phases["optimizer"]  # not all lumped as optimizer
    assert sum(rep.phases.values()) == pytest.approx(wall, rel=0.05)
    assert w.facts["optimizer_closure"] is True and "closure" in rep.text
    assert losses[-1] < losses[0]  # training works through our wrapped closure
    w.close()


def test_a_step_without_a_closure_unsets_the_fact(tmp_path):
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = watch(
        model, opt, socket_path=str(tmp_path / "n.sock"), local_sampling=False, print_epoch=False, roofline_step=None
    )

    def closure():
        opt.zero_grad()
        loss = model(torch.randn(2, 4)).pow(2).mean()
        loss.backward()
        return loss

    opt.step(closure)
    assert w.facts["optimizer_closure"] is True
    opt.step()
    assert w.facts["optimizer_closure"] is False
    w.close()


@pytest.mark.slow
def test_lbfgs_job_under_run_gets_step_phases(tmp_path, cli_env):
    job = tmp_path / "seq.py"
    job.write_text(JOB)
    rep = tmp_path / "r.json"
    r = run_cli(
        ["run", "--quiet", "--report-json", str(rep), "--", sys.executable, str(job), "8"], cli_env, timeout=300
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(rep.read_text())
    ph = doc["step_phases"]
    assert ph and 1 <= ph["steps"] <= 8
    assert ph["share"]["forward"] > 0 and ph["share"]["backward"] > 0
    assert doc["facts"]["optimizer_closure"] is True
