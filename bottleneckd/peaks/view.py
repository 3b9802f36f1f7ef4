"""Text and JSON views of peaks and of the paper's Table 4."""

from __future__ import annotations

from typing import Any

from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.model.units import fmt_value
from bottleneckd.peaks.catalog import Catalog
from bottleneckd.peaks.profile import Measurement
from bottleneckd.peaks.resolve import PeakTable, table4_ratio


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=False)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def peaks_text(machine: Machine, table: PeakTable) -> str:
    fastest = table.fastest_compute_madd()
    rows = [
        [
            p.resource,
            p.device,
            p.metric,
            fmt_value(p.value, p.unit),
            p.unit,
            p.origin,
            table4_ratio(p, fastest),
            p.source,
        ]
        for p in table.peaks
    ]
    head = (
        f"{machine.hostname}: {machine.cpu.model or 'unknown CPU'}, {machine.cpu.logical_cores or '?'} logical cores, "
        + (f"{len(machine.gpus)} GPU(s): " + ", ".join(g.name for g in machine.gpus) if machine.gpus else "no GPU")
    )
    return (
        head
        + "\n\n"
        + _table(
            rows, ["resource", "device", "metric", "peak", "unit", "from", "vs fastest compute", "source / reason"]
        )
    )


def table4_json(catalog: Catalog) -> dict[str, Any]:
    fastest = max(r.value_trillions for r in catalog.table4 if r.unit == "madd/s")
    lowest = min((r for r in catalog.table4 if r.unit == "B/s"), key=lambda r: r.value_trillions)
    return {
        "rows": [
            {
                "row": r.row,
                "number_per_second_trillions": r.value_trillions,
                "printed_unit": r.printed_unit,
                "resource": r.resource,
                "unit": r.unit,
                "direction": r.direction,
                "note": r.note,
                "source": r.source,
                "madd_per_16bit_value": (fastest / (r.value_trillions / 2)) if r.unit == "B/s" else None,
            }
            for r in catalog.table4
        ],
        "worked_example": {
            "text": f"{fastest:g} / ({lowest.value_trillions:g} / 2)",
            "madd_per_16bit_value": fastest / (lowest.value_trillions / 2),
            "explanation": f"an A100 performs this many multiply-adds per 16-bit value sent over a {lowest.row}",
        },
    }


def table4_text(catalog: Catalog) -> str:
    doc = table4_json(catalog)
    rows = [
        [
            r["row"],
            f"{r['number_per_second_trillions']:g} {r['printed_unit']}",
            r["resource"],
            "-" if r["madd_per_16bit_value"] is None else f"{r['madd_per_16bit_value']:,.0f}",
            r["note"],
        ]
        for r in doc["rows"]
    ]
    ex = doc["worked_example"]
    return (
        "Table 4 (Bartoldson, Kailkhura and Blalock, JMLR 2023, section 6.2)\n\n"
        + _table(rows, ["resource", "number per second (trillions)", "id", "madd per 16-bit value moved", "note"])
        + f"\n\nWorked example: {ex['text']} = {ex['madd_per_16bit_value']:,.0f} multiply-adds per 16-bit value"
        + f" ({ex['explanation']})."
    )


#: measured metrics and the catalog figure each compares with (same unit and direction)
FAMILY = {
    "bf16_matmul": "tensor",
    "fp16_matmul": "tensor",
    "fp16_bf16_tensor_dense": "tensor",
    "fp16_tensor_dense": "tensor",
    "tf32_matmul": "tf32",
    "tf32_tensor_dense": "tf32",
    "fp32_matmul": "fp32",
    "fp32": "fp32",
    "fp64_matmul": "fp64",
    "fp64": "fp64",
    "fp8_matmul": "fp8",
    "fp8_tensor_dense": "fp8",
    "h2d_pinned": "pcie",
    "d2h_pinned": "pcie",
    "h2d_pageable": "pcie",
    "d2h_pageable": "pcie",
    "pcie_per_direction": "pcie",
}


def catalog_for(m: Measurement, table: PeakTable, devices: dict[str, str] | None = None) -> float | None:
    """The catalog figure a measurement compares with; ``devices`` maps GPU UUIDs (how GPU
    measurements are keyed) to the device names peaks carry."""
    fam = FAMILY.get(m.metric, m.metric)
    dev = (devices or {}).get(m.device, m.device)
    for p in table.for_resource(m.resource):
        if p.device == dev and p.catalog_value is not None and FAMILY.get(p.metric, p.metric) == fam:
            return p.catalog_value
    return None


def calibration_text(measurements: list[Measurement], table: PeakTable, machine: Machine | None = None) -> str:
    devices = {g.uuid: g.device for g in machine.gpus if g.uuid} if machine is not None else None
    rows = []
    for m in measurements:
        cat = catalog_for(m, table, devices)
        ratio = f"{m.value / cat:.0%}" if cat else "-"
        rows.append(
            [
                m.resource,
                m.device,
                m.metric,
                fmt_value(m.value, m.unit),
                fmt_value(cat, m.unit) if cat else "none",
                ratio,
                m.method,
            ]
        )
    return _table(rows, ["resource", "device", "metric", "measured", "catalog", "measured/catalog", "method"])
