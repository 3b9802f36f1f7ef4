"""PyTorch Lightning under its older package name, ``pytorch_lightning``:
``pytorch_lightning.Trainer(callbacks=[BottleneckCallback()])``. A Trainer accepts only callbacks
of its own package's ``Callback`` class, so this is the same callback as ``integrations.lightning``
(``integrations/_lightning_hooks.py``) on ``pytorch_lightning``'s base class.
"""

from __future__ import annotations

from pytorch_lightning.callbacks import Callback

from bottleneckd.integrations._lightning_hooks import HOW, LightningHooks

__all__ = ["HOW", "BottleneckCallback"]


class BottleneckCallback(LightningHooks, Callback):
    """Times every training step from Lightning's hooks, logs ``bottleneck/*`` metrics every
    ``log_every_n_steps`` and reports the bottleneck at each epoch's end."""
