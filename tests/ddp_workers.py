"""Rank bodies for the multi-rank tests: real gloo process groups, real DDP, real watchers.

Each function runs in a spawned process (torch.multiprocessing.spawn) and writes what it saw as
JSON to ``out/rank<N>.json``. Kept out of the test modules so spawn can import them cheaply."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn


def init(rank: int, world: int, port: int) -> None:
    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)


def mlp(width: int, depth: int = 3) -> nn.Module:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 4))


def ddp_steps(
    rank: int, world: int, port: int, out: str, width: int, steps: int, no_sync: bool, user_hook: bool
) -> None:
    """DDP over gloo, the watcher installed before DDP is made (as under ``bottleneckd run``) or
    on the DDP model (``watch()``); optionally a user comm hook registered after construction."""
    from bottleneckd.channel.link import PhaseReceiver
    from bottleneckd.torch import watch

    init(rank, world, port)
    sock = os.path.join(out, f"r{rank}.sock")
    rx = PhaseReceiver(sock).start()
    model = nn.parallel.DistributedDataParallel(mlp(width))
    calls = {"n": 0}
    if user_hook:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        def counting(state, bucket):  # noqa: ANN001, ANN202
            calls["n"] += 1
            return default_hooks.allreduce_hook(state, bucket)

    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = watch(
        model, opt, socket_path=sock, local_sampling=False, print_epoch=False, roofline_step=None, report_every=0.05
    )
    second_registration = ""
    if user_hook:
        model.register_comm_hook(dist.group.WORLD, counting)
        try:
            model.register_comm_hook(None, counting)
        except RuntimeError as e:
            second_registration = str(e)
    x, y = torch.randn(4, width), torch.randint(0, 4, (4,))
    loss_fn = nn.CrossEntropyLoss()
    grads_equal = None
    for i in range(steps):
        opt.zero_grad()
        if no_sync:
            with model.no_sync():
                loss_fn(model(x * (rank + 1)), y).backward()
        else:
            loss_fn(model(x * (rank + 1)), y).backward()
        if i == 0 and not no_sync:  # DDP's result is unchanged by our wrapper: gradients equal across ranks
            g = next(model.parameters()).grad.detach().clone()
            gs = [torch.zeros_like(g) for _ in range(world)]
            dist.all_gather(gs, g)
            grads_equal = all(torch.allclose(gs[0], t) for t in gs)
        opt.step()
    w.flush()
    time.sleep(0.3)
    ph = rx.drain()
    w.close()
    rx.close()
    doc: dict[str, Any] = {
        "phases": ph.phases if ph else None,
        "steps": ph.steps if ph else 0,
        "wall": ph.wall_seconds if ph else 0,
        "facts": dict(ph.facts) if ph else {},
        "user_calls": calls["n"],
        "second_registration": second_registration,
        "grads_equal": grads_equal,
    }
    Path(out, f"rank{rank}.json").write_text(json.dumps(doc, default=str))
    dist.barrier()
    dist.destroy_process_group()


def fsdp_steps(rank: int, world: int, port: int, out: str, width: int, steps: int) -> None:
    """FSDP2 (fully_shard) over gloo on CPU: its all-gathers and reduce-scatters go through
    torch.distributed's *_single / *_tensor functions, which collectives.py times."""
    from torch.distributed.fsdp import fully_shard

    from bottleneckd.channel.link import PhaseReceiver
    from bottleneckd.torch import watch

    init(rank, world, port)
    sock = os.path.join(out, f"r{rank}.sock")
    rx = PhaseReceiver(sock).start()
    model = mlp(width)
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = watch(
        model, opt, socket_path=sock, local_sampling=False, print_epoch=False, roofline_step=None, report_every=0.05
    )
    x, y = torch.randn(4, width), torch.randint(0, 4, (4,))
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    w.flush()
    time.sleep(0.3)
    ph = rx.drain()
    w.close()
    rx.close()
    Path(out, f"rank{rank}.json").write_text(
        json.dumps(
            {
                "phases": ph.phases if ph else None,
                "wall": ph.wall_seconds if ph else 0,
                "facts": dict(ph.facts) if ph else {},
            },
            default=str,
        )
    )
    dist.barrier()
    dist.destroy_process_group()


def rec(rid: str, hook: str) -> dict[str, Any]:
    """A recommendation as the report JSON has it (the fields the epoch block renders)."""
    return {
        "id": rid,
        "hook": hook,
        "name": rid,
        "changes_semantics": False,
        "cites": [],
        "sources": [],
        "section": "6.1",
        "taxonomy_path": "given",
        "why": "given",
        "prediction": None,
    }


class SlowStore(torch.utils.data.Dataset):
    """Each sample waits 3 ms on a slow store (a sleep: nothing busy): a latency-bound loader."""

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(0.003)
        return torch.full((8,), float(i % 7))


def tune_steps(rank: int, world: int, port: int, out: str, steps: int) -> None:
    """``--tune`` on every rank of a DDP job (as ``bottleneckd run --tune`` sets it), the sidecar's
    recommendation given: the loader's worker count at each step, as each rank saw it."""
    from bottleneckd.torch import tune as tune_mod
    from bottleneckd.torch import tune_ranks, watch

    tune_mod.BLOCK_SECONDS, tune_mod.PLAN_POLL_SECONDS, tune_ranks.TICK_SECONDS = 0.3, 0.2, 0.25
    init(rank, world, port)
    model = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(SlowStore(), batch_size=4)
    w = watch(
        model,
        opt,
        loader,
        socket_path=os.path.join(out, f"r{rank}.sock"),
        local_sampling=True,
        print_epoch=False,
        tune=True,
        report_every=0.1,
    )
    verdict = {"resource": "undetermined", "stage": "data", "confidence": 0.0, "evidence": [], "reason": "given"}
    recs = [rec("hide_loader_latency", "dataloader_settings")]
    w.transport.report = lambda: {"verdict": verdict, "recommendations": recs}  # the sidecar's, given
    workers: list[int] = []
    for x in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        workers.append(int(loader.num_workers))
        if len(workers) >= steps:
            break
    w.close()
    assert w.tuner is not None
    doc = {
        "role": w.tuner.role,
        "workers": workers,
        "outcomes": [(o.hook, o.status, o.params.get("num_workers")) for o in w.tuner.outcomes],
        "stopped": w.tuner.stopped,
        "summary": w.tuner.summary(),
    }
    Path(out, f"rank{rank}.json").write_text(json.dumps(doc, default=str))
    dist.barrier()
    dist.destroy_process_group()
