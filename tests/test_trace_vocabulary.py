"""docs/trace-format.md's "Readings" section agrees with the code: every reading the samplers write
and every reading the diagnosis reads has its row (device, metric, unit, "diagnosis" yes or no),
every row names a reading a sampler writes, and the peak rows and rank identity fields are the ones
the code has.

The readers and writers are found with ``ast``, not by running them. Readers (bottleneckd/diagnosis,
bottleneckd/advice): calls ``get``/``g``/``_get`` (resource, device, metric), ``busiest``/``note``/
``job_busiest`` (resource, metric = "utilization"), key tuples ``(Resource.X, device, metric)``, and
comprehensions over ``<window>.stats.items()``/``.notes.items()`` filtered by ``r == Resource.X``
and ``m == ...`` or ``m.startswith(...)``. Writers (bottleneckd/samplers): ``Reading(Resource.X,
device, metric, value, unit)`` and ``utilization(Resource.X, device, used, peak, unit)``. A metric
given by a name is resolved through the module's constants and the loop that binds it; an f-string
is expanded over the loops that bind its parts, else it is a pattern (``f"process_bytes:{pid}"`` ->
``process_bytes:*``, as the doc's ``process_bytes:<pid>`` is). A call whose metric cannot be told
fails the test: a new way of reading or writing readings needs the scan taught, not skipped.
``test_a_removed_or_changed_row_is_caught`` checks that dropping any one row is noticed.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.resources import RESOURCES

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "bottleneckd"
DOC = ROOT / "docs" / "trace-format.md"

#: reading accessors of the diagnosis: (resource, device, metric) ...
READERS = {"get", "_get", "g"}
#: ... and (resource[, metric]), the metric "utilization" when not given
BUSIEST = {"busiest", "note", "job_busiest"}
#: the accessors' own definitions (generic over resource and metric)
ACCESSOR_MODULES = {"bottleneckd/diagnosis/window.py"}


# --- the doc ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    resource: str
    devices: tuple[str, ...]
    metric: str
    unit: str
    read: bool
    line: int

    @property
    def pattern(self) -> str:
        """The metric as a glob: ``throttle:<reason>`` -> ``throttle:*``."""
        return re.sub(r"<[^>]*>", "*", self.metric)


def _section(title: str) -> list[tuple[int, str]]:
    """(line number, text) of the doc's ``## title`` section."""
    lines = DOC.read_text().splitlines()
    start = lines.index(f"## {title}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [(i + 1, lines[i]) for i in range(start + 1, end)]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _tables(section: list[tuple[int, str]]) -> dict[str, list[tuple[int, list[str]]]]:
    """``### heading`` -> its table's body rows (line number, cells)."""
    out: dict[str, list[tuple[int, list[str]]]] = {}
    heading = None
    for n, line in section:
        if line.startswith("### "):
            heading = line[4:].strip()
            out[heading] = []
        elif heading is not None and line.startswith("|") and not re.match(r"\|[-| ]+\|$", line):
            out[heading].append((n, _cells(line)))
    return {h: rows[1:] for h, rows in out.items() if rows}  # the first row is the header


@cache
def doc_rows() -> tuple[Row, ...]:
    rows = []
    for heading, body in _tables(_section("Readings")).items():
        names = _ticked(heading)
        if len(names) != 1 or names[0] not in RESOURCES:
            continue
        for n, cells in body:
            assert len(cells) == 5, f"docs/trace-format.md:{n}: expected 5 cells, got {cells}"
            device, metric, unit, _meaning, read = cells
            assert len(_ticked(metric)) == 1 and len(_ticked(unit)) == 1, f"docs/trace-format.md:{n}: {cells}"
            assert read in ("yes", "no"), f"docs/trace-format.md:{n}: diagnosis is {read!r}, not yes or no"
            rows.append(Row(names[0], tuple(_ticked(device)), _ticked(metric)[0], _ticked(unit)[0], read == "yes", n))
    return tuple(rows)


def _glob_match(a: str, b: str) -> bool:
    """Two metric names or patterns name the same reading (either may hold ``*``)."""
    return fnmatchcase(a, b) or fnmatchcase(b, a)


# --- the code --------------------------------------------------------------------------------


class Unresolved(Exception):
    pass


@dataclass(frozen=True)
class Module:
    path: Path
    tree: ast.Module
    module: ModuleType
    parents: dict[ast.AST, ast.AST]

    def where(self, node: ast.AST) -> str:
        return f"{self.path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"


def modules(*dirs: str) -> Iterator[Module]:
    for d in dirs:
        for path in sorted((PKG / d).rglob("*.py")):
            tree = ast.parse(path.read_text())
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            parents = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
            yield Module(path, tree, importlib.import_module(name), parents)


def resource_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Resource":
        return node.attr.lower()
    return None


def _value(node: ast.AST, m: Module) -> Any:
    """The Python value of an iterable expression: a literal, a module constant, ``CONST.items()``."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.Name) and hasattr(m.module, node.id):
        return getattr(m.module, node.id)
    if isinstance(node, ast.Name):
        return _local_dict(node, m)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "items":
        d = _value(node.func.value, m)
        if isinstance(d, dict):
            return list(d.items())
    raise Unresolved


def _local_dict(name: ast.Name, m: Module) -> dict[Any, None]:
    """The keys of a dict literal the enclosing function assigns to ``name`` (``by_role = {RANK: 0.0,
    ...}``), its keys literals or module constants."""
    fn: ast.AST = name
    while fn in m.parents and not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        fn = m.parents[fn]
    for n in ast.walk(fn):
        target, value = (
            (n.targets[0], n.value)
            if isinstance(n, ast.Assign) and len(n.targets) == 1
            else (n.target, n.value)
            if isinstance(n, ast.AnnAssign)
            else (None, None)
        )
        if isinstance(target, ast.Name) and target.id == name.id and isinstance(value, ast.Dict):
            keys = []
            for k in value.keys:
                if isinstance(k, ast.Constant):
                    keys.append(k.value)
                elif isinstance(k, ast.Name) and hasattr(m.module, k.id):
                    keys.append(getattr(m.module, k.id))
                else:
                    raise Unresolved
            return dict.fromkeys(keys)
    raise Unresolved


def _bound_at(target: ast.AST, name: str) -> tuple[int, ...] | None:
    """Where ``name`` sits in a loop target (``for (a, b), c in ...``): its index path."""
    if isinstance(target, ast.Name):
        return () if target.id == name else None
    if isinstance(target, ast.Tuple):
        for i, e in enumerate(target.elts):
            p = _bound_at(e, name)
            if p is not None:
                return (i, *p)
    return None


def _loop_values(name: ast.Name, m: Module) -> list[Any]:
    """The values the innermost loop (comprehension or ``for``) binding ``name`` gives it."""
    n: ast.AST = name
    while n in m.parents:
        n = m.parents[n]
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            loops = [(g.target, g.iter) for g in n.generators]
        elif isinstance(n, ast.For):
            loops = [(n.target, n.iter)]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            break
        else:
            continue
        for target, it in loops:
            at = _bound_at(target, name.id)
            if at is None:
                continue
            out = []
            for v in _value(it, m):
                for i in at:
                    v = v[i]
                out.append(v)
            return out
    raise Unresolved


def ordered(node: ast.AST, m: Module) -> list[str]:
    """The names an expression can be, in its loop's order: a literal, a constant, a loop variable,
    an f-string (its parts expanded where each is a loop variable, else the pattern ``a*b``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        out = [""]
        for v in node.values:
            if isinstance(v, ast.Constant):
                out = [o + str(v.value) for o in out]
                continue
            try:
                parts = ordered(v.value, m)
            except Unresolved:
                parts = ["*"]
            out = [o + p for o in out for p in parts]
        return out
    if isinstance(node, ast.Name):
        try:
            values = _loop_values(node, m)
        except Unresolved:
            v = getattr(m.module, node.id, None)
            if isinstance(v, str):
                return [v]
            raise
        if values and all(isinstance(v, str) for v in values):
            return values
    raise Unresolved


def strings(node: ast.AST, m: Module) -> set[str]:
    return set(ordered(node, m))


def _name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _receiver(call: ast.Call) -> str:
    f = call.func
    return f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""


def _device(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


@dataclass(frozen=True)
class Use:
    resource: str | None  # None: any resource
    device: str | None  # None: any device (a variable)
    metric: str  # may hold "*"
    where: str
    unit: str | None = None


def _stats_filter(comp: ast.comprehension, m: Module) -> list[Use]:
    """``for (r, d, m), s in w.stats.items() if r == Resource.X and m == "metric"`` and the like."""
    it, target = comp.iter, comp.target
    if not (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Attribute)
        and it.func.attr == "items"
        and isinstance(it.func.value, ast.Attribute)
        and it.func.value.attr in ("stats", "notes")
        and isinstance(target, ast.Tuple)
    ):
        return []
    key = target.elts[0] if isinstance(target.elts[0], ast.Tuple) else target
    if len(key.elts) != 3 or not all(isinstance(e, ast.Name) for e in key.elts):
        return []
    r_name, _, m_name = (e.id for e in key.elts)  # type: ignore[attr-defined]
    resources: set[str | None] = {None}
    metrics: set[str] = set()
    for cond in comp.ifs:
        for c in ast.walk(cond):
            if isinstance(c, ast.Compare) and isinstance(c.left, ast.Name) and len(c.ops) == 1:
                op, right = c.ops[0], c.comparators[0]
                if c.left.id == r_name and isinstance(op, ast.Eq) and resource_of(right):
                    resources = {resource_of(right)}
                elif c.left.id == r_name and isinstance(op, ast.In) and isinstance(right, ast.Tuple):
                    resources = {resource_of(e) for e in right.elts}
                elif c.left.id == m_name and isinstance(op, ast.Eq):
                    try:
                        metrics |= strings(right, m)
                    except Unresolved:
                        pass  # a function's parameter (communication.py's _ports): its callers read it
            elif (
                isinstance(c, ast.Call)
                and isinstance(c.func, ast.Attribute)
                and c.func.attr == "startswith"
                and isinstance(c.func.value, ast.Name)
                and c.func.value.id == m_name
            ):
                metrics |= {f"{a.value}*" for a in c.args if isinstance(a, ast.Constant)}
    return [Use(r, None, x, m.where(it)) for x in metrics for r in resources]


@cache
def diagnosis_reads() -> tuple[tuple[Use, ...], tuple[str, ...]]:
    """What the diagnosis reads, and the accessor calls whose metric could not be told."""
    out: list[Use] = []
    unresolved: list[str] = []
    for m in modules("diagnosis", "advice"):
        if str(m.path.relative_to(ROOT)) in ACCESSOR_MODULES:
            continue
        for n in ast.walk(m.tree):
            if isinstance(n, ast.Call) and _name(n) in READERS | BUSIEST and _receiver(n) != "peaks":
                at = next((i for i, a in enumerate(n.args) if resource_of(a)), None)
                if at is None:
                    continue
                resource, rest = resource_of(n.args[at]), n.args[at + 1 :]
                if _name(n) in BUSIEST:
                    device, metric = None, rest[0] if rest else None
                elif len(rest) >= 2:
                    device, metric = rest[0], rest[1]
                else:
                    unresolved.append(m.where(n))
                    continue
                try:
                    names = {"utilization"} if metric is None else strings(metric, m)
                except Unresolved:
                    unresolved.append(m.where(n))
                    continue
                out += [Use(resource, _device(device), x, m.where(n)) for x in names]
            elif isinstance(n, ast.Tuple) and len(n.elts) == 3 and resource_of(n.elts[0]):
                try:
                    names = strings(n.elts[2], m)
                except Unresolved:
                    continue  # not a reading's key
                out += [Use(resource_of(n.elts[0]), _device(n.elts[1]), x, m.where(n)) for x in names]
            elif isinstance(n, ast.comprehension):
                out += _stats_filter(n, m)
    return tuple(out), tuple(unresolved)


@cache
def sampler_writes() -> tuple[tuple[Use, ...], tuple[str, ...]]:
    """What the samplers write (resource, device where a literal, metric, unit), and the calls
    whose metric or unit could not be told."""
    out: list[Use] = []
    unresolved: list[str] = []
    for m in modules("samplers"):
        for n in ast.walk(m.tree):
            if not (isinstance(n, ast.Call) and _name(n) in ("Reading", "utilization") and n.args):
                continue
            resource = resource_of(n.args[0])
            if resource is None:
                continue  # energy.py's zones carry their resource: the string search below covers them
            device = _device(n.args[1]) if len(n.args) > 1 else None
            try:
                units = ordered(n.args[4], m) if len(n.args) > 4 else []
                if _name(n) == "utilization":
                    (unit,) = set(units) or {None}
                    if unit is None:
                        raise Unresolved
                    got = {
                        ("utilization", "ratio"),
                        ("peak", unit),
                        ("throughput" if unit.endswith("/s") else "used", unit),
                    }
                else:
                    names = ordered(n.args[2], m)
                    if len(set(units)) == 1:
                        got = {(x, units[0]) for x in names}
                    elif len(units) == len(names):  # bound together: for m, u in (("a", "B/s"), ...)
                        got = set(zip(names, units, strict=True))
                    else:
                        raise Unresolved
            except (Unresolved, ValueError):
                unresolved.append(m.where(n))
                continue
            out += [Use(resource, device, x, m.where(n), u) for x, u in got]
    return tuple(out), tuple(unresolved)


def _written_names(*dirs: str) -> set[str]:
    """Every string literal and f-string pattern in the modules of ``dirs``."""
    names = set()
    for d in dirs:
        for path in (PKG / d).rglob("*.py"):
            for n in ast.walk(ast.parse(path.read_text())):
                if isinstance(n, ast.Constant) and isinstance(n.value, str):
                    names.add(n.value)
                elif isinstance(n, ast.JoinedStr):
                    names.add("".join(v.value if isinstance(v, ast.Constant) else "*" for v in n.values))
    return names


# --- the checks (each returns its problems, for the doc's rows or any other) -----------------


def rows_for(rows: tuple[Row, ...], resource: str | None, metric: str) -> list[Row]:
    return [r for r in rows if resource in (None, r.resource) and _glob_match(metric, r.pattern)]


def unread_problems(rows: tuple[Row, ...]) -> list[str]:
    """Readings the diagnosis reads that have no row, or only rows marked 'no'."""
    out = []
    for u in diagnosis_reads()[0]:
        found = rows_for(rows, u.resource, u.metric)
        if u.device is not None:
            found = [r for r in found if u.device in r.devices]
        if not found:
            out.append(f"{u.where}: {u.resource} {u.device or '*'} {u.metric} is read and has no row")
        elif not any(r.read for r in found):
            out.append(
                f"{u.where}: {u.resource} {u.device or '*'} {u.metric} is read, docs line {found[0].line} says no"
            )
    return out


def marked_problems(rows: tuple[Row, ...]) -> list[str]:
    """Rows marked 'yes' that nothing reads, and rows marked 'no' that a rule reads."""
    reads = diagnosis_reads()[0]
    out = []
    for r in rows:
        uses = [
            u
            for u in reads
            if u.resource in (None, r.resource)
            and _glob_match(u.metric, r.pattern)
            and (u.device is None or u.device in r.devices)
        ]
        if r.read and not uses:
            out.append(f"docs line {r.line}: {r.resource} {r.metric} marked 'yes', read nowhere")
        # a row marked 'no' may share a read of any device with its sibling marked 'yes', not a named one
        named = [u for u in uses if u.device is not None and u.resource is not None]
        siblings_read = any(s.read for s in rows_for(rows, r.resource, r.pattern))
        if not r.read and (named or (uses and not siblings_read)):
            out.append(f"docs line {r.line}: {r.resource} {r.metric} marked 'no', read at {uses[0].where}")
    return out


def unwritten_problems(rows: tuple[Row, ...]) -> list[str]:
    """Readings a sampler writes that have no row with their device and unit."""
    from bottleneckd.samplers.energy import DOMAINS

    out = []
    for u in sampler_writes()[0]:
        found = rows_for(rows, u.resource, u.metric)
        # a device the sampler names by a variable (gpu<i>, <block device> ...) is a placeholder's row
        found = [r for r in found if u.device in r.devices or (u.device is None and any("<" in d for d in r.devices))]
        if not found:
            out.append(f"{u.where}: {u.resource} {u.device or '<...>'} {u.metric} is written and has no row")
        elif u.unit is not None and not any(r.unit == u.unit for r in found):
            out.append(f"{u.where}: {u.resource} {u.metric} is written in {u.unit}, the docs say {found[0].unit}")
    # RAPL zones carry their resource in a variable (samplers/energy.py DOMAINS)
    for resource, prefix in DOMAINS.values():
        for metric, unit in (("energy", "J"), ("power", "W")):
            if not any(f"{prefix}-<socket>" in r.devices and r.unit == unit for r in rows_for(rows, resource, metric)):
                out.append(f"samplers/energy.py: {resource} {prefix}-<socket> {metric} ({unit}) has no row")
    return out


def stale_problems(rows: tuple[Row, ...]) -> list[str]:
    """Rows whose metric (or literal device) no sampler writes."""
    written = _written_names("samplers", "model")
    scanned = {(u.resource, u.metric) for u in sampler_writes()[0]}
    out = []
    for r in rows:
        sample = re.sub(r"<[^>]*>", "x", r.metric)  # throttle:<reason> -> throttle:x
        if not any(res == r.resource and _glob_match(sample, x) for res, x in scanned) and not any(
            fnmatchcase(sample, x) for x in written
        ):
            out.append(f"docs line {r.line}: {r.resource} {r.metric} is written by no sampler")
        out += [
            f"docs line {r.line}: device {d} is written nowhere" for d in r.devices if "<" not in d and d not in written
        ]
    return out


CHECKS = (unread_problems, marked_problems, unwritten_problems, stale_problems)


# --- the tests -------------------------------------------------------------------------------


def test_every_resource_has_its_table_and_no_row_twice() -> None:
    rows = doc_rows()
    assert {r.resource for r in rows} == set(RESOURCES)
    keys = [(r.resource, d, r.metric) for r in rows for d in r.devices]
    assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)
    assert all(r.devices for r in rows)


def test_the_scanners_see_every_access_form() -> None:
    reads, unresolved = diagnosis_reads()
    assert not unresolved, f"reading accessors whose metric the scan cannot tell: {unresolved}"
    seen = {(u.resource, u.metric) for u in reads}
    # a module constant (OUTSIDE_METRIC), an f-string, a startswith filter, a loop over a constant,
    # a key tuple, a default metric
    assert {
        ("cpu_compute", "outside_process_cores"),
        ("gpu_compute", "throttle:*"),
        ("gpu_memory", "process_bytes:*"),
        ("gpu_compute", "integer_activity"),
        ("gpu_compute", "job_process"),
        ("storage_capacity", "utilization"),
    } <= seen
    writes, unresolved = sampler_writes()
    assert not unresolved, f"Reading/utilization calls whose metric or unit the scan cannot tell: {unresolved}"
    assert {("cpu_compute", "outside_process_cores"), ("gpu_compute", "tensor_activity")} <= {
        (u.resource, u.metric) for u in writes
    }


def test_every_reading_the_diagnosis_reads_has_a_row_marked_read() -> None:
    problems = unread_problems(doc_rows())
    assert not problems, "\n".join(problems)


def test_the_diagnosis_column_says_what_the_rules_read() -> None:
    problems = marked_problems(doc_rows())
    assert not problems, "\n".join(problems)


def test_every_reading_a_sampler_writes_has_a_row_with_its_device_and_unit() -> None:
    problems = unwritten_problems(doc_rows())
    assert not problems, "\n".join(problems)


def test_every_row_names_a_reading_a_sampler_writes() -> None:
    problems = stale_problems(doc_rows())
    assert not problems, "\n".join(problems)


def test_the_units_the_tables_use_are_the_units_the_format_lists() -> None:
    text = DOC.read_text()
    listed = re.search(r"Other metrics are raw figures in the unit named\s*\((.*?)\)\.", text, re.S)
    assert listed is not None
    assert {r.unit for r in doc_rows()} == set(_ticked(listed.group(1)))


def test_a_removed_or_changed_row_is_caught() -> None:
    rows = doc_rows()

    def caught(changed: tuple[Row, ...]) -> bool:
        return any(check(changed) for check in CHECKS)

    # every row is missed when removed
    for i, r in enumerate(rows):
        assert caught(rows[:i] + rows[i + 1 :]), f"removing docs line {r.line} ({r.metric}) goes unnoticed"
    some = next(i for i, r in enumerate(rows) if r.metric == "busy_fraction")
    flipped = dataclasses.replace(rows[some], read=not rows[some].read)
    assert caught(rows[:some] + (flipped,) + rows[some + 1 :])
    renamed = dataclasses.replace(rows[some], metric="busiest_fraction")
    assert caught(rows[:some] + (renamed,) + rows[some + 1 :])
    reunit = dataclasses.replace(rows[some], unit="cores")
    assert caught(rows[:some] + (reunit,) + rows[some + 1 :])


def _peak_table() -> dict[str, set[str]]:
    (body,) = (rows for h, rows in _tables(_section("Readings")).items() if h == "Peak rows")
    out: dict[str, set[str]] = {}
    for _, (resource, _device, metrics) in body:
        (name,) = _ticked(resource)
        out[name] = {re.sub(r"<[^>]*>", "x", x) for x in _ticked(metrics)}
    return out


def test_the_peak_rows_name_the_metrics_the_resolver_and_the_catalog_give() -> None:
    from bottleneckd.peaks.resolve import GPU_COMPUTE_METRICS

    table = _peak_table()
    assert set(table) == set(RESOURCES)
    expected: set[tuple[str, str]] = set()
    for cat, cal in GPU_COMPUTE_METRICS:
        expected |= {("gpu_compute", cat)} | ({("gpu_compute", cal)} if cal else set())
    catalog = json.loads((PKG / "data" / "peaks.json").read_text())
    for part in catalog["gpus"] + catalog["cpus"]:
        expected |= {(p["resource"], p["metric"]) for p in part["peaks"]}
    resolver = ast.parse((PKG / "peaks" / "resolve.py").read_text())
    for n in ast.walk(resolver):
        if isinstance(n, ast.Call) and _name(n) == "ResolvedPeak" and len(n.args) > 2 and resource_of(n.args[0]):
            if isinstance(n.args[2], ast.Constant) and n.args[2].value != "-":
                expected.add((str(resource_of(n.args[0])), n.args[2].value))
    missing = sorted((r, x) for r, x in expected if x not in table.get(r, set()))
    assert not missing, f"peak metrics missing from the doc's 'Peak rows': {missing}"
    # every metric the table names is one the resolver, the catalog or a calibration writes
    links = {link["metric"] for link in catalog["links"]}
    written = _written_names("peaks", "torch") | {x for _, x in expected} | links
    stale = sorted((r, x) for r, xs in table.items() for x in xs if not any(fnmatchcase(x, w) for w in written))
    assert not stale, f"peak metrics in the doc that nothing writes: {stale}"


def test_the_identity_fields_are_the_dataclass_fields() -> None:
    section = _section("Readings")
    at = next(i for i, (_, line) in enumerate(section) if line.startswith("The fields of `ranks[].identity`"))
    body = [line for _, line in section[at:] if line.startswith("| `")]
    assert [_ticked(_cells(line)[0])[0] for line in body] == [f.name for f in dataclasses.fields(RankIdentity)]
