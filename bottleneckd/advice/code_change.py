"""What to write in the training script to keep a mitigation ``run --tune`` proved: the hook
applied it to the running job; this is the same change made in the code, in one line.

Each text is the PyTorch API that does what the hook did (its source: the PyTorch documentation
named beside it), with the parameters the trial used."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: hook id -> (the code, the PyTorch documentation it follows); ``{...}`` are the trial's parameters
TEMPLATES: dict[str, tuple[str, str]] = {
    "channels_last": (
        "model = model.to(memory_format=torch.channels_last); x = x.contiguous(memory_format=torch.channels_last)",
        "https://pytorch.org/tutorials/intermediate/memory_format_tutorial.html",
    ),
    "mixed_precision": (
        "with torch.autocast(device_type, dtype=torch.{dtype}): loss = loss_fn(model(x), y)",
        "https://pytorch.org/docs/stable/amp.html",
    ),
    "data_echoing": (
        "repeat each batch {factor} times (Choi et al., 2019: data echoing)",
        "https://arxiv.org/abs/1907.05550",
    ),
    "ddp_comm_hook": (
        "ddp_model.register_comm_hook(None, default_hooks.{kind}_compress_hook)",
        "https://pytorch.org/docs/stable/ddp_comm_hooks.html",
    ),
    "less_frequent_sync": (
        "with ddp_model.no_sync(): ... on {k_minus_1} of every {k} steps",
        "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html",
    ),
    "gradient_accumulation": (
        "accumulate {k} micro-batches per optimizer.step()",
        "https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-accumulation",
    ),
}
DATALOADER_DOC = "https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader"
#: the DataLoader keywords in the order the documentation lists them
LOADER_KEYS = ("num_workers", "pin_memory", "prefetch_factor", "persistent_workers")


def code_change(hook: str, params: Mapping[str, Any]) -> str:
    """The line to write for ``hook`` applied with ``params`` (the trial's own settings)."""
    if hook == "dataloader_settings":
        args = ", ".join(f"{k}={params[k]!r}" for k in LOADER_KEYS if params.get(k) is not None)
        return f"DataLoader(..., {args})" if args else "DataLoader(...) unchanged"
    if hook not in TEMPLATES:
        return f"{hook} as applied by bottleneckd.torch (w.apply({hook!r}))"
    text, _ = TEMPLATES[hook]
    fill = {"dtype": "bfloat16", "factor": 2, "kind": "fp16", "k": 4, **dict(params)}
    fill["k_minus_1"] = int(fill["k"]) - 1 if isinstance(fill.get("k"), int) else "k-1"
    return text.format(**fill)


def documentation(hook: str) -> str:
    return DATALOADER_DOC if hook == "dataloader_settings" else TEMPLATES.get(hook, ("", ""))[1]
