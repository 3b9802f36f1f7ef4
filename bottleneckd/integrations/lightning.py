"""PyTorch Lightning (package ``lightning``): ``Trainer(callbacks=[BottleneckCallback()])``.

The hooks, what they time and how the metrics are logged: ``integrations/_lightning_hooks.py``.
For the older package name, ``pytorch_lightning``: ``integrations.pytorch_lightning``.
"""

from __future__ import annotations

from lightning.pytorch.callbacks import Callback

from bottleneckd.integrations._lightning_hooks import HOW, LightningHooks, precision_dtype

__all__ = ["HOW", "BottleneckCallback", "precision_dtype"]


class BottleneckCallback(LightningHooks, Callback):
    """Times every training step from Lightning's hooks, logs ``bottleneck/*`` metrics every
    ``log_every_n_steps`` and reports the bottleneck at each epoch's end."""
