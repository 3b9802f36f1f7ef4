"""Short microbenchmarks of what this machine really reaches.

CPU fp32 matmul (numpy/BLAS), CPU memory bandwidth (multi-threaded streaming copy), storage
sequential read bandwidth and 4 KiB random-read IOPS below the page cache (O_DIRECT), and, when
torch with CUDA is installed, the GPU set run in a subprocess (``bottleneckd.torch.calibrate_gpu``)
so this process never imports torch.
"""

from __future__ import annotations

import importlib.util
import json
import mmap
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bottleneckd.model.resources import Resource
from bottleneckd.peaks.profile import Measurement

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Skipped:
    name: str
    reason: str


def _best_rate(fn: Callable[[], float], seconds: float, min_reps: int = 3) -> tuple[float, float]:
    """Run ``fn`` (which returns the units of work it did) for about ``seconds``; return the best
    rate and the time spent."""
    start = time.perf_counter()
    best = 0.0
    reps = 0
    while reps < min_reps or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        work = fn()
        dt = time.perf_counter() - t0
        if dt > 0:
            best = max(best, work / dt)
        reps += 1
    return best, time.perf_counter() - start


def cpu_matmul(seconds: float = 2.0) -> Measurement:
    n = 256
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    # grow until one product takes ~20 ms, so call overhead does not count
    while n < 4096:
        t0 = time.perf_counter()
        a @ a
        if time.perf_counter() - t0 > 0.02:
            break
        n *= 2
        a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = a.copy()
    out = np.empty_like(a)
    rate, spent = _best_rate(lambda: (np.matmul(a, b, out=out), 2.0 * n**3)[1], seconds)
    return Measurement(
        Resource.CPU_COMPUTE,
        "cpu",
        "fp32_matmul",
        rate,
        "FLOP/s",
        f"numpy fp32 matmul {n}x{n}, best of {seconds:.1f} s",
        spent,
    )


def cpu_memory_bandwidth(seconds: float = 2.0, mib_per_thread: int = 128) -> Measurement:
    threads = max(1, os.cpu_count() or 1)
    n = mib_per_thread * 1024 * 1024 // 8
    srcs = [np.ones(n, dtype=np.float64) for _ in range(threads)]
    dsts = [np.empty(n, dtype=np.float64) for _ in range(threads)]
    pool = ThreadPoolExecutor(threads)

    def copy_all() -> float:
        list(pool.map(lambda k: np.copyto(dsts[k], srcs[k]), range(threads)))
        return 2.0 * 8 * n * threads  # bytes read + bytes written

    try:
        rate, spent = _best_rate(copy_all, seconds)
    finally:
        pool.shutdown()
    return Measurement(
        Resource.CPU_MEMORY_BANDWIDTH,
        "host",
        "dram_bandwidth",
        rate,
        "B/s",
        f"streaming copy, {threads} threads x {mib_per_thread} MiB, read+write bytes",
        spent,
    )


def block_device_of(path: str) -> str:
    """The whole-disk block device name (e.g. 'nvme0n1', 'vda') that holds ``path``."""
    st = os.stat(path)
    sysdev = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    try:
        real = sysdev.resolve(strict=True)
    except OSError:
        return f"dev{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    return real.parent.name if (real / "partition").exists() else real.name


def _open_direct(path: str) -> int:
    return os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))


def _make_file(path: str, size: int) -> None:
    chunk = os.urandom(1024 * 1024)
    with open(path, "wb") as f:
        for _ in range(size // len(chunk)):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def storage(directory: str, seconds: float = 2.0, mib: int = 256, queue_depth: int = 8) -> list[Measurement]:
    """Sequential read (1 MiB blocks) and 4 KiB random reads at ``queue_depth``, all O_DIRECT."""
    if not hasattr(os, "O_DIRECT"):
        raise OSError("O_DIRECT is not available on this platform")
    device = block_device_of(directory)
    path = os.path.join(directory, f".bottleneckd-calibrate-{os.getpid()}")
    size = mib * 1024 * 1024
    out = []
    try:
        _make_file(path, size)
        fd = _open_direct(path)  # raises EINVAL on file systems without O_DIRECT (tmpfs)
        try:
            block = 1024 * 1024
            buf = mmap.mmap(-1, block)  # page-aligned, as O_DIRECT needs

            def seq() -> float:
                done = 0
                for off in range(0, size, block):
                    done += os.preadv(fd, [buf], off)
                return float(done)

            rate, spent = _best_rate(seq, seconds, min_reps=1)
            out.append(
                Measurement(
                    Resource.STORAGE_BANDWIDTH,
                    device,
                    "sequential_read",
                    rate,
                    "B/s",
                    f"O_DIRECT sequential read, 1 MiB blocks, {mib} MiB file in {directory}",
                    spent,
                )
            )
            pages = size // 4096
            stop = time.perf_counter() + seconds

            def worker(seed: int) -> int:
                rng = random.Random(seed)
                b = mmap.mmap(-1, 4096)
                n = 0
                while time.perf_counter() < stop:
                    for _ in range(64):
                        os.preadv(fd, [b], rng.randrange(pages) * 4096)
                    n += 64
                return n

            t0 = time.perf_counter()
            with ThreadPoolExecutor(queue_depth) as pool:
                total = sum(pool.map(worker, range(queue_depth)))
            spent = time.perf_counter() - t0
            out.append(
                Measurement(
                    Resource.STORAGE_BANDWIDTH,
                    device,
                    "random_read_4k_iops",
                    total / spent,
                    "IO/s",
                    f"O_DIRECT 4 KiB random reads, queue depth {queue_depth} (threads)",
                    spent,
                )
            )
        finally:
            os.close(fd)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    return out


def gpu(seconds: float, progress: Progress) -> tuple[list[Measurement], list[Skipped]]:
    """GPU benchmarks in a subprocess that imports torch (never this process)."""
    if importlib.util.find_spec("torch") is None:
        return [], [Skipped("gpu", "torch is not installed (pip install 'bottleneckd[torch]')")]
    proc = subprocess.run(
        [sys.executable, "-m", "bottleneckd.torch.calibrate_gpu", "--seconds", str(seconds)],
        capture_output=True,
        text=True,
        timeout=max(120.0, seconds * 40),
    )
    measurements, skipped = [], []
    for line in proc.stdout.splitlines():
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "skipped" in d:
            skipped.append(Skipped(d["skipped"], d["reason"]))
        else:
            m = Measurement(**d)
            measurements.append(m)
            progress(f"{m.resource} {m.device} {m.metric}: {m.value:.4g} {m.unit}")
    if proc.returncode != 0:
        skipped.append(
            Skipped("gpu", f"GPU calibration failed: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}")
        )
    return measurements, skipped


def run_all(
    directory: str, seconds: float, progress: Progress, with_gpu: bool = True
) -> tuple[list[Measurement], list[Skipped]]:
    measurements: list[Measurement] = []
    skipped: list[Skipped] = []
    steps: list[tuple[str, Callable[[], list[Measurement]]]] = [
        ("cpu fp32 matmul", lambda: [cpu_matmul(seconds)]),
        ("cpu memory bandwidth", lambda: [cpu_memory_bandwidth(seconds)]),
        ("storage read (O_DIRECT)", lambda: storage(directory, seconds)),
    ]
    total = len(steps) + (1 if with_gpu else 0)
    for k, (name, fn) in enumerate(steps, 1):
        progress(f"[{k}/{total}] {name} ...")
        try:
            got = fn()
        except OSError as e:
            skipped.append(Skipped(name, f"{e.strerror or e} ({directory}); try --dir on a disk-backed file system"))
            progress(f"      skipped: {skipped[-1].reason}")
            continue
        for m in got:
            progress(f"      {m.resource} {m.device} {m.metric}: {m.value:.4g} {m.unit} ({m.seconds:.1f} s)")
        measurements += got
    if with_gpu:
        progress(f"[{total}/{total}] gpu (subprocess with torch) ...")
        got, why = gpu(seconds, progress)
        measurements += got
        skipped += why
        for s in why:
            progress(f"      skipped: {s.reason}")
    return measurements, skipped
