"""Contracts that hold across the code base."""

import pkgutil
import subprocess
import sys

import pytest

import bottleneckd
from bottleneckd.hardware.detect import detect_machine
from bottleneckd.model.resources import RESOURCES
from bottleneckd.model.sample import Reading
from bottleneckd.peaks.catalog import load_catalog
from bottleneckd.peaks.resolve import resolve_peaks
from bottleneckd.runtime.sidecar import SAMPLER_NAMES, build_samplers
from tests.fake_nvml import FakeGpu, FakeNvml


@pytest.mark.slow
def test_the_daemon_side_never_imports_torch():
    mods = [
        m.name
        for m in pkgutil.walk_packages(bottleneckd.__path__, "bottleneckd.")
        if ".torch" not in m.name and ".integrations" not in m.name
    ]
    code = (
        "import importlib, sys\n"
        + "".join(f"importlib.import_module({m!r})\n" for m in mods)
        + "from bottleneckd.cli.main import cli\n"
        + "assert 'torch' not in sys.modules, 'torch was imported'\nprint(len(sys.modules))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert len(mods) > 25


def test_every_sampler_reports_known_resources_and_units(fake_tree):
    sys_root, proc_root = fake_tree
    nvml = FakeNvml([FakeGpu(), FakeGpu(gpm=None)])
    m = detect_machine(sys_root, proc_root, nvml=nvml)
    peaks = resolve_peaks(m, load_catalog())
    samplers, _ = build_samplers(m, peaks, nvml=nvml, sys_root=sys_root, proc_root=proc_root)
    assert {s.name for s in samplers} == set(SAMPLER_NAMES)
    for s in samplers:
        ok, why = s.available()
        assert isinstance(ok, bool) and (ok or why)
        for _ in range(2):
            readings = s.sample()
        for r in readings:
            assert isinstance(r, Reading) and r.resource in RESOURCES, r
            if r.value is None:
                assert r.note, f"{s.name}: {r} is unknown without a reason"
            if r.metric == "utilization" and r.value is not None:
                assert r.unit == "ratio" and r.value >= 0
