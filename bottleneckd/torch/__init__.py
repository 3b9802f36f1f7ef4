"""The torch side of bottleneckd: the only package that imports torch.

from bottleneckd.torch import watch
w = watch(model, optimizer, loader)
for x, y in w.dataloader: ...
"""

from bottleneckd.torch.watch import EpochReport, Watcher, watch

__all__ = ["watch", "Watcher", "EpochReport"]
