"""The closed vocabularies (model/resources.py: Resource, Stage, Phase; model/facts.py: Producer) agree
with the package's data, its documented formats and the code that uses them, and serialise as the
plain strings they replaced."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from bottleneckd.model.facts import FACTS, Producer
from bottleneckd.model.hooks import HOOKS
from bottleneckd.model.resources import (
    CAPACITY_RESOURCES,
    DATA_PHASES,
    HOOK_PHASES,
    PAPER_SECTION,
    PHASES,
    RESOURCES,
    STAGES,
    UNDETERMINED,
    Phase,
    Resource,
    Stage,
    stage_of,
)
from bottleneckd.model.sample import Reading, Sample

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bottleneckd" / "data"

#: section 6.1 of Bartoldson et al. (2023), in the paper's order
PAPER_RESOURCES = (
    "gpu_compute",
    "gpu_memory",
    "gpu_memory_bandwidth",
    "cpu_compute",
    "cpu_memory",
    "cpu_memory_bandwidth",
    "inter_gpu_interconnect",
    "cpu_gpu_interconnect",
    "inter_node_interconnect",
    "storage_capacity",
    "storage_bandwidth",
    "storage_network_bandwidth",
)


def _schema_row(doc: str, field: str) -> list[str]:
    """The back-quoted names in the row of ``field`` of a docs/*.md table."""
    line = next(ln for ln in (ROOT / "docs" / doc).read_text().splitlines() if ln.startswith(f"| `{field}`"))
    return re.findall(r"`([a-z_]+)`", line.split("|")[3])


def test_the_enums_are_the_strings_the_paper_and_the_report_schema_use() -> None:
    assert RESOURCES == PAPER_RESOURCES and [str(r) for r in RESOURCES] == list(PAPER_RESOURCES)
    assert set(Resource) == {*RESOURCES, UNDETERMINED} and UNDETERMINED == "undetermined"
    assert PAPER_SECTION["storage_network_bandwidth"] == "6.1.12"
    assert CAPACITY_RESOURCES == {"gpu_memory", "cpu_memory", "storage_capacity"}
    # docs/report-schema.md: verdict.resource is one of the twelve or undetermined; verdict.stage one of the stages
    assert "undetermined" in _schema_row("report-schema.md", "verdict.resource")
    assert _schema_row("report-schema.md", "verdict.stage") == [s.value for s in STAGES] == [s.value for s in Stage]
    # docs/trace-format.md lists every phase, the hook's first and in step order
    trace_doc = (ROOT / "docs" / "trace-format.md").read_text()
    listed = re.search(r"seconds per phase, summed over the steps:(.*?)\), and `facts`", trace_doc, re.S)
    assert listed is not None
    assert re.findall(r"`([a-z_]+)`", listed.group(1)) == [
        p.value for p in (*HOOK_PHASES, Phase.GPU_WAIT, Phase.FILE_IO)
    ]
    assert set(PHASES) == set(Phase) and set(PHASES.values()) <= set(Stage)
    assert DATA_PHASES == ("data_wait", "file_io")


def test_every_resource_and_stage_in_the_data_files_is_a_member() -> None:
    kb = json.loads((DATA / "mitigations.json").read_text())
    resources = [r for m in kb["mitigations"] for r in m["resources"]]
    stages = [s for m in kb["mitigations"] for s in m.get("stages", [])]
    assert resources and stages, "the knowledge base names no resource or stage: the test would prove nothing"
    assert set(resources) <= set(RESOURCES), set(resources) - set(RESOURCES)
    assert set(stages) <= set(Stage), set(stages) - set(Stage)

    peaks = json.loads((DATA / "peaks.json").read_text())
    named = [p["resource"] for part in (*peaks["gpus"], *peaks["cpus"]) for p in part["peaks"]]
    named += [row["resource"] for row in (*peaks["table4"], *peaks["links"])]
    assert len(named) > 20
    assert set(named) <= set(RESOURCES), set(named) - set(RESOURCES)


def test_a_member_is_its_string_on_every_wire() -> None:
    r, s, p = Resource.GPU_COMPUTE, Stage.DATA, Phase.DATA_WAIT
    assert r == "gpu_compute" and hash(r) == hash("gpu_compute") and {"gpu_compute": 1}[r] == 1
    assert (str(r), f"{r}", f"{r:>12}", "-".join([r])) == ("gpu_compute", "gpu_compute", " gpu_compute", "gpu_compute")
    doc = {r: [s, p], "phases": {p: 1.5}}
    assert json.dumps(doc) == json.dumps({"gpu_compute": ["data", "data_wait"], "phases": {"data_wait": 1.5}})


def test_a_phase_name_read_off_the_wire_finds_its_stage() -> None:
    """The exporter and the report look stages up by the plain phase names of samples and traces."""
    assert [stage_of(str.__str__(p)) for p in Phase] == [PHASES[p] for p in Phase]
    assert stage_of("not_a_phase") is Stage.OTHER


def _plain(x: object) -> object:
    """The same value with every str subclass (an enum member) a plain str."""
    if isinstance(x, str):
        return str.__str__(x)
    if isinstance(x, dict):
        return {_plain(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def test_a_trace_line_reads_into_members_and_writes_back_as_plain_strings() -> None:
    """Samples of a stored trace, read (resources and stack phases become members) and written
    again, are the JSON the same samples with plain strings give, byte for byte, and read back
    the same."""
    path = ROOT / "tests" / "data" / "gpu_compute" / "trace.jsonl"
    samples = [d for ln in path.read_text().splitlines() if (d := json.loads(ln)).get("type") == "sample"]
    assert samples
    for d in samples[:20]:
        sample = Sample.from_json(d)
        assert sample.readings and all(type(r.resource) is Resource for r in sample.readings)
        text = json.dumps(sample.to_json())
        assert text == json.dumps(_plain(sample.to_json()))
        assert json.dumps(Sample.from_json(json.loads(text)).to_json()) == text


def test_a_reading_of_an_unknown_resource_is_malformed() -> None:
    assert Reading.from_json(["cpu_memory", "host", "used", 1.0, "B"]).resource is Resource.CPU_MEMORY
    with pytest.raises(ValueError, match="gpu_compte"):
        Reading.from_json(["gpu_compte", "gpu0", "utilization", 0.5, "ratio"])


def test_every_fact_producer_is_a_declared_module() -> None:
    hook_modules = {h.module for h in HOOKS.values()}
    for name, spec in FACTS.items():
        for p in spec.producers:
            assert isinstance(p, Producer) or p in hook_modules, f"{name}: producer {p!r} is neither"
    for p in Producer:
        assert (ROOT / (p.value.replace(".", "/") + ".py")).is_file() and p.source.is_file()


#: the daemon-side packages whose code compares and constructs resources by member, not by string
SWEPT = ("diagnosis", "advice", "peaks", "samplers")


def _bare_resource_literals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    # a sampler's ``name`` is the sampler's (the --disable vocabulary), ``__all__`` names functions
    sampler_names = {
        id(c)
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign) and [getattr(t, "id", None) for t in n.targets] in (["name"], ["__all__"])
        for c in ast.walk(n.value)
    }
    return [
        f"{path.relative_to(ROOT)}:{n.lineno}: {n.value!r}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value in set(Resource)
        and id(n) not in docstrings | sampler_names
    ]


def test_the_daemon_side_names_resources_by_member() -> None:
    """A bare resource id string in diagnosis/advice/peaks/samplers is a misspelling waiting to
    happen: use ``Resource.X``."""
    found = [
        hit
        for pkg in SWEPT
        for f in sorted((ROOT / "bottleneckd" / pkg).rglob("*.py"))
        for hit in _bare_resource_literals(f)
    ]
    assert not found, "use model.resources.Resource members:\n" + "\n".join(found)
