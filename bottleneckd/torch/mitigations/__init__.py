"""Mitigations the hook can apply, by the knowledge base's ``hook`` id, run by the engine on the watcher's events."""

from bottleneckd.torch.mitigations.activation_checkpointing import ActivationCheckpointing
from bottleneckd.torch.mitigations.base import Context, Event, FactChanges, Mitigation
from bottleneckd.torch.mitigations.channels_last import ChannelsLast
from bottleneckd.torch.mitigations.data_echoing import DataEchoing
from bottleneckd.torch.mitigations.dataloader_settings import DataLoaderSettings
from bottleneckd.torch.mitigations.ddp_comm_hook import DdpCommHook
from bottleneckd.torch.mitigations.engine import MitigationEngine
from bottleneckd.torch.mitigations.gradient_accumulation import GradientAccumulation, LessFrequentSync
from bottleneckd.torch.mitigations.mixed_precision import MixedPrecision
from bottleneckd.torch.mitigations.progressive_freezing import ProgressiveFreezing
from bottleneckd.torch.mitigations.progressive_resizing import ProgressiveResizing
from bottleneckd.torch.mitigations.selective_backprop import SelectiveBackprop

REGISTRY: dict[str, type] = {
    m.name: m
    for m in (
        MixedPrecision,
        ChannelsLast,
        ActivationCheckpointing,
        DataEchoing,
        DataLoaderSettings,
        GradientAccumulation,
        LessFrequentSync,
        DdpCommHook,
        ProgressiveFreezing,
        SelectiveBackprop,
        ProgressiveResizing,
    )
}

__all__ = ["REGISTRY", "Context", "Event", "FactChanges", "Mitigation", "MitigationEngine"] + [
    c.__name__ for c in REGISTRY.values()
]
