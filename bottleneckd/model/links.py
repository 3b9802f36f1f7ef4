"""How an inter-node link's device name says what it is: an InfiniBand/RoCE port is
``<device>/<port>`` (samplers/inter_node.py: ``mlx5_0/1``), an Ethernet interface ``<nic>``; a trace
merged from several nodes prefixes the other nodes' links with ``<node>/`` (outputs/trace_merge.py),
so ``node-03/mlx5_1/1`` is a port and ``node-03/eth0`` an interface."""

from __future__ import annotations

import re

__all__ = ["rdma_port"]

#: a device, then its port number, at the end of the name
_PORT = re.compile(r"(?:^|/)[^/]+/\d+$")


def rdma_port(device: str) -> bool:
    """``device`` names an InfiniBand/RoCE port (its last component a port number), on this node
    or another's."""
    return _PORT.search(device) is not None
