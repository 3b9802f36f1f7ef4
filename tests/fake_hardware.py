"""Fake /sys and /proc trees: the hardware boundary for tests and constructed traces."""

from __future__ import annotations

from pathlib import Path


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def fake_tree_at(tmp_path: Path) -> tuple[str, str]:
    """A fake /sys and /proc: an 8-core Xeon, 64 GiB, an NVMe gen4 disk, a 100 GbE NIC,
    an HDR InfiniBand port, resctrl MBM counters, RAPL package and DRAM zones and an NFS mount."""
    sys_root, proc_root = tmp_path / "sys", tmp_path / "proc"
    cpu = "".join(
        f"processor\t: {k}\nmodel name\t: Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz\n"
        f"physical id\t: 0\ncore id\t: {k}\n"
        f"flags\t\t: fpu avx avx2 fma avx512f\n\n"
        for k in range(8)
    )
    write(proc_root, "cpuinfo", cpu)
    write(proc_root, "meminfo", "MemTotal:       67108864 kB\nMemFree:        1000 kB\n")
    write(
        proc_root,
        "self/mounts",
        "/dev/nvme0n1p1 / ext4 rw 0 0\nproc /proc proc rw 0 0\nfs1:/data /mnt/data nfs4 rw,vers=4.2 0 0\n",
    )
    write(
        proc_root,
        "self/mountstats",
        "device fs1:/data mounted on /mnt/data with fstype nfs4 statvers=1.1\n\tbytes:\t100 0 0 0 5000000 1000 10 0\n",
    )
    write(proc_root, "pressure/cpu", "some avg10=12.50 avg60=1.00 avg300=0.50 total=100\n")
    write(sys_root, "devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "3400000\n")
    write(sys_root, "block/nvme0n1/size", str(2 * 10**12 // 512))
    write(sys_root, "block/nvme0n1/queue/rotational", "0")
    write(sys_root, "block/nvme0n1/device/model", "Samsung SSD 980 PRO 2TB")
    write(sys_root, "block/nvme0n1/device/device/max_link_speed", "16.0 GT/s PCIe")
    write(sys_root, "block/loop0/size", "100")
    write(sys_root, "class/net/eth0/speed", "100000")
    write(sys_root, "class/net/eth0/operstate", "up")
    write(sys_root, "class/net/eth0/device/vendor", "0x15b3")
    write(sys_root, "class/net/lo/speed", "0")
    write(sys_root, "class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)")
    write(sys_root, "class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE")
    write(sys_root, "class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "1000")
    write(sys_root, "class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "2000")
    write(sys_root, "fs/resctrl/mon_data/mon_L3_00/mbm_total_bytes", "1000000")
    write(sys_root, "fs/resctrl/mon_data/mon_L3_01/mbm_total_bytes", "2000000")
    fake_powercap(sys_root)
    return str(sys_root), str(proc_root)


def fake_powercap(sys_root: Path, sockets: int = 1, max_range_uj: int = 262143328850, start_uj: int = 0) -> list[Path]:
    """RAPL zones as the intel_rapl driver lays them out: intel-rapl:N (package-N) and its DRAM
    subzone intel-rapl:N:0 (dram). Returns the energy_uj files (packages first, then DRAM)."""
    files = []
    for s in range(sockets):
        for rel, name in ((f"intel-rapl:{s}", f"package-{s}"), (f"intel-rapl:{s}:0", "dram")):
            write(sys_root, f"class/powercap/{rel}/name", name + "\n")
            write(sys_root, f"class/powercap/{rel}/max_energy_range_uj", f"{max_range_uj}\n")
            write(sys_root, f"class/powercap/{rel}/energy_uj", f"{start_uj}\n")
            files.append(sys_root / "class" / "powercap" / rel / "energy_uj")
    return sorted(files, key=lambda p: (p.parent.name.count(":"), p.parent.name))
