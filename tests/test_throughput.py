"""Throughput like the anchors (issue 22 item 9): samples/s, tokens/s and MFU, the same figures in
the epoch block, the report and Prometheus; unknown with its reason, never 0."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import torch
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
from torch import nn

from bottleneckd.diagnosis.pipeline import Pipeline
from bottleneckd.model.throughput import NO_EXAMPLES, NO_TOKENS, Peak, measure
from bottleneckd.outputs.exporter import SnapshotCollector
from bottleneckd.outputs.trace import read_trace
from bottleneckd.peaks.mfu import mfu_peak
from bottleneckd.peaks.resolve import PeakTable, ResolvedPeak
from bottleneckd.torch.watch import Watcher
from tests.test_html_report import FACTS, multi_rank_trace

H100_BF16 = 989e12  # the catalog's dense bf16 tensor figure for an H100 SXM


def test_measure_sums_ranks_and_says_why_a_figure_is_unknown():
    peak = Peak(value=H100_BF16, path="bf16 tensor", why="autocast to bfloat16")
    # 2 ranks, 10 steps each of 0.5 s, 64 examples a step, 128 tokens an example
    facts = {"flops_per_step": 1.0e14, "tokens_per_example": 128.0}
    t = measure(steps=20, wall_seconds=10.0, examples=1280, facts=facts, peak=peak, ranks=2)
    assert t.step_seconds == 0.5
    assert t.samples_per_second == pytest.approx(256.0)  # each rank 128/s
    assert t.tokens_per_second == pytest.approx(256.0 * 128)
    assert t.model_flops_per_second == pytest.approx(2.0e14)  # one rank's step FLOPs over its step time
    assert t.mfu == pytest.approx(2.0e14 / H100_BF16)
    assert "MFU 20.2% of the bf16 tensor peak (989 TFLOP/s)" in t.text()

    t = measure(steps=20, wall_seconds=10.0, examples=None, facts={}, peak=peak)
    assert (t.samples_per_second, t.tokens_per_second, t.mfu) == (None, None, None)
    assert t.samples_unknown == NO_EXAMPLES and "no step's FLOPs" in t.mfu_unknown
    t = measure(steps=20, wall_seconds=10.0, examples=640, facts={"flops_per_step": 1e12}, peak=None)
    assert t.tokens_unknown == NO_TOKENS and t.mfu is None and t.mfu_unknown == "no compute peak looked up"
    no_peak = Peak(value=None, path="fp32 CPU", why="CPU model not in the catalog")
    t = measure(steps=20, wall_seconds=10.0, examples=640, facts={"flops_per_step": 1e12}, peak=no_peak)
    assert t.mfu is None and t.mfu_unknown == "CPU model not in the catalog"  # unknown, with the peak's reason
    assert "MFU unknown (CPU model not in the catalog)" in t.text()


def test_the_peak_is_the_jobs_path():
    cpu = ResolvedPeak("cpu_compute", "cpu", "fp32_fma", 2.0e12, "FLOP/s", "catalog", "a CPU", 2.0e12)
    h100 = [
        ResolvedPeak("gpu_compute", "gpu0", "fp32", 67e12, "FLOP/s", "catalog", "H100", 67e12),
        ResolvedPeak("gpu_compute", "gpu0", "fp16_bf16_tensor_dense", H100_BF16, "FLOP/s", "catalog", "H100", 0),
    ]
    peaks = PeakTable([cpu, *h100])
    assert mfu_peak(peaks, {"param_dtype": "float32"}, None).value == 2.0e12
    # a CPU convnet with cudnn.allow_tf32 on (PyTorch's default) runs fp32: its MFU is against the fp32 peak
    conv_cpu = mfu_peak(peaks, {"compute_dtype": "float32", "conv_flop_share": 0.9, "cudnn_allow_tf32": True}, None)
    assert conv_cpu.value == 2.0e12 and conv_cpu.path == "fp32 CPU", conv_cpu
    bf16_cpu = mfu_peak(peaks, {"param_dtype": "float32", "autocast_dtype": "bfloat16"}, None)
    assert bf16_cpu.value is None and "no bf16 tensor peak known for the CPU" in bf16_cpu.why
    assert mfu_peak(peaks, {"param_dtype": "float32", "autocast_dtype": "bfloat16"}, "gpu0").value == H100_BF16
    fp32 = mfu_peak(peaks, {"param_dtype": "float32", "allow_tf32": False}, "gpu0")
    assert (fp32.value, fp32.path) == (67e12, "fp32")  # not bf16's 989 TFLOP/s: 15x apart


def test_prometheus_families_match_the_report_and_pass_promtool(tmp_path):
    trace = tmp_path / "run.jsonl"
    multi_rank_trace(trace)  # 2 GPU ranks, 64 examples a step, bf16 autocast, 4 TFLOP a step
    header, samples = read_trace(str(trace))
    p = Pipeline(header.peaks)
    for s in samples:
        p(s)
    t = p.latest.throughput
    assert t is not None and t.mfu is not None and t.peak_path == "bf16 tensor"
    assert t.mfu == pytest.approx(FACTS["flops_per_step"] / t.step_seconds / t.peak_flops)
    reg = CollectorRegistry(auto_describe=False)
    reg.register(SnapshotCollector(lambda: p.latest, lambda: 1))
    text = openmetrics_latest(reg).decode()
    assert f"bottleneckd_throughput_samples_per_second {t.samples_per_second}" in text
    assert f'bottleneckd_model_flops_utilization_ratio{{path="bf16 tensor"}} {t.mfu}' in text
    assert "# UNIT bottleneckd_model_flops_utilization_ratio ratio" in text
    assert "bottleneckd_throughput_tokens_per_second" not in text  # image-like inputs: no tokens, absent
    if shutil.which("promtool"):
        lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        problems = [x for x in (lint.stdout + lint.stderr).splitlines() if "throughput" in x or "utilization" in x]
        assert problems == [], problems


class Tokens(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb, self.out = nn.Embedding(100, 16), nn.Linear(16, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.out(self.emb(ids).mean(1))


def test_epoch_block_has_samples_and_tokens_per_second(tmp_path, capsys):
    torch.manual_seed(0)
    model = Tokens()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = torch.randint(0, 100, (96, 20))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(ids, torch.randint(0, 2, (96,))), batch_size=8)
    w = Watcher(model, opt, loader, local_sampling=False, socket_path=str(tmp_path / "none.sock"), roofline_step=1)
    try:
        for x, y in w.dataloader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        w.close()
    rep = w.epoch_reports[-1]
    t = rep.throughput
    # every timed step had 8 examples of 20 token ids (the counted step's time is dropped)
    assert t.samples_per_second == pytest.approx(8 * rep.steps / (rep.step_ms * rep.steps / 1000), rel=1e-6)
    assert t.tokens_per_second == pytest.approx(20 * t.samples_per_second)
    assert t.model_flops_per_second and t.mfu is None  # no sidecar answered: no peak, so no MFU
    assert "throughput: " in rep.text and "tokens/s" in rep.text and "MFU unknown" in rep.text
    assert "throughput: " in capsys.readouterr().out


def test_attach_rates_nothing_its_stack_samples_are_not_steps():
    """Under attach the phases count stack samples and their wall time is samples x the sampling
    period: a 'step time' of 0.5 s at 2 Hz is the period, not the job's (a blind trace writer read
    it as the job's)."""
    t = measure(steps=40, wall_seconds=20.0, examples=None, facts={"phase_source": "py-spy"}, peak=None)
    assert t.step_seconds is None and t.samples_per_second is None and t.mfu is None
    assert "attach counts stack samples" in t.samples_unknown and "attach counts stack samples" in t.mfu_unknown
