"""Gradient communication: inter-node network or the intra-node inter-GPU link.

Ranks on several hosts (the ranks' identities, or world size above the local world size) send
their all-reduce over the NICs: inter_node_interconnect, with how busy each NIC is *during* the
communication phases (its utilization over the interval divided by the share of the interval
spent communicating). Gloo on a CPU job reduces on the cores backward computes on: where those
cores are full, the all-reduce overlapped with backward is counted as cost with the exposed part
(common.comm_cost), not as free overlap. Ranks that share one host communicate over NVLink, PCIe or shared memory:
inter_gpu_interconnect. The evidence names the links and the ranks on each node."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import (
    BUSY,
    COMM_HIGH,
    SHARED_COMM_HIGH,
    comm_cost,
    headroom,
    pct,
    stack_samples,
)
from bottleneckd.diagnosis.rules.stack_comm import stack_comm
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.peaks.resolve import PeakTable


def communication(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    p = w.phases
    share = p.share("communication") if p else None
    nic = w.busiest("inter_node_interconnect")
    nvl = w.busiest("inter_gpu_interconnect")
    out = []
    base_ev = [f"gradient communication {pct(share)} of step time"] if share is not None and share >= COMM_HIGH else []
    base = min(1.0, (share or 0.0) / 0.3) if base_ev else 0.0
    cost = comm_cost(w)
    sc = stack_comm(w)
    if sc is not None:  # attach on a DDP job: the reducer's wait and the backend's threads, from stacks
        share = sc.share if sc.shares_cores else sc.exposed
        base_ev = [f"gradient communication about {pct(share)} of the step (from stack samples)", *sc.describe()]
        base = min(1.0, 0.55 + share / 2) if sc.shares_cores and share >= SHARED_COMM_HIGH else min(1.0, share / 0.3)
        base = base if share >= COMM_HIGH else 0.0
    elif cost is not None and cost.shares_cores and cost.share >= SHARED_COMM_HIGH and cost.share > (share or 0.0):
        # gloo on a CPU job: the all-reduce "overlapped" with backward takes the cores backward
        # needs, so it is the step's cost as much as the exposed part is
        share = cost.share
        base_ev = [f"gradient communication {pct(share)} of step time, counting the overlapped part", cost.describe()]
        base = min(1.0, 0.55 + share / 2)
    elif cost is not None and base_ev:
        base_ev = [f"{base_ev[0]} (the exposed part)", cost.describe()]
    world = (p.facts.get("world_size") if p else None) or 1
    local = (p.facts.get("local_world_size") if p else None) or world
    several_hosts = len(w.topology) > 1 or world > local
    where = _placement(w.topology, world)
    during = min(1.0, nic[1] / share) if nic is not None and share else None  # NIC busy while communicating
    if nic is not None and (nic[1] >= BUSY or (during or 0) >= BUSY or (base and several_hosts)):
        nic_ev = f"{nic[0]} at {pct(nic[1])} of its line rate" + (
            f", {pct(during)} during communication" if during is not None else ""
        )
        out.append(
            Finding(
                "inter_node_interconnect",
                "communication",
                max(base, min(1.0, max(nic[1], during or 0.0))),
                tuple(base_ev + [nic_ev] + ([where] if where else [])),
                headroom(share, stack_samples(w)),
            )
        )
    elif base and several_hosts:
        out.append(
            Finding(
                "inter_node_interconnect",
                "communication",
                base,
                tuple(
                    base_ev
                    + [
                        f"ranks on several hosts ({where or f'{world} ranks, {local} per node'}); NIC counters not read here"
                    ]
                ),
                headroom(share, stack_samples(w)),
            )
        )
    if nvl is not None and nvl[1] >= BUSY or (base and not out):
        ev = base_ev + ([f"{nvl[0]} inter-GPU link at {pct(nvl[1])} of its peak"] if nvl else [])
        if where:
            ev.append(where)
        elif base and not out and world > 1 and world == local:
            ev.append(f"{world} ranks on one node")
        out.append(
            Finding(
                "inter_gpu_interconnect",
                "communication",
                max(base, min(1.0, nvl[1] if nvl else 0.0)),
                tuple(ev),
                headroom(share, stack_samples(w)),
            )
        )
    return out


def _placement(topology: tuple[tuple[str, tuple[int, ...]], ...], world: int) -> str:
    if not topology:
        return ""
    if len(topology) == 1:
        node, ranks = topology[0]
        if len(ranks) < 2:
            return ""
        return f"{len(ranks)} ranks on one node ({node})" + (
            f" (ranks {', '.join(map(str, ranks))} of {world} reporting)" if world > len(ranks) else ""
        )
    return (
        "ranks on " + str(len(topology)) + " nodes: " + "; ".join(f"{n}: {', '.join(map(str, r))}" for n, r in topology)
    )
