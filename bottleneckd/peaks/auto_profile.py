"""The CPU's peaks measured by ``bottleneckd run`` before it starts the job, where no calibration
profile gives them.

A fresh machine has no profile; a CPU the catalog does not know (a cloud VM's "Intel(R) Xeon(R)
Processor") and no exposed maximum clock has no compute peak; no machine exposes its memory
bandwidth (SMBIOS is not readable). The CPU roofline is then decided against the lowest ridge
point of any current machine (3.3 FLOP/byte), which cannot tell a step at 3.8 FLOP/byte on a
machine whose ridge is 5.0 (memory-bound: proved by cutting its weight bytes 16x, x1.5 faster)
from one at 7.2 (compute-bound). So ``run`` (and ``demo``) measures the two peaks the roofline
needs (``calibrate.cpu_matmul``, ``calibrate.cpu_memory_bandwidth``; ``AUTO_SECONDS`` each, about
1.5 s in all) before the job starts, on a quiet machine only (``QUIET_BUSY_MAX``), and keeps them
in ``auto-profile.json`` beside the default profile, for this machine only (``fingerprint``): later
runs, ``attach`` and ``watch()``'s own sidecar read them without measuring. A measurement of the
user's profile (``bottleneckd calibrate``, ``--profile``) always wins over the automatic one.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bottleneckd.hardware.detect.host import detect_cpu, detect_memory_total
from bottleneckd.model.resources import Resource
from bottleneckd.peaks.profile import Measurement, Profile, default_profile_path, load_profile, save_profile

#: seconds of each of the two microbenchmarks (best rate over the time; ``calibrate --seconds``
#: defaults to 2). Measured here (2-core VM): matmul 2048x2048 best-of-1 s 158-231 GFLOP/s over
#: five runs, the copy 30.6-31.7 GB/s: the spread between runs, not the length, limits the figure.
AUTO_SECONDS = 0.5
#: the largest share of the machine's CPU time other work may take while the peaks are measured:
#: above it, nothing is measured (a peak measured beside another process is low by about that
#: process's share: with one of this 2-core VM's cores taken by a busy loop, the copy measured
#: 22.1-22.7 GB/s against 30.6-31.7 quiet, and the matmul 115-194 GFLOP/s against 158-231).
QUIET_BUSY_MAX = 0.10
#: how long the machine's CPU time is read before deciding it is quiet (psutil.cpu_percent's interval)
QUIET_PROBE_S = 0.3
#: the copy's source buffers in all, MiB (one per CPU, 8 to 128 MiB each; as much again of
#: destinations): 2 GiB moved a pass, past the last-level cache of current CPUs (the largest, AMD's
#: 3D V-Cache EPYC, 1152 MiB), and bounded so that a 128-CPU machine does not allocate 32 GiB
#: (``calibrate``'s 128 MiB a CPU, twice) for a 0.5 s figure
AUTO_COPY_MIB = 1024
#: the measurements the CPU roofline needs: (resource, device)
NEEDED = ((Resource.CPU_COMPUTE, "cpu"), (Resource.CPU_MEMORY_BANDWIDTH, "host"))
AUTO_NAME = "auto-profile.json"


def auto_profile_path() -> Path:
    """Beside the default profile (BOTTLENECKD_HOME, else ~/.config/bottleneckd)."""
    return default_profile_path().parent / AUTO_NAME


def fingerprint() -> dict[str, Any]:
    """What the automatic peaks hold for: this host, its CPU model, CPU count and memory (another
    machine, or this one resized, measures again)."""
    unknown: dict[str, str] = {}
    cpu = detect_cpu("/sys", "/proc", unknown)
    return {
        "host": socket.gethostname(),
        "cpu": cpu.model or "",
        "cpus": os.cpu_count() or 0,
        "memory": detect_memory_total("/proc", unknown) or 0,
    }


def load_auto(path: Path | None = None) -> Profile | None:
    """The automatic peaks measured on this machine; None when there are none, they were measured
    on another machine, or the file is not ours to read (it is measured again then)."""
    p = path or auto_profile_path()
    try:
        doc = json.loads(p.read_text())
        if not isinstance(doc, dict) or doc.get("fingerprint") != fingerprint():
            return None
        return load_profile(p)
    except Exception:  # noqa: BLE001 - our own cache: unreadable means measure again
        return None


def merged(profile: Profile | None, auto: Profile | None) -> Profile | None:
    """``profile`` with the automatic measurements of the resources and devices it lacks."""
    if auto is None:
        return profile
    if profile is None:
        return auto
    have = {(m.resource, m.device) for m in profile.measurements}
    extra = tuple(m for m in auto.measurements if (m.resource, m.device) not in have)
    return replace(profile, measurements=profile.measurements + extra) if extra else profile


def missing(profile: Profile | None) -> list[tuple[Resource, str]]:
    """The roofline's measurements ``profile`` lacks."""
    have = {(m.resource, m.device) for m in profile.measurements} if profile else set()
    return [k for k in NEEDED if k not in have]


def host_busy() -> float:
    """The share of the machine's CPU time in use over QUIET_PROBE_S (all processes)."""
    import psutil

    return float(psutil.cpu_percent(interval=QUIET_PROBE_S)) / 100.0


@dataclass(frozen=True)
class AutoOutcome:
    """What ``measure_missing`` did: the new automatic profile (None: none measured) and a line for the user."""

    profile: Profile | None
    line: str


def measure_missing(
    profile: Profile | None, seconds: float = AUTO_SECONDS, busy: Callable[[], float] = host_busy
) -> AutoOutcome:
    """Measure what the roofline lacks in ``profile`` (already merged with any automatic one) on
    a quiet machine, and keep it for this machine. Nothing is measured when nothing is missing."""
    need = missing(profile)
    if not need:
        return AutoOutcome(None, "")
    share = busy()
    if share > QUIET_BUSY_MAX:
        return AutoOutcome(
            None,
            f"bottleneckd: CPU peaks not measured: other work takes {share:.0%} of this machine's CPU time (more than "
            f"{QUIET_BUSY_MAX:.0%}); the roofline uses no peak of this machine; run 'bottleneckd calibrate' when it is "
            "quiet",
        )
    from bottleneckd.peaks import calibrate

    got: list[Measurement] = []
    for res, _device in need:
        if res == Resource.CPU_COMPUTE:
            got.append(calibrate.cpu_matmul(seconds))
        else:
            cpus = max(1, os.cpu_count() or 1)
            got.append(calibrate.cpu_memory_bandwidth(seconds, max(8, min(128, AUTO_COPY_MIB // cpus))))
    note = f"; measured by bottleneckd run before the job started, {share:.0%} of the CPU time busy"
    got = [replace(m, method=m.method + note) for m in got]
    path = auto_profile_path()
    earlier = load_auto(path)
    needed = set(need)
    keep = [m for m in (earlier.measurements if earlier else ()) if (m.resource, m.device) not in needed]
    try:
        auto = save_profile(keep + got, path, {"fingerprint": fingerprint()})
        where = f"kept in {path}"
    except OSError as e:
        auto = Profile(hostname=socket.gethostname(), created=0.0, measurements=tuple(keep + got))
        where = f"not kept: {e.strerror or e} ({path})"
    figures = ", ".join(f"{m.resource} {m.value:.3g} {m.unit}" for m in got)
    spent = sum(m.seconds for m in got)
    return AutoOutcome(auto, f"bottleneckd: measured this machine's CPU peaks in {spent:.1f} s ({figures}; {where})")
