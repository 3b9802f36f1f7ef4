"""Peak throughput of each resource of this machine: calibrated, detected, catalog or unknown.

Precedence: a figure measured here (``bottleneckd calibrate``) beats a detected one, which beats
the catalog. A resource with no figure is reported as unknown with the reason, never as 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.hardware.detect.types import GpuInfo
from bottleneckd.model.from_json import from_json
from bottleneckd.model.identity import gpu_key
from bottleneckd.model.resources import CAPACITY_RESOURCES, RESOURCES, Resource
from bottleneckd.peaks.catalog import Catalog, DeviceSpec
from bottleneckd.peaks.profile import Profile

#: fp32 FLOPs per cycle per core by vector ISA, assuming two FMA units (stated in every estimate)
_FP32_FLOPS_PER_CYCLE = (("avx512f", 64), ("avx2", 32), ("avx", 16), ("asimd", 16))


_GPU_RESOURCES = frozenset({Resource.GPU_COMPUTE, Resource.GPU_MEMORY, Resource.GPU_MEMORY_BANDWIDTH})


@dataclass(frozen=True)
class ResolvedPeak:
    resource: Resource
    device: str
    metric: str
    value: float | None
    unit: str
    origin: str  # "calibrated" | "detected" | "catalog" | "unknown"
    source: str  # where the figure came from, or why it is unknown
    catalog_value: float | None = None
    uuid: str | None = None  # a GPU's identity (NVML UUID), for GPU rows
    #: for a link: "both" (the figure counts both directions together), "per direction", or "" (not said)
    direction: str = ""

    @property
    def known(self) -> bool:
        return self.value is not None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PeakTable:
    peaks: tuple[ResolvedPeak, ...]

    def for_resource(self, resource: str) -> tuple[ResolvedPeak, ...]:
        return tuple(p for p in self.peaks if p.resource == resource)

    def get(self, resource: str, device: str, metric: str | None = None) -> ResolvedPeak | None:
        for p in self.peaks:
            if p.resource == resource and p.device == device and (metric is None or p.metric == metric):
                return p
        return None

    def value(self, resource: str, device: str, metric: str | None = None) -> float | None:
        p = self.get(resource, device, metric)
        return None if p is None else p.value

    def with_gpu_uuids(self, uuids: Mapping[str, str]) -> PeakTable:
        """This table with each GPU row that carries no UUID given its device's from ``uuids``
        (device -> UUID: the machine's detected GPUs, which a constructed trace's peak rows may
        leave out)."""
        return PeakTable(
            tuple(
                replace(p, uuid=uuids[p.device])
                if p.uuid is None and p.device in uuids and p.resource in _GPU_RESOURCES
                else p
                for p in self.peaks
            )
        )

    def gpu_uuids(self) -> dict[str, str]:
        """GPU unit -> its NVML UUID (from the GPU rows that carry one)."""
        return {p.device: p.uuid for p in self.for_resource(Resource.GPU_COMPUTE) if p.uuid}

    def fastest_compute_madd(self) -> float | None:
        """The fastest compute peak on the machine, in multiply-adds per second."""
        best = None
        for p in self.peaks:
            if p.resource in (Resource.GPU_COMPUTE, Resource.CPU_COMPUTE) and p.value is not None:
                madd = p.value / 2 if p.unit == "FLOP/s" else p.value
                best = madd if best is None else max(best, madd)
        return best

    def to_json(self) -> list[dict[str, Any]]:
        return [p.to_json() for p in self.peaks]

    @staticmethod
    def from_json(rows: Iterable[dict[str, Any]]) -> PeakTable:
        return PeakTable(tuple(from_json(ResolvedPeak, r, resource=Resource(r["resource"])) for r in rows))


def table4_ratio(peak: ResolvedPeak, fastest_madd: float | None) -> str:
    """The Table-4 style column: multiply-adds per 16-bit value moved, or share of the fastest compute."""
    if peak.value is None or fastest_madd is None or peak.resource in CAPACITY_RESOURCES:
        return "-"
    if peak.unit in ("FLOP/s", "madd/s"):
        madd = peak.value / 2 if peak.unit == "FLOP/s" else peak.value
        return f"{madd / fastest_madd:.3g}x of fastest compute"
    if peak.unit == "B/s":
        return f"{fastest_madd / (peak.value / 2):,.0f} madd per 16-bit value"
    if peak.unit == "IO/s":
        return f"{fastest_madd / (peak.value * 2048):,.0f} madd per 16-bit value (4 KiB ops)"
    return "-"


def _calibrated(
    profile: Profile | None, resource: Resource, device: str, metric: str | None = None
) -> ResolvedPeak | None:
    if profile is None:
        return None
    m = profile.best(resource, device, metric)
    if m is None:
        return None
    return ResolvedPeak(resource, device, m.metric, m.value, m.unit, "calibrated", f"measured here: {m.method}")


def _with_catalog(calibrated: ResolvedPeak | None, fallback: ResolvedPeak) -> ResolvedPeak:
    if calibrated is None:
        return fallback
    return ResolvedPeak(**{**asdict(calibrated), "catalog_value": fallback.value})


def _gpu_calibrated(
    profile: Profile | None, g: GpuInfo, resource: Resource, metric: str | None = None
) -> ResolvedPeak | None:
    """A measurement of this GPU: keyed by its UUID (CUDA's and NVML's indexes differ), whatever
    its prefix: ``calibrate`` writes ``GPU-<uuid>`` from CUDA's UUID, NVML names a MIG slice
    ``MIG-<uuid>``."""
    if g.uuid is None or profile is None:
        return None
    key = gpu_key(g.uuid)
    named = {m.device for m in profile.measurements if m.resource == resource and gpu_key(m.device) == key}
    best = max(
        (m for d in named if (m := profile.best(resource, d, metric)) is not None), key=lambda m: m.value, default=None
    )
    if best is None:
        return None
    return ResolvedPeak(
        resource, g.device, best.metric, best.value, best.unit, "calibrated", f"measured here: {best.method}"
    )


#: the compute figures of a GPU: (catalog metric, calibration metric)
GPU_COMPUTE_METRICS = (
    ("fp16_bf16_tensor_dense", "bf16_matmul"),
    ("fp16_tensor_dense", "fp16_matmul"),
    ("tf32_tensor_dense", "tf32_matmul"),
    ("fp32", "fp32_matmul"),
    ("fp64", "fp64_matmul"),
    ("fp64_tensor_dense", None),
    ("fp8_tensor_dense", "fp8_matmul"),  # Hopper, Ada and later: aten._scaled_mm
)


def _gpu_peaks(machine: Machine, catalog: Catalog, profile: Profile | None) -> list[ResolvedPeak]:
    out: list[ResolvedPeak] = []
    for g in machine.gpus:
        out += [replace(p, uuid=g.uuid) for p in _one_gpu_peaks(machine, g, catalog, profile)]
    return out


def _one_gpu_peaks(machine: Machine, g: GpuInfo, catalog: Catalog, profile: Profile | None) -> list[ResolvedPeak]:
    out: list[ResolvedPeak] = []
    multi = len(machine.gpus) > 1
    dev = g.device
    spec: DeviceSpec | None = catalog.gpu_spec(g.name)
    missing = f"GPU model {g.name!r} is not in the catalog; run 'bottleneckd calibrate'"
    compute_share, memory_share = g.mig_fractions or (1.0, 1.0)
    mig = f" x {compute_share:.3g} (this MIG slice's share of the GPU's compute slices)" if g.mig_fractions else ""
    mig_b = f" x {memory_share:.3g} (this MIG slice's share of the GPU's memory)" if g.mig_fractions else ""

    def cat(resource: Resource, metric: str, unit: str, share: float = 1.0, note: str = "") -> ResolvedPeak:
        p = spec.peak(resource, metric) if spec else None
        if spec is None or p is None:
            return ResolvedPeak(
                resource,
                dev,
                metric,
                None,
                unit,
                "unknown",
                missing
                if spec is None
                else f"{spec.name} has no {metric} figure (no such path on this GPU, or not in the catalog)",
            )
        flag = " (unverified)" if p.unverified else ""
        v = p.value * share
        return ResolvedPeak(resource, dev, metric, v, p.unit, "catalog", f"{spec.name}: {p.source}{flag}{note}", v)

    # V100, T4: no bf16 path
    tensor16 = spec is not None and spec.peak(Resource.GPU_COMPUTE, "fp16_tensor_dense") is not None
    required = {"fp32"} if tensor16 else {"fp32", "fp16_bf16_tensor_dense"}
    for cat_metric, cal_metric in GPU_COMPUTE_METRICS:
        fb = cat(Resource.GPU_COMPUTE, cat_metric, "FLOP/s", compute_share, mig)
        cal = _gpu_calibrated(profile, g, Resource.GPU_COMPUTE, cal_metric) if cal_metric else None
        if fb.value is None and cal is None and cat_metric not in required:
            continue  # optional paths (TF32, FP64) appear where the catalog or a measurement has them
        out.append(_with_catalog(cal, fb))
    if g.memory_total_bytes:
        out.append(
            ResolvedPeak(
                Resource.GPU_MEMORY,
                dev,
                "capacity",
                float(g.memory_total_bytes),
                "B",
                "detected",
                "NVML memory info (total)",
            )
        )
    else:
        out.append(cat(Resource.GPU_MEMORY, "capacity", "B"))
    out.append(
        _with_catalog(
            _gpu_calibrated(profile, g, Resource.GPU_MEMORY_BANDWIDTH),
            cat(Resource.GPU_MEMORY_BANDWIDTH, "dram_bandwidth", "B/s", memory_share, mig_b),
        )
    )

    host_link = spec.peak(Resource.CPU_GPU_INTERCONNECT) if spec else None
    if spec is not None and host_link is not None:  # a host link that is not PCIe (GH200: NVLink-C2C)
        pcie = ResolvedPeak(
            Resource.CPU_GPU_INTERCONNECT,
            dev,
            host_link.metric,
            host_link.value,
            host_link.unit,
            "catalog",
            f"{spec.name}: {host_link.source}",
            host_link.value,
        )
    else:
        pcie = _pcie_peak(g.pcie_max_generation, g.pcie_max_width, catalog, dev)
    out.append(_with_catalog(_gpu_calibrated(profile, g, Resource.CPU_GPU_INTERCONNECT), pcie))

    nvl = spec.peak(Resource.INTER_GPU_INTERCONNECT, "nvlink_total") if spec else None
    cal = _gpu_calibrated(profile, g, Resource.INTER_GPU_INTERCONNECT)
    if g.nvlink_active_links and spec is not None and nvl is not None:
        # the catalog's total is for all links of the part; scale to the links found active
        value = nvl.value * min(g.nvlink_active_links, nvl.links) / nvl.links if nvl.links else nvl.value
        fb = ResolvedPeak(
            Resource.INTER_GPU_INTERCONNECT,
            dev,
            "nvlink_total",
            value,
            "B/s",
            "detected",
            f"{g.nvlink_active_links} active NVLink links (NVML) x per-link figure of {spec.name}: {nvl.source}",
            nvl.value,
            direction=nvl.direction,
        )
    elif not multi:
        fb = ResolvedPeak(
            Resource.INTER_GPU_INTERCONNECT,
            dev,
            "nvlink_total",
            None,
            "B/s",
            "unknown",
            "only one GPU: no inter-GPU traffic on this machine",
        )
    elif g.nvlink_active_links == 0 and pcie.value is not None:
        fb = ResolvedPeak(
            Resource.INTER_GPU_INTERCONNECT,
            dev,
            "pcie_peer",
            pcie.value,
            "B/s",
            "detected",
            "no active NVLink: peer traffic crosses PCIe; " + pcie.source,
            direction="per direction",
        )
    else:
        fb = ResolvedPeak(
            Resource.INTER_GPU_INTERCONNECT,
            dev,
            "nvlink_total",
            None,
            "B/s",
            "unknown",
            "NVLink state not readable and no catalog figure",
        )
    # a calibrated peer copy moves bytes one way: its figure is per direction
    out.append(replace(_with_catalog(cal, fb), direction="per direction") if cal is not None else fb)
    return out


def _pcie_peak(gen: int | None, width: int | None, catalog: Catalog, dev: str) -> ResolvedPeak:
    if gen is None or width is None:
        return ResolvedPeak(
            Resource.CPU_GPU_INTERCONNECT,
            dev,
            "pcie",
            None,
            "B/s",
            "unknown",
            "PCIe link generation/width not reported by NVML",
        )
    link = catalog.link(f"pcie_gen{gen}_x16")
    if link is None:
        return ResolvedPeak(
            Resource.CPU_GPU_INTERCONNECT, dev, "pcie", None, "B/s", "unknown", f"PCIe gen {gen} is not in the catalog"
        )
    value = link.peak.value * width / 16
    return ResolvedPeak(
        Resource.CPU_GPU_INTERCONNECT,
        dev,
        "pcie_per_direction",
        value,
        "B/s",
        "detected",
        f"max link gen {gen} x{width} (NVML) with {link.peak.source}",
        value,
    )


def _cpu_peaks(machine: Machine, catalog: Catalog, profile: Profile | None) -> list[ResolvedPeak]:
    cpu = machine.cpu
    spec = catalog.cpu_spec(cpu.model or "")
    cal = _calibrated(profile, Resource.CPU_COMPUTE, "cpu")
    p = spec.peak(Resource.CPU_COMPUTE) if spec is not None else None
    if spec is not None and p is not None:
        fb = ResolvedPeak(
            Resource.CPU_COMPUTE, "cpu", "fp32_fma", p.value, p.unit, "catalog", f"{spec.name}: {p.source}", p.value
        )
    else:
        per_cycle = next((n for flag, n in _FP32_FLOPS_PER_CYCLE if flag in cpu.flags), None)
        if cpu.physical_cores and cpu.max_mhz and per_cycle:
            v = cpu.physical_cores * cpu.max_mhz * 1e6 * per_cycle
            fb = ResolvedPeak(
                Resource.CPU_COMPUTE,
                "cpu",
                "fp32_fma",
                v,
                "FLOP/s",
                "detected",
                f"estimate: {cpu.physical_cores} cores x {cpu.max_mhz:.0f} MHz x {per_cycle} FLOP/cycle "
                f"({'/'.join(f for f, _ in _FP32_FLOPS_PER_CYCLE if f in cpu.flags)[:12]}, two FMA units assumed)",
            )
        else:
            why = "CPU model not in the catalog and " + (
                "the maximum clock is not exposed" if not cpu.max_mhz else "its vector width is unknown"
            )
            fb = ResolvedPeak(
                Resource.CPU_COMPUTE,
                "cpu",
                "fp32_fma",
                None,
                "FLOP/s",
                "unknown",
                why + "; run 'bottleneckd calibrate'",
            )
    out = [_with_catalog(cal, fb)]
    if machine.memory_total_bytes:
        out.append(
            ResolvedPeak(
                Resource.CPU_MEMORY,
                "host",
                "capacity",
                float(machine.memory_total_bytes),
                "B",
                "detected",
                "/proc/meminfo MemTotal",
            )
        )
    else:
        out.append(
            ResolvedPeak(
                Resource.CPU_MEMORY,
                "host",
                "capacity",
                None,
                "B",
                "unknown",
                machine.unknown.get("memory", "not detected"),
            )
        )
    out.append(
        _with_catalog(
            _calibrated(profile, Resource.CPU_MEMORY_BANDWIDTH, "host"),
            ResolvedPeak(
                Resource.CPU_MEMORY_BANDWIDTH,
                "host",
                "dram_bandwidth",
                None,
                "B/s",
                "unknown",
                "DIMM speed and channel count are not readable here (SMBIOS); run 'bottleneckd calibrate'",
            ),
        )
    )
    return out


def _storage_peaks(machine: Machine, catalog: Catalog, profile: Profile | None) -> list[ResolvedPeak]:
    out: list[ResolvedPeak] = []
    for b in machine.block_devices:
        if b.size_bytes:
            out.append(
                ResolvedPeak(
                    Resource.STORAGE_CAPACITY,
                    b.name,
                    "capacity",
                    float(b.size_bytes),
                    "B",
                    "detected",
                    f"/sys/block/{b.name}/size",
                )
            )
        for metric, unit in (("sequential_read", "B/s"), ("random_read_4k_iops", "IO/s")):
            link = (
                catalog.link(
                    f"nvme_gen{b.pcie_generation}_{'seq_read' if metric == 'sequential_read' else 'random_read_iops'}"
                )
                if b.transport == "nvme" and b.pcie_generation
                else None
            )
            if link is not None:
                fb = ResolvedPeak(
                    Resource.STORAGE_BANDWIDTH,
                    b.name,
                    metric,
                    link.peak.value,
                    unit,
                    "catalog",
                    f"NVMe on a PCIe gen {b.pcie_generation} link: {link.peak.source}",
                    link.peak.value,
                )
            else:
                kind = b.transport or "unknown transport"
                fb = ResolvedPeak(
                    Resource.STORAGE_BANDWIDTH,
                    b.name,
                    metric,
                    None,
                    unit,
                    "unknown",
                    f"no catalog figure for a {kind} device; run 'bottleneckd calibrate'",
                )
            out.append(_with_catalog(_calibrated(profile, Resource.STORAGE_BANDWIDTH, b.name, metric), fb))
    if not machine.block_devices:
        why = machine.unknown.get("block_devices", "no block device found")
        out.append(ResolvedPeak(Resource.STORAGE_CAPACITY, "-", "capacity", None, "B", "unknown", why))
        out.append(ResolvedPeak(Resource.STORAGE_BANDWIDTH, "-", "sequential_read", None, "B/s", "unknown", why))
    return out


def _network_peaks(machine: Machine, catalog: Catalog, profile: Profile | None) -> list[ResolvedPeak]:
    out: list[ResolvedPeak] = []
    for n in machine.nics:
        if n.speed_mbps:
            v = n.speed_mbps * 1e6 / 8
            out.append(
                ResolvedPeak(
                    Resource.INTER_NODE_INTERCONNECT,
                    n.name,
                    "ethernet_per_direction",
                    v,
                    "B/s",
                    "detected",
                    f"/sys/class/net/{n.name}/speed = {n.speed_mbps} Mb/s; line rate / 8",
                )
            )
    for p in machine.ib_ports:
        if p.rate_gbps:
            out.append(
                ResolvedPeak(
                    Resource.INTER_NODE_INTERCONNECT,
                    f"{p.device}/{p.port}",
                    "infiniband_per_direction",
                    p.rate_gbps * 1e9 / 8,
                    "B/s",
                    "detected",
                    f"/sys/class/infiniband/{p.device}/ports/{p.port}/rate = {p.rate_gbps:g} Gb/s",
                )
            )
    if not out:
        reasons = (
            "; ".join(f"{k}: {v}" for k, v in machine.unknown.items() if k.startswith("nic"))
            or "no network interface with a reported speed"
        )
        out.append(ResolvedPeak(Resource.INTER_NODE_INTERCONNECT, "-", "link", None, "B/s", "unknown", reasons))
    fastest = max((p.value for p in out if p.value is not None), default=None)
    net_mounts = [m for m in machine.mounts if m.network]
    for m in net_mounts:
        if fastest is not None:
            out.append(
                ResolvedPeak(
                    Resource.STORAGE_NETWORK_BANDWIDTH,
                    m.mountpoint,
                    "link",
                    fastest,
                    "B/s",
                    "detected",
                    f"{m.fstype} mount from {m.source}: bounded by the fastest local link",
                )
            )
        else:
            out.append(
                ResolvedPeak(
                    Resource.STORAGE_NETWORK_BANDWIDTH,
                    m.mountpoint,
                    "link",
                    None,
                    "B/s",
                    "unknown",
                    f"{m.fstype} mount, but no network link speed is known",
                )
            )
    if not net_mounts:
        out.append(
            ResolvedPeak(
                Resource.STORAGE_NETWORK_BANDWIDTH,
                "-",
                "link",
                None,
                "B/s",
                "unknown",
                "no network file system is mounted",
            )
        )
    return out


def resolve_peaks(machine: Machine, catalog: Catalog, profile: Profile | None = None) -> PeakTable:
    peaks = _gpu_peaks(machine, catalog, profile) + _cpu_peaks(machine, catalog, profile)
    peaks += _storage_peaks(machine, catalog, profile) + _network_peaks(machine, catalog, profile)
    if not machine.gpus:
        why = machine.unknown.get("gpus", "no GPU")
        for r in (
            Resource.GPU_COMPUTE,
            Resource.GPU_MEMORY,
            Resource.GPU_MEMORY_BANDWIDTH,
            Resource.INTER_GPU_INTERCONNECT,
            Resource.CPU_GPU_INTERCONNECT,
        ):
            unit = "FLOP/s" if r == Resource.GPU_COMPUTE else ("B" if r == Resource.GPU_MEMORY else "B/s")
            peaks.append(ResolvedPeak(r, "-", "-", None, unit, "unknown", why))
    order = {r: i for i, r in enumerate(RESOURCES)}
    peaks.sort(key=lambda p: order[p.resource])
    return PeakTable(tuple(peaks))
