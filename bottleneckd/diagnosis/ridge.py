"""The lowest ridge point of any current CPU or GPU, from data (peaks.json's GPUs, ridge_points.json's
CPUs): with no peak known for this machine, an arithmetic intensity below it is on the
memory-bandwidth side of every roofline."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from bottleneckd.model.resources import Resource


@dataclass(frozen=True)
class Ridge:
    flop_per_byte: float
    part: str
    source: str


def _doc(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((resources.files("bottleneckd") / "data" / name).read_text())
    return doc


@lru_cache(maxsize=1)
def lowest_ridge() -> Ridge | None:
    cands: list[Ridge] = []
    for part in _doc("peaks.json").get("gpus", []):
        fp32 = next((p for p in part["peaks"] if p["resource"] == Resource.GPU_COMPUTE and p["metric"] == "fp32"), None)
        bw = next((p for p in part["peaks"] if p["resource"] == Resource.GPU_MEMORY_BANDWIDTH), None)
        if fp32 and bw and bw["value"]:
            cands.append(Ridge(fp32["value"] / bw["value"], part["name"], f"{fp32['source']}; {bw['source']}"))
    for part in _doc("ridge_points.json").get("cpus", []):
        cands.append(
            Ridge(
                part["fp32_flops"] / part["memory_bandwidth"], part["name"], f"{part['derivation']} ({part['source']})"
            )
        )
    return min(cands, key=lambda r: r.flop_per_byte) if cands else None


@lru_cache(maxsize=1)
def smallest_last_level_cache() -> int | None:
    """Bytes of the smallest last-level cache of a current CPU (data/ridge_points.json)."""
    entry = _doc("ridge_points.json").get("smallest_last_level_cache")
    return int(entry["bytes"]) if entry else None
