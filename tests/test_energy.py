"""Energy: RAPL counters that wrap, NVML's energy counter over >= 100 ms spans, joules per step
and per example, carbon, the Prometheus counters."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.core import CollectorRegistry

from bottleneckd.model.sample import Reading, Sample, StepPhases
from bottleneckd.outputs.energy import EnergyCollector, EnergyMeter
from bottleneckd.samplers.energy import ROOT_ONLY, RaplSampler
from tests.fake_hardware import fake_powercap

MAX = 262_143_328_850  # a real max_energy_range_uj (Xeon package zone)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def by(readings: list[Reading], device: str, metric: str) -> Reading:
    return next(r for r in readings if r.device == device and r.metric == metric)


def test_rapl_counts_across_the_wrap(tmp_path: Path) -> None:
    files = fake_powercap(tmp_path / "sys", sockets=2, max_range_uj=MAX, start_uj=MAX - 30_000_000)
    clock = Clock()
    s = RaplSampler(str(tmp_path / "sys"), clock)
    assert s.available() == (True, "")
    first = s.sample()
    assert by(first, "package-0", "energy").value == 0.0
    assert by(first, "package-0", "power").value is None and by(first, "package-0", "power").note
    # 2 s later package-0 has used 50 J: 30 J up to the wrap, then 20 J from 0
    files[0].write_text("20000000\n")
    files[2].write_text(f"{MAX - 30_000_000 + 4_000_000}\n")  # dram-0: 4 J, no wrap
    clock.t += 2.0
    second = s.sample()
    assert by(second, "package-0", "energy").value == pytest.approx(50.0)
    assert by(second, "package-0", "power").value == pytest.approx(25.0)
    assert by(second, "dram-0", "energy").value == pytest.approx(4.0)
    assert by(second, "dram-0", "energy").resource == "cpu_memory"
    assert by(second, "package-1", "energy").value == 0.0
    # and on past it: the count keeps rising
    files[0].write_text("30000000\n")
    clock.t += 1.0
    assert by(s.sample(), "package-0", "energy").value == pytest.approx(60.0)


def test_no_rapl_is_unknown_with_the_reason(tmp_path: Path) -> None:
    s = RaplSampler(str(tmp_path / "empty"))
    ok, why = s.available()
    assert not ok and "powercap" in why
    (r,) = s.sample()
    assert r.value is None and r.note == why


@pytest.mark.skipif(os.geteuid() != 0 or not hasattr(os, "setuid"), reason="needs root to drop to an unprivileged user")
def test_rapl_root_only_is_unknown_with_the_cve() -> None:
    """energy_uj mode 0400 root, as the kernel has it since CVE-2020-8694, read by an unprivileged user."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="bottleneckd-rapl-"))  # not under pytest's 0700 tmp dir: nobody must reach it
    try:
        files = fake_powercap(base / "sys")
        for d in (base, *[p for p in (base / "sys").rglob("*") if p.is_dir()]):
            d.chmod(0o755)
        for f in files:
            f.chmod(0o400)
        rows = unprivileged(
            lambda: [(r.device, r.metric, r.value, r.note) for r in RaplSampler(str(base / "sys")).sample()]
        )
    finally:
        shutil.rmtree(base)
    assert {(d, m) for d, m, v, _ in rows} == {
        ("package-0", "energy"),
        ("package-0", "power"),
        ("dram-0", "energy"),
        ("dram-0", "power"),
    }
    for _, _, value, note in rows:
        assert value is None and "CVE-2020-8694" in note and "energy_uj" in note
    assert ROOT_ONLY.split(":")[0] in rows[0][3]


def unprivileged(fn):  # noqa: ANN001, ANN201
    """Run ``fn`` in a forked child that has dropped root (uid nobody); its result comes back by pipe."""
    import json

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            os.write(w, json.dumps(fn()).encode())
        except BaseException as e:  # noqa: BLE001
            os.write(w, json.dumps({"error": repr(e)}).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    os.waitpid(pid, 0)
    return json.loads(out)


def sample(t: float, gpu_j: float | None, cpu_j: float | None, steps: int = 0, examples: int | None = None) -> Sample:
    rs = [Reading("gpu_compute", "gpu0", "energy", gpu_j, "J", "" if gpu_j is not None else "not supported")]
    rs.append(Reading("cpu_compute", "package-0", "energy", cpu_j, "J", "" if cpu_j is not None else "RAPL root only"))
    ph = StepPhases(steps, 0.2 * steps, {"forward": 0.1 * steps}, {}, examples) if steps else None
    return Sample(t, 1.0, tuple(rs), ph)


def test_joules_per_step_and_example() -> None:
    m = EnergyMeter()
    m(sample(0.0, 1000.0, 0.0))
    m(sample(1.0, 1300.0, 50.0, steps=10, examples=320))  # 350 J, 10 steps
    m(sample(1.05, 1310.0, 52.0, steps=1, examples=32))  # 50 ms: shorter than 100 ms, carried on
    m(sample(2.0, 1600.0, 100.0, steps=9, examples=288))  # 350 J over 0.05 + 0.95 s, 10 steps
    m(sample(3.0, 1700.0, 110.0))  # idle: 110 J, no steps
    a = m.account()
    assert a.joules == {"gpu:gpu0": pytest.approx(700.0), "cpu_package:package-0": pytest.approx(110.0)}
    assert a.training_joules == pytest.approx(700.0)
    assert a.steps == 20 and a.examples == 640
    assert a.per_step == pytest.approx(35.0)
    assert a.per_example == pytest.approx(700.0 / 640)
    assert [p.steps for p in a.points] == [10, 10, 0]
    assert a.seconds == pytest.approx(3.0)
    # carbon at 400 gCO2/kWh: 810 J = 0.000225 kWh -> 0.09 g
    assert a.carbon_grams(400.0) == pytest.approx(810 / 3.6e6 * 400)
    doc = a.to_json(400.0)
    assert doc["joules_per_step"] == pytest.approx(35.0) and doc["carbon_unknown"] == ""
    assert a.to_json()["carbon_grams"] is None and "--grid-intensity" in a.to_json()["carbon_unknown"]


def test_a_counter_that_goes_back_loses_its_span_and_nothing_else() -> None:
    m = EnergyMeter()
    m(sample(0.0, 5000.0, 0.0))
    m(sample(1.0, 20.0, 10.0, steps=5, examples=5))  # NVML reset (driver reload): GPU span lost, CPU counted
    m(sample(2.0, 120.0, 20.0, steps=5, examples=5))
    a = m.account()
    assert a.joules["gpu:gpu0"] == pytest.approx(100.0)
    assert a.joules["cpu_package:package-0"] == pytest.approx(20.0)
    assert a.training_joules == pytest.approx(120.0)


def test_unknown_energy_says_why_and_examples_unknown_when_not_counted() -> None:
    m = EnergyMeter()
    m(sample(0.0, None, None))
    m(sample(1.0, None, None, steps=3))
    a = m.account()
    assert (
        a.per_step is None
        and "RAPL root only" in a.why_per_step_unknown()
        and "not supported" in a.why_per_step_unknown()
    )
    m2 = EnergyMeter()
    m2(sample(0.0, 0.0, None))
    m2(sample(1.0, 10.0, None, steps=2, examples=None))
    a2 = m2.account()
    assert a2.per_step == pytest.approx(5.0)
    assert a2.per_example is None and "examples" in a2.why_per_example_unknown()
    assert a2.unknown == {"cpu_package:package-0": "RAPL root only"}


def test_prometheus_counters() -> None:
    m = EnergyMeter()
    m(sample(0.0, 0.0, 0.0))
    m(sample(1.0, 30.0, 10.0, steps=4, examples=64))
    reg = CollectorRegistry(auto_describe=False)
    reg.register(EnergyCollector(m))
    text = generate_latest(reg).decode()
    assert "bottleneckd_training_energy_joules_total 40.0" in text
    # one energy counter per domain (the exporter's, from the readings) and one step counter
    # (bottleneckd_steps_total): the meter exports neither again
    assert "bottleneckd_energy_joules" not in text and "bottleneckd_energy_steps" not in text
    assert "bottleneckd_energy_examples_total 64.0" in text
    assert "bottleneckd_energy_per_step_joules 10.0" in text
    assert "bottleneckd_energy_per_example_joules 0.625" in text


def test_a_live_sidecar_serves_its_energy_counters(fake_tree) -> None:
    """The sidecar's meter is a loop sink; the exporter's server registers its counters."""
    import socket
    import urllib.request

    from bottleneckd.hardware.detect import detect_machine
    from bottleneckd.outputs.metrics_server import serve_metrics, stop_metrics
    from bottleneckd.peaks.catalog import load_catalog
    from bottleneckd.runtime.sidecar import build_sidecar
    from tests.fake_nvml import FakeGpu, FakeNvml

    sys_root, proc_root = fake_tree
    gpu = FakeGpu()
    nvml = FakeNvml([gpu])
    machine = detect_machine(sys_root, proc_root, nvml=nvml)
    side = build_sidecar(machine, load_catalog(), None, 1.0, listen=False, nvml=nvml)
    side.loop.tick()
    gpu.energy += 500.0  # 500 J on the GPU between two ticks more than 100 ms apart
    time.sleep(0.15)
    side.loop.tick()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = serve_metrics(side.run, f"127.0.0.1:{port}")
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    finally:
        stop_metrics(server)
    # the GPU's own counter (NVML: since the driver loaded), and the meter's training energy beside it
    line = next(x for x in text.splitlines() if x.startswith('bottleneckd_energy_joules_total{device="gpu0"'))
    assert float(line.split()[-1]) == gpu.energy == 1.0e6 + 500.0
    assert "bottleneckd_training_energy_joules_total 0.0" in text  # no training step in that span


def test_examples_travel_from_the_hook_message_to_the_job_view() -> None:
    """StepReport.examples through the wire format and the receiver: summed over ranks, unknown
    as soon as one report lacks it; a job step is one step of each rank."""
    from bottleneckd.channel.link import PhaseReceiver
    from bottleneckd.model.identity import RankIdentity
    from bottleneckd.model.protocol import StepReport, decode, encode

    def report(rank: int, examples: int | None) -> bytes:
        ident = RankIdentity("j", "", 0, rank, rank, 2, 2, "n", 0, pid=100 + rank)
        msg = StepReport(ident, 4, 1.0, {"forward": 0.5}, examples=examples)
        assert decode(encode(msg)).examples == examples
        return encode(msg)

    rx = PhaseReceiver(listen=False)
    rx.ingest(report(0, 128))
    rx.ingest(report(1, 128))
    job, ranks = rx.drain_ranks()
    assert job.examples == 256 and [r.phases.examples for r in ranks] == [128, 128]
    m = EnergyMeter()
    m(Sample(0.0, 1.0, (Reading("gpu_compute", "gpu0", "energy", 0.0, "J"),)))
    m(Sample(1.0, 1.0, (Reading("gpu_compute", "gpu0", "energy", 80.0, "J"),), job, ranks=ranks))
    assert m.account().per_step == pytest.approx(20.0)  # 4 job steps (8 rank-steps), 80 J
    assert m.account().per_example == pytest.approx(80.0 / 256)
    rx.ingest(report(0, 128))
    rx.ingest(report(1, None))
    assert rx.drain_ranks()[0].examples is None


def test_the_hook_reports_the_examples_of_its_steps(tmp_path) -> None:
    """watch() counts each step's examples (the first input's rows) and sends them with the step
    report; the receiver's job view carries them for joules per example."""
    torch = pytest.importorskip("torch")
    from bottleneckd.channel.link import PhaseReceiver
    from bottleneckd.torch import watch

    sock = str(tmp_path / "s.sock")
    rx = PhaseReceiver(sock).start()
    try:
        model = torch.nn.Linear(8, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        w = watch(
            model,
            opt,
            [torch.randn(6, 8)] * 12,
            socket_path=sock,
            local_sampling=False,
            print_epoch=False,
            roofline_step=None,
        )
        for x in w.dataloader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        w.flush()
        deadline = time.monotonic() + 5
        got = steps = 0
        while time.monotonic() < deadline and steps < 11:
            job = rx.drain()
            if job is not None:
                steps += job.steps
                got += job.examples or 0
            time.sleep(0.05)
        w.close()
    finally:
        rx.close()
    assert steps >= 10 and got == 6 * steps


def _node(
    t: float,
    joules: float,
    job_on: tuple[str, ...] | None,
    steps: int = 10,
    uuids: tuple[str, ...] = (),
    device: str = "",
) -> Sample:
    """Four GPUs of a shared node, each using ``joules`` more per second; ``job_on``: where NVML's
    process lists show the job (None: not read)."""
    rs = []
    for k in range(4):
        dev = f"gpu{k}"
        rs.append(Reading("gpu_compute", dev, "energy", 1000.0 + joules * t, "J"))
        if job_on is not None:
            rs.append(Reading("gpu_compute", dev, "job_process", 1.0 if dev in job_on else 0.0, "bool"))
    facts: dict = {"cuda_uuids": uuids} if uuids else {}
    if device:
        facts["device"] = device
    return Sample(t, 1.0, tuple(rs), StepPhases(steps, 1.0, {"forward": 1.0}, facts, None))


def test_energy_per_step_counts_the_jobs_gpus_not_every_gpu_on_the_node() -> None:
    """A job on 1 of 4 busy GPUs, 10 steps a second, each GPU at 400 W: 40 J per step, not 160."""
    m = EnergyMeter()
    for t in range(4):
        m(_node(float(t), 400.0, job_on=("gpu1",)))
    a = m.account()
    assert a.per_step == pytest.approx(40.0) and set(a.joules) == {"gpu:gpu1"}
    assert "gpu1" in a.gpu_scope and "process lists" in a.gpu_scope
    # the GPU the hook names (its CUDA UUID), whatever NVML's process lists show (another namespace)
    m = EnergyMeter(gpu_uuids={f"gpu{k}": f"GPU-{k}abc" for k in range(4)})
    for t in range(4):
        m(_node(float(t), 400.0, job_on=None, uuids=("GPU-2ABC",)))
    assert set(m.account().joules) == {"gpu:gpu2"} and m.account().per_step == pytest.approx(40.0)
    # a CPU job on the GPU node: no GPU energy is its
    m = EnergyMeter()
    for t in range(4):
        m(_node(float(t), 400.0, job_on=()))
    assert m.account().joules == {} and "no GPU" in m.account().gpu_scope
    # a CPU job whose hook says so, beside another tenant's GPUs whose PIDs NVML cannot show us
    m = EnergyMeter()
    for t in range(4):
        m(_node(float(t), 400.0, job_on=None, device="cpu"))
    assert m.account().joules == {} and "on cpu" in m.account().gpu_scope
    # unknown: every GPU, and the account says so
    m = EnergyMeter()
    for t in range(4):
        m(_node(float(t), 400.0, job_on=None))
    assert m.account().per_step == pytest.approx(160.0) and "every GPU counted" in m.account().gpu_scope
