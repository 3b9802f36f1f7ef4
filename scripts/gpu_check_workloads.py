"""The labelled GPU workloads of scripts/gpu_check.py, each with the intervention that proves its label.

``python scripts/gpu_check_workloads.py NAME --variant base|intervention|both --seconds S [--small]
[--device cuda|cpu]`` trains for S seconds and prints one JSON line per variant: steps/s. Plain
PyTorch (an nn.Module, an optimizer, a DataLoader) so that ``bottleneckd run`` instruments it with
no code change and ``bottleneckd attach`` reads it from outside. ``--small`` shrinks every size for
a CPU dry run (``gpu_check.py --fake``); the labels are only claimed at full size on a GPU.
Multi-rank workloads (``ranks`` 2) run under ``torch.distributed.run``: NCCL on GPUs, gloo on the
CPU; rank 0 prints.

What users run, each with its intervention: the standard AMP recipe (fp32 parameters under
``torch.autocast(bfloat16)``), torch.compile, a whole step captured in a CUDA graph, a compute-bound
job beside a nearly full caching allocator, a launch-bound step, pageable against pinned
host-to-device copies, an input-bound loader, gradient accumulation, DDP and FSDP on 2 GPUs.

``sync_check``: the watcher around 60 steps under ``torch.cuda.set_sync_debug_mode("error")``:
any synchronising call in the hook's hot path raises.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


@dataclass(frozen=True)
class Workload:
    label: str  # the verdict the run must give; "" for none (then the data wait is what is checked)
    intervention: str
    proves: str
    #: the intervention against the base, in steps/s: "faster" / "slower" by at least x, or
    #: "not faster" / "not slower" by more than x (the ratio is always taken so that it is >= 1 when
    #: the intervention is faster, resp. slower)
    rule: tuple[str, float]
    attach: bool = False  # also judged under `bottleneckd attach` (no hook: NVML, GPM and py-spy only)
    ranks: int = 1  # processes; the intervention of a 2-rank workload is 1 rank with the same per-rank work
    facts: tuple[tuple[str, Any], ...] = ()  # facts the hook must report in the run (GPU only)


TENSOR = "slower by far more than the 2x more bytes: tensor-core math is the limit"
WORKLOADS: dict[str, Workload] = {
    "bf16_matmul": Workload("gpu_compute", "the same layers in fp32 with TF32 off", TENSOR, ("slower", 4.0), True),
    "amp_autocast": Workload(
        "gpu_compute",
        "autocast off (fp32 math, TF32 off)",
        TENSOR + "; the hook judges fp32 parameters under autocast against the bf16 peak",
        ("slower", 4.0),
        facts=(("autocast_dtype", "bfloat16"), ("compute_dtype", "bfloat16")),
    ),
    "compiled": Workload(
        "gpu_compute",
        "the same compiled model in fp32 with TF32 off",
        TENSOR + " (torch.compile)",
        ("slower", 4.0),
        facts=(("compiled", True),),
    ),
    "cuda_graph_step": Workload(
        "gpu_compute",
        "the same captured step in fp32 with TF32 off",
        TENSOR + "; the whole step is one CUDA graph replayed, timed one step per replay",
        ("slower", 4.0),
        facts=(("cuda_graphs", "whole step"),),
    ),
    "allocator_full": Workload(
        "gpu_compute",
        "the cache emptied (torch.cuda.empty_cache) before training",
        "no slower with the caching allocator holding ~90% of the GPU: the full cache costs nothing, "
        "not gpu_memory (the model is bf16_matmul's, compute-bound by its intervention)",
        ("not faster", 1.05),
    ),
    "elementwise_2gib": Workload(
        "gpu_memory_bandwidth",
        "the same chain in bf16 (half the bytes, same operations)",
        "about 2x faster: bytes moved are the limit",
        ("faster", 1.5),
        True,
    ),
    "launch_bound": Workload(
        "cpu_compute",
        "4x wider layers (16x the FLOPs, same number of kernels)",
        "barely slower: kernel launches / host-side Python, not the GPU, set the step time",
        ("not slower", 1.3),
        True,
    ),
    "pageable_h2d": Workload(
        "cpu_gpu_interconnect",
        "pinned host memory",
        "faster by over 1.5x: the host-to-device copy path is the limit",
        ("faster", 1.5),
        True,
    ),
    "input_bound": Workload(
        "cpu_compute",
        "4x the loader workers",
        "faster by over 1.5x: the CPU-side input pipeline is the limit",
        ("faster", 1.5),
        True,
    ),
    "grad_accum": Workload(
        "",
        "no DataLoader: the same in-memory batch handed over directly",
        "no faster without the loader: the data path costs nothing, so the data wait must be under 5%",
        ("not faster", 1.05),
    ),
    "ddp_2rank": Workload(
        "gpu_compute",
        "1 rank with the same per-rank model and batch",
        "barely faster alone: the overlapped all-reduce costs little, compute is the limit",
        ("not faster", 1.25),
        ranks=2,
        facts=(("ddp", True),),
    ),
    "fsdp_2rank": Workload(
        "gpu_compute",
        "1 rank with the same per-rank model and batch",
        "barely faster alone: FSDP's all-gathers and reduce-scatters overlap compute; not inter_gpu_interconnect",
        ("not faster", 1.25),
        ranks=2,
        facts=(("fsdp", True),),
    ),
    "fp32_mlp": Workload(
        "gpu_compute", "TF32 on (same bytes, faster math)", "faster by over 1.5x with no byte saved", ("faster", 1.5)
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


Step = Callable[[], None]


def _loop(model: nn.Module, opt: Any, loader: Any, loss: Callable, accum: int = 1, autocast: bool = False) -> Step:
    it, dev = iter(loader), next(model.parameters()).device.type

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        for _ in range(accum):
            with torch.autocast(dev, dtype=torch.bfloat16, enabled=autocast):
                out = loss(model, next(it))
            out.backward()
        opt.step()

    return step


def _square(m: nn.Module, b: torch.Tensor) -> torch.Tensor:
    return m(b).float().pow(2).mean()


def _tensor_mlp(inter: bool, small: bool, dev: str, params: torch.dtype | None = None, autocast: bool = False) -> Any:
    """bf16_matmul's model (fp32 with TF32 off for the intervention): (model, opt, loader)."""
    width, batch = (256, 64) if small else (8192, 8192)
    dtype = params or (torch.float32 if inter else torch.bfloat16)
    model = mlp(width, 4, dtype, dev)
    x = torch.randn(batch, width, device=dev, dtype=dtype)
    return model, torch.optim.SGD(model.parameters(), lr=1e-4), DataLoader(Repeat(x), batch_size=None)


def _graph_step(model: nn.Module, opt: Any, loader: Any, dev: str) -> tuple[Step, str]:
    """The whole step captured in one CUDA graph and replayed (PyTorch's "whole network capture")."""
    it = iter(loader)
    static_x = next(it).clone()
    if dev != "cuda":
        return _loop(
            model, opt, itertools.repeat(static_x), _square
        ), "no CUDA graphs on the CPU: the step runs eagerly"
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm-up on a side stream, as the CUDA-graph notes require
            opt.zero_grad(set_to_none=True)
            _square(model, static_x).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        _square(model, static_x).backward()
        opt.step()

    def step() -> None:
        static_x.copy_(next(it))  # the next batch into the graph's static input
        graph.replay()

    return step, ""


def _fill_cache(dev: str, release: bool) -> str:
    """The caching allocator holding ~90% of the GPU (a big block allocated and freed)."""
    if dev != "cuda":
        return "no caching allocator on the CPU: nothing filled"
    torch.cuda.empty_cache()  # "both" runs base then intervention in one process: start each from the same cache
    free, total = torch.cuda.mem_get_info()
    big = torch.empty(max(0, int(free - 0.1 * total)), dtype=torch.uint8, device=dev)
    del big  # freed to the cache, still reserved: NVML reads the GPU ~90% used
    if release:
        torch.cuda.empty_cache()
    return f"reserved {torch.cuda.memory_reserved() / total:.0%} of the GPU"


def _distributed(name: str, small: bool, dev: str) -> tuple[Step, str]:
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if dev == "cuda":
        torch.cuda.set_device(local)
    dist.init_process_group("nccl" if dev == "cuda" else "gloo")
    device = f"cuda:{local}" if dev == "cuda" else "cpu"
    if dev != "cuda":
        torch.set_num_threads(1)  # as torchrun gives each of 2 ranks: the 1-rank intervention gets no more
    width, batch = (256, 32) if small else (8192, 4096)
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    torch.manual_seed(rank)
    model = mlp(width, 4, dtype, device)
    if name == "ddp_2rank":
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local] if dev == "cuda" else None)
    else:
        from torch.distributed.fsdp import fully_shard

        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer)
        fully_shard(model)
    x = torch.randn(batch, width, device=device, dtype=dtype)
    loader = DataLoader(Repeat(x), batch_size=None)
    return _loop(model, torch.optim.SGD(model.parameters(), lr=1e-4), loader, _square), ""


def build(name: str, variant: str, small: bool, dev: str) -> tuple[Step, str]:
    """(one training step, a note on what the dry run could not do)."""
    inter = variant == "intervention"
    s = lambda full, tiny: tiny if small else full  # noqa: E731
    torch.backends.cuda.matmul.allow_tf32 = False
    if name == "bf16_matmul":
        return _loop(*_tensor_mlp(inter, small, dev), _square), ""
    if name == "amp_autocast":  # fp32 parameters; autocast to bf16 around the forward (the standard AMP recipe)
        return _loop(*_tensor_mlp(inter, small, dev, params=torch.float32), _square, autocast=not inter), ""
    if name == "compiled":
        model, opt, loader = _tensor_mlp(inter, small, dev)
        backend = "aot_eager" if small else "inductor"  # the dry run has no time for a C++ build
        return _loop(torch.compile(model, backend=backend), opt, loader, _square), ""
    if name == "cuda_graph_step":
        return _graph_step(*_tensor_mlp(inter, small, dev), dev)
    if name == "allocator_full":
        note = _fill_cache(dev, release=inter)
        return _loop(*_tensor_mlp(False, small, dev), _square), note
    if name == "fp32_mlp":
        torch.backends.cuda.matmul.allow_tf32 = inter
        width = s(4096, 256)
        model = mlp(width, 4, torch.float32, dev)
        x = torch.randn(s(8192, 64), width, device=dev)
        return _loop(
            model, torch.optim.SGD(model.parameters(), lr=1e-4), DataLoader(Repeat(x), batch_size=None), _square
        ), ""
    if name == "elementwise_2gib":
        dtype = torch.bfloat16 if inter else torch.float32
        x = torch.randn(s(2**29, 2**20), device=dev, dtype=dtype)  # 2 GiB of fp32 (1 GiB in bf16)
        model = Chain(8).to(dev)
        loader = DataLoader(Repeat(x), batch_size=None)
        return _loop(model, torch.optim.SGD(model.parameters(), lr=1e-6), loader, lambda m, b: m(b).float().mean()), ""
    if name == "launch_bound":
        width = s(128, 32) * (4 if inter else 1)
        model = mlp(width, 8, torch.float32, dev)
        x = torch.randn(32, width, device=dev)
        loss = lambda m, b: m(b).pow(2).mean()  # noqa: E731
        return _loop(
            model, torch.optim.Adam(model.parameters(), lr=1e-4), DataLoader(Repeat(x), batch_size=None), loss
        ), ""
    if name == "pageable_h2d":
        host = torch.empty(s(2**30, 2**22), dtype=torch.uint8, pin_memory=inter and dev == "cuda")
        model = mlp(256, 2, torch.float32, dev)

        def copy_loss(m: nn.Module, b: torch.Tensor) -> torch.Tensor:
            on_dev = b.to(dev, non_blocking=inter)  # 1 GiB host-to-device per step
            return m(on_dev[: 256 * 256 * 4].view(torch.float32).view(256, 256)).mean()

        loader = DataLoader(Repeat(host), batch_size=None)
        return _loop(model, torch.optim.SGD(model.parameters(), lr=1e-4), loader, copy_loss), ""
    if name == "input_bound":
        model = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, 10)
        ).to(dev)
        loader = DataLoader(Costly(s(24, 4)), batch_size=64, num_workers=(4 if inter else 1), pin_memory=dev == "cuda")

        def ce(m: nn.Module, b: Any) -> torch.Tensor:
            return nn.functional.cross_entropy(m(b[0].to(dev, non_blocking=True)), b[1].to(dev, non_blocking=True))

        return _loop(model, torch.optim.SGD(model.parameters(), lr=1e-2), loader, ce), ""
    if name == "grad_accum":
        model = mlp(s(4096, 128), 4, torch.bfloat16, dev)
        x = torch.randn(s(2048, 32), s(4096, 128), device=dev, dtype=torch.bfloat16)
        source = itertools.repeat(x) if inter else DataLoader(Repeat(x), batch_size=None)  # the intervention: no loader
        return _loop(model, torch.optim.SGD(model.parameters(), lr=1e-4), source, _square, accum=4), ""
    if name in ("ddp_2rank", "fsdp_2rank"):
        return _distributed(name, small, dev)
    raise SystemExit(f"unknown workload {name!r}; one of: {', '.join(WORKLOADS)}, sync_check")


def _stop(mine: bool, steps: int, dev: str) -> bool:
    """Whether to stop; with several ranks every 8 steps they agree (a rank that stepped once more
    than the others would wait in a collective no one joins)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return mine
    if steps % 8:
        return False
    flag = torch.tensor(
        [1.0 if mine else 0.0], device=f"cuda:{torch.cuda.current_device()}" if dev == "cuda" else "cpu"
    )
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


def _finish() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def train(name: str, variant: str, seconds: float, small: bool, dev: str) -> dict[str, Any]:
    step, note = build(name, variant, small, dev)
    step()  # the first step outside the clock (compilation, cuBLAS handles)
    if dev == "cuda":
        torch.cuda.synchronize()
    if int(os.environ.get("RANK", "0")) == 0:  # gpu_check.py probes and attaches from here on, not during start-up
        print(json.dumps({"event": "training", "workload": name, "variant": variant}), flush=True)
    steps, t0 = 0, time.perf_counter()
    while not _stop(time.perf_counter() - t0 >= seconds, steps, dev):
        step()
        steps += 1
    if dev == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    _finish()
    out = {"workload": name, "variant": variant, "steps": steps, "seconds": dt, "steps_per_second": steps / dt}
    return {**out, "note": note} if note else out


def sync_check(seconds: float, small: bool, dev: str) -> dict[str, Any]:
    """The watcher's hot path under set_sync_debug_mode('error'): a synchronising call raises.
    Without CUDA the same instrumented loop runs on the CPU (its code path is checked; the
    synchronisation is not)."""
    from bottleneckd.torch import watch

    cuda = dev == "cuda"
    model, opt, loader = _tensor_mlp(False, True, dev, params=torch.float32)
    w = watch(model, opt, loader, print_epoch=False, local_sampling=False, cuda_sample_every=1)
    step = _loop(model, opt, w.dataloader, _square, autocast=True)
    for _ in range(2):  # warm-up outside the check (allocator, cuBLAS handles); the roofline step (3rd) is inside it
        step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
    steps, err = 0, None
    try:
        t0 = time.perf_counter()
        while steps < 60 or time.perf_counter() - t0 < min(seconds, 2.0):
            step()
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
    out = {"workload": "sync_check", "ok": (err is None) if cuda else None, "steps": steps}
    out.update({"steps_counted_by_hook": counted, "error": err})
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
        res = train(a.name, variant, a.seconds, a.small, a.device)
        if int(os.environ.get("RANK", "0")) == 0:
            print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
