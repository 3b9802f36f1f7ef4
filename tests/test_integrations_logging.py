"""The callbacks' metrics reach the loggers users already run, at the framework's own logging
cadence: a Hugging Face Trainer with ``report_to=["tensorboard"]`` whose event file (read back with
TensorBoard's own reader) holds the ``bottleneck/*`` scalars at every ``logging_steps``; a Lightning
``max_steps`` run whose loggers got per-step metrics every ``log_every_n_steps`` (a CSVLogger's file,
and a logger with its own group separator), under both package names; samples/s, tokens/s and MFU
against a peak measured on this machine. Tiny models built from configs: nothing is downloaded."""

from __future__ import annotations

import csv
import glob
import math

import pytest
import torch
from torch import nn

lightning = pytest.importorskip("lightning")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tensorboard")

SEQ = 12  # tokens per example
VOCAB = 64


class TokenRecords(torch.utils.data.Dataset):
    """Token-id examples of one length, with a class label (and the ids as LM labels)."""

    def __init__(self, n: int, lm: bool = False) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, VOCAB, (n, SEQ), generator=g)
        self.y = torch.randint(0, 2, (n,), generator=g)
        self.lm = lm

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.x[i], "labels": self.x[i] if self.lm else self.y[i]}


@pytest.fixture
def measured_cpu_peak(tmp_path, monkeypatch):
    """A calibration profile with this machine's fp32 matmul rate (measured now), in a fresh
    BOTTLENECKD_HOME: the in-process sidecar's CPU peak, so that MFU is known."""
    from bottleneckd.peaks.calibrate import cpu_matmul
    from bottleneckd.peaks.profile import save_profile

    home = tmp_path / "home"
    m = cpu_matmul(seconds=0.3)
    save_profile([m], home / "profile.json")
    monkeypatch.setenv("BOTTLENECKD_HOME", str(home))
    return m.value


# --- Hugging Face: report_to=["tensorboard"] ---------------------------------------------------
@pytest.mark.slow
def test_hf_metrics_reach_tensorboard_at_every_log(tmp_path, monkeypatch):
    monkeypatch.setenv("BOTTLENECKD_HOME", str(tmp_path / "home"))  # no calibration: this VM's CPU peak is unknown
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    from bottleneckd.integrations.transformers import BottleneckCallback

    cfg = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=VOCAB, n_positions=32, bos_token_id=0, eos_token_id=0)
    args = TrainingArguments(
        output_dir=str(tmp_path / "hf"),
        max_steps=12,
        per_device_train_batch_size=4,
        report_to=["tensorboard"],
        logging_steps=4,
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    cb = BottleneckCallback(local_sampling=True, print_epoch=False)
    trainer = Trainer(model=GPT2LMHeadModel(cfg), args=args, train_dataset=TokenRecords(64, lm=True), callbacks=[cb])
    trainer.train()
    assert trainer.callback_handler.callbacks[0] is cb  # before TensorBoardCallback, which reads logs as it is

    (run_dir,) = glob.glob(str(tmp_path / "hf" / "runs" / "*"))
    ea = EventAccumulator(run_dir)
    ea.Reload()
    tags = set(ea.Tags()["scalars"])
    assert "train/loss" in tags  # the Trainer's own scalars are there ...
    for tag in ("share_data_wait", "share_forward", "step_seconds", "samples_per_second", "tokens_per_second"):
        steps = [e.step for e in ea.Scalars(f"train/bottleneck/{tag}")]
        assert steps == [4, 8, 12], (tag, steps)  # ... and ours, at every log, not only at the end
    samples = ea.Scalars("train/bottleneck/samples_per_second")
    tokens = ea.Scalars("train/bottleneck/tokens_per_second")
    for s, t in zip(samples, tokens, strict=True):  # every example is SEQ token ids long
        assert t.value == pytest.approx(SEQ * s.value, rel=1e-5)
    shares = sum(ea.Scalars(f"train/bottleneck/share_{p}")[-1].value for p in ("data_wait", "forward", "backward"))
    assert 0 < shares <= 1.0001
    # the same metrics in the Trainer's history (it copies logs before the callbacks see them)
    logged = [e for e in trainer.state.log_history if "bottleneck/samples_per_second" in e]
    assert [e["step"] for e in logged] == [4, 8, 12]
    assert not any("bottleneck/mfu" in e for e in logged)  # no CPU peak on this VM: MFU unknown, not 0


def test_hf_evaluation_logs_get_no_training_metrics(tmp_path):
    from transformers import Trainer, TrainingArguments

    from bottleneckd.integrations.transformers import BottleneckCallback

    class Clf(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb, self.out = nn.Embedding(VOCAB, 16), nn.Linear(16, 2)

        def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> dict:
            logits = self.out(self.emb(input_ids).mean(1))
            return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}

    args = TrainingArguments(
        output_dir=str(tmp_path / "hf"),
        max_steps=8,
        per_device_train_batch_size=8,
        report_to=[],
        logging_steps=4,
        eval_strategy="steps",
        eval_steps=4,
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
    )
    cb = BottleneckCallback(local_sampling=True, print_epoch=False)
    ds = TokenRecords(64)
    trainer = Trainer(model=Clf(), args=args, train_dataset=ds, eval_dataset=ds, callbacks=[cb])
    trainer.train()
    hist = trainer.state.log_history
    evals = [e for e in hist if "eval_loss" in e]
    assert evals and not any(k.startswith("bottleneck/") for e in evals for k in e)
    train = [e for e in hist if "loss" in e]
    assert [e["step"] for e in train] == [4, 8] and all("bottleneck/samples_per_second" in e for e in train)
    # evaluation between the logs is not the next step's data wait
    assert all(e["bottleneck/share_data_wait"] < 0.5 for e in train), train


# --- Lightning: log_every_n_steps ----------------------------------------------------------------
def _recorder(base: type) -> object:
    class Recorder(base):  # type: ignore[misc, valid-type]
        """A logger that keeps every call, with a group separator of its own."""

        def __init__(self) -> None:
            super().__init__()
            self.calls: list[tuple[int | None, dict]] = []

        @property
        def name(self) -> str:
            return "recorder"

        @property
        def version(self) -> int:
            return 0

        @property
        def group_separator(self) -> str:
            return "."

        def log_hyperparams(self, *a: object, **k: object) -> None:
            pass

        def log_metrics(self, metrics: dict, step: int | None = None) -> None:
            self.calls.append((step, dict(metrics)))

    return Recorder()


def _lit_module(base: type) -> object:
    class Lit(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            self.emb, self.out = nn.Embedding(VOCAB, 64), nn.Linear(64, 2)

        def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
            return nn.functional.cross_entropy(self.out(self.emb(batch["input_ids"]).mean(1)), batch["labels"])

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Lit()


def _fit(pl: object, callback: type, logdir: str, max_steps: int = 12, every: int = 3) -> tuple[object, object]:
    from importlib import import_module

    loggers = import_module(f"{pl.__name__}.loggers")
    rec = _recorder(loggers.Logger)
    cb = callback(local_sampling=True, print_epoch=False)
    trainer = pl.Trainer(
        max_steps=max_steps,
        log_every_n_steps=every,
        accelerator="cpu",
        devices=1,
        callbacks=[cb],
        logger=[loggers.CSVLogger(logdir), rec],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(_lit_module(pl.LightningModule), torch.utils.data.DataLoader(TokenRecords(512), batch_size=8))
    return rec, cb


@pytest.mark.slow
def test_lightning_max_steps_run_logs_per_log_every_n_steps(tmp_path, measured_cpu_peak):
    from bottleneckd.integrations.lightning import BottleneckCallback

    rec, cb = _fit(lightning.pytorch, BottleneckCallback, str(tmp_path / "csv"), max_steps=40, every=4)
    ours = [(step, m) for step, m in rec.calls if any(k.startswith("bottleneck.") for k in m)]
    # every fourth step (at the step Lightning logs its own at), while the run goes on (512
    # examples: the epoch does not end before max_steps)
    assert [step for step, _ in ours] == list(range(3, 40, 4)), ours
    for _, m in ours:  # the logger's own separator
        assert {"bottleneck.share_data_wait", "bottleneck.samples_per_second", "bottleneck.steps"} <= set(m)
        assert m["bottleneck.tokens_per_second"] == pytest.approx(SEQ * m["bottleneck.samples_per_second"], rel=1e-6)
        assert m["bottleneck.samples_per_second"] == pytest.approx(8 / m["bottleneck.step_seconds"], rel=1e-6)
    # MFU once the step's FLOPs are counted (step 3) and the sidecar's report names the peak (it
    # needs step phases: asked again every 2 s until then), against the peak the fixture measured
    counted = [m for _, m in ours if "bottleneck.mfu" in m]
    assert counted and "bottleneck.mfu" in ours[-1][1], ours
    for m in counted:
        assert m["bottleneck.mfu"] == pytest.approx(
            m["bottleneck.model_flops_per_second"] / measured_cpu_peak, rel=1e-6
        )
        assert m["bottleneck.mfu"] > 0  # (its size depends on how busy the machine was when each was measured)
    for _, m in ours:  # no FLOP count, no MFU (unknown, never 0)
        assert "bottleneck.model_flops_per_second" in m or "bottleneck.mfu" not in m
    # the CSVLogger got the same rows, grouped with "/"
    (path,) = glob.glob(str(tmp_path / "csv" / "**" / "metrics.csv"), recursive=True)
    rows = [r for r in csv.DictReader(open(path)) if r.get("bottleneck/samples_per_second")]
    assert [int(r["step"]) for r in rows] == list(range(3, 40, 4))
    assert all(math.isfinite(float(r["bottleneck/share_forward"])) for r in rows)


def test_pytorch_lightning_namespace(tmp_path):
    pl = pytest.importorskip("pytorch_lightning")
    from bottleneckd.integrations.pytorch_lightning import BottleneckCallback

    rec, cb = _fit(pl, BottleneckCallback, str(tmp_path / "csv"), max_steps=6, every=2)
    ours = [step for step, m in rec.calls if "bottleneck.samples_per_second" in m]
    assert ours == [1, 3, 5], rec.calls
    assert cb.marks.enabled and cb.marks.watcher is None  # ran, and closed at the end of fit
