"""Gradient communication: inter-node network or the intra-node inter-GPU link.

Ranks on several hosts (the ranks' identities, or world size above the local world size) send
their all-reduce over the NICs: inter_node_interconnect, with how busy each NIC is *during* the
communication phases (its utilization over the interval divided by the share of the interval
spent communicating). Gloo on a CPU job reduces on the cores backward computes on: where those
cores are full, the all-reduce overlapped with backward is counted as cost with the exposed part
(common.comm_cost), not as free overlap. Ranks that share one host communicate over NVLink, PCIe or shared memory:
inter_gpu_interconnect. The evidence names the links and the ranks on each node."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bottleneckd.diagnosis.job_gpus import job_busiest
from bottleneckd.diagnosis.rules.comm_cost import comm_cost
from bottleneckd.diagnosis.rules.common import data_share, headroom, pct, stack_samples
from bottleneckd.diagnosis.rules.network_storage import job_nic
from bottleneckd.diagnosis.rules.stack_comm import stack_comm
from bottleneckd.diagnosis.thresholds import (
    BUSY,
    COMM_HIGH,
    EXPOSED_OUTSIDE_PHASE,
    IDLE_UTILIZATION,
    INPUT_MODERATE,
    LATE_BATCH_DATA_RATIO,
    LINK_IDLE_WHILE_COMMUNICATING,
    OWN_COLLECTIVES_LINK_IDLE,
    RAIL_BYTES,
    SHARED_COMM_HIGH,
    USUAL_RATE_PORTS,
)
from bottleneckd.diagnosis.verdict import Finding
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.links import rdma_port
from bottleneckd.model.resources import UNDETERMINED, Phase, Resource, Stage
from bottleneckd.peaks.resolve import PeakTable

# --- scores: chosen, not measured -----------------------------------------------------------------

#: the timed communication's strength: its share of the step, full at 30%
FULL_SHARE = 0.3
#: communication on the compute's own cores (gloo on CPU): 0.55 plus half its share (0.72 at
#: SHARED_COMM_HIGH, above the CPU compute finding's 0.55-0.9 only when the share is high)
SHARED_BASE = 0.55
SHARED_PER_SHARE = 0.5
#: communication whose link sits idle while the step also waits for data is the ranks waiting for a
#: late batch: its strength is scaled by this, so that the data stage's finding can lead
WAITING_FOR_RANKS = 0.5


@dataclass(frozen=True, kw_only=True)
class CommCase:
    """The window's communication: its share of the step, the evidence and strength of that share,
    and where the ranks are."""

    w: WindowStats
    share: float | None
    base: float  # strength from the timed share (0 when not high enough)
    base_ev: list[str]
    world: int
    local: int
    nvl: tuple[str, float] | None = None  # the busiest inter-GPU link of the job's GPUs (not another tenant's)

    #: the hook reported the job's world size and local world size (attach does not: its ranks on
    #: other hosts are unseen)
    world_known: bool = False
    #: why the communication phase holds only the job's own collectives ("" where it may hold DDP's
    #: or FSDP's): neither in the job, or DDP's all-reduce not timed (the hook's facts)
    own: str = ""

    @property
    def link_during(self) -> float | None:
        """The busiest inter-GPU link's share of its peak while communicating (its utilization over
        the communication's share of the step), or None without either."""
        return self.nvl[1] / self.share if self.nvl is not None and self.share else None

    @property
    def several_hosts(self) -> bool:
        return spans_hosts(self.w)

    @property
    def one_host(self) -> bool:
        """Every rank on this host, as the job itself says (all of its world local): its collectives
        never cross a NIC, so a busy NIC is another flow's (a checkpoint to NFS, a remote dataset)."""
        return self.world_known and not self.several_hosts

    @property
    def where(self) -> str:
        return _placement(self.w.topology, self.world)


def communication(w: WindowStats, peaks: PeakTable) -> list[Finding]:
    """The family: the inter-node network (NIC busy, or ranks on several hosts) and the intra-node
    link (NVLink busy, or communication with no inter-node finding)."""
    c = _comm_case(w, peaks)
    out = [f for f in (_inter_node(c),) if f is not None]
    intra = _intra_node(c, named=bool(out))
    return out + ([intra] if intra is not None else [])


def _comm_case(w: WindowStats, peaks: PeakTable | None = None) -> CommCase:
    p = w.phases
    share = p.share(Phase.COMMUNICATION) if p else None
    own = _own_collectives(p.facts if p is not None else {})
    what = f"communication (the job's own collectives: {own})" if own else "gradient communication"
    base_ev = [f"{what} {pct(share)} of step time"] if share is not None and share >= COMM_HIGH else []
    base = min(1.0, (share or 0.0) / FULL_SHARE) if base_ev else 0.0
    cost = comm_cost(w)
    outside = exposed_outside_phase(w)
    if outside is not None:
        share, base = outside, min(1.0, outside / FULL_SHARE)
        phase = p.share(Phase.COMMUNICATION) if p is not None else None
        base_ev = [
            f"{what} {pct(outside)} of step time, inside forward and backward (the communication phase {pct(phase)})"
        ]
    sc = stack_comm(w)
    if sc is not None:  # attach on a DDP job: the reducer's wait and the backend's threads, from stacks
        # as with the hook's timing: the overlapped part counts only at SHARED_COMM_HIGH and above
        # (below it compute is the larger cost); otherwise the exposed part alone
        shared = sc.shares_cores and sc.share >= SHARED_COMM_HIGH
        share = sc.share if shared else sc.exposed
        part = "" if shared or not sc.overlapped else ", the exposed part"
        base_ev = [f"gradient communication about {pct(share)} of the step (from stack samples{part})", *sc.describe()]
        base = min(1.0, SHARED_BASE + share * SHARED_PER_SHARE if shared else share / FULL_SHARE)
        base = base if share >= COMM_HIGH else 0.0
    elif cost is not None and cost.shares_cores and cost.share >= SHARED_COMM_HIGH and cost.share > (share or 0.0):
        # gloo on a CPU job: the all-reduce "overlapped" with backward takes the cores backward
        # needs, so it is the step's cost as much as the exposed part is
        share = cost.share
        base_ev = [f"gradient communication {pct(share)} of step time, counting the overlapped part", cost.describe()]
        base = min(1.0, SHARED_BASE + share * SHARED_PER_SHARE)
    elif cost is not None and base_ev and share is not None and (other := other_collectives(w)) is not None:
        # DDP's comm hook timed the gradient all-reduce; the rest of the phase is blocking collectives
        # of the model's own (expert parallelism's all-to-all, tensor parallelism's all-gathers)
        base_ev = [
            f"communication {pct(share)} of step time: the gradient all-reduce's exposed part {pct(share - other)} "
            f"of it (DDP's comm hook), the other {pct(other)} other collectives (expert or tensor parallelism: "
            "all-to-all, all-gather, broadcasts), which gradient mitigations do not reduce",
            cost.describe(),
        ]
    elif cost is not None and base_ev:
        base_ev = [f"{base_ev[0]} (the exposed part)", cost.describe()]
    # both told (torchrun sets LOCAL_WORLD_SIZE; srun, mpirun and others may not): without the local
    # size the ranks' placement is not known, and a busy NIC may be the all-reduce's
    world_known = p is not None and all(isinstance(p.facts.get(k), int) for k in ("world_size", "local_world_size"))
    world = (p.facts.get("world_size") if p else None) or 1
    local = (p.facts.get("local_world_size") if p else None) or world
    nvl = job_busiest(w, peaks, Resource.INTER_GPU_INTERCONNECT)
    return CommCase(
        w=w,
        share=share,
        base=base,
        base_ev=base_ev,
        world=world,
        local=local,
        nvl=nvl,
        world_known=world_known,
        own=own,
    )


def exposed_outside_phase(w: WindowStats) -> float | None:
    """The hook's exposed communication's share of the step where the communication phase holds under
    EXPOSED_OUTSIDE_PHASE of it (the waits left in forward and backward), at COMM_HIGH or more; else
    None (the phase stands)."""
    cost, p = comm_cost(w), w.phases
    if cost is None or cost.step <= 0 or p is None:
        return None
    exposed = min(1.0, cost.exposed / cost.step)
    if exposed < COMM_HIGH or (p.share(Phase.COMMUNICATION) or 0.0) >= EXPOSED_OUTSIDE_PHASE * exposed:
        return None
    return exposed


def _own_collectives(facts: Mapping[str, Any]) -> str:
    """Why the hook's communication phase holds only collectives the job calls itself (a hand-written
    gradient all-reduce, or tensor, pipeline or expert parallelism's: the hook does not tell them
    apart), or "": with neither DDP nor FSDP in the job, or DDP whose comm hook did not time its
    all-reduce (``ddp_comm_timing`` off), which then is in no phase. FSDP's collectives go through the
    wrapped functions: its phase is the gradients' and parameters' too."""
    if facts.get("fsdp") is True:
        return ""
    if facts.get("ddp") is False and facts.get("fsdp") is False:
        return "no DDP or FSDP"
    timing = facts.get("ddp_comm_timing")
    if facts.get("ddp") is True and isinstance(timing, str) and timing.startswith("off"):
        return "DDP's all-reduce not timed"
    return ""


def other_collectives(w: WindowStats) -> float | None:
    """The communication phase's share of the step that is not DDP's gradient all-reduce, where DDP's
    comm hook timed it: the phase less the all-reduce's exposed part, when that rest is COMM_HIGH of
    the step or more and at least the all-reduce's part (most of the phase is not the gradients': the
    hook's exposed figure is a moving average over its last steps, the phase the window's, so a plain
    DDP job's two differ by several points); else None."""
    cost, p = comm_cost(w), w.phases
    if cost is None or p is None:
        return None
    share = p.share(Phase.COMMUNICATION) or 0.0
    exposed = min(share, cost.exposed / cost.step) if cost.step > 0 else 0.0
    other = share - exposed
    return other if other >= COMM_HIGH and other >= exposed else None


def spans_hosts(w: WindowStats) -> bool:
    """The job's ranks are on more than one host (the hook's world and local world sizes, or the
    ranks' reports from several nodes)."""
    p = w.phases
    world = (p.facts.get("world_size") if p else None) or 1
    local = (p.facts.get("local_world_size") if p else None) or world
    return len(w.topology) > 1 or world > local


def _link(resource: Resource, score: float, ev: list[str], c: CommCase) -> Finding:
    return Finding(
        resource=resource,
        stage=Stage.COMMUNICATION,
        score=score,
        evidence=tuple(ev),
        headroom=headroom(c.share, stack_samples(c.w)),
    )


def _inter_node(c: CommCase) -> Finding | None:
    """A NIC busy over the interval, or while a communication of COMM_HIGH of the step or more runs,
    or ranks on several hosts; never for a job whose ranks are all on this host."""
    if c.one_host:
        return None
    nic = job_nic(c.w)
    share, base, where = c.share, c.base, c.where
    during = min(1.0, nic[1] / share) if nic is not None and share else None  # NIC busy while communicating
    # busy while communicating says which link the communication waits on, and how hard, only where
    # the communication is COMM_HIGH of the step or more (``base``): a NIC saturated through an 8%
    # phase is not the step's limit (an independent probe: it outscored a GPU busy the other 92%)
    strong = during if base and during is not None and during >= BUSY else 0.0
    if nic is not None and (nic[1] >= BUSY or strong or (base and c.several_hosts)):
        nic_ev = f"{nic[0]} at {pct(nic[1])} of its line rate" + (
            f", {pct(during)} during communication" if during is not None else ""
        )
        score = max(base, min(1.0, max(nic[1], strong)))
        slow = slow_link(c.w)
        extra = [slow.evidence] if slow is not None and slow.port == nic[0] else []
        return _link(
            Resource.INTER_NODE_INTERCONNECT, score, c.base_ev + [nic_ev] + extra + ([where] if where else []), c
        )
    if base and c.several_hosts:
        hosts = (
            f"ranks on several hosts ({where or f'{c.world} ranks, {c.local} per node'}); NIC counters not read here"
        )
        return _link(Resource.INTER_NODE_INTERCONNECT, base, c.base_ev + [hosts], c)
    return None


@dataclass(frozen=True)
class DegradedPort:
    """An InfiniBand/RoCE port running below the rate most of the node's ports run at."""

    port: str
    rate: float  # B/s, its peak now
    usual: float  # B/s, the rate most of the node's ports run at
    siblings: int  # ports at the usual rate
    ports: int
    #: the busy link is an Ethernet interface beside idle RDMA ports (NCCL on sockets), not a port
    transport: bool = False

    @property
    def evidence(self) -> str:
        if self.transport:
            return (
                f"{self.port} ({self.rate * 8 / 1e9:.0f} Gb/s) carries the inter-node traffic while the node's "
                f"{self.siblings} InfiniBand/RoCE ports at {self.usual * 8 / 1e9:.0f} Gb/s idle: the collectives "
                "run over sockets, not RDMA (NCCL without the IB devices: a container without /dev/infiniband, "
                "NCCL_IB_DISABLE, NCCL_SOCKET_IFNAME)"
            )
        return (
            f"{self.port} runs at {self.rate * 8 / 1e9:.0f} Gb/s where {self.siblings} of the {self.ports} "
            f"InfiniBand/RoCE ports sampled run at {self.usual * 8 / 1e9:.0f} Gb/s: a link trained down (cable, "
            "transceiver, lanes) that the all-reduce waits on"
        )


def _ports(w: WindowStats, metric: str) -> dict[str, float]:
    """Each InfiniBand/RoCE port (``device/port``) of the window: one of its figures' mean."""
    return {
        d: s.mean
        for (r, d, m), s in w.stats.items()
        if r == Resource.INTER_NODE_INTERCONNECT and m == metric and rdma_port(d) and s.mean is not None
    }


def usual_port_rate(w: WindowStats) -> tuple[float, int]:
    """The rate more than half of the node's InfiniBand/RoCE ports run at and how many do ((0, 0):
    no rate is the majority's)."""
    rates = Counter(round(v) for v in _ports(w, "peak").values() if v)
    if not rates:
        return 0.0, 0
    usual, n = rates.most_common(1)[0]
    return (float(usual), n) if n > sum(rates.values()) - n else (0.0, 0)


def degraded_port(w: WindowStats) -> DegradedPort | None:
    """The busiest port (by its utilisation) when its rate is below the one more than half of the
    node's InfiniBand/RoCE ports run at (USUAL_RATE_PORTS of them at least), it is loaded (BUSY of
    its rate while the job communicates, where that is COMM_HIGH of the step) and it carries about
    the bytes those ports carry (RAIL_BYTES of their median or more): a rail of the same all-reduce,
    which NCCL splits evenly over its rails, trained down (a cable, a transceiver, fewer lanes),
    that the all-reduce waits on while its siblings idle half the time (an independent probe's
    trace: mlx5_3 at 200 Gb/s beside seven ports at 400). A storage port of a lower rate carries
    other traffic than the rails; Ethernet interfaces are left out (a node's NICs differ by design)."""
    rates, moved, busy = _ports(w, "peak"), _ports(w, "throughput"), _ports(w, "utilization")
    if not busy:
        return None
    port = max(busy, key=lambda d: busy[d])
    usual, n = usual_port_rate(w)
    mine = rates.get(port)
    if not mine or n < USUAL_RATE_PORTS or not mine < usual:
        return None
    comm = w.phases.share(Phase.COMMUNICATION) if w.phases is not None else None
    load = busy[port] / comm if comm and comm >= COMM_HIGH else busy[port]
    rails = sorted(b for d, b in moved.items() if round(rates.get(d) or 0.0) == round(usual))
    if load < BUSY or not rails or moved.get(port, 0.0) < RAIL_BYTES * rails[len(rails) // 2]:
        return None
    return DegradedPort(port, mine, usual, n, len(rates))


def slow_transport(w: WindowStats) -> DegradedPort | None:
    """The busiest inter-node link an Ethernet interface (no ``device/port`` name), loaded while the
    job communicates, slower than the rate more than half of the node's InfiniBand/RoCE ports run
    at, while every one of those idles (under IDLE_UTILIZATION): the collectives run over TCP
    sockets beside an idle RDMA fabric (an independent probe's trace: eth0 at 90% of 100 GbE during
    the all-reduce, eight NDR ports idle)."""
    busiest = job_nic(w)
    if busiest is None or rdma_port(busiest[0]):
        return None
    usual, n = usual_port_rate(w)
    rate = w.get(Resource.INTER_NODE_INTERCONNECT, busiest[0], "peak")
    ib = _ports(w, "utilization")
    if not rate or n < USUAL_RATE_PORTS or not rate < usual or max(ib.values(), default=1.0) >= IDLE_UTILIZATION:
        return None
    comm = w.phases.share(Phase.COMMUNICATION) if w.phases is not None else None
    load = busiest[1] / comm if comm and comm >= COMM_HIGH else busiest[1]
    if load < BUSY:
        return None
    return DegradedPort(busiest[0], rate, usual, n, len(ib), transport=True)


def slow_link(w: WindowStats) -> DegradedPort | None:
    """A degraded RDMA port, or the traffic on Ethernet beside idle RDMA ports (either: a fault of the
    node's links to fix before changing the training)."""
    return degraded_port(w) or slow_transport(w)


def _intra_node(c: CommCase, named: bool) -> Finding | None:
    """NVLink (or the intra-node link) busy, or communication that no inter-node finding claimed."""
    nvl = c.nvl
    base, where = c.base, c.where
    if not (nvl is not None and nvl[1] >= BUSY or (base and not named)):
        return None
    ev = c.base_ev + ([f"{nvl[0]} inter-GPU link at {pct(nvl[1])} of its peak"] if nvl else [])
    if where:
        ev.append(where)
    elif base and not named and c.world > 1 and c.world == c.local:
        ev.append(f"{c.world} ranks on one node")
    score = max(base, min(1.0, nvl[1] if nvl else 0.0))
    waiting = _waiting_for_a_late_rank(c)
    idle = "" if waiting else _own_collectives_wait(c)  # a late batch explains the wait first
    if idle:
        return Finding(resource=UNDETERMINED, stage=Stage.COMMUNICATION, score=score, evidence=(*ev, idle))
    if waiting:
        ev.append(waiting)
        score *= WAITING_FOR_RANKS
    return _link(Resource.INTER_GPU_INTERCONNECT, score, ev, c)


def _own_collectives_wait(c: CommCase) -> str:
    """A job whose communication phase holds only its own collectives (``CommCase.own``: neither DDP
    nor FSDP, or DDP's all-reduce not timed) that leave the link under OWN_COLLECTIVES_LINK_IDLE of
    its peak while they run: the ranks wait in them (a pipeline's bubble, a slower rank or stage,
    small messages' latency) rather than move bytes at the link's rate, and what they wait for is
    not measured here (said, or "")."""
    during = c.link_during
    if not c.own or during is None or during >= OWN_COLLECTIVES_LINK_IDLE:
        return ""
    return (
        f"the link at {pct(during)} of its peak while communicating: the ranks wait in their own collectives (a "
        "pipeline's bubble, a slower rank or stage, small messages' latency), not for the link's bandwidth; a "
        "profiler trace (torch.profiler, Nsight Systems) would tell which"
    )


def _waiting_for_a_late_rank(c: CommCase) -> str:
    """The link measured idle while communicating and the step waiting for data besides: the exposed
    communication is the ranks waiting for the one whose batch came last (said, or "")."""
    data, during = data_share(c.w) or 0.0, c.link_during
    if during is None or data < INPUT_MODERATE or data < LATE_BATCH_DATA_RATIO * (c.share or 0.0):
        return ""
    if during >= LINK_IDLE_WHILE_COMMUNICATING:
        return ""
    return (
        f"the link at {pct(during)} of its peak while communicating, and {pct(data)} of the step waiting for data: "
        "the ranks wait there for the one whose batch came last (a faster input pipeline shortens both)"
    )


def _placement(topology: tuple[tuple[str, tuple[int, ...]], ...], world: int) -> str:
    if not topology:
        return ""
    if len(topology) == 1:
        node, ranks = topology[0]
        if len(ranks) <= 1:
            return ""
        return f"{len(ranks)} ranks on one node ({node})" + (
            f" (ranks {', '.join(map(str, ranks))} of {world} reporting)" if world > len(ranks) else ""
        )
    return (
        "ranks on " + str(len(topology)) + " nodes: " + "; ".join(f"{n}: {', '.join(map(str, r))}" for n, r in topology)
    )
