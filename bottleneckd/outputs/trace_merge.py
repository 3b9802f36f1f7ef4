"""Several node traces of one job (one trace per node's sidecar) as one job's samples, for
``bottleneckd analyze TRACE [TRACE ...]``: the same pipeline as one node's trace, with every
rank of the job in ``Sample.ranks`` so the straggler is judged across nodes.

Samples are aligned by time (one tick of the first trace's interval; each trace's samples in
order from its start tick). In each tick:

- ranks: every node's rank reports, together;
- step phases: summed over the nodes (shares and per-step figures stay means over ranks);
- readings: the first trace's (the node of the lowest rank) as recorded, so that host-level
  figures stay one node's, not a sum of unlike machines; of the other nodes only the links
  between nodes and GPUs (``inter_node_interconnect``, ``inter_gpu_interconnect``) and their
  disks (``storage_bandwidth`` devices, not the host's or job's totals), each device named
  ``host/device``, so that the communication rule sees the busiest NIC of any node and the
  storage rules a straggler node's busy disk (a blind trace: a node reading from a SATA disk at
  97% of its peak, its ranks waiting 0.8 s a step for batches, read as their CPU);
- facts: the primary node's, as one node's ranks merge (the lowest rank's).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from bottleneckd.diagnosis.window import merge_phases
from bottleneckd.model.resources import Resource
from bottleneckd.model.sample import Reading, Sample

LINKS = (Resource.INTER_NODE_INTERCONNECT, Resource.INTER_GPU_INTERCONNECT)
#: per-device figures of every node (each device its own utilization, nothing summed): a straggler
#: node's busy disk is what its ranks' data wait waits on
DEVICES = (Resource.STORAGE_BANDWIDTH,)
#: devices that are a host's or a job's totals, not one device's: the primary node's only
HOST_LEVEL = ("host", "job")


def _lowest_rank(samples: list[Sample]) -> int:
    return min((r.identity.rank for s in samples for r in s.ranks), default=1 << 30)


def merge_node_traces(traces: list[tuple[str, Iterable[Sample]]]) -> Iterator[Sample]:
    """``traces``: (node name, samples) per node trace. Yields the job's samples in time order."""
    loaded = [(name, list(samples)) for name, samples in traces]
    loaded.sort(key=lambda nt: _lowest_rank(nt[1]))  # the primary node: the one with rank 0
    if not loaded or not any(s for _, s in loaded):
        return
    interval = next((s[0].interval for _, s in loaded if s), 1.0) or 1.0
    t0 = min(s[0].t for _, s in loaded if s)
    ticks: dict[int, list[tuple[int, Sample]]] = {}
    for i, (_, samples) in enumerate(loaded):
        if not samples:
            continue
        # each trace's k-th sample goes to its start tick + k: one sample per trace per tick, even
        # when two recorders' clocks tick half an interval apart (rounding each time would pair
        # two samples of one node in one tick and none in the next)
        start = round((samples[0].t - t0) / interval)
        for k, s in enumerate(samples):
            ticks.setdefault(start + k, []).append((i, s))
    for k in sorted(ticks):
        group = ticks[k]
        primary = next((s for i, s in group if i == 0), None)
        readings: list[Reading] = list(primary.readings) if primary is not None else []
        for i, s in group:
            if i == 0:
                continue
            node = loaded[i][0]
            readings += [
                Reading(r.resource, f"{node}/{r.device}", r.metric, r.value, r.unit, r.note)
                for r in s.readings
                if r.resource in LINKS or (r.resource in DEVICES and r.device not in HOST_LEVEL)
            ]
        ranks = tuple(sorted((r for _, s in group for r in s.ranks), key=lambda r: (r.identity.rank, r.identity.key)))
        ref = primary or group[0][1]
        yield Sample(
            t=t0 + k * interval,
            interval=ref.interval,
            readings=tuple(readings),
            # the primary node's facts, as a node's ranks merge (channel/ranks.py: the lowest rank's):
            # merge_phases keeps the last item's, so the primary comes last (a straggler node's own
            # exposed communication, a few ms, read beside the others' wait as other collectives)
            phases=merge_phases(s.phases for _, s in sorted(group, key=lambda g: -g[0])),
            samplers=ref.samplers,
            ranks=ranks,
        )
