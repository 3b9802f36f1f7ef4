"""The labelled GPU workloads of scripts/gpu_check.py, each with the intervention that proves its label.

``python scripts/gpu_check_workloads.py NAME --variant base|intervention --seconds S [--small]
[--device cuda|cpu]`` trains for S seconds and prints one JSON line: steps/s. Plain PyTorch (an
nn.Module, an optimizer, a DataLoader) so that ``bottleneckd run`` instruments it with no code
change and ``bottleneckd attach`` reads it from outside. ``--small`` shrinks every size for a
CPU dry run (``gpu_check.py --fake``); the labels are only claimed at full size on a GPU.

``sync_check``: the watcher around 60 steps under ``torch.cuda.set_sync_debug_mode("error")``:
any synchronising call in the hook's hot path raises.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

#: name -> (label the verdict must give, the intervention, what it proves when the ratio holds)
WORKLOADS: dict[str, tuple[str, str, str]] = {
    "bf16_matmul": (
        "gpu_compute",
        "the same layers in fp32 with TF32 off",
        "slower by far more than the 2x more bytes: the tensor-core math is the limit",
    ),
    "fp32_mlp": (
        "gpu_compute",
        "TF32 on (same bytes, faster math)",
        "faster by well over 1.5x with no byte saved: compute, not memory",
    ),
    "elementwise_2gib": (
        "gpu_memory_bandwidth",
        "the same chain in bf16 (half the bytes, same operations)",
        "about 2x faster: bytes moved are the limit",
    ),
    "launch_bound": (
        "cpu_compute",
        "4x wider layers (16x the FLOPs, same number of kernels)",
        "barely slower: kernel launches / host-side Python, not the GPU, set the step time",
    ),
    "pageable_h2d": (
        "cpu_gpu_interconnect",
        "pinned host memory",
        "faster by over 1.5x: the host-to-device copy path is the limit",
    ),
    "input_bound": (
        "cpu_compute",
        "4x the loader workers",
        "faster by over 1.5x: the CPU-side input pipeline is the limit",
    ),
    "grad_accum": (
        "",
        "the same batch from a plain iterator instead of the DataLoader",
        "at most 10% faster: the loader is not what the step waits on (data wait under 5% of the step)",
    ),
}


class Repeat(Dataset):
    """The same (device) tensor n times: data already in memory."""

    def __init__(self, x: Any, n: int = 10**9) -> None:
        self.x, self.n = x, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        return self.x


class Costly(Dataset):
    """Images with CPU work per sample (blur and resample repeatedly)."""

    def __init__(self, cost: int) -> None:
        self.cost = cost

    def __len__(self) -> int:
        return 10**9

    def __getitem__(self, i: int) -> Any:
        x = torch.randn(3, 64, 64, generator=torch.Generator().manual_seed(i))
        for _ in range(self.cost):
            x = nn.functional.avg_pool2d(x.unsqueeze(0), 3, 1, 1).squeeze(0) * 1.01
        return nn.functional.interpolate(x.unsqueeze(0), size=32, mode="bilinear").squeeze(0), i % 10


class Chain(nn.Module):
    """A chain of elementwise operations on a large tensor (one scalar parameter to train)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))
        self.n = n

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * self.scale
        for _ in range(self.n):
            y = y * 1.0001 + 0.5
        return y


def mlp(width: int, depth: int, dtype: torch.dtype, dev: str) -> nn.Module:
    return nn.Sequential(*[m for _ in range(depth) for m in (nn.Linear(width, width), nn.ReLU())]).to(dev, dtype)


def build(
    name: str, variant: str, small: bool, dev: str
) -> tuple[nn.Module, Any, DataLoader, Callable[..., torch.Tensor], int]:
    """(model, optimizer, loader, loss of a batch, micro-batches per optimizer step)."""
    inter = variant == "intervention"
    s = lambda full, tiny: tiny if small else full
    torch.backends.cuda.matmul.allow_tf32 = False
    if name in ("bf16_matmul", "fp32_mlp"):
        dtype = torch.bfloat16 if name == "bf16_matmul" and not inter else torch.float32
        if name == "fp32_mlp" and inter:
            torch.backends.cuda.matmul.allow_tf32 = True
        width = s(8192 if name == "bf16_matmul" else 4096, 256)
        model = mlp(width, 4, dtype, dev)
        x = torch.randn(s(8192, 64), width, device=dev, dtype=dtype)
        loss = lambda m, b: m(b).float().pow(2).mean()  # noqa: E731
        return model, torch.optim.SGD(model.parameters(), lr=1e-4), DataLoader(Repeat(x), batch_size=None), loss, 1
    if name == "elementwise_2gib":
        dtype = torch.bfloat16 if inter else torch.float32
        x = torch.randn(s(2**29, 2**20), device=dev, dtype=dtype)  # 2 GiB of fp32 (1 GiB in bf16)
        model = Chain(8).to(dev)
        loss = lambda m, b: m(b).float().mean() if inter else m(b).mean()  # noqa: E731
        return model, torch.optim.SGD(model.parameters(), lr=1e-6), DataLoader(Repeat(x), batch_size=None), loss, 1
    if name == "launch_bound":
        model = mlp(s(128, 32) * (4 if inter else 1), 8, torch.float32, dev)
        x = torch.randn(32, s(128, 32) * (4 if inter else 1), device=dev)
        loss = lambda m, b: m(b).pow(2).mean()  # noqa: E731
        return model, torch.optim.Adam(model.parameters(), lr=1e-4), DataLoader(Repeat(x), batch_size=None), loss, 1
    if name == "pageable_h2d":
        host = torch.empty(s(2**30, 2**22), dtype=torch.uint8, pin_memory=inter and dev == "cuda")
        model = mlp(256, 2, torch.float32, dev)

        def copy_loss(m: nn.Module, b: torch.Tensor) -> torch.Tensor:
            on_dev = b.to(dev, non_blocking=inter)  # 1 GiB host-to-device per step
            return m(on_dev[: 256 * 256 * 4].view(torch.float32).view(256, 256)).mean()

        return (
            model,
            torch.optim.SGD(model.parameters(), lr=1e-4),
            DataLoader(Repeat(host), batch_size=None),
            copy_loss,
            1,
        )
    if name == "input_bound":
        model = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, 10)
        ).to(dev)
        loader = DataLoader(Costly(s(24, 4)), batch_size=64, num_workers=(4 if inter else 1), pin_memory=dev == "cuda")
        loss = lambda m, b: nn.functional.cross_entropy(
            m(b[0].to(dev, non_blocking=True)), b[1].to(dev, non_blocking=True)
        )  # noqa: E731
        return model, torch.optim.SGD(model.parameters(), lr=1e-2), loader, loss, 1
    if name == "grad_accum":
        model = mlp(s(4096, 128), 4, torch.bfloat16, dev)
        x = torch.randn(s(2048, 32), s(4096, 128), device=dev, dtype=torch.bfloat16)
        loss = lambda m, b: m(b).float().pow(2).mean()  # noqa: E731
        loader = itertools.repeat(x) if inter else DataLoader(Repeat(x), batch_size=None)
        return model, torch.optim.SGD(model.parameters(), lr=1e-4), loader, loss, 4
    raise SystemExit(f"unknown workload {name!r}; one of: {', '.join(WORKLOADS)}, sync_check")


def train(name: str, variant: str, seconds: float, small: bool, dev: str) -> dict[str, Any]:
    model, opt, loader, loss, accum = build(name, variant, small, dev)
    steps, t0, it = 0, time.perf_counter(), iter(loader)
    while time.perf_counter() - t0 < seconds:
        opt.zero_grad(set_to_none=True)
        for _ in range(accum):
            loss(model, next(it)).backward()
        opt.step()
        steps += 1
    if dev == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return {"workload": name, "variant": variant, "steps": steps, "seconds": dt, "steps_per_second": steps / dt}


def sync_check(seconds: float, small: bool, dev: str) -> dict[str, Any]:
    """The watcher's hot path under set_sync_debug_mode('error'): a synchronising call raises.
    Without CUDA the same instrumented loop runs on the CPU (its code path is checked; the
    synchronisation is not)."""
    from bottleneckd.torch import watch

    cuda = dev == "cuda"
    model, opt, loader, loss, _ = build("fp32_mlp", "base", small, dev)
    w = watch(model, opt, loader, print_epoch=False, local_sampling=False, cuda_sample_every=1)
    it = iter(w.dataloader)
    for _ in range(2):  # warm-up outside the check (allocator, cuBLAS handles); the roofline step (3rd) is inside it
        opt.zero_grad(set_to_none=True)
        loss(model, next(it)).backward()
        opt.step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
    steps, err = 0, None
    try:
        t0 = time.perf_counter()
        while steps < 60 or time.perf_counter() - t0 < min(seconds, 2.0):
            opt.zero_grad(set_to_none=True)
            loss(model, next(it)).backward()
            opt.step()
            steps += 1
            if not cuda and steps >= 6:
                break
    except RuntimeError as e:
        err = str(e).splitlines()[0]
    finally:
        if cuda:
            torch.cuda.set_sync_debug_mode(0)
            torch.cuda.synchronize()
    w.flush()
    counted = w.steps_done()
    w.close()
    out = {
        "workload": "sync_check",
        "ok": (err is None) if cuda else None,
        "steps": steps,
        "steps_counted_by_hook": counted,
        "error": err,
    }
    if not cuda:
        out["why"] = "no CUDA device: torch.cuda.set_sync_debug_mode needs one (the instrumented loop ran on the CPU)"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("name")
    ap.add_argument(
        "--variant",
        choices=("base", "intervention", "both"),
        default="base",
        help="both: base then intervention in this one process, seconds each",
    )
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    if a.name == "sync_check":
        print(json.dumps(sync_check(a.seconds, a.small, a.device)), flush=True)
        return
    for variant in ("base", "intervention") if a.variant == "both" else (a.variant,):
        print(json.dumps(train(a.name, variant, a.seconds, a.small, a.device)), flush=True)


if __name__ == "__main__":
    main()
