"""Host detection from /proc and /sys (roots passed in so tests can use fake trees)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from bottleneckd.hardware.detect.types import BlockDevice, CpuInfo, IbPort, Mount, Nic

NETWORK_FS = frozenset({"nfs", "nfs4", "lustre", "gpfs", "ceph", "cephfs", "beegfs", "cifs", "smb3", "glusterfs", "9p"})
FLAGS_OF_INTEREST = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "asimd", "sve")
PSEUDO_FS = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "securityfs",
        "debugfs",
        "tracefs",
        "mqueue",
        "pstore",
        "bpf",
        "autofs",
        "hugetlbfs",
        "configfs",
        "fusectl",
        "binfmt_misc",
        "rpc_pipefs",
        "nsfs",
    }
)
VIRTUAL_BLOCK = ("loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd")


def read(path: Path | str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def is_network_fs(fstype: str) -> bool:
    return fstype in NETWORK_FS or fstype.startswith("fuse.") and fstype not in ("fuse.portal", "fuse.gvfsd-fuse")


def detect_cpu(sys_root: str, proc_root: str, unknown: dict[str, str]) -> CpuInfo:

    text = read(Path(proc_root) / "cpuinfo")
    model = None
    logical = 0
    cores: set[tuple[str, str]] = set()
    sockets: set[str] = set()
    flags: set[str] = set()
    phys = core = "0"
    if text is None:
        unknown["cpu"] = f"{proc_root}/cpuinfo not readable"
    else:
        for line in text.splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key == "processor":
                logical += 1
            elif key in ("model name", "Model Name") and model is None:
                model = value
            elif key == "physical id":
                phys = value
                sockets.add(value)
            elif key == "core id":
                core = value
                cores.add((phys, core))
            elif key in ("flags", "Features") and not flags:
                flags = set(value.split())
    max_khz = read(Path(sys_root) / "devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    max_mhz = float(max_khz) / 1000.0 if max_khz and max_khz.isdigit() else None
    if max_mhz is None:
        unknown["cpu.max_mhz"] = "cpufreq not exposed (common in VMs and containers)"
    if model is None:
        unknown.setdefault("cpu.model", "no model name in cpuinfo")
    return CpuInfo(
        model=model,
        logical_cores=logical or None,
        physical_cores=len(cores) or None,
        sockets=len(sockets) or None,
        max_mhz=max_mhz,
        flags=tuple(f for f in FLAGS_OF_INTEREST if f in flags),
    )


def detect_memory_total(proc_root: str, unknown: dict[str, str]) -> int | None:
    text = read(Path(proc_root) / "meminfo")
    if text:
        m = re.search(r"^MemTotal:\s+(\d+) kB", text, re.M)
        if m:
            return int(m.group(1)) * 1024
    unknown["memory"] = f"{proc_root}/meminfo has no MemTotal"
    return None


def _pcie_gen_from_speed(speed: str | None) -> int | None:
    # "16.0 GT/s PCIe" -> 4
    if not speed:
        return None
    m = re.match(r"([\d.]+) GT/s", speed)
    if not m:
        return None
    return {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}.get(float(m.group(1)))


def detect_block_devices(sys_root: str, unknown: dict[str, str]) -> tuple[BlockDevice, ...]:

    base = Path(sys_root) / "block"
    if not base.is_dir():
        unknown["block_devices"] = f"{base} not present"
        return ()
    out = []
    for d in sorted(base.iterdir()):
        name = d.name
        if name.startswith(VIRTUAL_BLOCK):
            continue
        size = read(d / "size")
        rot = read(d / "queue/rotational")
        model = read(d / "device/model")
        transport = None
        gen = None
        if name.startswith("nvme"):
            transport = "nvme"
            ctrl = d / "device" / "device"  # nvme0n1/device -> nvme0, whose device is the PCI function
            gen = _pcie_gen_from_speed(read(ctrl / "max_link_speed")) or _pcie_gen_from_speed(
                read(ctrl / "current_link_speed")
            )
        elif name.startswith("vd"):
            transport = "virtio"
        elif name.startswith(("sd", "hd")):
            transport = "scsi/sata"
        out.append(
            BlockDevice(
                name=name,
                size_bytes=int(size) * 512 if size and size.isdigit() else None,
                rotational=None if rot is None else rot == "1",
                model=model,
                transport=transport,
                pcie_generation=gen,
            )
        )
    return tuple(out)


def detect_nics(sys_root: str, unknown: dict[str, str]) -> tuple[Nic, ...]:

    base = Path(sys_root) / "class/net"
    if not base.is_dir():
        unknown["nics"] = f"{base} not present"
        return ()
    out = []
    for d in sorted(base.iterdir()):
        if d.name == "lo":
            continue
        speed = read(d / "speed")  # Mb/s; reading fails or gives -1 when the link is down
        mbps = int(speed) if speed and speed.lstrip("-").isdigit() and int(speed) > 0 else None
        virtual = not (d / "device").exists()
        if mbps is None:
            unknown[f"nic.{d.name}.speed"] = (
                "virtual interface: no line rate" if virtual else "link speed not reported (link down or driver)"
            )
        out.append(Nic(name=d.name, speed_mbps=mbps, operstate=read(d / "operstate"), virtual=virtual))
    return tuple(out)


def detect_ib_ports(sys_root: str, unknown: dict[str, str]) -> tuple[IbPort, ...]:

    base = Path(sys_root) / "class/infiniband"
    if not base.is_dir():
        return ()
    out = []
    for dev in sorted(base.iterdir()):
        ports = dev / "ports"
        if not ports.is_dir():
            continue
        for p in sorted(ports.iterdir(), key=lambda x: int(x.name) if x.name.isdigit() else 0):
            rate = read(p / "rate")  # "200 Gb/sec (4X HDR)"
            m = re.match(r"([\d.]+) Gb/sec", rate or "")
            state = read(p / "state")  # "4: ACTIVE"
            out.append(
                IbPort(
                    device=dev.name,
                    port=int(p.name) if p.name.isdigit() else 0,
                    rate_gbps=float(m.group(1)) if m else None,
                    state=state.split(":", 1)[-1].strip() if state else None,
                )
            )
    return tuple(out)


def detect_mounts(proc_root: str, unknown: dict[str, str]) -> tuple[Mount, ...]:

    text = read(Path(proc_root) / "self/mounts") or read(Path(proc_root) / "mounts")
    if text is None:
        unknown["mounts"] = f"{proc_root}/self/mounts not readable"
        return ()
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        source, mountpoint, fstype = parts[0], parts[1].replace("\\040", " "), parts[2]
        if fstype in PSEUDO_FS:
            continue
        out.append(Mount(mountpoint=mountpoint, fstype=fstype, source=source, network=is_network_fs(fstype)))
    return tuple(out)


def mount_of(path: str, mounts: tuple[Mount, ...]) -> Mount | None:
    """The mount that holds ``path`` (longest mountpoint prefix)."""
    real = os.path.realpath(path)
    best = None
    for m in mounts:
        mp = m.mountpoint.rstrip("/") or "/"
        if real == mp or real.startswith(mp + "/") or mp == "/":
            if best is None or len(mp) > len(best.mountpoint.rstrip("/") or "/"):
                best = m
    return best
