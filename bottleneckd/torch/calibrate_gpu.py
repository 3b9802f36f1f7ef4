"""GPU microbenchmarks, run as ``python -m bottleneckd.torch.calibrate_gpu``; one JSON line each.

Timed with CUDA events after warm-up; the best of several repetitions is reported. Byte counts:
device-to-device copy counts bytes read plus bytes written; host/device copies count bytes moved
in one direction.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial


def _emit(**kw: object) -> None:
    print(json.dumps(kw), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--matmul-n", type=int, default=8192)
    ap.add_argument("--copy-mib", type=int, default=1024)
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        _emit(skipped="gpu", reason=f"torch not importable: {e}")
        return
    if not torch.cuda.is_available():
        _emit(skipped="gpu", reason="torch sees no CUDA device")
        return

    def timed(fn, work: float, seconds: float) -> tuple[float, float]:
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        best, start, reps = 0.0, time.perf_counter(), 0
        while reps < 5 or time.perf_counter() - start < seconds:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ms = a.elapsed_time(b)
            if ms > 0:
                best = max(best, work / (ms / 1000.0))
            reps += 1
        return best, time.perf_counter() - start

    for i in range(torch.cuda.device_count()):
        dev = torch.device("cuda", i)
        name = f"GPU-{torch.cuda.get_device_properties(i).uuid}"  # NVML's UUID: CUDA's index is not NVML's
        torch.cuda.set_device(dev)
        n = args.matmul_n
        for dtype, metric, tf32 in (
            (torch.bfloat16, "bf16_matmul", False),
            (torch.float16, "fp16_matmul", False),
            (torch.float32, "tf32_matmul", True),
            (torch.float32, "fp32_matmul", False),
        ):
            x = torch.randn(n, n, device=dev, dtype=dtype)
            y = torch.randn(n, n, device=dev, dtype=dtype)
            prev = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = tf32  # fp32 means fp32, not TF32
            rate, spent = timed(partial(torch.mm, x, y), 2.0 * n**3, args.seconds)
            torch.backends.cuda.matmul.allow_tf32 = prev
            _emit(
                resource="gpu_compute",
                device=name,
                metric=metric,
                value=rate,
                unit="FLOP/s",
                method=f"torch.mm {n}x{n} {str(dtype).split('.')[-1]}{' (TF32 allowed)' if tf32 else ''}, "
                "CUDA events, best rep",
                seconds=spent,
            )
            del x, y
        nbytes = args.copy_mib * 1024 * 1024
        src = torch.empty(nbytes, dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        rate, spent = timed(partial(dst.copy_, src), 2.0 * nbytes, args.seconds)
        _emit(
            resource="gpu_memory_bandwidth",
            device=name,
            metric="dram_bandwidth",
            value=rate,
            unit="B/s",
            method=f"device-to-device copy {args.copy_mib} MiB, read+write bytes",
            seconds=spent,
        )
        del src, dst
        for pinned in (False, True):
            host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
            devbuf = torch.empty(nbytes, dtype=torch.uint8, device=dev)
            kind = "pinned" if pinned else "pageable"
            rate, spent = timed(partial(devbuf.copy_, host, non_blocking=pinned), float(nbytes), args.seconds)
            _emit(
                resource="cpu_gpu_interconnect",
                device=name,
                metric=f"h2d_{kind}",
                value=rate,
                unit="B/s",
                method=f"host-to-device copy {args.copy_mib} MiB, {kind} host memory",
                seconds=spent,
            )
            rate, spent = timed(partial(host.copy_, devbuf, non_blocking=pinned), float(nbytes), args.seconds)
            _emit(
                resource="cpu_gpu_interconnect",
                device=name,
                metric=f"d2h_{kind}",
                value=rate,
                unit="B/s",
                method=f"device-to-host copy {args.copy_mib} MiB, {kind} host memory",
                seconds=spent,
            )
            del host, devbuf
    count = torch.cuda.device_count()
    if count < 2:
        _emit(skipped="gpu_to_gpu", reason="only one GPU: no GPU-to-GPU copy to measure")
    for i in range(count):
        for j in range(count):
            if i == j:
                continue
            nbytes = args.copy_mib * 1024 * 1024
            a = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{i}")
            b = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{j}")
            torch.cuda.set_device(i)
            rate, spent = timed(partial(b.copy_, a, non_blocking=True), float(nbytes), args.seconds)
            _emit(
                resource="inter_gpu_interconnect",
                device=f"GPU-{torch.cuda.get_device_properties(i).uuid}",
                metric=f"copy_to_GPU-{torch.cuda.get_device_properties(j).uuid}",
                value=rate,
                unit="B/s",
                method=f"cuda:{i} to cuda:{j} copy {args.copy_mib} MiB "
                f"(peer access: {torch.cuda.can_device_access_peer(i, j)})",
                seconds=spent,
            )
            del a, b


if __name__ == "__main__":
    main()
