"""A network file system's traffic and the link it runs over.

The mount's peak is bounded by the node's fastest link (peaks/resolve.py): where the traffic runs
over a slower NIC (NFS on a 10 GbE port of a node with 200 Gb/s InfiniBand for its collectives),
its utilization against that bound reads a few percent while the port is full. A NIC whose bytes
are mostly the mount's (the mount moves NFS_ON_NIC of the NIC's busier direction or more, and no
more than that direction over NFS_ON_NIC: a port that cannot carry the mount's bytes is not its
path) is taken as its path: the mount is as busy as that NIC, and the NIC's business is the storage's, not the
job's communication (a blind trace: a checkpoint to NFS over 10 GbE at 96% read as the inter-node
interconnect, the mount at 4.5%, on a one-node job)."""

from __future__ import annotations

from dataclasses import dataclass

from bottleneckd.diagnosis.thresholds import NFS_ON_NIC
from bottleneckd.diagnosis.window import WindowStats
from bottleneckd.model.resources import Resource


@dataclass(frozen=True, kw_only=True)
class NetworkStorage:
    """The busiest network file system mount over the window."""

    mount: str
    utilization: float  # the mount's own, or its path's where that is busier
    nic: str = ""  # the NIC taken as its path ("": none)
    writes: bool = False  # the path sends more than it receives (a checkpoint, not a loader's reads)
    #: the mount has no byte counter: its path is the NIC receiving about the job's reads that reach
    #: no local disk (``uncounted``)
    reads_only: bool = False

    def said(self) -> str:
        if self.reads_only:
            return (
                f"network mount {self.mount} (no byte counter) read over {self.nic}, at {self.utilization:.0%} of its "
                "line rate: the NIC receives about the job's reads that reach no local disk"
            )
        via = f" (over {self.nic}, whose bytes are mostly the mount's)" if self.nic else ""
        return f"network file system {self.mount} at {self.utilization:.0%} of the link{via}"


def network_storage(w: WindowStats) -> NetworkStorage | None:
    """The busiest mount, with the NIC it runs over where one carries mostly its bytes; None
    without a mount's utilization, unless one mount has no byte counter (``uncounted``)."""
    best: NetworkStorage | None = None
    for dev in w.devices(Resource.STORAGE_NETWORK_BANDWIDTH):
        own = w.get(Resource.STORAGE_NETWORK_BANDWIDTH, dev, "utilization")
        if own is None:
            continue
        found = NetworkStorage(mount=dev, utilization=own)
        moved = w.get(Resource.STORAGE_NETWORK_BANDWIDTH, dev, "throughput")
        path = _path(w, moved) if moved else None
        if path is not None and path.utilization > own:
            found = NetworkStorage(mount=dev, utilization=path.utilization, nic=path.mount, writes=path.writes)
        if best is None or found.utilization > best.utilization:
            best = found
    return best or uncounted(w)


def uncounted(w: WindowStats) -> NetworkStorage | None:
    """The one network mount with no byte counter (a FUSE mount of an object store, s3fs, gcsfuse:
    the kernel keeps NFS's per-mount counters only) as the job's read path, where a NIC receives
    about the job's reads that reach no local disk (read calls' bytes less the block layer's), beyond
    what it sends (within NFS_ON_NIC): page-cache hits move nothing over a NIC, and a collective's
    traffic, even both ways, leaves no surplus. None where several such mounts leave which one
    open, or no NIC matches."""
    mounts = [
        d
        for d in w.devices(Resource.STORAGE_NETWORK_BANDWIDTH)
        if w.get(Resource.STORAGE_NETWORK_BANDWIDTH, d, "throughput") is None
        and w.get(Resource.STORAGE_NETWORK_BANDWIDTH, d, "utilization") is None
    ]
    chars = w.get(Resource.STORAGE_BANDWIDTH, "job", "read_chars_per_second")
    if len(mounts) != 1 or not chars:
        return None
    remote = chars - (w.get(Resource.STORAGE_BANDWIDTH, "job", "read_bytes_per_second") or 0.0)
    if remote <= 0:
        return None
    # what a NIC receives beyond what it sends: a collective's traffic is even both ways (a ring
    # all-reduce sends what it receives), reads come in only
    path = _path(w, remote, surplus=True)
    return (
        None
        if path is None
        else NetworkStorage(mount=mounts[0], utilization=path.utilization, nic=path.mount, reads_only=True)
    )


def _path(w: WindowStats, moved: float, surplus: bool = False) -> NetworkStorage | None:
    """The busiest NIC whose busier direction (with ``surplus``: what it receives beyond what it
    sends) moves about ``moved`` bytes (between NFS_ON_NIC and 1 / NFS_ON_NIC times them), as a
    NetworkStorage naming the NIC, or None."""
    best: NetworkStorage | None = None
    for nic in w.devices(Resource.INTER_NODE_INTERCONNECT):
        util = w.get(Resource.INTER_NODE_INTERCONNECT, nic, "utilization")
        tx = w.get(Resource.INTER_NODE_INTERCONNECT, nic, "tx_bytes_per_second") or 0.0
        rx = w.get(Resource.INTER_NODE_INTERCONNECT, nic, "rx_bytes_per_second") or 0.0
        carried = rx - tx if surplus else max(tx, rx)
        if util is None or carried <= 0 or not NFS_ON_NIC * carried <= moved <= carried / NFS_ON_NIC:
            continue
        if best is None or util > best.utilization:
            best = NetworkStorage(mount=nic, utilization=util, writes=tx > rx)
    return best


def job_nic(w: WindowStats) -> tuple[str, float] | None:
    """The busiest NIC and its utilization, unless its bytes are mostly a network file system's (a
    checkpoint or the loader's reads, not the job's collectives)."""
    return nic_beside(w, network_storage(w))


def nic_beside(w: WindowStats, nfs: NetworkStorage | None) -> tuple[str, float] | None:
    """``job_nic`` where the network file system (``network_storage``) is known already."""
    nic = w.busiest(Resource.INTER_NODE_INTERCONNECT)
    return None if nic is not None and nfs is not None and nfs.nic == nic[0] else nic
