"""Inter-node interconnect: NIC bytes per second against link speed; InfiniBand port counters
against port rate (RDMA traffic does not show in the netdev counters); the byte counters
themselves too, for Prometheus's rate()."""

from __future__ import annotations

from pathlib import Path

import psutil

from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.model.resources import Resource
from bottleneckd.model.sample import Reading, utilization
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.samplers.base import Rates


class InterNodeSampler:
    name = "inter_node"

    def __init__(self, peaks: PeakTable, machine: Machine, sys_root: str = "/sys") -> None:
        self._peaks = peaks
        self._nics = [n.name for n in machine.nics]
        self._ib = [(p.device, p.port) for p in machine.ib_ports]
        self._sys = Path(sys_root)
        self._rates = Rates()

    def available(self) -> tuple[bool, str]:
        return (True, "") if self._nics or self._ib else (False, "no network interface besides loopback")

    def sample(self) -> list[Reading]:
        out: list[Reading] = []
        counters = psutil.net_io_counters(pernic=True, nowrap=True) or {}
        for nic in self._nics:
            c = counters.get(nic)
            if c is None:
                continue
            tx = self._rates.rate(f"{nic}.tx", float(c.bytes_sent))
            rx = self._rates.rate(f"{nic}.rx", float(c.bytes_recv))
            peak = self._peaks.value(Resource.INTER_NODE_INTERCONNECT, nic)
            busiest = None if tx is None or rx is None else max(tx, rx)
            out += utilization(
                Resource.INTER_NODE_INTERCONNECT,
                nic,
                busiest,
                peak,
                "B/s",
                "first interval",
                peak_why=f"{nic}: no link speed reported (virtual interface, link down, or driver)",
            )
            out += [
                Reading(Resource.INTER_NODE_INTERCONNECT, nic, "tx_bytes_per_second", tx, "B/s"),
                Reading(Resource.INTER_NODE_INTERCONNECT, nic, "rx_bytes_per_second", rx, "B/s"),
                Reading(Resource.INTER_NODE_INTERCONNECT, nic, "transmit_bytes_total", float(c.bytes_sent), "B"),
                Reading(Resource.INTER_NODE_INTERCONNECT, nic, "receive_bytes_total", float(c.bytes_recv), "B"),
            ]
        for dev, port in self._ib:
            base = self._sys / "class" / "infiniband" / dev / "ports" / str(port) / "counters"
            name = f"{dev}/{port}"
            try:
                xmit = float((base / "port_xmit_data").read_text()) * 4  # counters are in 4-byte words
                rcv = float((base / "port_rcv_data").read_text()) * 4
            except (OSError, ValueError):
                out += utilization(Resource.INTER_NODE_INTERCONNECT, name, None, None, "B/s", f"{base} unreadable")
                continue
            tx, rx = self._rates.rate(f"{name}.tx", xmit), self._rates.rate(f"{name}.rx", rcv)
            out += [
                Reading(Resource.INTER_NODE_INTERCONNECT, name, "transmit_bytes_total", xmit, "B"),
                Reading(Resource.INTER_NODE_INTERCONNECT, name, "receive_bytes_total", rcv, "B"),
            ]
            busiest = None if tx is None or rx is None else max(tx, rx)
            out += utilization(
                Resource.INTER_NODE_INTERCONNECT,
                name,
                busiest,
                self._peaks.value(Resource.INTER_NODE_INTERCONNECT, name),
                "B/s",
                "first interval",
            )
        return out
