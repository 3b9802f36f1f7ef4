"""CPU package and DRAM energy from RAPL (Linux powercap: /sys/class/powercap/intel-rapl:*).

Each zone's ``energy_uj`` is a counter that wraps at ``max_energy_range_uj``; this sampler turns
it into joules since the sampler started (monotonic, wrap-around added back) and the mean power
over the interval. Since CVE-2020-8694 (Platypus) ``energy_uj`` is readable by root only: then
the figure is unknown with that reason, never 0. GPU energy comes from NVML (samplers/gpu.py).

Readings: ``cpu_compute/package-N energy|power`` and ``cpu_memory/dram-N energy|power``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from bottleneckd.model.resources import Resource
from bottleneckd.model.sample import Reading

#: RAPL zone name -> (resource the energy is booked to, device prefix)
DOMAINS = {"package": (Resource.CPU_COMPUTE, "package"), "dram": (Resource.CPU_MEMORY, "dram")}
ROOT_ONLY = (
    "RAPL energy_uj is readable by root only since CVE-2020-8694: run the sidecar as root "
    "(or grant read access to {path})"
)


@dataclass(frozen=True)
class Zone:
    path: Path
    resource: Resource
    device: str


def find_zones(sys_root: str = "/sys") -> list[Zone]:
    """Package zones (intel-rapl:N, name package-N) and their DRAM subzones (intel-rapl:N:M, name dram)."""
    base = Path(sys_root) / "class" / "powercap"
    zones: list[Zone] = []
    if not base.is_dir():
        return zones
    for d in sorted(base.glob("intel-rapl:*")):
        try:
            name = (d / "name").read_text().strip()
        except OSError:
            continue
        parts = d.name.split(":")
        socket = parts[1] if len(parts) > 1 else "0"
        kind = name.split("-")[0]
        if kind in DOMAINS:
            resource, prefix = DOMAINS[kind]
            zones.append(Zone(d, resource, f"{prefix}-{socket}"))
    return zones


class WrappingCounter:
    """A counter that wraps at ``limit``: the sum of its increments since the first read."""

    def __init__(self) -> None:
        self.prev: int | None = None
        self.total = 0

    def update(self, raw: int, limit: int | None) -> int:
        if self.prev is not None:
            delta = raw - self.prev
            if delta < 0:
                # wrapped past max_energy_range_uj; without a known range the interval is lost
                delta = delta + limit if limit else 0
            self.total += delta
        self.prev = raw
        return self.total


class RaplSampler:
    name = "energy"

    def __init__(self, sys_root: str = "/sys", clock=time.monotonic) -> None:  # noqa: ANN001
        self._root = sys_root
        self._zones = find_zones(sys_root)
        self._counters = {z.device: WrappingCounter() for z in self._zones}
        self._limits: dict[str, int | None] = {}
        self._last: dict[str, tuple[float, int]] = {}
        self._clock = clock

    def available(self) -> tuple[bool, str]:
        if not self._zones:
            return False, (
                f"no RAPL zones under {self._root}/class/powercap (needs the intel_rapl driver on an Intel or "
                "AMD host; usually absent in VMs)"
            )
        return True, ""

    def sample(self) -> list[Reading]:
        ok, why = self.available()
        if not ok:
            return [Reading(Resource.CPU_COMPUTE, "package", "energy", None, "J", why)]
        out: list[Reading] = []
        now = self._clock()
        for z in self._zones:
            raw, reason = _read_uj(z.path / "energy_uj")
            if raw is None:
                out += [
                    Reading(z.resource, z.device, "energy", None, "J", reason),
                    Reading(z.resource, z.device, "power", None, "W", reason),
                ]
                continue
            if z.device not in self._limits:
                self._limits[z.device] = _read_uj(z.path / "max_energy_range_uj")[0]
            total = self._counters[z.device].update(raw, self._limits[z.device])
            prev = self._last.get(z.device)
            self._last[z.device] = (now, total)
            watts = (total - prev[1]) / 1e6 / (now - prev[0]) if prev and now > prev[0] else None
            out += [
                Reading(z.resource, z.device, "energy", total / 1e6, "J"),
                Reading(z.resource, z.device, "power", watts, "W", "" if watts is not None else "first interval"),
            ]
        return out


def _read_uj(path: Path) -> tuple[int | None, str]:
    try:
        return int(path.read_text().strip()), ""
    except PermissionError:
        return None, ROOT_ONLY.format(path=path)
    except (OSError, ValueError) as e:
        return None, f"{path}: unreadable ({getattr(e, 'strerror', None) or e})"
