"""Output sinks have one place: runtime/sinks.py (``SINK_ORDER``, ``Outputs``, ``wire``). A sink
registered anywhere else, a sink name not in ``SINK_ORDER`` or an ``Outputs`` field that ``wire``
does not make is caught here (CONTRIBUTING.md, "Adding an output sink")."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from bottleneckd.channel.link import PhaseReceiver
from bottleneckd.model.sample import Sample
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.runtime.run import Run
from bottleneckd.runtime.sinks import DIAGNOSE, SINK_ORDER, Outputs, Sinks, TraceOut
from tests.conftest import ROOT

HOME = "bottleneckd/runtime/sinks.py"  # the one place sinks are made and added
RUN = "bottleneckd/runtime/run.py"  # the one place a run's Sinks is created


def bypasses(path: str, source: str) -> list[str]:
    """Where ``source`` (the module at ``path``) adds a sink or makes a sink list outside the one place."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        owner = f.value if isinstance(f, ast.Attribute) else None
        owner_name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
        if name == "add_sink" or (name == "add" and owner_name in ("sinks", "_sinks")):
            if path != HOME:
                out.append(f"{path}:{node.lineno}: adds a sink")
        if name == "Sinks" and path not in (HOME, RUN):
            out.append(f"{path}:{node.lineno}: makes a sink list")
        if name == "wire" and isinstance(f, ast.Name) and path not in (HOME, RUN):  # sinks.wire on a list of its own
            out.append(f"{path}:{node.lineno}: wires sinks itself")
    return out


def test_no_module_adds_a_sink_outside_runtime_sinks():
    found = []
    for p in sorted((ROOT / "bottleneckd").rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        found += bypasses(rel, p.read_text())
    assert found == [], found


def test_the_check_catches_a_sink_added_elsewhere():
    """The check itself: a sink added in a command, or a loop of its own, would be found."""
    cli = "def record(side):\n    side.run.sinks.add('csv', print)\n"
    loop = "class L:\n    def go(self, s):\n        self.add_sink('view', s)\n"
    made = "from bottleneckd.runtime.sinks import Sinks, wire\nmine = Sinks()\nwire(mine, None)\n"
    assert bypasses("bottleneckd/cli/sidecar.py", cli) == ["bottleneckd/cli/sidecar.py:2: adds a sink"]
    assert bypasses("bottleneckd/runtime/loop.py", loop) == ["bottleneckd/runtime/loop.py:3: adds a sink"]
    assert len(bypasses("bottleneckd/outputs/x.py", made)) == 2
    assert bypasses(HOME, cli) == []


def test_a_sink_name_must_be_in_sink_order():
    sinks = Sinks()
    with pytest.raises(ValueError, match="SINK_ORDER"):
        sinks.add("csv", print)
    with pytest.raises(ValueError, match="SINK_ORDER"):
        sinks.add(DIAGNOSE, print)  # the run's own stage, not a sink
    sinks.add("view", print)
    with pytest.raises(ValueError, match="already set"):
        sinks.add("view", print)


def test_every_outputs_field_makes_its_sinks_in_sink_order(tmp_path: Path):
    """``wire`` makes every sink of SINK_ORDER from a full ``Outputs``: a field added without its
    sink, or a name in SINK_ORDER that no field makes, fails here."""
    from bottleneckd.hardware.detect.machine import detect_machine

    full = Outputs(
        trace=TraceOut(str(tmp_path / "t.jsonl")),
        timeline=True,
        report_file=True,
        view=lambda _snap: None,
        stop_when=lambda: False,
    )
    assert all(getattr(full, f.name) not in (None, False) for f in dataclasses.fields(Outputs))
    (tmp_path / "s").mkdir(mode=0o700)
    run = Run(PeakTable(()), detect_machine(nvml=None))
    rx = PhaseReceiver(str(tmp_path / "s" / "b.sock"), listen=False)
    wired = run.wire(full, rx, stop=lambda: None)
    try:
        assert run.sinks.names == tuple(n for n in SINK_ORDER if n != DIAGNOSE)
        run(Sample(1.0, 1.0, ()))
        run(Sample(2.0, 1.0, ()))
    finally:
        wired.close()
    assert wired.trace is not None and wired.timeline is not None and len(wired.timeline.rows) == 2
