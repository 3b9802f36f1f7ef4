"""``bottleneckd.torch.watch``: sync-free step-phase timing for a plain PyTorch training loop.

Phases of a step: data_wait (inside ``next()`` on the DataLoader), transfer (data ready to
forward start: the host-to-device copies), forward, backward (forward end to optimizer start),
optimizer, other (the rest of the wall time). Wall time is measured between consecutive
optimizer steps, so the phases add up to it by construction, ``other`` absorbing what no hook
sees. No synchronize and no ``.item()``; on CUDA the device phases come from events read lazily.
Any exception inside our instrumentation disables it (logged once); training goes on.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Iterable

import torch

from bottleneckd.model.facts import FactBoard
from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.protocol import StepReport
from bottleneckd.outputs.channel import PhaseSender, default_socket_path
from bottleneckd.torch.facts import input_facts, loader_facts, model_facts
from bottleneckd.torch.roofline import StepCounter
from bottleneckd.torch.timing import PHASE_KEYS, CudaClock, HostClock
from bottleneckd.torch.trials import Trial, TrialsMixin

log = logging.getLogger("bottleneckd.torch")


@dataclass(frozen=True)
class EpochReport:
    epoch: int
    steps: int
    phases: dict[str, float]
    report: dict[str, Any] | None
    text: str


class _LoaderProxy:
    """Wraps a DataLoader so iterating it times the wait for each batch and sees the epoch end."""

    def __init__(self, loader: Iterable, watcher: "Watcher") -> None:
        self._loader = loader
        self._w = watcher
        self.echo = 1  # data echoing: each batch yielded this many times

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def __len__(self) -> int:
        return len(self._loader)  # type: ignore[arg-type]

    def __iter__(self):  # noqa: ANN204
        it = iter(self._loader)
        w = self._w
        while True:
            try:
                batch = w.timed_next(it.__next__)
            except StopIteration:
                return
            yield batch
            for _ in range(self.echo - 1):
                w._mark("step_start")
                w._mark("data_ready")
                yield batch


class Watcher(TrialsMixin):
    def __init__(self, model: torch.nn.Module | None, optimizer: torch.optim.Optimizer | None = None, dataloader: Iterable | None = None,
                 *, socket_path: str | None = None, report_every: float = 0.5, print_epoch: bool = True,
                 local_sampling: bool | None = None, interval: float = 1.0, roofline_step: int | None = 3,
                 cuda_sample_every: int = 8) -> None:
        self.model = model
        self.optimizer = optimizer
        self.enabled = True
        self.epoch = 0
        self.print_epoch = print_epoch
        self.epoch_reports: list[EpochReport] = []
        dev = next((p.device for p in model.parameters()), torch.device("cpu")) if model is not None else torch.device("cpu")
        self.device = dev
        self._cuda_every = cuda_sample_every
        self._clock: HostClock | CudaClock = CudaClock(sample_every=cuda_sample_every) if dev.type == "cuda" else HostClock()
        self._acc = [0.0] * len(PHASE_KEYS)
        self._acc_wall = 0.0
        self._acc_steps = 0
        self._acc_compute = 0.0
        self._epoch_acc = [0.0] * len(PHASE_KEYS)
        self._epoch_steps = 0
        self._last_send = time.perf_counter()
        self._report_every = report_every
        self._handles: list[Any] = []
        self._step_index = 0
        self._examples = 0
        self._step_examples: list[int] = []
        self._history: deque[tuple[float, int]] = deque(maxlen=256)
        self.trials: list[Trial] = []
        self._pending_reverts: list[Any] = []
        self._trial: Trial | None = None
        self._roofline_step = roofline_step
        self._counter = StepCounter()
        self._sock_path = socket_path or default_socket_path()
        self._sender = PhaseSender(self._sock_path)
        self.facts = FactBoard({"device": dev.type, "pid": os.getpid(), **(model_facts(model, optimizer) if model is not None else {})})
        self._identity = RankIdentity.from_env()
        self.print_to = sys.stderr if os.environ.get("BOTTLENECKD_EPOCH_PRINT") == "stderr" else sys.stdout
        self._local = None
        if local_sampling is None:
            local_sampling = not os.path.exists(self._sock_path)
        if local_sampling:
            self._start_local(interval)
        self.dataloader = _LoaderProxy(dataloader, self) if dataloader is not None else None
        if dataloader is not None:
            self.facts.update(loader_facts(dataloader))
        global _global_watcher
        if _global_watcher is not None and not getattr(self, "_is_global", False):
            _global_watcher.close()  # an explicit watch() wins over the injected instrumentation
            _global_watcher = None
        self._install()

    # --- instrumentation -------------------------------------------------------------------
    def _safe(self, fn: Any, *args: Any) -> None:
        """Run a piece of our instrumentation; a failure turns the instrumentation off, never the
        training step (fail-open)."""
        if self.enabled:
            try:
                fn(*args)
            except Exception as e:  # noqa: BLE001 - our failure never breaks the step
                self.disable(f"{type(e).__name__}: {e}")

    def comm_begin(self) -> None:
        """A blocking collective starts (collectives.py); on CUDA timed with events."""
        self._safe(self._clock.comm_begin)

    def comm_end(self) -> None:
        self._safe(self._clock.comm_end)

    def _install(self) -> None:
        from bottleneckd.torch.collectives import wrap_collectives

        self._handles.append(wrap_collectives(self))
        self._handles.append(self._wrap_forward(self.model))
        if self.optimizer is not None:
            self._handles.append(self.optimizer.register_step_pre_hook(self._guard(lambda *a: self._mark("optimizer_start"))))
            self._handles.append(self.optimizer.register_step_post_hook(self._guard(lambda *a: self._end_step())))

    def _wrap_forward(self, module: torch.nn.Module) -> Any:
        """Time the root forward through an instance attribute: a module hook would push every
        call of the model off torch's hook-free fast path."""
        original = module.forward
        w = self

        def forward(*args: Any, **kwargs: Any) -> Any:
            w._safe(w._forward_start, module, args)
            out = original(*args, **kwargs)
            w._safe(w._clock.mark, "forward_end")
            return out

        module.forward = forward  # type: ignore[method-assign]

        class _Unwrap:
            def remove(self) -> None:
                if module.__dict__.get("forward") is forward:
                    del module.forward

        return _Unwrap()

    def _guard(self, fn: Any) -> Any:
        def hook(*args: Any) -> None:
            self._safe(fn, *args)

        return hook

    def _forward_start(self, module: Any, args: tuple) -> None:
        while self._pending_reverts:
            self._pending_reverts.pop(0).revert()
        self._clock.mark("forward_start")
        if "input_rank" not in self.facts:
            self.facts.update(input_facts(args))
        first = args[0] if args else None
        if isinstance(first, torch.Tensor) and first.dim() > 0:
            self._examples += int(first.shape[0])
        if self._roofline_step is not None and self._step_index == self._roofline_step and not self._counter.active:
            self._counter.start()  # this one step runs under counting modes; its timing is discarded

    def _finish_count(self) -> None:
        counts = self._counter.stop()
        if counts is not None:
            self.facts.update({"flops_per_step": counts.flops, "operand_bytes_per_step": counts.operand_bytes,
                               "arithmetic_intensity": counts.intensity})

    def _mark(self, label: str) -> None:
        self._safe(self._clock.mark, label)

    def timed_next(self, fetch: Any) -> Any:
        """The wait for the next batch (``fetch()``), timed; the loader's end is the epoch's end."""
        self._mark("step_start")
        try:
            batch = fetch()
        except StopIteration:
            self._unmark("step_start")
            self.epoch_end()
            raise
        self._mark("data_ready")
        return batch

    def _unmark(self, label: str) -> None:
        self._safe(self._clock.unmark, label)

    def _end_step(self) -> None:
        self._step_index += 1
        if self._counter.active:
            self._finish_count()
            self._clock.discard_step()  # a counted step runs slowly: its timing is dropped
            self._examples = 0
            return
        self._clock.end_step()
        self._step_examples.append(self._examples)
        self._examples = 0
        if time.perf_counter() - self._last_send >= self._report_every:
            self.flush()
        elif self._trial is not None:
            self._drain()  # a verification in progress decides at the step it completes

    def _drain(self) -> None:
        """Turn the steps timed since the last call into phase sums (off the per-step path)."""
        steps = self._clock.drain()
        examples, self._step_examples = self._step_examples[: len(steps)], self._step_examples[len(steps):]
        for (ph, wall), ex in zip(steps, examples + [0] * (len(steps) - len(examples))):
            acc, ep = self._acc, self._epoch_acc
            for k in range(len(ph)):
                acc[k] += ph[k]
                ep[k] += ph[k]
            self._acc_wall += wall
            self._acc_steps += 1
            self._epoch_steps += 1
            self._acc_compute += ph[2] + ph[3] + ph[4]
            self._record_step(wall, ex)

    def flush(self) -> None:
        self._drain()
        self._last_send = time.perf_counter()
        if not self._acc_steps:
            return
        compute = self._acc_compute
        if "flops_per_step" in self.facts and compute > 0 and self._acc_steps:
            per_step = compute / self._acc_steps
            self.facts["achieved_flops"] = self.facts["flops_per_step"] / per_step
            self.facts["achieved_bytes_per_second"] = self.facts["operand_bytes_per_step"] / per_step
        self._acc_compute = 0.0
        report = StepReport(self._identity, self._acc_steps, self._acc_wall, dict(zip(PHASE_KEYS, self._acc)),
                            self.facts.freeze(epoch=self.epoch, mitigations=[t.name for t in self.trials if t.kept is not False] or None))
        self._sender.send(report)
        if self._local is not None:
            self._local.receiver.accept(report)
        self._acc, self._acc_wall, self._acc_steps = [0.0] * len(PHASE_KEYS), 0.0, 0
        self._last_send = time.perf_counter()

    def disable(self, why: str) -> None:
        if not self.enabled:
            return
        self.enabled = False
        log.warning("bottleneckd instrumentation disabled after an internal error (%s); training is unaffected", why)
        for h in self._handles:
            try:
                h.remove()
            except Exception:  # noqa: BLE001
                pass

    def close(self) -> None:
        self.enabled = False
        for h in self._handles:
            h.remove()
        self._handles = []
        if self._local is not None:
            self._local.stop()
        self._sender.close()

    # --- reporting -------------------------------------------------------------------------
    def _start_local(self, interval: float) -> None:
        from bottleneckd.torch.local import LocalSidecar

        try:
            self._local = LocalSidecar(os.getpid(), interval)
        except Exception as e:  # noqa: BLE001
            log.warning("bottleneckd: local sampling unavailable (%s)", e)

    def epoch_end(self) -> EpochReport | None:
        """Print the verdict and top recommendations as one block; return them as an object."""
        try:
            self.flush()
            report = self._local.report() if self._local is not None else read_sidecar_report(self._sock_path)
            from bottleneckd.outputs.report import render_text

            phases = dict(zip(PHASE_KEYS, self._epoch_acc))
            total = sum(phases.values())
            share = ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(phases.items(), key=lambda kv: -kv[1]) if total and v > 0) or "no steps"
            text = f"[bottleneckd] epoch {self.epoch}: {self._epoch_steps} steps; step time: {share}"
            if report is not None:
                text += "\n" + render_text(report, top=3)
            rep = EpochReport(self.epoch, self._epoch_steps, phases, report, text)
            if self.print_epoch:
                print(text, file=self.print_to, flush=True)
            self.epoch_reports.append(rep)
            self.epoch += 1
            self._epoch_acc, self._epoch_steps = [0.0] * len(PHASE_KEYS), 0
            self._clock.reset()  # the next epoch's first step starts at its own data request
            return rep
        except Exception as e:  # noqa: BLE001
            self.disable(f"epoch report: {type(e).__name__}: {e}")
            return None


def read_sidecar_report(sock_path: str) -> dict[str, Any] | None:
    from bottleneckd.outputs.report_file import read_report_file

    return read_report_file(sock_path)


_lock = threading.Lock()
_global_watcher: "Watcher | None" = None  # the one installed by `bottleneckd run` (inject.py)


def watch(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None, dataloader: Iterable | None = None, **kw: Any) -> Watcher:
    """Time every step of a plain training loop. Iterate ``watcher.dataloader`` instead of the
    loader to time data waits and see epoch ends (or call ``watcher.epoch_end()``)."""
    with _lock:
        return Watcher(model, optimizer, dataloader, **kw)
