"""The peak-throughput catalog: a data file of figures, each with its unit and source.

``load_catalog()`` validates the whole file and raises InputError naming the file, the field
and the problem, so a broken catalog never half-loads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any

from bottleneckd.model.errors import InputError
from bottleneckd.model.files import read_json_file
from bottleneckd.model.resources import RESOURCES, Resource

UNITS = frozenset({"FLOP/s", "madd/s", "B/s", "B", "IO/s"})
DIRECTIONS = frozenset({"per direction", "both", "read", "read+write", "n/a"})
SCHEMA = "bottleneckd.peaks/1"


@dataclass(frozen=True)
class CatalogPeak:
    resource: Resource
    metric: str
    value: float
    unit: str
    source: str
    direction: str = "n/a"
    unverified: bool = False
    links: int | None = None  # NVLink: how many links the figure covers


@dataclass(frozen=True)
class DeviceSpec:
    id: str
    kind: str  # "gpu" or "cpu"
    name: str
    match: tuple[str, ...]
    peaks: tuple[CatalogPeak, ...]
    pcie_generation: int | None = None
    notes: str = ""

    def matches(self, product_name: str) -> bool:
        return any(_word_match(pattern, product_name) for pattern in self.match)

    def peak(self, resource: str, metric: str | None = None) -> CatalogPeak | None:
        for p in self.peaks:
            if p.resource == resource and (metric is None or p.metric == metric):
                return p
        return None


@dataclass(frozen=True)
class LinkSpec:
    """A figure for a class of link or part: PCIe gen N x16, a DDR channel, a NIC speed."""

    id: str
    peak: CatalogPeak
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Table4Row:
    row: str
    value_trillions: float
    printed_unit: str
    resource: Resource
    unit: str
    direction: str
    source: str
    note: str = ""


@dataclass(frozen=True)
class Catalog:
    path: str
    table4: tuple[Table4Row, ...]
    gpus: tuple[DeviceSpec, ...]
    cpus: tuple[DeviceSpec, ...]
    links: tuple[LinkSpec, ...]

    def gpu_spec(self, product_name: str) -> DeviceSpec | None:
        """First GPU entry whose pattern matches the NVML product name (most specific first)."""
        return next((g for g in self.gpus if g.matches(product_name)), None)

    def cpu_spec(self, model_name: str) -> DeviceSpec | None:
        return next((c for c in self.cpus if c.matches(model_name)), None)

    def link(self, link_id: str) -> LinkSpec | None:
        return next((k for k in self.links if k.id == link_id), None)


def _word_match(pattern: str, text: str) -> bool:
    # Whole words on both sides: "A10" matches "NVIDIA A10" but not "NVIDIA A100", "H200" not
    # "NVIDIA GH200 480GB", "B200" not "NVIDIA GB200".
    return re.search(r"(?<![0-9A-Za-z])" + re.escape(pattern.strip()) + r"(?![0-9A-Za-z])", text) is not None


def default_catalog_path() -> Path:
    return Path(str(importlib_resources.files("bottleneckd") / "data" / "peaks.json"))


class _Reader:
    """Field access that names the file and the JSON path in every error."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, where: str, problem: str) -> InputError:
        return InputError(f"{self.path}: {where}: {problem}")

    def get(self, obj: Any, key: str, where: str, kind: type | tuple[type, ...], required: bool = True) -> Any:
        if not isinstance(obj, dict):
            raise self.fail(where, f"expected an object, got {type(obj).__name__}")
        if key not in obj:
            if required:
                raise self.fail(f"{where}.{key}", "missing; add it (see bottleneckd/data/peaks.json)")
            return None
        value = obj[key]
        if kind is float:
            kind = (int, float)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise self.fail(f"{where}.{key}", f"expected {_kind_name(kind)}, got {value!r}")
        return value

    def peak(self, obj: Any, where: str) -> CatalogPeak:
        resource = self.get(obj, "resource", where, str)
        if resource not in RESOURCES:
            raise self.fail(
                f"{where}.resource", f"unknown resource id {resource!r}; use one of: {', '.join(RESOURCES)}"
            )
        value = float(self.get(obj, "value", where, float))
        if not value > 0 or value != value or value == float("inf"):
            raise self.fail(f"{where}.value", f"peak must be a positive finite number, got {value!r}")
        unit = self.get(obj, "unit", where, str)
        if unit not in UNITS:
            raise self.fail(f"{where}.unit", f"unknown unit {unit!r}; use one of: {', '.join(sorted(UNITS))}")
        direction = self.get(obj, "direction", where, str, required=False) or "n/a"
        if direction not in DIRECTIONS:
            raise self.fail(
                f"{where}.direction", f"unknown direction {direction!r}; use one of: {', '.join(sorted(DIRECTIONS))}"
            )
        source = self.get(obj, "source", where, str)
        if not source.strip():
            raise self.fail(f"{where}.source", "every figure needs a source")
        return CatalogPeak(
            resource=Resource(resource),
            metric=self.get(obj, "metric", where, str),
            value=value,
            unit=unit,
            source=source,
            direction=direction,
            unverified=bool(obj.get("unverified", False)),
            links=self.get(obj, "links", where, int, required=False),
        )

    def device(self, obj: Any, where: str, kind: str) -> DeviceSpec:
        peaks = self.get(obj, "peaks", where, list)
        match = self.get(obj, "match", where, list)
        if not match or not all(isinstance(m, str) and m.strip() for m in match):
            raise self.fail(f"{where}.match", "expected a non-empty list of product-name patterns")
        gen = self.get(obj, "pcie_generation", where, int, required=False)
        return DeviceSpec(
            id=self.get(obj, "id", where, str),
            kind=kind,
            name=self.get(obj, "name", where, str),
            match=tuple(match),
            peaks=tuple(self.peak(p, f"{where}.peaks[{i}]") for i, p in enumerate(peaks)),
            pcie_generation=gen,
            notes=obj.get("notes", "") or "",
        )


def _kind_name(kind: type | tuple[type, ...]) -> str:
    if kind == (int, float):
        return "a number"
    return {str: "a string", list: "a list", dict: "an object", int: "an integer"}.get(kind, str(kind))  # type: ignore[arg-type]


def load_catalog(path: str | Path | None = None) -> Catalog:
    p = Path(path) if path is not None else default_catalog_path()
    doc = read_json_file(str(p), "peak catalog", "fix it or pass another file with --catalog")
    r = _Reader(str(p))
    schema = r.get(doc, "schema", "$", str)
    if schema != SCHEMA:
        raise r.fail("$.schema", f"expected {SCHEMA!r}, got {schema!r}")
    ids: set[str] = set()

    def unique(i: str, where: str) -> str:
        if i in ids:
            raise r.fail(where, f"duplicate id {i!r}")
        ids.add(i)
        return i

    gpus = tuple(r.device(g, f"gpus[{i}]", "gpu") for i, g in enumerate(r.get(doc, "gpus", "$", list)))
    cpus = tuple(r.device(c, f"cpus[{i}]", "cpu") for i, c in enumerate(r.get(doc, "cpus", "$", list)))
    for i, d in enumerate(gpus + cpus):
        unique(d.id, f"device[{i}].id")
    links = []
    for i, raw in enumerate(r.get(doc, "links", "$", list)):
        where = f"links[{i}]"
        lid = unique(r.get(raw, "id", where, str), f"{where}.id")
        attrs = {
            k: v
            for k, v in raw.items()
            if k not in {"id", "resource", "metric", "value", "unit", "direction", "source", "unverified", "links"}
        }
        links.append(LinkSpec(id=lid, peak=r.peak(raw, where), attributes=attrs))
    table4 = []
    for i, row in enumerate(r.get(doc, "table4", "$", list)):
        where = f"table4[{i}]"
        resource = r.get(row, "resource", where, str)
        if resource not in RESOURCES:
            raise r.fail(f"{where}.resource", f"unknown resource id {resource!r}")
        value = float(r.get(row, "value_trillions", where, float))
        if not value > 0:
            raise r.fail(f"{where}.value_trillions", f"peak must be positive, got {value!r}")
        table4.append(
            Table4Row(
                row=r.get(row, "row", where, str),
                value_trillions=value,
                printed_unit=r.get(row, "printed_unit", where, str),
                resource=Resource(resource),
                unit=r.get(row, "unit", where, str),
                direction=r.get(row, "direction", where, str),
                source=r.get(row, "source", where, str),
                note=row.get("note", ""),
            )
        )
    return Catalog(path=str(p), table4=tuple(table4), gpus=gpus, cpus=cpus, links=tuple(links))
