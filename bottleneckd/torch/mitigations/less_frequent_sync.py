"""Less frequent gradient synchronisation (local SGD; Dutta et al., 2018; Lin et al., 2018): gradient
accumulation on a DistributedDataParallel model, whose micro-steps skip the all-reduce
(``no_sync``). Applied as :class:`GradientAccumulation` is; changes training semantics."""

from __future__ import annotations

from bottleneckd.torch.mitigations.base import declared_hook
from bottleneckd.torch.mitigations.gradient_accumulation import GradientAccumulation


class LessFrequentSync(GradientAccumulation):
    hook = declared_hook("less_frequent_sync")
    facts = {"gradient_accumulation": int}
    changes_semantics = True
