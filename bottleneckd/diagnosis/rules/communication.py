"""Gradient communication: inter-node network or the intra-node inter-GPU link."""

from __future__ import annotations

from bottleneckd.diagnosis.rules.common import BUSY, COMM_HIGH, headroom, pct
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
    world = (p.facts.get("world_size") if p else None) or 1
    local = (p.facts.get("local_world_size") if p else None) or world
    if nic is not None and (nic[1] >= BUSY or (base and world > local)):
        out.append(Finding("inter_node_interconnect", "communication", max(base, min(1.0, nic[1])),
                           tuple(base_ev + [f"{nic[0]} at {pct(nic[1])} of its line rate"]), headroom(share)))
    if nvl is not None and nvl[1] >= BUSY or (base and not out):
        ev = base_ev + ([f"{nvl[0]} inter-GPU link at {pct(nvl[1])} of its peak"] if nvl else [])
        if base and not out and world > 1 and world == local:
            ev.append(f"{world} ranks on one node")
        out.append(Finding("inter_gpu_interconnect", "communication", max(base, min(1.0, nvl[1] if nvl else 0.0)), tuple(ev), headroom(share)))
    return out
