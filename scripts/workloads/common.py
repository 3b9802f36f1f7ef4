"""Shared by the labelled workloads: options, a timed loop that prints its throughput as the last
line, and small building blocks (datasets, models, a free port).

Every workload module declares its label as module-level literals that scripts/eval.py reads
without importing it:

    LABEL = "cpu_compute"           # a resource id, or "undetermined" (no resource limits the step)
    STAGE = "data"                  # the stage the step waits in, or None (any stage is right)
    INTERVENTION = "..."            # what --intervene changes, which removes that bottleneck
    MIN_SPEEDUP = 2.0               # throughput with --intervene / without, needed to prove the label
    CONTROL = "..."                 # optional: what --control changes, which would help if another
                                    # resource limited the job (a compute label: same FLOPs, fewer bytes)
    CONTROL_MAX_SPEEDUP = 1.25      # the control must stay below this for the label to hold
    ALSO_PROVES = "mixed_precision"  # optional: a second recommendation, proved by --also's runs
    ALSO_INTERVENTION = "..."       # what --also changes (here: bf16 autocast, ``mixed_precision()``)
    ALSO_MIN_SPEEDUP = 1.15         # throughput with --also / without, needed to prove it

Every workload takes ``--threads`` (1 by default, as labelled; ``default``: PyTorch's own choice,
one intra-op thread per core; or a number): ``options()`` puts it in the environment, where
``set_threads()`` reads it in this process and in ranks started by spawn or torchrun.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import time
from collections.abc import Callable, Iterable

THREADS_ENV = "WORKLOAD_THREADS"
ALSO_ENV = "WORKLOAD_ALSO"  # --also, for the step code and for spawned ranks


class _Options(argparse.ArgumentParser):
    def parse_args(self, *a, **k):  # noqa: ANN002, ANN003, ANN201
        ns = super().parse_args(*a, **k)
        os.environ[THREADS_ENV] = ns.threads  # spawned and torchrun'd ranks inherit it
        if ns.also:
            os.environ[ALSO_ENV] = "1"
        return ns


def options(doc: str | None, seconds: float = 20.0) -> argparse.ArgumentParser:
    """The options every workload takes: --seconds, --intervene, --control and --threads."""
    ap = _Options(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=seconds, help="train for this long")
    ap.add_argument(
        "--intervene", action="store_true", help="apply the intervention that removes the labelled bottleneck"
    )
    ap.add_argument(
        "--control",
        action="store_true",
        help="apply the control intervention (CONTROL), which would help only if another resource limited the job",
    )
    ap.add_argument(
        "--also",
        action="store_true",
        help="apply the second intervention (ALSO_INTERVENTION), which proves a second recommendation",
    )
    ap.add_argument(
        "--threads",
        default=os.environ.get(THREADS_ENV, "1"),
        help="intra-op threads: 1 (as labelled), 'default' (PyTorch's own: one per core) or a number",
    )
    return ap


def set_threads() -> str:
    """Apply --threads (from the environment ``options()`` set) to torch; returns the setting.
    One thread is the labelled setting: on a shared 2-core host two OpenMP threads spin on each
    other; ``default`` leaves PyTorch's own choice, as a user's job has it."""
    import torch

    how = os.environ.get(THREADS_ENV, "1")
    if how != "default":
        torch.set_num_threads(int(how))
    return how


def report(steps: int, seconds: float, unit: str = "steps") -> None:
    print(f"throughput: {steps / seconds:.3f} {unit}/s ({steps} {unit} in {seconds:.1f} s)", flush=True)


def train(step: Callable[[object], None], batches: Callable[[], Iterable], seconds: float) -> None:
    """Run epochs of ``batches()`` until ``seconds`` have passed; print steps per second. The
    first step (loader workers starting, lazy initialisation) is a warm-up, not timed."""
    t0 = None
    steps = 0
    while t0 is None or time.perf_counter() - t0 < seconds:
        for b in batches():
            step(b)
            if t0 is None:
                t0 = time.perf_counter()
                continue
            steps += 1
            if time.perf_counter() - t0 >= seconds:
                break
    report(steps, time.perf_counter() - t0)


def mixed_precision():  # noqa: ANN201
    """bf16 autocast on the CPU under ``--also`` (the workloads whose ALSO_PROVES is mixed_precision
    wrap their forward and loss in it), else a context that does nothing."""
    if os.environ.get(ALSO_ENV) != "1":
        return contextlib.nullcontext()
    import torch

    return torch.autocast("cpu", dtype=torch.bfloat16)


def classifier_step(model, opt, loss_fn):  # noqa: ANN001, ANN201
    """One plain training step on an (inputs, labels) batch (bf16 autocast around the forward and
    the loss under ``--also``)."""
    amp = os.environ.get(ALSO_ENV) == "1"

    def step(b) -> None:  # noqa: ANN001
        x, y = b
        opt.zero_grad()
        if amp:
            with mixed_precision():
                loss = loss_fn(model(x), y)
        else:
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step


def mlp(width: int, depth: int, d_in: int | None = None, d_out: int = 10):  # noqa: ANN201
    """A plain ReLU MLP: ``depth`` hidden layers of ``width``."""
    from torch import nn

    layers: list = []
    d = d_in or width
    for _ in range(depth):
        layers += [nn.Linear(d, width), nn.ReLU()]
        d = width
    return nn.Sequential(*layers, nn.Linear(d, d_out))


def costly_image_job(workers: int = 1, cost: int = 24):  # noqa: ANN201
    """A small conv net fed by a loader with costly per-sample transforms: data-loading bound."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader

    set_threads()
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(CostlyImages(100000, cost), batch_size=16, num_workers=workers)
    return loader, classifier_step(model, opt, nn.CrossEntropyLoss())


class CostlyImages:
    """Synthetic 3x32x32 images; ``cost`` rounds of blur and jitter on the CPU per sample (0: none)."""

    def __init__(self, n: int, cost: int) -> None:
        self.n, self.cost = n, cost

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):  # noqa: ANN204
        import torch

        g = torch.Generator().manual_seed(i)
        x = torch.randn(3, 64, 64, generator=g)
        for _ in range(self.cost):
            x = torch.nn.functional.avg_pool2d(x.unsqueeze(0), 3, 1, 1).squeeze(0) * 1.01
        x = torch.nn.functional.interpolate(x.unsqueeze(0), size=32, mode="bilinear").squeeze(0)
        return x, torch.tensor(i % 10)


class FftSignals:
    """1-D signals; each sample gets ``rounds`` of numpy FFT filtering (random band-pass) in
    ``__getitem__``, the kind of spectral augmentation audio pipelines do (0 rounds: none)."""

    def __init__(self, n: int, length: int, rounds: int) -> None:
        self.n, self.length, self.rounds = n, length, rounds

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):  # noqa: ANN204
        import numpy as np
        import torch

        rng = np.random.default_rng(i)
        x = rng.standard_normal(self.length).astype(np.float32)
        for _ in range(self.rounds):
            spec = np.fft.rfft(x)
            lo = rng.integers(0, spec.size // 4)
            spec[:lo] = 0
            spec *= np.exp(1j * rng.uniform(-0.1, 0.1, spec.size))
            x = np.fft.irfft(spec, n=self.length).astype(np.float32)
        feats = x.reshape(256, -1).mean(axis=1)
        return torch.from_numpy(feats), i % 10


def free_port() -> int:
    """A TCP port free on the loopback now (for a rendezvous)."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def data_file(name: str, mib: int) -> str:
    """A file of ``mib`` MiB of random bytes under the temp dir, made once (atomically)."""
    import tempfile

    path = os.path.join(tempfile.gettempdir(), name)
    if os.path.exists(path) and os.path.getsize(path) >= mib << 20:
        return path
    tmp = f"{path}.{os.getpid()}.tmp"
    block = os.urandom(1 << 20)
    with open(tmp, "wb") as f:
        for _ in range(mib):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())  # written back: a later POSIX_FADV_DONTNEED can drop its pages
    os.replace(tmp, path)
    return path
