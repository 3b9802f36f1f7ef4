"""The job's throughput as Prometheus families (model/throughput.py: the snapshot's window, the
ranks this sidecar sees): samples and tokens per second, and MFU against one device's peak on the
job's arithmetic path (the ``path`` label: ``bf16 tensor``, ``fp32`` ...). A figure that is unknown
(no examples counted, no token ids, no FLOP count, no peak for the path) is absent, never 0; the
report says why. Gauges over the last interval, as ``bottleneckd_step_seconds`` is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric


def throughput_families(snap: Any) -> Iterator[Metric]:
    """The throughput ``snap`` carries (samples per second, MFU, ...): nothing until a step is counted."""
    t = getattr(snap, "throughput", None)
    if t is None or not t.steps:
        return
    if t.samples_per_second is not None:
        yield GaugeMetricFamily(
            "bottleneckd_throughput_samples_per_second",
            "Training examples per second of the job's ranks on this node over the last interval",
            value=t.samples_per_second,
            unit="samples_per_second",
        )
    if t.tokens_per_second is not None:
        yield GaugeMetricFamily(
            "bottleneckd_throughput_tokens_per_second",
            "Token ids per second (batch x sequence integer inputs) over the last interval",
            value=t.tokens_per_second,
            unit="tokens_per_second",
        )
    if t.mfu is not None:
        fam = GaugeMetricFamily(
            "bottleneckd_model_flops_utilization_ratio",
            "MFU: the step's counted FLOPs per second of one rank over one device's peak on the job's path",
            labels=["path"],
            unit="ratio",
        )
        fam.add_metric([t.peak_path], t.mfu)
        yield fam
